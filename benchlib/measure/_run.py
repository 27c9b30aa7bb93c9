"""One measurement, end to end: prompts → load → per-request log → metrics → files.

Nothing measured is lost: each request's record goes to ``<result stem>.requests.jsonl``
the moment it ends, as one ``write`` of one whole line to a file opened ``O_APPEND`` (so it
is in the kernel's page cache, not a Python buffer, when the next request is handled). A run
killed even with SIGKILL keeps every finished request's line; at worst the very last line is
cut short, and :func:`read_requests` drops it. The file is started afresh by each run. The
result JSON is written (atomically) even when every request failed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import json
import math
import os
import sys
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from tqdm import tqdm

from benchlib._exceptions import UsageError
from benchlib._secrets import scrub_text
from benchlib.measure._config import MeasureConfig
from benchlib.measure._connection import StreamCapture
from benchlib.measure._datasets import file_prompts, random_prompts
from benchlib.measure._loadgen import LoadPlan, run_load
from benchlib.measure._metrics import summarize
from benchlib.measure._request import Prompt, RequestOutcome, build_body, chunk_token_counts

__all__ = ["load_tokenizer", "measure", "read_requests", "requests_path"]

_MS = 1e6
_T = TypeVar("_T")


def load_tokenizer(path: Path) -> Any:
    """A Hugging Face tokenizer from a local folder (never the hub)."""
    if not path.is_dir() and not path.is_file():
        raise UsageError("--tokenizer", f"no such folder: {path}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UsageError("--tokenizer", f"cannot load a tokenizer from {path}: {exc}") from None


def _run_coroutine(coro: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run``, also from inside a running loop (a Jupyter kernel): then the load runs
    on a fresh loop in a worker thread, which also keeps the kernel's loop out of its way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="benchlib-load") as pool:
        return pool.submit(asyncio.run, coro).result()


def requests_path(result_json: Path) -> Path:
    """``run.json`` → ``run.requests.jsonl``."""
    return result_json.with_name(result_json.stem + ".requests.jsonl")


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The records of a ``.requests.jsonl`` file, in completion order.

    A last line that is cut short (the run was killed while writing it) is dropped; a bad
    line anywhere else means the file is not one benchlib wrote, and raises ``ValueError``.
    """
    lines = path.read_bytes().split(b"\n")
    records: list[dict[str, Any]] = []
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            if n == len(lines) - 1:  # no newline after it: the write was cut off
                break
            raise ValueError(f"{path}:{n + 1}: not a JSON line") from None
    return records


class _LineLog:
    """Whole lines appended with one ``os.write`` each: nothing waits in a user-space
    buffer, so a SIGKILL loses no finished line. ``secrets`` (the API key) are replaced by
    ``***`` before a line is written: a server may echo the key in an error message."""

    def __init__(self, path: Path, secrets: Sequence[str] = ()) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self._secrets = list(secrets)

    def write(self, record: dict[str, Any]) -> None:
        line = scrub_text(json.dumps(record), self._secrets) + "\n"
        data = memoryview(line.encode())
        while data:  # a regular file takes it in one call; loop for the pathological case
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        os.close(self._fd)


def _ms(ns: int | None) -> float | None:
    return ns / _MS if ns is not None else None


def _record(o: RequestOutcome, counts: list[float], first_ns: int) -> dict[str, Any]:
    """One request's line: benchlib's TTFT with its bounds, the reference's view beside it."""
    tpot = None
    if o.success and o.output_tokens > 1 and o.latency_ns is not None \
            and o.ttft_text_ns is not None:
        tpot = (o.latency_ns - o.ttft_text_ns) / (o.output_tokens - 1) / _MS
    return {
        "index": o.index, "success": o.success, "error": o.error,
        "http_status": o.http_status, "response_id": o.response_id,
        "start_s": (o.start_ns - first_ns) / 1e9 if o.start_ns else None,
        "queue_ms": o.queue_ns / _MS,
        "ttft_ms": _ms(o.ttft_text_ns), "ttft_lower_ms": _ms(o.ttft_text_lower_ns),
        "ttft_exact": o.ttft_text_exact,
        "ttft_first_choice_ms": _ms(o.ttft_ns),
        "tpot_ms": tpot,
        "e2el_ms": _ms(o.latency_ns),
        "itl_ms": [g / _MS for g in o.itl_ns],
        "itl_text_only_ms": [g / _MS for g, m in zip(o.text_gaps_ns, o.text_gap_measured,
                                                     strict=True) if m],
        "coalesced_gaps": o.coalesced_gaps,
        "chunk_tokens": counts,
        "prompt_len": o.prompt_len, "server_prompt_tokens": o.server_prompt_tokens,
        "output_tokens": o.output_tokens if o.output_tokens_source != "none" else None,
        "output_tokens_source": o.output_tokens_source,
        "finish_reason": o.finish_reason, "clock": o.clock, "clock_stepped": o.clock_stepped,
        "generated_text": o.text, "reasoning_text": o.reasoning, "tool_call_text": o.tool_text,
    }


#: the named error of a request whose output length cannot be known
NO_TOKEN_COUNT = ("output tokens unknown: the server sent no usage and no tokenizer was "
                  "given (pass --tokenizer, or ask the server for usage)")


