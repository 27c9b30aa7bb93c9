"""tools/gpu_run.py's driver: the visit's job table keeps the GPU to one job at a time, a job
starts only once what it needs succeeded, a run that yields hands the GPU over at a variant
boundary (a real child process is stopped), and a running job's folder comes back with every
call. What the jobs do there (CUDA builds, engines) runs on the GPU machine only."""

from __future__ import annotations

import itertools
import json
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from benchlib.recipe import load_recipe
from tests._tools import load_tool

REPO = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    return load_tool("gpu_run")


def test_gpu_jobs_follow_one_another_and_every_name_is_known() -> None:
    gr = _tool()
    names = {j.name for j in gr.JOBS}
    for job in gr.JOBS:
        for need in (*job.needs, *job.after, *job.yields_when):
            assert need.startswith("group:") or need in names, (job.name, need)
    for visit, chosen in gr.VISITS.items():  # within a visit, GPU jobs one after another
        gpu = [j for j in gr.JOBS if j.gpu and j.name in chosen]
        for earlier, later in itertools.pairwise(gpu):
            assert earlier.name in later.after, (visit, later.name, earlier.name)
    assert [j for j in gr.JOBS if j.resumes] and all(
        gr.RUNS[j.name] == gr.RUNS[j.resumes] for j in gr.JOBS if j.resumes)


@pytest.fixture
def gr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _tool()
    monkeypatch.setattr(module, "JOBS_DIR", tmp_path / "jobs")
    monkeypatch.setattr(module, "OUTBOX", tmp_path / "out")
    (tmp_path / "jobs").mkdir()
    return module


def _mark(gr: ModuleType, name: str, end: str) -> None:
    (gr.JOBS_DIR / f"{name}.{end}").write_text("0\n")


def test_a_job_waits_for_what_it_needs_and_never_runs_after_a_failure(gr: ModuleType) -> None:
    compare = next(j for j in gr.JOBS if j.name == "compare")
    groups = {"base": {"whole": True}, "vllm": {"whole": True}}
    assert gr._ready(compare, groups) is False
    for name in ("venv", "vllm-env", "llamacpp", "target", "gguf", "draft"):
        _mark(gr, name, "ok")
    assert gr._ready(compare, groups) is False  # memory-first has not ended
    _mark(gr, "memory-first", "failed")  # ended either way: the GPU is free
    assert gr._ready(compare, groups) is False  # smollm2-run may hold it (issue34's visit)
    assert gr._ready(compare, groups, gr.VISITS["full"]) is True  # not in this visit
    _mark(gr, "llamacpp", "failed")
    (gr.JOBS_DIR / "llamacpp.ok").unlink()
    assert gr._ready(compare, groups) is None
    venv = next(j for j in gr.JOBS if j.name == "venv")
    assert gr._ready(venv, {"base": {"whole": False}}) is False


