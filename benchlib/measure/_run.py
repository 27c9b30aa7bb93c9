"""One measurement, end to end: prompts → load → per-request log → metrics → files.

Nothing measured is lost: each request's :class:`~benchlib.measure.RequestRecord` goes to
``<result stem>.requests.jsonl`` the moment it ends (kill-safe, see
:mod:`benchlib.measure._records`). The result JSON (:meth:`MeasureResult.to_json
<benchlib.measure.MeasureResult.to_json>`) is written atomically, even when every request
failed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
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
from benchlib.measure._pool import check_tls
from benchlib.measure._records import RecordLog, RequestRecord, requests_path
from benchlib.measure._request import Prompt, RequestOutcome, build_body, chunk_token_counts
from benchlib.measure._result import MeasureResult

__all__ = ["build_requests", "load_tokenizer", "measure", "run_coroutine"]

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


def run_coroutine(coro: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run``, also from inside a running loop (a Jupyter kernel): then the load runs
    on a fresh loop in a worker thread, which also keeps the kernel's loop out of its way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="benchlib-load") as pool:
        return pool.submit(asyncio.run, coro).result()


#: the named error of a request whose output length cannot be known
NO_TOKEN_COUNT = ("output tokens unknown: the server sent no usage and no tokenizer was "
                  "given (pass --tokenizer, or ask the server for usage)")


def prompts_digest(prompts: list[Prompt]) -> str:
    """SHA-256 over the prompts in order (text, or chat messages as canonical JSON)."""
    h = hashlib.sha256()
    for p in prompts:
        h.update(json.dumps(p.prompt, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


def _probe_usage(plan: LoadPlan, body: bytes) -> None:
    """Without a tokenizer, output tokens can only come from the server's usage: ask once,
    before the run, whether it sends one, and refuse to start if it answers without."""
    outcomes, _ = run_coroutine(run_load([body], [0], plan, [], lambda o, c: None))
    probe = outcomes[0]
    if probe.success and probe.output_tokens_source == "none":
        raise UsageError("--tokenizer", f"{plan.base_url} streams no usage (stream_options."
                         "include_usage), so output tokens can only be counted with the "
                         "model's tokenizer: pass --tokenizer PATH")


def build_requests(cfg: MeasureConfig, tokenizer: Any | None) -> tuple[list[Prompt],
                                                                       list[bytes]]:
    """The prompts ``cfg`` describes (its dataset, lengths and seed) and their request
    bodies, in the order they are sent."""
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
    return prompts, bodies


def measure(cfg: MeasureConfig, api_key: str | None = None,
            out: IO[str] | None = None,
            on_warmed: Callable[[], None] | None = None,
            headers: Sequence[tuple[str, str]] = ()) -> MeasureResult:
    """Run the measurement ``cfg`` describes and return its result (also written to
    ``cfg.result_json``, as :meth:`MeasureResult.to_json`, with the ``.requests.jsonl``
    beside it, when set). ``on_warmed`` is called once the warmups are done, right before
    the timed load (a server-metrics sampler takes its baseline there).

    ``headers``: ``(name, value)`` pairs every request carries (a hosted API's key, a
    proxy's token), replacing benchlib's own of the same name. Their values, like
    ``api_key``, are secrets: scrubbed from every file written. For an ``https`` base URL
    one connection is made first: a certificate that is not trusted stops the run with
    :class:`~benchlib.UsageError` saying what to do, before any request.
    """
    secrets = [v for v in (api_key, *(value for _, value in headers)) if v]
    plan = LoadPlan(base_url=cfg.base_url, kind=cfg.endpoint, max_concurrency=cfg.max_concurrency,
                    request_rate=cfg.request_rate, burstiness=cfg.burstiness,
                    num_warmups=cfg.num_warmups, request_timeout=cfg.request_timeout,
                    seed=cfg.seed, api_key=api_key, headers=tuple(headers),
                    ca_bundle=cfg.ca_bundle, insecure=cfg.insecure)
    tokenizer = load_tokenizer(cfg.tokenizer) if cfg.tokenizer is not None else None
    prompts, bodies = build_requests(cfg, tokenizer)
    run_coroutine(check_tls(plan.endpoint(), plan.connect_timeout))
    warmups = [bodies[0]] * cfg.num_warmups  # as the reference: the first prompt, N times
    if tokenizer is None:
        first = prompts[0]
        _probe_usage(dataclasses.replace(plan, max_concurrency=1, request_rate=math.inf,
                                         num_warmups=0,
                                         request_timeout=min(cfg.request_timeout, 120.0)),
                     build_body(Prompt(first.prompt, first.prompt_len, 1), cfg.endpoint,
                                cfg.model, ignore_eos=cfg.ignore_eos, sampling=cfg.sampling))
    log: RecordLog | None = None
    if cfg.result_json is not None:
        cfg.result_json.parent.mkdir(parents=True, exist_ok=True)
        log = RecordLog(requests_path(cfg.result_json), secrets)
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
                log.write(RequestRecord.from_outcome(o, chunk_counts, first_ns[0]))
            bar.update(1)

    date = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    try:
        outcomes, duration_ns = run_coroutine(run_load(
            bodies, [p.prompt_len for p in prompts], plan, warmups, on_outcome, on_warmed))
    finally:
        bar.close()
        if log is not None:
            log.close()
    metrics = summarize(outcomes, [counts[o.index] for o in outcomes],
                        duration_ns=duration_ns, percentiles=cfg.percentiles,
                        goodput=dict(cfg.goodput), max_concurrency=cfg.max_concurrency,
                        request_rate=cfg.request_rate)
    result = MeasureResult.assemble(cfg, metrics, date, prompts_digest(prompts))
    if cfg.result_json is not None:
        tmp = cfg.result_json.with_suffix(cfg.result_json.suffix + ".tmp")
        text = json.dumps(result.to_json(), indent=2, allow_nan=False, default=str) + "\n"
        tmp.write_text(scrub_text(text, secrets), encoding="utf-8")
        tmp.replace(cfg.result_json)
    return result
