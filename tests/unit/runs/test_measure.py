"""03_measure's results typed: the flat results object read into its groups and written
back as it was; a stored run's results load whole and dump byte-equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlib.accuracy import AccuracyResult, FewShotResult
from benchlib.runs import AccuracyFailed, Measurement, MeasureStep

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_run" / "h200-llamacpp"
FLAT = {"chat/c1": {"scenario": "chat", "concurrency": 1, "completed": 4, "failed": 0,
                    "median_tpot_text_ms": 2.0, "p90_ttft_ms": 3.0, "backend": "benchlib"},
        "long/ramp": {"scenario": "long", "kind": "ramp", "input_lens": [32, 64],
                      "steps": [{"input_len": 32, "ok": True}],
                      "max_completed_input_len": 32, "failed_at_input_len": None},
        "accuracy/gsm8k": {"error": "lm-eval is not installed"},
        "engine_lost": {"after_scenario": "chat", "error": "gone"}}


def _same(dumped: object, data: object) -> bool:
    """Equal as JSON text (an int read into a float field would print 6.0, not 6)."""
    return json.dumps(dumped, sort_keys=True) == json.dumps(data, sort_keys=True)


def test_the_flat_object_reads_into_groups_and_writes_back_as_it_was() -> None:
    step = MeasureStep.model_validate(FLAT)
    m = step.measurement("chat", 1)
    assert m is not None and m.completed == 4 and m.per_user_tok_s == 500.0
    assert m.extra == {"p90_ttft_ms": 3.0, "backend": "benchlib"}  # the rest, as JSON
    assert step.ramps["long"].max_completed_input_len == 32
    assert isinstance(step.accuracy["gsm8k"], AccuracyFailed)
    assert step.engine_lost is not None and step.engine_lost.after_scenario == "chat"
    assert step.model_dump(mode="json", exclude_unset=True) == FLAT


@pytest.mark.parametrize("variant", ["bf16", "q4_k_m"])
def test_a_stored_runs_results_load_and_dump_byte_equal(variant: str) -> None:
    data = json.loads((DATA / variant / ".results" / "03_measure.json").read_text())
    step = MeasureStep.model_validate(data)
    assert step.measurements and all(m.timing is not None for m in step.measurements.values())
    assert _same(step.model_dump(mode="json", exclude_unset=True), data)


def test_accuracy_is_read_by_its_task() -> None:
    few = FewShotResult(endpoint="/v1/completions", n=2, num_shots=5, max_tokens=8,
                        parallel=1, accuracy=0.5, invalid=0.0, latency_s=1.0,
                        output_tokens=10, output_throughput=10.0, failed=0, samples="s")
    lm = AccuracyResult(task="gsm8k_local", lm_eval_version=None, endpoint="completions",
                        n=2, num_fewshot=4, strict_match=0.5, strict_match_stderr=0.5,
                        flexible_extract=0.5, flexible_extract_stderr=0.5, seconds=1.0,
                        samples=None)
    step = MeasureStep.model_validate({"accuracy/few_shot_gsm8k": few.model_dump(),
                                       "accuracy/gsm8k": lm.model_dump()})
    assert step.accuracy == {"few_shot_gsm8k": few, "gsm8k": lm}


def test_synthetic_is_any_measurements_flag() -> None:
    assert MeasureStep().synthetic is None
    step = MeasureStep(measurements={"a/c1": Measurement(synthetic=False),
                                     "b/c1": Measurement(synthetic=True)})
    assert step.synthetic is True


def test_a_record_added_to_fresh_results_is_saved() -> None:
    """Saved with only their given keys, fresh results keep what was added to a group."""
    step = MeasureStep()
    step.measurements["a/c1"] = Measurement.model_validate({"completed": 1})
    assert step.model_dump(mode="json", exclude_unset=True) == {"a/c1": {"completed": 1}}


def test_a_measurements_fields_are_the_results_or_the_steps() -> None:
    """A field renamed in benchlib.measure.MeasureResult fails here, not as a None in a
    report: each Measurement field is the result's, a percentile key, or the step's own."""
    from benchlib.measure import MeasureResult

    steps_own = {"scenario", "concurrency", "input_len", "output_len", "result_json",
                 "first_errors", "seeding", "server_metrics", "speculative", "kv_usage_vs_plan",
                 "energy", "sdk"}
    percentiles = {"p99_ttft_ms", "p99_tpot_ms", "p99_ttft_from_schedule_ms"}
    assert set(Measurement.model_fields) - steps_own - percentiles \
        <= set(MeasureResult.model_fields)
