"""Reference results: typed and imported figures, their checks, and the table that sets
them beside a run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.recipe import load_recipe, resolve_paths
from benchlib.references import load_references, recipe_references, reference_table

REPO = Path(__file__).resolve().parents[3]
SEEDS = REPO / "params" / "seeds"

_REF = """\
references:
  - name: a
    source: a write-up
    hardware: 1× GPU
    engine: vllm 0.27.1
    checkpoint: w4a16
    measured_as: one request
    caveats: [checkpoint formats differ]
    scenario: chat
    concurrency: 1
    variant: v1
    results: {per_user_tok_s: 100.0, median_ttft_ms: 50.0, p99_ttft_ms: 80.0}
"""


def test_typed_figures_load_under_the_kits_keys(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(_REF)
    [(ref, figures)] = load_references(path)
    assert ref.caveats == ["checkpoint formats differ"]
    assert figures == {"per_user_tok_s": 100.0, "median_ttft_ms": 50.0, "p99_ttft_ms": 80.0}


@pytest.mark.parametrize(("edit", "says"), [
    (("per_user_tok_s", "tokens_per_second"), "unknown figure 'tokens_per_second'"),
    (("    source: a write-up\n", ""), "source"),
    (("name: a", "name: a b"), "name"),
])
def test_a_bad_reference_names_the_key(tmp_path: Path, edit: tuple[str, str],
                                       says: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(_REF.replace(*edit))
    with pytest.raises(UsageError) as info:
        load_references(path)
    assert says in str(info.value) and info.value.exit_code == 2


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    body = _REF.split("references:\n", 1)[1]
    path = tmp_path / "r.yaml"
    path.write_text("references:\n" + body + body)
    with pytest.raises(UsageError, match="unique: a"):
        load_references(path)


def test_seed_003_figures_as_the_write_up_prints_them() -> None:
    refs = {r.name: f for r, f in load_references(SEEDS / "references" / "003.yaml")}
    assert refs["vllm-dflash2-chat-3k"]["per_user_tok_s"] == 109.42
    assert refs["vllm-dflash2-chat-3k"]["median_ttft_ms"] == 1651.5
    assert refs["openjet-mtp-d4-chat-3k"]["per_user_tok_s"] == 77.20
    assert refs["openjet-mtp-off-chat-3k"]["per_user_tok_s"] == 48.74
    # the means of several requests stand beside the mean of their own rates
    assert refs["vllm-dflash2-greedy-5"]["mean_request_decode_rate"] == 181.8
    assert refs["openjet-mtp-d4-thinking-4"]["mean_request_decode_rate"] == 75.6


def test_seed_001_blocks_are_imported_exactly() -> None:
    refs = {r.name: (r, f) for r, f in load_references(SEEDS / "references" / "001.yaml")}
    assert len(refs) == 10
    ref, chat1 = refs["sglang-chat-c1"]
    assert (ref.scenario, ref.concurrency, ref.variant) == ("chat", 1, "sglang")
    assert chat1["median_ttft_ms"] == 94.55 and chat1["mean_tpot_ms"] == 8.75
    assert chat1["output_throughput"] == 108.37 and chat1["p99_itl_ms"] == 10.20
    _, summ64 = refs["sglang-summarization-c64"]
    assert summ64["max_concurrency"] == 64 and summ64["median_tpot_ms"] == 62.79


def test_seed_000_keeps_chunk_counts_out_of_token_keys() -> None:
    refs = {r.name: f for r, f in load_references(SEEDS / "references" / "000.yaml")}
    assert refs["glm-requests-script"]["mean_ttft_ms"] == pytest.approx(71.4)
    assert refs["glm-openai-script"]["duration"] == 4.8275
    for figures in refs.values():  # 366 chunks, 85.77 chunks/s: not tokens
        assert "total_output_tokens" not in figures and "per_user_tok_s" not in figures


def test_recipe_references_must_stand_beside_the_recipe(tmp_path: Path) -> None:
    recipe = resolve_paths(load_recipe(SEEDS / "003-qwen38-27b-cmp170hx.yaml"), REPO)
    assert len(recipe_references(recipe)) == 10
    bad = tmp_path / "r.yaml"
    for edit, says in ((("scenario: chat", "scenario: nope"), "scenario 'nope'"),
                       (("variant: v1", "variant: nope"), "variant 'nope'"),
                       (("concurrency: 1", "concurrency: 8"), "no concurrency 8")):
        bad.write_text(_REF.replace(*edit).replace("scenario: chat", "scenario: chat-3k")
                       .replace("variant: v1", "variant: vllm-dflash2-k7"))
        other = recipe.model_copy(update={"compare": recipe.compare.model_copy(
            update={"references": [bad]})})
        with pytest.raises(UsageError, match=says):
            recipe_references(other)
    missing = recipe.model_copy(update={"compare": recipe.compare.model_copy(
        update={"references": [tmp_path / "none.yaml"]})})
    with pytest.raises(UsageError, match="no such file"):
        recipe_references(missing)


def test_table_sets_each_figure_beside_the_runs(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(_REF)
    refs = load_references(path)
    measured = {("v1", "chat", 1): {"per_user_tok_s": 90.0, "median_ttft_ms": 55.0},
                ("v2", "chat", 1): {"per_user_tok_s": 1.0}}
    table = reference_table(refs, measured)
    rows = table.set_index("metric")
    assert rows.loc["per_user_tok_s", "measured"] == 90.0
    assert rows.loc["per_user_tok_s", "measured_over_published"] == pytest.approx(0.9)
    assert rows.loc["median_ttft_ms", "measured_over_published"] == pytest.approx(1.1)
    assert rows.loc["p99_ttft_ms", "measured"] is None or rows.loc["p99_ttft_ms",
                                                                   "measured"] != 80.0
    assert set(table["caveats"]) == {"checkpoint formats differ"}
    # nothing measured yet: the published figures still show
    empty = reference_table(refs, {})
    assert empty["published"].tolist() == [100.0, 50.0, 80.0]
    assert empty["measured"].isna().all()


def test_seed_outcomes_and_accuracy_are_figures_with_units() -> None:
    """Seed 003's long-context outcomes and open-jet's start-up, and seed 001's GSM8K, are
    reference figures (not caveat text), each with its unit."""
    refs = {r.name: (r, f) for r, f in load_references(SEEDS / "references" / "003.yaml")}
    vllm, figures = refs["vllm-dflash2-long-context"]
    assert figures == {"max_completed_input_len": 6603, "failed_at_input_len": 9472}
    assert vllm.scenario == "long-context" and vllm.variant == "vllm-dflash2-k7"
    assert refs["openjet-mtp-d4-long-context"][1] == {"max_completed_input_len": 18976}
    assert refs["openjet-startup"][1] == {"startup_s_at_most": 10}
    assert refs["vllm-dflash2-chat-3k"][1]["startup_s"] == 427
    table = reference_table([refs[n] for n in ("vllm-dflash2-long-context", "openjet-startup",
                                               "vllm-dflash2-chat-3k")], {})
    units = dict(zip(table["metric"], table["unit"], strict=True))
    assert units == {"max_completed_input_len": "tokens", "failed_at_input_len": "tokens",
                     "startup_s_at_most": "s", "startup_s": "s", "per_user_tok_s": "tok/s",
                     "median_ttft_ms": "ms", "mean_input_tokens": "tokens",
                     "mean_output_tokens": "tokens"}
    sgl = {r.name: (r, f) for r, f in load_references(SEEDS / "references" / "001.yaml")}
    gsm, figures = sgl["sglang-few-shot-gsm8k"]
    assert figures == {"gsm8k_accuracy": 0.845, "gsm8k_invalid": 0.0,
                       "gsm8k_latency_s": 8.431, "gsm8k_output_throughput": 2195.387}
    assert gsm.scenario is None and gsm.variant == "sglang"
    # set beside the run's own: a variant's run-wide figures, and a ramp's reach
    measured = {("sglang", "", 0): {"gsm8k_accuracy": 0.8, "gsm8k_latency_s": 9.0},
                ("vllm-dflash2-k7", "long-context", 1): {"max_completed_input_len": 9472.0}}
    rows = reference_table([(gsm, figures), (vllm, refs["vllm-dflash2-long-context"][1])],
                           measured).set_index("metric")
    assert rows.loc["gsm8k_accuracy", "measured"] == 0.8
    assert rows.loc["gsm8k_accuracy", "unit"] == "fraction"
    assert rows.loc["gsm8k_latency_s", "measured_over_published"] == pytest.approx(9 / 8.431)
    assert rows.loc["max_completed_input_len", "measured"] == 9472.0