def _probe_usage(cfg: MeasureConfig, body: bytes, api_key: str | None) -> None:
    """Without a tokenizer, output tokens can only come from the server's usage: ask once,
    before the run, whether it sends one, and refuse to start if it answers without."""
    plan = LoadPlan(base_url=cfg.base_url, kind=cfg.endpoint, max_concurrency=1,
                    request_timeout=min(cfg.request_timeout, 120.0), api_key=api_key)
    outcomes, _ = _run_coroutine(run_load([body], [0], plan, [], lambda o, c: None))
    probe = outcomes[0]
    if probe.success and probe.output_tokens_source == "none":
        raise UsageError("--tokenizer", f"{cfg.base_url} streams no usage (stream_options."
                         "include_usage), so output tokens can only be counted with the "
                         "model's tokenizer: pass --tokenizer PATH")


def measure(cfg: MeasureConfig, api_key: str | None = None,
            out: IO[str] | None = None) -> dict[str, Any]:
    """Run the measurement ``cfg`` describes and return the result dict (also written to
    ``cfg.result_json`` and its ``.requests.jsonl`` when set)."""
    tokenizer = load_tokenizer(cfg.tokenizer) if cfg.tokenizer is not None else None
    if cfg.dataset == "random":
        prompts = random_prompts(tokenizer, num_prompts=cfg.num_prompts, input_len=cfg.input_len,
                                 output_len=cfg.output_len or 1,
                                 range_ratio=cfg.random_range_ratio,
                                 range_mode=cfg.range_ratio_mode, seed=cfg.seed)
    else:
        assert cfg.dataset_path is not None
        prompts = file_prompts(cfg.dataset_path, tokenizer, num_prompts=cfg.num_prompts,
                               output_len=cfg.output_len)
    bodies = [build_body(p, cfg.endpoint, cfg.model, ignore_eos=cfg.ignore_eos,
                         sampling=cfg.sampling) for p in prompts]
    warmups = [bodies[0]] * cfg.num_warmups  # as the reference: the first prompt, N times
    if tokenizer is None:
        first = prompts[0]
        _probe_usage(cfg, build_body(Prompt(first.prompt, first.prompt_len, 1),
                                     cfg.endpoint, cfg.model, ignore_eos=cfg.ignore_eos,
                                     sampling=cfg.sampling), api_key)
    plan = LoadPlan(base_url=cfg.base_url, kind=cfg.endpoint, max_concurrency=cfg.max_concurrency,
                    request_rate=cfg.request_rate, burstiness=cfg.burstiness,
                    num_warmups=cfg.num_warmups, request_timeout=cfg.request_timeout,
                    seed=cfg.seed, api_key=api_key)
    log: _LineLog | None = None
    if cfg.result_json is not None:
        cfg.result_json.parent.mkdir(parents=True, exist_ok=True)
        log = _LineLog(requests_path(cfg.result_json), [api_key] if api_key else [])
    counts: dict[int, list[float]] = {}
    bar = tqdm(total=len(bodies), desc="requests", unit="req", disable=cfg.disable_tqdm,
               file=sys.stderr, mininterval=0.5)
    first_ns: list[int] = []

    lock = threading.Lock()

    def on_outcome(o: RequestOutcome, capture: StreamCapture) -> None:
        # may run in a worker thread (huge outputs): tokenize outside the lock, write inside
        if o.success and o.output_tokens_source == "none":
            if tokenizer is not None:
                o.output_tokens = len(tokenizer(o.generated,
                                                add_special_tokens=False)["input_ids"])
                o.output_tokens_source = "tokenizer"
            else:  # never a silent 0: the request fails with the reason
                o.success, o.error = False, NO_TOKEN_COUNT
        chunk_counts = chunk_token_counts(o, tokenizer) if o.success else []
        with lock:
            counts[o.index] = chunk_counts
            if not first_ns:
                first_ns.append(o.start_ns)
            if log is not None:
                log.write(_record(o, chunk_counts, first_ns[0]))
            bar.update(1)

    date = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    try:
        outcomes, duration_ns = _run_coroutine(run_load(
            bodies, [p.prompt_len for p in prompts], plan, warmups, on_outcome))
    finally:
        bar.close()
        if log is not None:
            log.close()
    result: dict[str, Any] = {
        "date": date, "backend": "benchlib", "endpoint_type": cfg.endpoint,
        "label": None, "model_id": cfg.model,
        "tokenizer_id": str(cfg.tokenizer) if cfg.tokenizer else None,
        "num_prompts": cfg.num_prompts,
        "request_rate": "inf" if math.isinf(cfg.request_rate) else cfg.request_rate,
        "burstiness": "inf" if math.isinf(cfg.burstiness) else cfg.burstiness,
        "max_concurrency": cfg.max_concurrency,
    }
    result.update(summarize(outcomes, [counts[o.index] for o in outcomes],
                            duration_ns=duration_ns, percentiles=cfg.percentiles,
                            goodput=dict(cfg.goodput), max_concurrency=cfg.max_concurrency,
                            request_rate=cfg.request_rate))
    result["clock"] = result["timing"]["clock"]
    result["benchlib"] = {
        "input_len": cfg.input_len, "output_len": cfg.output_len, "dataset": cfg.dataset,
        "random_range_ratio": cfg.random_range_ratio, "range_ratio_mode": cfg.range_ratio_mode,
        "num_warmups": cfg.num_warmups, "seed": cfg.seed, "percentiles": list(cfg.percentiles),
        "goodput": dict(cfg.goodput), "base_url": cfg.base_url,
        # beside the result JSON: the folder can be moved
        "requests_jsonl": requests_path(cfg.result_json).name if cfg.result_json else None,
    }
    if cfg.result_json is not None:
        tmp = cfg.result_json.with_suffix(cfg.result_json.suffix + ".tmp")
        text = json.dumps(result, indent=2, allow_nan=False, default=str) + "\n"
        tmp.write_text(scrub_text(text, [api_key] if api_key else []), encoding="utf-8")
        tmp.replace(cfg.result_json)
    return result
