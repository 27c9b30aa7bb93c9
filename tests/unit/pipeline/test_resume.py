"""What a resumed run skips: 02_launch only when no new engine is started, a ramp once it
found its limit, a scenario only when every request is accounted for and failures are
within the recipe's tolerance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchlib._exceptions import BenchlibError
from benchlib.pipeline import RunFolder, step_table
from benchlib.pipeline._resume import done_steps, ramp_done, scenario_done
from benchlib.pipeline._sidecar import Sidecar, write_sidecar
from benchlib.pipeline.steps import measure as _steps
from benchlib.recipe import Recipe, Scenario, recipe_from_dict
from benchlib.runs import Measurement, MeasureStep, Ramp

BASE = "http://127.0.0.1:9"


def make_recipe(engine: dict[str, Any], scenarios: list[dict[str, Any]]) -> Recipe:
    return recipe_from_dict({"name": "t", "model": {"id": "m"}, "engine": engine,
                             "scenarios": scenarios})


def sidecar(run_dir: Path, step: str, status: str) -> None:
    hardware = {"gpus": [], "gpu_count": 0, "os": "Linux", "kernel": "6", "machine": "x86_64",
                "cpu": {"model": "cpu", "logical_cores": 2, "memory_total_gib": 4.0}}
    write_sidecar(run_dir / f"{step}.json", Sidecar.model_validate({
        "step": step, "notebook": f"{step}.ipynb", "status": status, "started_at": "t",
        "finished_at": "t", "duration_s": 0.0, "params": {},
        "provenance": {"kit_commit": None, "kit_dirty": None, "engine": {"name": "vllm"},
                       "model": {"id": "m"}, "hardware": hardware, "python": "CPython",
                       "packages": {}, "environment_yml_sha256": None}}))


SCENARIO = {"name": "chat", "concurrencies": [4], "num_prompts": 8}


def test_launch_runs_again_when_measure_needs_a_new_engine(tmp_path: Path) -> None:
    for step, status in [("00_plan", "ok"), ("01_download", "ok"), ("02_launch", "ok"),
                         ("03_measure", "failed")]:
        sidecar(tmp_path, step, status)
    folder, table = RunFolder(path=tmp_path), step_table()
    vllm = make_recipe({"kind": "vllm", "python": "/bin/python"}, [SCENARIO])
    steps = [table[name] for name in vllm.steps]
    assert done_steps(vllm, folder, steps) == {"00_plan", "01_download"}
    # an endpoint is not started by the runner: its launch record still describes it
    endpoint = make_recipe({"kind": "endpoint", "base_url": BASE}, [SCENARIO])
    assert done_steps(endpoint, folder, steps) == {"00_plan", "01_download", "02_launch"}
    # measure done too: no engine is started, the launch record stands
    sidecar(tmp_path, "03_measure", "ok")
    assert "02_launch" in done_steps(vllm, folder, steps)


@pytest.mark.parametrize("record,tolerance,done", [
    ({"completed": 8, "failed": 0}, 0.0, True),
    ({"completed": 7, "failed": 1}, 0.0, False),    # old code: done (completed > 0)
    ({"completed": 7, "failed": 1}, 0.125, True),   # within the recipe's tolerance
    ({"completed": 6, "failed": 2}, 0.125, False),
    ({"completed": 5, "failed": 0}, 1.0, False),    # requests not accounted for
    ({"completed": 0, "failed": 8}, 1.0, False),    # nothing to report
    (None, 1.0, False),
])
def test_scenario_done(record: dict[str, int] | None, tolerance: float, done: bool) -> None:
    measured = Measurement.model_validate(record) if record is not None else None
    assert scenario_done(measured, 8, tolerance) is done


class FakeResult(SimpleNamespace):
    """Stands in for measure's result: its result JSON's object."""

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


class FakeMeasure:
    """Stands in for :func:`benchlib.measure.measure`: records what was asked; fails every
    request whose input is at least ``fail_from`` tokens, and ``fail`` of the others."""

    def __init__(self, fail_from: int = 10**9, fail: int = 0) -> None:
        self.calls: list[tuple[int, int]] = []
        self.fail_from = fail_from
        self.fail = fail

    def __call__(self, cfg: Any, api_key: str | None = None,
                 on_warmed: Callable[[], None] | None = None) -> FakeResult:
        self.calls.append((cfg.input_len, cfg.num_prompts))
        n = cfg.num_prompts
        failed = n if cfg.input_len >= self.fail_from else self.fail
        return FakeResult(completed=n - failed, failed=failed,
                          errors=["http 500"] * failed + [""] * (n - failed),
                          median_ttft_ms=1.0, median_tpot_ms=1.0)


def run_measure(tmp_path: Path, recipe: Recipe, results: dict[str, Any],
                monkeypatch: pytest.MonkeyPatch, fake: FakeMeasure) -> dict[str, Any]:
    monkeypatch.setattr(_steps, "measure", fake)
    monkeypatch.setattr(Scenario, "measure_config", lambda self, **kw: SimpleNamespace(**kw))
    monkeypatch.setattr(_steps, "_alive", lambda *a: True)
    path = tmp_path / "03_measure.results.json"
    path.write_text(json.dumps(results))
    try:
        _steps.measure_scenarios(recipe, base_url=BASE, run_dir=tmp_path, results_path=path)
    finally:
        out: dict[str, Any] = json.loads(path.read_text())
    return out


RAMP = {"name": "long", "output_len": 4, "ramp_input_lens": [32, 128, 4096, 8192]}


def ramp_record(max_completed: int | None, failed_at: int | None) -> dict[str, Any]:
    lens = RAMP["ramp_input_lens"]
    assert isinstance(lens, list)
    steps = [{"input_len": n, "ok": True} for n in lens if n <= (max_completed or 0)]
    if failed_at:
        steps.append({"input_len": failed_at, "ok": False, "error": "connection reset"})
    return {"scenario": "long", "kind": "ramp", "input_lens": lens, "steps": steps,
            "max_completed_input_len": max_completed, "failed_at_input_len": failed_at,
            "error": "connection reset" if failed_at else None,
            "engine_alive_after": failed_at is None}


def test_a_ramp_that_found_its_limit_is_not_run_again(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = make_recipe({"kind": "endpoint", "base_url": BASE}, [RAMP])
    earlier = ramp_record(128, 4096)
    fake = FakeMeasure(fail_from=4096)
    out = run_measure(tmp_path, recipe, {"long/ramp": earlier}, monkeypatch, fake)
    assert fake.calls == []  # old code re-ran it, and crashed the engine again
    assert out["long/ramp"] == earlier


def test_a_ramp_cut_short_goes_on_from_its_last_length(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = make_recipe({"kind": "endpoint", "base_url": BASE}, [RAMP])
    assert not ramp_done(Ramp.model_validate(ramp_record(128, None)), recipe.scenarios[0])
    fake = FakeMeasure(fail_from=8192)
    out = run_measure(tmp_path, recipe, {"long/ramp": ramp_record(128, None)}, monkeypatch,
                      fake)
    assert [n for n, _ in fake.calls] == [4096, 8192]
    ramp = out["long/ramp"]
    assert ramp["max_completed_input_len"] == 4096 and ramp["failed_at_input_len"] == 8192
    assert [s["input_len"] for s in ramp["steps"]] == [32, 128, 4096, 8192]
    assert ramp_done(Ramp.model_validate(ramp), recipe.scenarios[0])


def test_a_ramp_saves_each_length_as_it_completes(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed mid-ramp keeps the lengths that completed (old code saved nothing of
    the ramp until it ended)."""
    recipe = make_recipe({"kind": "endpoint", "base_url": BASE}, [RAMP])
    saved: list[Any] = []
    real_save = _steps.save_results  # type: ignore[attr-defined]

    def spy(path: Any, results: MeasureStep, exclude_unset: bool = False) -> None:
        ramp = results.ramps.get("long")
        saved.append(ramp.model_dump(mode="json") if ramp else None)
        real_save(path, results, exclude_unset=exclude_unset)

    monkeypatch.setattr(_steps, "save_results", spy)
    run_measure(tmp_path, recipe, {}, monkeypatch, FakeMeasure(fail_from=4096))
    assert [r and r["max_completed_input_len"] for r in saved][:2] == [32, 128]


