"""llama.cpp for real: ``llama-server`` (``make llamacpp``) serving the tiny model's GGUF
(``make model-gguf``), launched through the kit's own path (``plan_launch`` →
``EngineProcess``), measured with :func:`benchlib.measure.measure`, its log read by
:func:`benchlib.engines.parse_engine_log`, its process group gone afterwards.

``$BENCHLIB_LLAMA_SERVER`` (the binary) and ``$BENCHLIB_TINY_GGUF`` (the folder with
``tiny-llama-f16.gguf`` and ``tiny-llama-q8_0.gguf``) are what ``make test`` passes; without
them the kit's own ``.engines/llamacpp`` and ``.models/tiny-llama-gguf`` are used, and the
tests skip when those do not exist either. The prompts' tokenizer is the tiny model's
Hugging Face folder: the GGUF files carry its vocabulary.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchlib.engines import EngineLogFacts, EngineProcess, parse_engine_log, plan_launch
from benchlib.engines._ready import first_token
from benchlib.measure import MeasureConfig, MeasureResult, RequestRecord, measure, read_requests
from benchlib.recipe import EngineSpec, ModelSpec, Speculative

REPO = Path(__file__).resolve().parents[2]
SERVER = Path(os.environ.get("BENCHLIB_LLAMA_SERVER")
              or REPO / ".engines" / "llamacpp" / "bin" / "llama-server")
GGUF_DIR = Path(os.environ.get("BENCHLIB_TINY_GGUF") or REPO / ".models" / "tiny-llama-gguf")
TARGET, DRAFT = GGUF_DIR / "tiny-llama-f16.gguf", GGUF_DIR / "tiny-llama-q8_0.gguf"
BUILD = SERVER.parent.parent / "BUILD.json"
CTX, SLOTS, OUTPUT_LEN, PROMPTS = 2048, 2, 24, 4

pytestmark = pytest.mark.skipif(
    not (SERVER.is_file() and TARGET.is_file() and DRAFT.is_file()),
    reason=f"no llama-server ({SERVER}) or tiny GGUF ({GGUF_DIR}): make llamacpp model-gguf")


@dataclass
class Served:
    """One llama-server run: its measurements per endpoint, its log's facts, its /metrics."""

    results: dict[str, MeasureResult]
    records: dict[str, list[RequestRecord]]
    facts: EngineLogFacts
    log: str
    metrics: str
    group_gone: bool | None


@contextmanager
def _engine(tmp_path: Path, speculative: Speculative) -> Iterator[tuple[EngineProcess, str]]:
    """llama-server on the F16 target, started the way ``02_launch`` starts it (``-nr``: no
    weight repacking, as the demo recipe says why: with a draft model b11312 dies of SIGSEGV
    at start on an AMX CPU when it repacks)."""
    engine = EngineSpec(kind="llamacpp", executable=SERVER, max_model_len=CTX,
                        ready_timeout_s=180, args=["-np", str(SLOTS), "-nr"],
                        speculative=speculative)
    model = ModelSpec(id="tiny-llama", format="gguf", local_path=TARGET)
    plan = plan_launch(engine, model, TARGET)
    assert plan.ready_url.endswith("/health") and "--metrics" in plan.argv
    process = EngineProcess(plan.resolved_argv(), log_path=tmp_path / "engine.log",
                            ready_url=plan.ready_url, env=plan.env,
                            ready_timeout=engine.ready_timeout_s)
    with process:
        yield process, plan.base_url


