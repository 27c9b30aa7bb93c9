"""02_launch holds the recipe's GPU power limit while the engine lives: the runner's engine
reads it through NVML (a stand-in at NVML's function boundary here) before the engine starts,
refuses a GPU at another limit, sets it with ``hardware.set_power_limit`` as root and puts the
earlier limit back when the engine stops; the limit, clocks and PCIe link go into the
provenance; ``--check`` says so, and a switch without a limit fails it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlib._exceptions import UsageError
from benchlib.cli import main
from benchlib.pipeline import _power
from benchlib.pipeline._engine import RunEngine
from benchlib.recipe import Recipe
from benchlib.runs import RunFolder
from tests.unit.energy.test_power_cap import FakeNvml

REPO = Path(__file__).resolve().parents[3]


def _recipe(tiny_model: Path, **hardware: Any) -> Recipe:
    return Recipe.model_validate({
        "name": "cap", "model": {"id": "tiny", "local_path": str(tiny_model)},
        "engine": {"kind": "scripted", "ready_timeout_s": 60},
        "hardware": {"gpu_count": 1, **hardware},
        "scenarios": [{"name": "c", "endpoint": "completions", "input_len": 8,
                       "output_len": 2}]})


def _engine(recipe: Recipe, tmp_path: Path, nvml: FakeNvml, monkeypatch: pytest.MonkeyPatch,
            said: list[str]) -> RunEngine:
    monkeypatch.setattr(_power, "open_nvml", lambda: nvml)
    monkeypatch.setattr("benchlib.energy._power_cap.os.geteuid", lambda: 0)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return RunEngine(recipe, RunFolder(path=tmp_path), [], said.append)


def test_set_at_launch_recorded_and_put_back_when_the_engine_stops(
        tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvml, said = FakeNvml([250_000, 250_000]), list[str]()
    engine = _engine(_recipe(tiny_model, power_limit_w=180, set_power_limit=True), tmp_path,
                     nvml, monkeypatch, said)
    try:
        engine.start(tiny_model)
        assert not engine.launch_error, engine.launch_error
        assert nvml.limits == [180_000, 250_000]  # the engine's one GPU, while it runs
        cap = engine.record().power_cap
        assert cap is not None and cap.status == "set" and cap.earlier_w == {0: 250.0}
        assert [(g.index, g.power_limit_w, g.pcie_gen, g.max_sm_clock_mhz)
                for g in cap.gpus] == [(0, 180.0, 2, 1500)]
        assert said.index(next(s for s in said if "set, from 250 W" in s)) < \
            said.index(next(s for s in said if s.startswith("starting scripted")))
    finally:
        engine.stop()
    assert nvml.limits == [250_000, 250_000]
    assert "GPU 0: power limit put back to 250 W" in said


def test_a_gpu_off_the_limit_stops_the_run_before_the_engine_starts(
        tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvml, said = FakeNvml([250_000]), list[str]()
    engine = _engine(_recipe(tiny_model, power_limit_w=180), tmp_path, nvml, monkeypatch, said)
    with pytest.raises(UsageError, match="is at 250 W, not 180 W") as exc:
        engine.start(tiny_model)
    assert exc.value.field == "hardware.power_limit_w"
    assert engine.process is None and nvml.limits == [250_000]
    engine.stop()


def test_without_nvml_the_record_says_not_checked(
        tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fails() -> Any:
        raise RuntimeError("no driver")
    monkeypatch.setattr(_power, "open_nvml", fails)
    said: list[str] = []
    engine = RunEngine(_recipe(tiny_model, power_limit_w=180), RunFolder(path=tmp_path), [],
                       said.append)
    try:
        engine.start(tiny_model)
        cap = engine.record().power_cap
        assert cap is not None and cap.status == "not checked" and "no driver" in cap.reason
    finally:
        engine.stop()


def test_check_says_how_the_limit_is_held(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    assert main(["run", "params/seeds/003-qwen38-27b-cmp170hx.yaml", "--check"]) == 0
    out = capsys.readouterr().out
    assert "power limit: 180 W read through NVML on the engine's GPUs as it starts" in out


def test_a_switch_without_a_limit_fails_check(tiny_model: Path) -> None:
    with pytest.raises(ValueError, match="set_power_limit: no power_limit_w to set"):
        _recipe(tiny_model, set_power_limit=True)
