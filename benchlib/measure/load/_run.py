"""One measurement, end to end: prompts → load → per-request log → metrics → files.

Nothing measured is lost: each request's :class:`~benchlib.measure.RequestRecord` goes to
``<result stem>.requests.jsonl`` the moment it ends (kill-safe, see
:mod:`benchlib.measure.results._records`). The result JSON (:meth:`MeasureResult.to_json
<benchlib.measure.MeasureResult.to_json>`) is written atomically, even when every request
failed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import math
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from benchlib._exceptions import UsageError
from benchlib._secrets import scrub_text
from benchlib.measure.load._conversations import read_sessions, summarize_conversations
from benchlib.measure.load._converse import converse
from benchlib.measure.load._distribute import load_in_workers
from benchlib.measure.load._loadgen import LoadPlan, run_coroutine, run_load
from benchlib.measure.load._split import WorkersInfo, plan_workers
from benchlib.measure.load._tokens import NO_TOKEN_COUNT, load_tokenizer, outcome_finisher
from benchlib.measure.results._records import RecordLog, RequestRecord, requests_path
from benchlib.measure.results._result import MeasureResult, RepeatSummary
from benchlib.measure.stats._intervals import Repeat, intervals_of
from benchlib.measure.stats._metrics import summarize
from benchlib.measure.wire._pool import check_tls
from benchlib.measure.wire._request import Prompt, RequestOutcome, build_body
from benchlib.measure.workload._config import MeasureConfig
from benchlib.measure.workload._datasets import _count, file_prompts, random_prompts
from benchlib.measure.workload._prefix_share import TEXT_DATASETS, prefix_share
from benchlib.measure.workload._sampling import sent_keys
from benchlib.measure.workload._seeds import bootstrap_seed, repeat_seed, warmup_seed
from benchlib.measure.workload._sglang_random import sglang_random_prompts
from benchlib.measure.workload._text_prompts import text_prompts
from benchlib.measure.workload._trace import read_trace, trace_offsets, trace_prompts

__all__ = ["NO_TOKEN_COUNT", "build_requests", "load_tokenizer", "measure", "measure_once",
           "repeat_configs", "repeat_path", "run_coroutine", "trace_rate_check",
           "warmup_bodies"]

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
    skip = cfg.dataset_skip if cfg.dataset in ("file", "conversations") else 0
    if cfg.dataset == "random":
        prompts = random_prompts(tokenizer, num_prompts=cfg.num_prompts, input_len=cfg.input_len,
                                 output_len=cfg.output_len or 1,
                                 range_ratio=cfg.random_range_ratio,
                                 range_mode=cfg.range_ratio_mode, seed=cfg.seed)
    elif cfg.dataset == "trace":
        assert cfg.dataset_path is not None
        prompts = trace_prompts(tokenizer, read_trace(cfg.dataset_path, cfg.num_prompts),
                                seed=cfg.seed)
    elif cfg.dataset == "conversations":
        assert cfg.dataset_path is not None
        if cfg.endpoint != "chat":
            raise UsageError("--endpoint", "the conversations dataset sends chat messages: "
                             "use --endpoint chat")
        prompts = [Prompt([{"role": "user", "content": t} for t in s.turns],
                          _count(tokenizer, [{"role": "user", "content": s.turns[0]}]),
                          cfg.output_len)
                   for s in read_sessions(cfg.dataset_path, skip + cfg.num_prompts)[skip:]]
    elif cfg.dataset == "text":
        prompts = text_prompts(tokenizer, num_prompts=cfg.num_prompts, input_len=cfg.input_len,
                               output_len=cfg.output_len or 1,
                               range_ratio=cfg.random_range_ratio,
                               range_mode=cfg.range_ratio_mode, seed=cfg.seed)
    elif cfg.dataset == "sglang-random":
        if tokenizer is None:
            raise UsageError("--tokenizer", "the sglang-random dataset cuts text to token "
                             "counts: pass --tokenizer PATH")
        prompts = sglang_random_prompts(tokenizer, num_prompts=cfg.num_prompts,
                                        input_len=cfg.input_len, output_len=cfg.output_len or 1,
                                        range_ratio=cfg.random_range_ratio, seed=cfg.seed)
    else:
        assert cfg.dataset_path is not None
        prompts = file_prompts(cfg.dataset_path, tokenizer,
                               num_prompts=skip + cfg.num_prompts,
                               output_len=cfg.output_len)[skip:]
    if skip and len(prompts) < cfg.num_prompts:  # a dealt file ran out (trace: its length)
        raise UsageError("--repeats", f"{cfg.dataset_path} runs out after {skip} lines: "
                         f"each repeat needs {cfg.num_prompts} prompts (and the warmups) no "
                         "earlier repeat sent; add lines or lower repeats or num_prompts")
    bodies = [build_body(p, cfg.endpoint, cfg.model, ignore_eos=cfg.ignore_eos,
                         sampling=cfg.sampling) for p in prompts]
    return prompts, bodies


def warmup_bodies(cfg: MeasureConfig, tokenizer: Any | None, bodies: list[bytes]
                  ) -> list[bytes]:
    """The warmups' request bodies (:mod:`benchlib.measure.workload._seeds`): prompts of the same
    distribution that no measured request repeats (random and text: drawn with the warmup
    seed; a file: the lines after the measured ones), or, with ``warmups_like_vllm``, the first
    measured prompt each time, as ``vllm bench serve`` sends them."""
    n = cfg.num_warmups
    if n == 0:
        return []
    if cfg.warmups_like_vllm:
        return [bodies[0]] * n
    if cfg.dataset == "conversations":  # first turns of the sessions after the measured
        assert cfg.dataset_path is not None
        first = cfg.dataset_skip + len(bodies)
        later = read_sessions(cfg.dataset_path, first + n)[first:]
        if len(later) < n:
            raise UsageError("--num-warmups", f"{cfg.dataset_path} holds "
                             f"{len(bodies) + len(later)} sessions: {len(bodies)} measured "
                             f"and {n} warmups need more (a warmup never repeats a measured "
                             "session's prompt). Add sessions or lower num_warmups")
        return [build_body(Prompt(s.turns[0], 0, cfg.output_len), "chat", cfg.model,
                           ignore_eos=cfg.ignore_eos, sampling=cfg.sampling) for s in later]
    if cfg.dataset != "file":  # drawn: the same distribution from the warmups' own seed
        own = cfg.model_copy(update={"num_prompts": n, "seed": warmup_seed(cfg.seed)})
        return build_requests(own, tokenizer)[1]
    assert cfg.dataset_path is not None
    more = file_prompts(cfg.dataset_path, tokenizer,
                        num_prompts=cfg.dataset_skip + len(bodies) + n,
                        output_len=cfg.output_len)[cfg.dataset_skip + len(bodies):]
    if len(more) < n:
        raise UsageError("--num-warmups", f"{cfg.dataset_path} holds {len(bodies) + len(more)} "
                         f"prompts: {len(bodies)} measured and {n} warmups need "
                         f"{len(bodies) + n} distinct ones (a warmup never repeats a measured "
                         "prompt). Add prompts, lower num_warmups, or pass "
                         "--warmups-like-vllm to warm up on the first measured prompt")
    return [build_body(p, cfg.endpoint, cfg.model, ignore_eos=cfg.ignore_eos,
                       sampling=cfg.sampling) for p in more[:n]]


def trace_rate_check(cfg: MeasureConfig) -> None:
    """A trace sets its own release times: a request rate beside it is refused."""
    if cfg.dataset == "trace" and not math.isinf(cfg.request_rate):
        raise UsageError("--request-rate", "the trace dataset releases each request at "
                         "its own timestamp: leave the rate unset (scale the trace's "
                         "times with --trace-time-scale)")


def repeat_path(result_json: Path, r: int) -> Path:
    """Where repeat ``r`` (0-based) of a measurement writes: the result JSON itself for the
    first, ``<stem>.r{r}.json`` beside it for the others."""
    return result_json if r == 0 else result_json.with_name(f"{result_json.stem}.r{r}.json")


def repeat_configs(cfg: MeasureConfig) -> list[MeasureConfig]:
    """Each repeat's own one-run configuration, in order (what :func:`measure` runs, and what
    ``benchlib run --check`` builds without an engine).

    The engine is warm after the first repeat: later ones send no warmups (so the server's
    counters over the whole measurement hold the measured requests and the first warmups
    only). A file's or a conversation set's lines do not change with the seed: each repeat
    takes the lines after the earlier repeats' (and the first one's warmups)."""
    warm = 0 if cfg.warmups_like_vllm else cfg.num_warmups
    dealt = cfg.dataset in ("file", "conversations")
    out: list[MeasureConfig] = []
    for r in range(cfg.repeats):
        skip = r * cfg.num_prompts + (warm if r else 0) if dealt else 0
        out.append(cfg.model_copy(update={
            "repeats": 1, "seed": repeat_seed(cfg.seed, r), "dataset_skip": cfg.dataset_skip + skip,
            "num_warmups": cfg.num_warmups if r == 0 else 0,
            "result_json": None if cfg.result_json is None else repeat_path(cfg.result_json, r)}))
    return out


def measure(cfg: MeasureConfig, api_key: str | None = None,
            out: IO[str] | None = None,
            on_warmed: Callable[[], None] | None = None,
            headers: Sequence[tuple[str, str]] = ()) -> MeasureResult:
    """Run the measurement ``cfg`` describes ``cfg.repeats`` times and return the first
    repeat's result (also written to ``cfg.result_json``, as :meth:`MeasureResult.to_json`,
    with the ``.requests.jsonl`` beside it, when set), with ``repeats`` (each repeat's
    headline figures and files: :func:`repeat_path`) and ``intervals`` (bootstrap 95 %
    intervals over every repeat's requests: :mod:`benchlib.measure.stats._intervals`) added. The
    keys named like ``vllm bench serve``'s are the first repeat's, which is seeded
    ``cfg.seed`` as ``vllm bench serve --seed`` would be; repeat r ≥ 1 draws fresh prompts
    from :func:`~benchlib.measure.workload._seeds.repeat_seed`, without warmups (the engine
    is warm).
    ``on_warmed`` is called once, before the first repeat's timed load (a server-metrics
    sampler takes its baseline there, so its counters cover every repeat).
    Arguments as :func:`measure_once`.
    """
    results: list[MeasureResult] = []
    repeats: list[Repeat] = []
    for r, own in enumerate(repeat_configs(cfg)):
        result, records = measure_once(own, api_key, out, on_warmed if r == 0 else None,
                                       headers)
        results.append(result)
        repeats.append(Repeat.of(records, result.output_throughput))
    intervals = intervals_of(repeats, bootstrap_seed(cfg.seed))
    first = results[0].model_copy(update={
        "intervals": intervals,
        "repeats": [RepeatSummary.of(r, res) for r, res in enumerate(results)]})
    if cfg.result_json is not None:
        write_result(cfg.result_json, first, [v for v in (api_key, *(value for _, value in
                                                                    headers)) if v])
    return first


def write_result(path: Path, result: MeasureResult, secrets: Sequence[str]) -> None:
    """The result JSON, atomically, secrets scrubbed."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    text = json.dumps(result.to_json(), indent=2, allow_nan=False, default=str) + "\n"
    tmp.write_text(scrub_text(text, secrets), encoding="utf-8")
    tmp.replace(path)