def test_a_scenario_is_measured_again_unless_every_request_is_accounted_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenarios: list[dict[str, Any]] = [
                 {"name": "a", "concurrencies": [1, 4], "num_prompts": [2, 8]},
                 {"name": "b", "concurrencies": [2], "num_prompts": 8,
                  "max_failed_fraction": 0.125}]
    recipe = make_recipe({"kind": "endpoint", "base_url": BASE}, scenarios)
    earlier = {"a/c1": {"completed": 2, "failed": 0},   # done
               "a/c4": {"completed": 7, "failed": 1},   # a failure, tolerance 0
               "b/c2": {"completed": 7, "failed": 1}}   # within b's tolerance
    fake = FakeMeasure()
    out = run_measure(tmp_path, recipe, earlier, monkeypatch, fake)
    assert fake.calls == [(1024, 8)]  # only a/c4
    assert out["a/c4"]["completed"] == 8 and out["b/c2"] == earlier["b/c2"]


def test_failures_above_tolerance_fail_the_step(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = make_recipe({"kind": "endpoint", "base_url": BASE},
                         [{"name": "a", "input_len": 64, "num_prompts": 4},
                          {"name": "b", "input_len": 64, "num_prompts": 4,
                           "max_failed_fraction": 0.25}])
    with pytest.raises(BenchlibError, match="a/c1: 1 of 4 requests failed") as info:
        run_measure(tmp_path, recipe, {}, monkeypatch, FakeMeasure(fail=1))
    assert "b/c1" not in str(info.value) and "http 500" in str(info.value)


def test_max_failed_fraction_is_checked() -> None:
    from benchlib.recipe import RecipeError

    ok = make_recipe({"kind": "endpoint", "base_url": BASE},
                     [{"name": "a", "max_failed_fraction": 0.25}])
    assert ok.scenarios[0].max_failed_fraction == 0.25
    assert make_recipe({"kind": "endpoint", "base_url": BASE},
                       [{"name": "a"}]).scenarios[0].max_failed_fraction == 0
    with pytest.raises(RecipeError) as info:
        make_recipe({"kind": "endpoint", "base_url": BASE},
                    [{"name": "a", "max_failed_fraction": 1.5}])
    assert info.value.exit_code == 2
    assert "scenarios[0].max_failed_fraction" in str(info.value)
