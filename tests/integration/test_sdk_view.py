"""The SDK view: a scenario's requests through ``openai.AsyncOpenAI`` timed as an application
times them, against the scripted server, whose TTFT and per-token gap are known lower bounds
of what any client can see."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.checks import sdk_view
from benchlib.measure import MeasureConfig
from benchlib.measure.workload._seeds import sdk_seed


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_the_sdk_sees_no_less_than_the_server_did(scripted: Callable[..., Any],
                                                  tiny_model: Path, endpoint: str) -> None:
    server = scripted("--ttft-ms", "30", "--itl-ms", "5", "--model", "scripted")
    cfg = MeasureConfig(base_url=server.url, model="scripted", tokenizer=tiny_model,
                        endpoint=endpoint, input_len=32, output_len=16, num_prompts=4,
                        max_concurrency=2, seed=7)
    wire = {"median_ttft_ms": 30.5, "median_tpot_ms": 5.1}
    view = sdk_view(cfg, wire=wire)
    assert view.client.startswith("openai ") and view.seed == sdk_seed(7) != 7
    assert (view.completed, view.failed) == (4, 0), view.first_error
    assert view.median_ttft_ms is not None and view.median_ttft_ms >= 30.0
    assert view.median_tpot_ms is not None and view.median_tpot_ms >= 4.5
    assert view.median_e2el_ms is not None and view.median_e2el_ms >= 30 + 15 * 5
    assert view.ttft_overhead_ms == pytest.approx(view.median_ttft_ms - 30.5)
    assert view.tpot_overhead_ms == pytest.approx(view.median_tpot_ms - 5.1)


def test_failures_are_counted_not_raised(tiny_model: Path) -> None:
    from benchlib.engines import free_port

    cfg = MeasureConfig(base_url=f"http://127.0.0.1:{free_port()}", model="m",
                        tokenizer=tiny_model, endpoint="chat", input_len=8, output_len=4,
                        num_prompts=2, request_timeout=5)
    view = sdk_view(cfg)
    assert (view.completed, view.failed) == (0, 2) and view.median_ttft_ms is None
    assert view.first_error and "Connection" in view.first_error


def test_a_connection_hung_up_before_any_response_is_sent_again_once(
        scripted: Callable[..., Any], tiny_model: Path) -> None:
    """A server that closes a kept-alive connection as the next request arrives (llama-server
    does, now and then) fails that request before any response: it is sent once more on a new
    connection and counted; a server that hangs up on the new connection too is a failure."""
    base = {"model": "scripted", "tokenizer": tiny_model, "endpoint": "chat", "input_len": 16,
            "output_len": 8, "num_prompts": 3, "max_concurrency": 1, "num_warmups": 1}
    # the warmup is request 1, the three timed ones 2-4: request 3 is hung up, its second
    # attempt (request 4) answered
    server = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted",
                      "--fault", "close-no-response:every=3")
    view = sdk_view(MeasureConfig(base_url=server.url, **base))
    assert (view.completed, view.failed, view.reconnects) == (3, 0, 1), view.first_error
    always = scripted("--ttft-ms", "2", "--itl-ms", "1", "--model", "scripted",
                      "--fault", "close-no-response:every=1:start=2")
    view = sdk_view(MeasureConfig(base_url=always.url, **base))
    assert (view.completed, view.failed, view.reconnects) == (0, 3, 0), view
    assert view.first_error and "Connection error" in view.first_error