def _serve(tmp_path: Path, tiny_model: Path, speculative: Speculative) -> Served:
    results: dict[str, MeasureResult] = {}
    records: dict[str, list[RequestRecord]] = {}
    with _engine(tmp_path, speculative) as (process, base_url):
        assert first_token(base_url, "tiny-llama", chat=True) is None
        for endpoint in ("chat", "completions"):
            out = tmp_path / f"{endpoint}.json"
            # no concurrency limit: the pool opens one connection per request, so none is
            # reused: llama-server closes every connection after a streamed response (its
            # headers say keep-alive), and a request reusing one before that FIN arrives
            # fails "closed by the server before responding"
            cfg = MeasureConfig(base_url=base_url, model="tiny-llama", endpoint=endpoint,
                                tokenizer=tiny_model, input_len=32, output_len=OUTPUT_LEN,
                                num_prompts=PROMPTS, result_json=out, disable_tqdm=True)
            results[endpoint] = measure(cfg)
            records[endpoint] = read_requests(out.with_name(out.stem + ".requests.jsonl"))
        with urllib.request.urlopen(base_url + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
    log = process.log_path.read_text(errors="replace")
    return Served(results, records, parse_engine_log(log), log, metrics, process.group_gone)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Served:
    return _serve(tmp_path_factory.mktemp("llamacpp"), tiny_model, Speculative())


@pytest.fixture(scope="module")
def speculative(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Served:
    """The Q8_0 file of the same weights drafts for the F16 target, through the recipe's
    speculative setting (b11312: ``--spec-type draft-simple --spec-draft-model FILE
    --spec-draft-n-max 4 --spec-draft-n-min 1``; ``-md`` alone loads the draft and never
    uses it, and ``--draft-max`` / ``--draft-min`` are removed)."""
    spec = Speculative(method="draft", k=4, draft_model=DRAFT,
                       options={"spec_draft_n_min": 1})
    return _serve(tmp_path_factory.mktemp("llamacpp-spec"), tiny_model, spec)


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_measured_tokens_come_from_the_server(plain: Served, endpoint: str) -> None:
    result = plain.results[endpoint]
    assert result.completed == PROMPTS and result.failed == 0, result.errors
    # ignore_eos + max tokens honoured; counted by the server's usage, not the tokenizer
    assert result.output_lens == [OUTPUT_LEN] * PROMPTS
    assert result.output_tokens_source.usage == PROMPTS
    for record in plain.records[endpoint]:
        assert record.output_tokens == OUTPUT_LEN and record.output_tokens_source == "usage"
        timings = record.server_timings
        assert timings is not None, "llama-server's last streamed event carries timings"
        assert timings["predicted_n"] == OUTPUT_LEN
        assert timings["prompt_n"] + timings["cache_n"] == record.server_prompt_tokens
        assert "draft_n" not in timings
        # one event per token: never more text events than tokens
        assert 0 < len(record.chunk_tokens) <= OUTPUT_LEN


def test_log_facts_and_metrics(plain: Served) -> None:
    facts = plain.facts
    # max_model_len is per request: the kit gives llama.cpp -c max_model_len × slots
    assert facts.context_tokens == CTX * SLOTS and facts.slots == SLOTS
    assert facts.slot_context_tokens == CTX
    assert facts.kv_cache_tokens == CTX * SLOTS
    assert facts.kv_cache_gib is not None and facts.kv_cache_gib > 0
    assert facts.threads is not None and facts.threads >= 1
    assert facts.model_loading_gib is not None and facts.model_loading_gib > 0
    assert facts.model_file_type == "F16"
    assert facts.commit is not None and facts.build_number is not None
    if BUILD.is_file():  # the build's own record: the binary says the same
        build = json.loads(BUILD.read_text())
        assert facts.commit == build["commit"][:len(facts.commit)]
        assert facts.build_number == (build["build_number"] or 0)
    assert not facts.failures, facts.failures
    assert "llamacpp:tokens_predicted_total" in plain.metrics
    assert plain.group_gone is True


def test_speculative_decoding_with_the_q8_draft(speculative: Served) -> None:
    assert speculative.facts.draft_model_file_type == "Q8_0"
    for endpoint in ("chat", "completions"):
        result = speculative.results[endpoint]
        assert result.completed == PROMPTS, result.errors
        assert result.output_lens == [OUTPUT_LEN] * PROMPTS
        for record in speculative.records[endpoint]:
            timings = record.server_timings
            assert timings is not None and timings["predicted_n"] == OUTPUT_LEN
            assert timings["draft_n"] > 0
            assert 0 <= timings["draft_n_accepted"] <= timings["draft_n"]
            # accepted drafts still stream one event per token (process_token per token)
            assert 0 < len(record.chunk_tokens) <= OUTPUT_LEN
        records = speculative.records[endpoint]
        drafted = sum((r.server_timings or {}).get("draft_n", 0) for r in records)
        accepted = sum((r.server_timings or {}).get("draft_n_accepted", 0) for r in records)
        print(f"llama.cpp draft {endpoint}: tokens/chunk {result.mean_tokens_per_chunk}, "
              f"coalesced gaps {sum(r.coalesced_gaps for r in records)} of "
              f"{sum(len(r.chunk_tokens) - 1 for r in records)}, draft_n {drafted:g}, "
              f"draft_n_accepted {accepted:g}")
    assert speculative.group_gone is True
