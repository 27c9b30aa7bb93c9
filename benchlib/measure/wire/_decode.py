"""A captured stream read into a :class:`~benchlib.measure.wire._request.RequestOutcome`
(:func:`decode_capture`: both views of the events, the server's usage and timings, every
fault as the request's ``error``), and the tokens each text chunk held
(:func:`chunk_token_counts`), re-tokenized and scaled to the server's count, never counting
the output."""

from __future__ import annotations

import bisect
import json
import math
from typing import Any

from benchlib.measure.wire._connection import StreamCapture
from benchlib.measure.wire._request import EndpointKind, RequestOutcome
from benchlib.measure.wire._timing import event_times

__all__ = ["chunk_token_counts", "decode_capture"]


def _error_message(body: bytes) -> str:
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return body[:200].decode("utf-8", "replace").strip()
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:500]
        return str(err)[:500]
    return str(obj)[:500]


def _numbers(obj: dict[str, Any]) -> dict[str, float]:
    """The finite numeric entries of a server's ``timings`` object, as floats (the rest
    dropped: a record line stays strict JSON)."""
    return {str(k): float(v) for k, v in obj.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}


def _delta_text(choice: dict[str, Any], kind: EndpointKind) -> tuple[str, str, str]:
    """(content, reasoning, tool text) carried by one streamed choice."""
    if kind == "completions":
        return choice.get("text") or "", "", ""
    delta = choice.get("delta") or {}
    content = delta.get("content") or ""
    reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
    tool = ""
    for call in delta.get("tool_calls") or ():
        fn = call.get("function") or {}
        tool += (fn.get("name") or "") + (fn.get("arguments") or "")
    return content, reasoning, tool