def _fake_benchlib(tmp_path: Path, run_dir: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "benchlib"
    script.write_text(f"""#!{sys.executable}
import signal, sys, time, pathlib
signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))
run = pathlib.Path({str(run_dir)!r}); run.mkdir(parents=True, exist_ok=True)
(run / "a.json").write_text("{{}}")
print("run: " + str(run), flush=True)
print("[a] engine stopped", flush=True)
time.sleep(30)
(run / "b.json").write_text("{{}}")
print("[b] engine stopped", flush=True)
""")
    script.chmod(0o755)
    return venv


def test_a_run_yields_the_gpu_at_a_variant_boundary(gr: ModuleType, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "outputs" / "r"
    monkeypatch.setattr(gr, "VENV", _fake_benchlib(tmp_path, run_dir))
    _mark(gr, "llamacpp", "ok")
    gr._bench("params/x.yaml", "memory-first", ("llamacpp",))  # returns: it yielded
    assert not (run_dir / "b.json").exists()
    with tarfile.open(gr.OUTBOX / "memory-first.tar.gz") as tar:
        assert "r/a.json" in tar.getnames()
    assert not (gr.JOBS_DIR / "memory-first.finished").exists()  # a later job resumes it


def test_a_running_jobs_folder_comes_back_with_every_call(gr: ModuleType, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    run_dir = tmp_path / "outputs" / "c"
    (run_dir / "v").mkdir(parents=True)
    (run_dir / "v" / "03_measure.json").write_text("{}")
    gr.OUTBOX.mkdir()
    (gr.OUTBOX / "compare.log").write_text(f"checked\nrun: {run_dir}\n[v] 03_measure: ok\n")
    _mark(gr, "compare", "started")
    monkeypatch.setattr(gr, "_driver_alive", lambda: True)
    monkeypatch.setattr(gr.gpu_bundle, "receive", lambda *a, **k: {})
    out = tmp_path / "OUT"
    out.mkdir()
    monkeypatch.setenv("OUT", str(out))
    args = gr.main.__globals__["argparse"].Namespace(rerun=[], stop=[], wait="", timeout=0,
                                                     groups="",
                                                       visit="full")
    assert gr.call(args) == 0
    with tarfile.open(out / "compare.partial.tar.gz") as tar:
        assert "c/v/03_measure.json" in tar.getnames()
    status = json.loads((out / "status.json").read_text())
    assert status["jobs"]["compare"]["state"] == "running"


def test_a_visit_runs_its_own_jobs_and_its_calls_wait_for_its_runs(gr: ModuleType) -> None:
    """The short visit: vLLM's bundle, the kit, one run; no llama.cpp build, no model made."""
    (gr.JOBS_DIR / "visit").write_text("vllm-short\n")
    assert [j.name for j in gr.visit_jobs()] == ["venv", "tiny", "vllm-env", "vllm-short"]
    calls = gr.device_calls([gr.REPO / ".device/parts/base-00"], "vllm-short")
    assert all("--visit vllm-short" in c["command"] for c in calls)
    assert [c["command"].split("--wait ")[1].split()[0] for c in calls[1:]] == ["vllm-short"]
    full = gr.device_calls([], "full")
    assert [c["command"].split("--wait ")[1].split()[0] for c in full] == ["compare", "memory"]
    assert not any("kind" in c for c in (*calls, *full))  # the one-GPU default


def test_seed_000s_visit_asks_for_eight_gpus_and_runs_its_recipe(gr: ModuleType) -> None:
    """Issue 28's visit (not yet run: the kind was not lent): the kit, vLLM's bundle, then
    seed 000's 8×H200 recipe; every call names the eight-GPU kind."""
    (gr.JOBS_DIR / "visit").write_text("seed000-x8\n")
    assert [j.name for j in gr.visit_jobs()] == ["venv", "tiny", "vllm-env", "seed000-x8"]
    assert gr.RUNS["seed000-x8"] == "params/seeds/000-glm-kimi-8xh200.yaml"
    assert (gr.REPO / gr.RUNS["seed000-x8"]).is_file()
    calls = gr.device_calls([gr.REPO / ".device/parts/base-00"], "seed000-x8")
    assert [c["kind"] for c in calls] == ["nvidia-h200-x8"] * 2
    assert calls[1]["command"].split("--wait ")[1].split()[0] == "seed000-x8"
    assert "seed000-x8-dense-mla" not in gr.VISITS["seed000-x8"]  # the fallback: its own visit


def test_seed_003s_visit_carries_open_jet_built_here_and_makes_its_gguf_there(
        gr: ModuleType, tmp_path: Path) -> None:
    """Issue 33's visit: open-jet's engine comes built (group openjet), the 27B GGUF is made
    there once llama.cpp's gguf-py and the tokenizer are in; the one run starts once every
    part is in and vLLM is installed, with vLLM's variants, while llama.cpp's CUDA build runs
    beside them (the recipe's order puts llama.cpp's variant last)."""
    (gr.JOBS_DIR / "visit").write_text("seed003\n")
    names = [j.name for j in gr.visit_jobs()]
    assert names == ["venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "tiny",
                     "vllm-env", "openjet", "gguf27", "seed003"]
    run = next(j for j in gr.JOBS if j.name == "seed003")
    assert {"openjet", "gguf27", "group:vllm"} <= set(run.needs)  # every part in first
    # vLLM's pair first (never measured yet): the run waits for vLLM's install, never for
    # llama.cpp's CUDA build, whose variant comes last
    assert "vllm-env" in run.needs and "llamacpp" not in run.needs
    assert gr.RUNS["seed003"] == "params/seeds/003-qwen38-27b-h200.yaml"
    recipe = load_recipe(gr.REPO / gr.RUNS["seed003"])
    kinds = [v.engine.kind for _, v in recipe.variant_recipes()]
    assert kinds == ["vllm", "vllm", "openjet", "openjet", "llamacpp"]
    calls = gr.device_calls([gr.REPO / ".device/parts/openjet-00"], "seed003")
    assert calls[-1]["command"].split("--wait ")[1].split()[0] == "seed003"
    # a build that did not finish is refused by name, before anything is packed
    (tmp_path / "BUILD.json").write_text('{"outcome": "failed"}')
    with pytest.raises(SystemExit, match="no finished build"):
        gr.stage_openjet(tmp_path)


def test_the_smollm2_visit_makes_the_demo_model_there_and_runs_vllm_first(
        gr: ModuleType) -> None:
    """Issue 34's real-model visit: the wheel carried (group smollm2), the model made there
    by `benchlib real-model` once llama.cpp's converter is in, the run after every part and
    vLLM's install; llama.cpp builds beside it and serves last."""
    (gr.JOBS_DIR / "visit").write_text("smollm2\n")
    assert [j.name for j in gr.visit_jobs()] == ["venv", "llamacpp-source", "llamacpp-carried",
                                                 "llamacpp", "vllm-env", "smollm2",
                                                 "smollm2-run"]
    run = next(j for j in gr.JOBS if j.name == "smollm2-run")
    assert {"smollm2", "vllm-env", "group:vllm"} <= set(run.needs)
    assert "llamacpp" not in run.needs
    recipe = load_recipe(gr.REPO / gr.RUNS["smollm2-run"])
    kinds = [v.engine.kind for _, v in recipe.variant_recipes()]
    assert kinds == ["vllm", "vllm", "llamacpp", "llamacpp"]
    paths = {str(v.model.local_path) for _, v in recipe.variant_recipes()}
    assert all(str(gr.MODELS.relative_to(gr.REPO)) in p for p in paths)


def test_issue_34s_visit_runs_smollm2_then_the_comparison_on_one_machine(
        gr: ModuleType) -> None:
    """Issue 34 in one machine start: SmolLM2 on both engines once the random target has left
    the GPU, then the Llama-3-8B-shaped comparison: both engines, speculation off and on."""
    (gr.JOBS_DIR / "visit").write_text("issue34\n")
    jobs = {j.name: j for j in gr.visit_jobs()}
    assert [n for n, j in jobs.items() if j.gpu] == ["target", "smollm2-run", "compare"]
    assert "target" in jobs["smollm2-run"].after and "smollm2-run" in jobs["compare"].after
    calls = gr.device_calls([gr.REPO / ".device/parts/base-00"], "issue34")
    assert [c["command"].split("--wait ")[1].split()[0] for c in calls[1:]] == [
        "smollm2-run", "compare"]
    recipe = load_recipe(gr.REPO / gr.RUNS["compare"])
    kinds = [(v.engine.kind, v.engine.speculative.on) for _, v in recipe.variant_recipes()]
    assert sorted(kinds) == [("llamacpp", False), ("llamacpp", True), ("vllm", False),
                             ("vllm", True)]


def test_the_compare_visit_runs_the_comparison_alone(gr: ModuleType) -> None:
    """With SmolLM2 kept (visit 8), issue 34's comparison alone: the random target made on
    the GPU first, then the four variants in two halves of one run folder, vLLM's without
    waiting for the GGUFs (written beside its start), waiting for nothing outside the visit."""
    (gr.JOBS_DIR / "visit").write_text("compare\n")
    jobs = {j.name: j for j in gr.visit_jobs()}
    halves = ["compare-vllm", "compare-llamacpp"]
    assert [n for n, j in jobs.items() if j.gpu] == ["target", *halves]
    assert "smollm2" not in jobs and "memory-first" not in jobs
    assert "gguf" not in jobs["compare-vllm"].needs and "gguf" in jobs["compare-llamacpp"].needs
    recipe = load_recipe(gr.REPO / gr.RUNS["compare"])
    assert {gr.RUNS[h] for h in halves} == {gr.RUNS["compare"]}
    assert sorted(v for h in halves for v in gr.RUN_VARIANTS[h]) == sorted(
        name for name, _ in recipe.variant_recipes())
    calls = gr.device_calls([gr.REPO / ".device/parts/base-00"], "compare")
    assert [c["command"].split("--wait ")[1].split()[0] for c in calls[1:]] == halves


def test_seed_001s_visit_installs_sglang_asks_its_parser_then_runs(
        gr: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 36's visit: SGLang 0.5.15's parts (group sglang), its venv with sgl_kernel loaded
    and its own --help, the recipe's flags checked by the kit against that parser, then the
    one run on the GPU once every part is in (a call copies the tree as it starts)."""
    (gr.JOBS_DIR / "visit").write_text("seed001\n")
    assert [j.name for j in gr.visit_jobs()] == ["venv", "tiny", "sglang-env", "sglang-flags",
                                                 "seed001"]
    jobs = {j.name: j for j in gr.JOBS}
    assert jobs["sglang-env"].needs == ("group:sglang",) and not jobs["sglang-env"].gpu
    assert {"venv", "sglang-env"} <= set(jobs["sglang-flags"].needs)
    run = jobs["seed001"]
    assert run.gpu and {"sglang-flags", "group:base", "group:sglang", "tiny"} <= set(run.needs)
    assert gr.RUNS["seed001"] == "params/seeds/001-glm47-flash-sglang-h200.yaml"
    recipe = load_recipe(gr.REPO / gr.RUNS["seed001"])
    assert recipe.engine.python is not None and Path(str(recipe.engine.python)).parts[-3] == \
        gr.SGLANG_ENV.name
    calls = gr.device_calls([gr.REPO / ".device/parts/base-00",
                             gr.REPO / ".device/parts/sglang-00"], "seed001")
    assert [c.get("carry") for c in calls[:2]] == [[".device/parts/base-00"],
                                                   [".device/parts/sglang-00"]]
    assert calls[-1]["command"].split("--wait ")[1].split()[0] == "seed001"
    assert not any("kind" in c for c in calls)  # one GPU
    with pytest.raises(SystemExit) as exit_:  # stage offers the group by name
        gr.main(["stage", "--groups", "sglangx"])
    assert exit_.value.code == 2 and "'sglang'" in capsys.readouterr().err


def test_llamacpp_built_here_is_checked_there_and_the_build_there_is_the_fallback(
        gr: ModuleType) -> None:
    """Issue 34: llama.cpp's CUDA build made here travels as group llamacpp; `llamacpp`
    (the build there) waits for its check and builds only if it failed or the group is not
    carried: the calls name the groups they carry, and a job needing another never waits."""
    jobs = {j.name: j for j in gr.JOBS}
    carried, build = jobs["llamacpp-carried"], jobs["llamacpp"]
    assert "group:llamacpp" in carried.needs and build.after == ("llamacpp-carried",)
    _mark(gr, "llamacpp-source", "ok")
    parts = {"base": {"whole": True}}
    visit = gr.VISITS["smollm2-llamacpp"]
    assert gr._ready(build, parts, visit) is False  # waits for the carried build's check
    assert gr._ready(carried, parts, visit) is False  # its group may still come
    assert gr._ready(carried, parts, visit, {"base", "smollm2"}) is None  # it never comes
    _mark(gr, "llamacpp-carried", "failed")
    assert gr._ready(build, parts, visit, {"base", "smollm2"}) is True  # so it builds there
    assert gr._ready(build, parts, ["llamacpp-source", "llamacpp"]) is True  # no such job
    for name, names in gr.VISITS.items():  # every visit that builds llama.cpp can carry it
        if "llamacpp" in names:
            assert "llamacpp-carried" in names, name
    # the first call tells the machine which groups come
    calls = gr.device_calls([gr.REPO / ".device/parts/base-00"], "smollm2", ["base", "vllm"])
    assert all("--groups base,vllm" in c["command"] for c in calls)
    # without the group the visit still runs (the build there); without a run's group not
    assert gr.never_run("smollm2-llamacpp", {"base", "smollm2"}) == {
        "llamacpp-carried": "group llamacpp is not carried"}
    assert gr.never_run("smollm2", {"base", "llamacpp"}) == {
        "vllm-env": "group vllm is not carried", "smollm2": "group smollm2 is not carried",
        "smollm2-run": "vllm-env will not run"}
    args = gr.argparse.Namespace(groups=["base", "llamacpp"], visit="smollm2",
                                 python=["3.12"], force=False, openjet=gr.OPENJET,
                                 llamacpp_build=gr.gpu_llamacpp.BUILT)
    with pytest.raises(SystemExit, match="would not run smollm2-run: vllm-env will not run"):
        gr.stage(args)
    # the short visit: the llama.cpp half of SmolLM2 alone, from the carried build
    assert gr.RUN_VARIANTS["smollm2-llamacpp"] == ("llamacpp-draft", "llamacpp-nospec")
    recipe = load_recipe(gr.REPO / gr.RUNS["smollm2-llamacpp"])
    kinds = {name: v.engine.kind for name, v in recipe.variant_recipes()}
    assert all(kinds[n] == "llamacpp" for n in gr.RUN_VARIANTS["smollm2-llamacpp"])