def measure_once(cfg: MeasureConfig, api_key: str | None = None,
                 out: IO[str] | None = None,
                 on_warmed: Callable[[], None] | None = None,
                 headers: Sequence[tuple[str, str]] = ()
                 ) -> tuple[MeasureResult, list[RequestRecord]]:
    """Run the measurement ``cfg`` describes once and return its result (also written to
    ``cfg.result_json``, as :meth:`MeasureResult.to_json`, with the ``.requests.jsonl``
    beside it, when set) and its requests' records. ``on_warmed`` is called once the
    warmups are done, right before the timed load (a server-metrics sampler takes its
    baseline there).

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
    if cfg.dataset == "trace":
        trace_rate_check(cfg)
        assert cfg.dataset_path is not None
        plan = dataclasses.replace(plan, offsets=tuple(trace_offsets(
            read_trace(cfg.dataset_path, cfg.num_prompts), cfg.trace_time_scale)))
    tokenizer = load_tokenizer(cfg.tokenizer) if cfg.tokenizer is not None else None
    prompts, bodies = build_requests(cfg, tokenizer)
    # what a prefix cache could serve of a text dataset, counted before any clock starts
    prefix = (prefix_share(tokenizer, prompts, *cfg.prefix_unit()) if tokenizer is not None
              and cfg.dataset in TEXT_DATASETS and len(prompts) > 1 else None)
    run_coroutine(check_tls(plan.endpoint(), plan.connect_timeout))
    warmups = warmup_bodies(cfg, tokenizer, bodies)
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
    records: list[RequestRecord] = []
    lock = threading.Lock()

    def sink(worker: int, o: RequestOutcome, chunk_counts: list[float]) -> None:
        with lock:  # may run in the load's worker thread (huge outputs)
            counts[o.index] = chunk_counts
            if not first_ns:
                first_ns.append(o.start_ns)
            records.append(RequestRecord.from_outcome(o, chunk_counts, first_ns[0]))
            if log is not None:
                log.write(records[-1])
            bar.update(1)

    date = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    split = plan_workers(cfg)
    info: WorkersInfo | None = None
    finish = outcome_finisher(tokenizer)
    try:
        if cfg.dataset == "conversations":
            outcomes, duration_ns = converse(cfg, plan, tokenizer, warmups,
                                             lambda o, _: sink(0, o, finish(o)), on_warmed)
        elif split.count == 1 and split.backend == "processes":
            outcomes, duration_ns = run_coroutine(run_load(
                bodies, [p.prompt_len for p in prompts], plan, warmups,
                lambda o, _: sink(0, o, finish(o)), on_warmed))
        else:
            outcomes, duration_ns, info = load_in_workers(
                split, plan, bodies, [p.prompt_len for p in prompts], cfg.tokenizer, sink,
                finish, on_warmed)
    finally:
        bar.close()
        if log is not None:
            log.close()
    metrics = summarize(outcomes, [counts[o.index] for o in outcomes],
                        duration_ns=duration_ns, percentiles=cfg.percentiles,
                        goodput=dict(cfg.goodput), max_concurrency=cfg.max_concurrency,
                        request_rate=cfg.request_rate)
    result = MeasureResult.assemble(cfg, metrics, date, prompts_digest(prompts), info,
                                    sent_keys(bodies, cfg.sampling), prefix)
    if cfg.dataset == "conversations":
        result = result.model_copy(update={"conversations": summarize_conversations(
            outcomes, len(prompts), cfg.conversation_think_s)})
    if cfg.result_json is not None:
        write_result(cfg.result_json, result, secrets)
    return result, records
