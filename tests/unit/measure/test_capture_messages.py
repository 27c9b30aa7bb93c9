"""A transport failure in words a user can act on: whether the server closed or reset before
answering or mid-answer, a broken pipe while sending, else the OS's own words."""

from __future__ import annotations

import errno

from benchlib.measure.wire._capture import StreamCapture, closed_message, os_error_message


def test_a_close_says_when_it_came() -> None:
    assert closed_message(None) == "connection closed by the server before responding"
    assert closed_message(StreamCapture()) == "connection closed by the server before responding"
    assert closed_message(StreamCapture(status=200)) == (
        "connection closed by the server mid-response")


def test_socket_errors_name_their_cause() -> None:
    reset = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    assert os_error_message(reset, None) == "connection reset by the server before responding"
    assert os_error_message(reset, StreamCapture()) == (
        "connection reset by the server before responding")
    assert os_error_message(reset, StreamCapture(status=200)) == (
        "connection reset by the server mid-response")
    pipe = BrokenPipeError(errno.EPIPE, "Broken pipe")
    assert os_error_message(pipe, None, sending=True) == (
        "connection closed by the server while the request was being sent")
    # a broken pipe outside the send, and any other error: the OS's words
    assert os_error_message(pipe, None) == "connection error: Broken pipe"
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    assert os_error_message(refused, None, sending=True) == "connection error: Connection refused"
    assert os_error_message(OSError("no strerror"), None) == "connection error: no strerror"