def decode_capture(index: int, prompt_len: int, capture: StreamCapture,
                   kind: EndpointKind) -> RequestOutcome:
    """Interpret a captured response. Never raises: every fault becomes ``error``."""
    times = event_times(capture)
    out = RequestOutcome(index=index, prompt_len=prompt_len, start_ns=capture.start_ns,
                         http_status=capture.status, kernel_clock=capture.kernel_clock,
                         end_ns=capture.end_ns, clock=times.clock,
                         clock_stepped=times.clock_stepped, read_lags_ns=times.read_lags,
                         reads=times.reads, stamped_reads=times.stamped_reads,
                         synthetic=capture.synthetic)
    if capture.status is not None and capture.status != 200:
        out.error = f"HTTP {capture.status}: {_error_message(bytes(capture.body))}"
        return out
    if capture.error is not None and not capture.events:
        out.error = capture.error
        return out
    if capture.status == 200 and "text/event-stream" not in capture.content_type:
        out.error = ("server answered with a JSON body, not an event stream "
                     f"(content-type {capture.content_type or 'missing'!r})")
        return out
    content: list[str] = []
    reasoning: list[str] = []
    tools: list[str] = []
    last_choice_ns: int | None = None
    last_choice_lower_ns = 0
    first_choice = -1  # the event index of the first event with non-empty choices
    prev_ns: int | None = None
    for n, (_, payload) in enumerate(capture.events):
        if payload == b"[DONE]":
            continue
        arrival = times.upper[n]
        try:
            obj = json.loads(payload)
        except (ValueError, RecursionError):
            out.error = f"SSE event #{n + 1} is not valid JSON: {payload[:80]!r}"
            return out
        if not isinstance(obj, dict):
            out.error = f"SSE event #{n + 1} is not a JSON object: {payload[:80]!r}"
            return out
        if obj.get("error") or obj.get("object") == "error":
            out.error = f"server error in stream: {_error_message(payload)}"
            return out
        try:  # any JSON can arrive here: a wrong shape is this request's named error
            if not out.response_id and obj.get("id"):
                out.response_id = str(obj["id"])
            usage = obj.get("usage")
            if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
                out.output_tokens = int(usage["completion_tokens"])
                out.output_tokens_source = "usage"
                if usage.get("prompt_tokens") is not None:
                    out.server_prompt_tokens = int(usage["prompt_tokens"])
            timings = obj.get("timings")
            if isinstance(timings, dict):
                out.server_timings = _numbers(timings)
            choices = obj.get("choices")
            if not choices:
                continue
            choice = choices[0]
            finish = choice.get("finish_reason")
            c, r, t = _delta_text(choice, kind)
            text = r + c + t
        except (AttributeError, TypeError, ValueError, KeyError, IndexError,
                OverflowError) as exc:
            out.error = (f"SSE event #{n + 1} has an unexpected shape ({type(exc).__name__}: "
                         f"{exc}): {payload[:80]!r}")
            return out
        # vLLM's view: every event with non-empty choices is a "token"
        if last_choice_ns is None:
            out.ttft_ns = arrival - capture.start_ns
            out.ttft_lower_ns = times.lower[n] - capture.start_ns
            first_choice = n
        else:
            out.itl_ns.append(arrival - last_choice_ns)
        last_choice_ns = arrival
        last_choice_lower_ns = times.lower[n]
        if finish:
            out.finish_reason = str(finish)
        if not text:
            continue
        content.append(c)
        reasoning.append(r)
        tools.append(t)
        if prev_ns is None:
            out.ttft_text_ns = arrival - capture.start_ns
            out.ttft_text_lower_ns = times.lower[n] - capture.start_ns
            out.ttft_text_exact = times.exact[n]
        else:
            out.text_gaps_ns.append(arrival - prev_ns)
            out.text_gap_measured.append(times.read[n] != out.chunk_reads[-1])
        out.chunk_times_ns.append(arrival)
        out.chunk_reads.append(times.read[n])
        out.chunk_texts.append(text)
        prev_ns = arrival
    out.text, out.reasoning, out.tool_text = "".join(content), "".join(reasoning), "".join(tools)
    if capture.error is not None:
        out.error = capture.error
    elif not capture.saw_done:
        out.error = "stream ended without [DONE]"
    elif last_choice_ns is None or (out.ttft_text_ns is None and not (
            out.output_tokens_source == "usage" and out.output_tokens > 0)):
        out.error = "stream carried no generated text"
    else:
        if out.ttft_text_ns is None:  # tokens counted by the server, none rendered as text
            out.text_free = True
            out.ttft_text_ns = out.ttft_ns
            out.ttft_text_lower_ns = times.lower[first_choice] - capture.start_ns
            out.ttft_text_exact = times.exact[first_choice]
        out.latency_ns = last_choice_ns - capture.start_ns
        out.latency_lower_ns = last_choice_lower_ns - capture.start_ns
        out.end_ns = last_choice_ns
        out.success = True
    return out


def chunk_token_counts(outcome: RequestOutcome, tokenizer: Any | None) -> list[float]:
    """How many tokens each text-carrying chunk held.

    With a fast tokenizer: re-tokenize the whole generated text once and give each token to
    the chunk its first character arrived in. Without one: the server's total spread evenly.
    Scaled to the server's count when there is one. Used to split ITL per token and to bucket
    tokens in time, never to count the output.
    """
    texts = outcome.chunk_texts
    if not texts:
        return []
    if tokenizer is not None:
        try:
            enc = tokenizer(outcome.generated, add_special_tokens=False,
                            return_offsets_mapping=True)
            offsets = enc["offset_mapping"]
        except (NotImplementedError, KeyError, TypeError, ValueError):
            offsets = None
        if offsets:
            bounds: list[int] = []
            pos = 0
            for t in texts:
                pos += len(t)
                bounds.append(pos)
            counts = [0.0] * len(texts)
            for start, _ in offsets:
                counts[min(bisect.bisect_right(bounds, start), len(texts) - 1)] += 1
            total = sum(counts)
            if outcome.output_tokens and total:
                # the server's tokens are the truth; re-tokenizing only says how they split
                scale = outcome.output_tokens / total
                counts = [c * scale for c in counts]
            return counts
    per = outcome.output_tokens / len(texts) if outcome.output_tokens else 0.0  # never chunks
    return [per] * len(texts)
