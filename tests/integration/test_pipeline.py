"""``benchlib run`` end to end against the scripted server (an ``endpoint`` engine): dated
outputs, executed notebooks, sidecars with provenance, folders that can be moved, resume,
timeouts, engine failures and teardown (checked by process group), and no secret in
anything written or echoed, even when the runner is killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchlib.engines import free_port
from benchlib.pipeline import read_sidecar
from tests._runs import run_day

REPO = Path(__file__).resolve().parents[2]
STEPS = ["00_plan", "01_download", "02_launch", "03_measure", "04_compare"]
SECRET = "sk-planted-pipeline-7c1d"


def recipe(tmp_path: Path, tiny_model: Path, engine: str, extra: str = "") -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
name: t
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {engine}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 8, concurrencies: [1, 4],
      num_prompts: [2, 8]}}
  - {{name: summ, endpoint: completions, input_len: 64, output_len: 4, concurrencies: [2]}}
{extra}""")
    return path


def run(path: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchlib", "run", str(path), "--outputs",
                           str(out), *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300, env={**os.environ, "BENCH_API_KEY": SECRET})


def day(out: Path) -> Path:
    return run_day(out)


def test_run_writes_notebooks_sidecars_and_provenance(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "5", "--itl-ms", "2", "--model", "scripted")
    path = recipe(tmp_path, tiny_model,
                  f'{{kind: endpoint, base_url: "{server.url}", api_key_env: BENCH_API_KEY}}')
    proc = run(path, tmp_path / "out")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = day(tmp_path / "out") / "t"
    for step in STEPS:
        nb = json.loads((run_dir / f"{step}.ipynb").read_text())
        assert nb["metadata"]["papermill"]["exception"] in (None, False)
        sidecar = read_sidecar(run_dir / f"{step}.json")  # schema-validated
        assert sidecar.status == "ok", sidecar.error
        prov = sidecar.provenance
        assert prov.kit_commit and prov.engine.name == "endpoint" and prov.model.id == "scripted"
        assert prov.hardware.cpu.logical_cores > 0 and prov.python.startswith("CPython")
        assert prov.packages["benchlib"] and prov.environment_yml_sha256
    measure = read_sidecar(run_dir / "03_measure.json").results
    assert set(measure) == {"chat/c1", "chat/c4", "summ/c2"}
    # the scripted server answered: synthetic in every result, the provenance and the report
    assert all(r["synthetic"] is True for r in measure.values())
    assert read_sidecar(run_dir / "03_measure.json").provenance.synthetic is True
    assert read_sidecar(run_dir / "02_launch.json").provenance.synthetic is None
    report = (run_dir / "report.html").read_text()
    assert "id='synthetic'" in report and "SYNTHETIC" in proc.stdout
    assert measure["chat/c4"]["completed"] == 8 and measure["chat/c4"]["failed"] == 0
    assert read_sidecar(run_dir / "01_download.json").results["files_hash"]["files"] == 5
    assert (run_dir / "measure" / "summary.png").stat().st_size > 10_000
    assert "image/png" in (run_dir / "03_measure.ipynb").read_text()
    assert "median_ttft_ms" in proc.stdout and str(run_dir) in proc.stdout
    # the report and its write-up, rendered from the run (the secret scan below covers them)
    assert "report: " in proc.stdout and "id='fig-pareto'" in (run_dir / "report.html"
                                                               ).read_text()
    assert "benchlib run " in (run_dir / "writeup.md").read_text()
    # no prompt went to the server twice in the whole run: the launch's probes, each
    # measurement's warmups and its measured prompts (benchlib.measure.workload._seeds), so a prefix
    # cache flatters nothing. Rows: the chat check, 2 probes (chat, completions) and
    # 3 × (1 warmup + the prompts)
    truth = [json.loads(line) for line in server.truth.read_text().splitlines()]
    assert len(truth) == 1 + 2 + (1 + 2) + (1 + 8) + (1 + 8), [r["id"] for r in truth]
    assert len({row["prompt_sha256"] for row in truth}) == len(truth)
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
    # a second run of the finished recipe never overwrites: it gets its own folder
    assert run(path, tmp_path / "out").returncode == 0
    assert (day(tmp_path / "out") / "t-2" / "03_measure.json").is_file()
    # the folder can be moved: nothing in it names where it was
    moved = shutil.move(run_dir, tmp_path / "shared" / "t")
    old = [str(run_dir), str(tmp_path / "out")]
    records = [f for f in Path(moved).rglob("*") if f.suffix in (".json", ".ipynb", ".jsonl")]
    assert {f.name for f in records} >= {"run.json", "recipe.json", "03_measure.json",
                                         "03_measure.ipynb", "chat-c4.json"}
    for file in records:
        text = file.read_text()
        assert not any(o in text for o in old), (file, [o for o in old if o in text])
    nb = json.loads((Path(moved) / "03_measure.ipynb").read_text())["metadata"]["papermill"]
    assert nb["output_path"] == "03_measure.ipynb" and nb["parameters"]["run_dir"] == "."


def test_resume_after_a_failed_launch_keeps_the_failed_attempt(
        tmp_path: Path, tiny_model: Path) -> None:
    port = free_port()
    path = recipe(tmp_path, tiny_model,
                  f'{{kind: endpoint, base_url: "http://127.0.0.1:{port}"}}')
    first = run(path, tmp_path / "out")
    assert first.returncode == 1 and "Traceback" not in first.stderr
    run_dir = day(tmp_path / "out") / "t"
    assert read_sidecar(run_dir / "02_launch.json").status == "failed"
    assert read_sidecar(run_dir / "03_measure.json").status == "skipped"
    server = subprocess.Popen([sys.executable, "-m", "benchlib", "scripted-server", "--port",
                               str(port), "--ttft-ms", "2", "--itl-ms", "1"],
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("listening")
        second = run(path, tmp_path / "out")
    finally:
        server.terminate()
        server.wait()
    assert second.returncode == 0, second.stdout[-2000:]
    assert "resuming" in second.stdout and "00_plan: ok in an earlier attempt" in second.stdout
    assert read_sidecar(run_dir / "03_measure.json").status == "ok"
    assert read_sidecar(run_dir / "02_launch.attempt-1.json").status == "failed"
    assert not (day(tmp_path / "out") / "t-2").exists()


def test_cell_timeout_is_reported_as_timeout(scripted: Callable[..., Any], tmp_path: Path,
                                             tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "4000", "--itl-ms", "1")
    path = recipe(tmp_path, tiny_model, f'{{kind: endpoint, base_url: "{server.url}"}}',
                  "cell_timeout_s: 2\nsteps: [03_measure]\n")
    proc = run(path, tmp_path / "out")
    assert proc.returncode == 1
    run_dir = day(tmp_path / "out") / "t"
    sidecar = read_sidecar(run_dir / "03_measure.json")
    assert sidecar.status == "timeout"  # papermill itself would have called it a success
    assert sidecar.error is not None and "cell_timeout_s=2" in (sidecar.error.hint or "")
    assert (run_dir / "03_measure.ipynb").is_file()


def _group_members(pgid: int) -> list[int]:
    """The live processes (zombies aside: they wait for a reaper, holding nothing) of the
    process group ``pgid``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _assert_group_gone(pgid: int) -> None:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return
    assert _group_members(pgid) == [], f"process group {pgid} outlived the run"


def _write_pgid(pgid_file: Path) -> str:
    """A shell line that writes the process group it runs in (the engine's) to a file."""
    return f"{sys.executable} -c 'import os; print(os.getpgid(0))' > \"{pgid_file}\"\n"


def _scripted_engine(exe: Path, *server_args: str, before: str = "") -> Path:
    """An engine executable: a shell script that runs ``before``, takes the ``--port`` the
    runner passes it and becomes the kit's scripted server with ``server_args``."""
    exe.write_text("#!/bin/sh\n" + before + f"""\
while [ $# -gt 0 ]; do case "$1" in --port) PORT=$2; shift;; esac; shift; done
exec {sys.executable} -m benchlib scripted-server --port "$PORT" {" ".join(server_args)}
""")
    exe.chmod(0o755)
    return exe


def test_engine_that_exits_fails_the_step_with_log_and_hint(tmp_path: Path,
                                                            tiny_model: Path) -> None:
    python = tmp_path / "no-vllm-python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} -c "
                      "\"import sys; sys.exit('ModuleNotFoundError: No module named \\\\'vllm\\\\'')\" \"$@\"\n")
    python.chmod(0o755)
    engine = f'{{kind: vllm, python: "{python}", ready_timeout_s: 60}}'
    proc = run(recipe(tmp_path, tiny_model, engine, "steps: [02_launch, 03_measure]\n"),
               tmp_path / "out")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    sidecar = read_sidecar(day(tmp_path / "out") / "t" / "02_launch.json")
    assert sidecar.status == "failed" and sidecar.error is not None
    assert "engine exited with code 1" in sidecar.error.evalue
    assert "module-missing" in sidecar.error.evalue  # the hint
    assert read_sidecar(day(tmp_path / "out") / "t" / "03_measure.json").status == "skipped"


def test_engine_that_hangs_is_torn_down(tmp_path: Path, tiny_model: Path) -> None:
    """Every process of the group the runner started is gone: the leader and a child it
    left in the background (the group id is the one the engine itself saw)."""
    pgid_file = tmp_path / "engine.pgid"
    exe = tmp_path / "hangs"
    exe.write_text("#!/bin/sh\n" + _write_pgid(pgid_file) + "(sleep 300) &\nexec sleep 300\n")
    exe.chmod(0o755)
    engine = f'{{kind: openjet, executable: "{exe}", ready_timeout_s: 3}}'
    proc = run(recipe(tmp_path, tiny_model, engine, "steps: [02_launch]\n"), tmp_path / "out")
    assert proc.returncode == 1
    sidecar = read_sidecar(day(tmp_path / "out") / "t" / "02_launch.json")
    assert sidecar.error is not None and "not ready after 3 s" in sidecar.error.evalue
    pgid = int(pgid_file.read_text())
    assert f"engine process group {pgid}" in proc.stdout
    try:
        _assert_group_gone(pgid)
    finally:
        if _group_members(pgid):
            os.killpg(pgid, signal.SIGKILL)


@pytest.mark.parametrize("bad", ["name: t\n", "{", ""])
def test_bad_recipe_never_starts_anything(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    proc = run(path, tmp_path / "out")
    assert proc.returncode == 2 and not (tmp_path / "out").exists()


def test_long_context_ramp_records_where_the_engine_died(tmp_path: Path,
                                                         tiny_model: Path) -> None:
    """Seed 003's test: step the input up until the engine falls over; record the last
    length that completed, how the next one failed, and that the engine is gone."""
    exe = _scripted_engine(tmp_path / "crashy-engine", "--ttft-ms", "2", "--itl-ms", "1",
                           "--model", "scripted", "--crash-above-prompt-chars", "3000")
    engine = f'{{kind: llamacpp, executable: "{exe}", ready_timeout_s: 60}}'
    path = tmp_path / "ramp.yaml"
    path.write_text(f"""\
name: t
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {engine}
scenarios:
  - {{name: ramp, endpoint: chat, output_len: 4, ramp_input_lens: [32, 128, 4096, 8192]}}
  - {{name: after, endpoint: chat, input_len: 8, output_len: 2}}
steps: [02_launch, 03_measure]
""")
    proc = run(path, tmp_path / "out")
    assert proc.returncode == 1
    run_dir = day(tmp_path / "out") / "t"
    sidecar = read_sidecar(run_dir / "03_measure.json")
    ramp = sidecar.results["ramp/ramp"]
    assert ramp["max_completed_input_len"] == 128 and ramp["failed_at_input_len"] == 4096
    assert "connection" in ramp["error"] and ramp["engine_alive_after"] is False
    assert [s["ok"] for s in ramp["steps"]] == [True, True, False]
    assert sidecar.results["engine_lost"]["after_scenario"] == "ramp"
    assert "after/c1" not in sidecar.results
    assert sidecar.status == "failed" and sidecar.error is not None
    assert sidecar.results["engine_exit"]["code"] == 3

    # resumed: the ramp found its limit (a result, not re-run into another crash); the new
    # engine process gets its own 02_launch (readiness token, sidecar), then the rest runs
    second = run(path, tmp_path / "out")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-2000:]
    assert "ramp/ramp: done in an earlier attempt, skipped" in second.stdout
    assert "ramp/ramp: input" not in second.stdout
    launch = read_sidecar(run_dir / "02_launch.json")
    measure = read_sidecar(run_dir / "03_measure.json")
    assert launch.status == "ok" and measure.status == "ok", measure.error
    assert read_sidecar(run_dir / "02_launch.attempt-1.json").status == "ok"
    assert launch.params["base_url"] == measure.params["base_url"]  # the same, new engine
    assert launch.provenance.engine.startup_s is not None
    assert measure.results["ramp/ramp"] == ramp
    assert measure.results["after/c1"]["completed"] == 8
    assert (run_dir / "engine.attempt-1.log").is_file()


def test_engine_secrets_never_reach_log_sidecar_or_notebook(tmp_path: Path,
                                                             tiny_model: Path) -> None:
    """An engine that prints its own arguments (vLLM does) still leaves no key behind."""
    exe = _scripted_engine(tmp_path / "chatty-engine", "--ttft-ms", "1", "--itl-ms", "1",
                           "--model", "scripted", before='echo "engine args: $@"\n')
    engine = (f'{{kind: llamacpp, executable: "{exe}", args: ["--api-key", "${{BENCH_API_KEY}}"],'
              ' api_key_env: BENCH_API_KEY}')
    proc = run(recipe(tmp_path, tiny_model, engine, "steps: [02_launch, 03_measure]\n"),
               tmp_path / "out")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run_dir = day(tmp_path / "out") / "t"
    log = (run_dir / "engine.log").read_text()
    assert "engine args:" in log and "--api-key ***" in log
    command = read_sidecar(run_dir / "02_launch.json").provenance.engine.command
    assert command is not None and command.endswith("--api-key ***")
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
    assert SECRET not in proc.stdout + proc.stderr


def test_kill_9_mid_measure_leaves_no_secret_on_disk_or_console(tmp_path: Path,
                                                                tiny_model: Path) -> None:
    """The runner gets no chance to scrub anything: the engine's log (not UTF-8, the key
    printed whole and split across two writes), notebooks, sidecars and results on disk,
    and everything echoed on the console, must already be clean."""
    pgid_file, runtime = tmp_path / "engine.pgid", tmp_path / "jupyter-runtime"
    leak = tmp_path / "leak.py"
    leak.write_text("import os, sys, time\n"
                    "key, out = os.environ['BENCH_API_KEY'].encode(), sys.stdout.buffer\n"
                    "out.write(b'weights \\xff\\xfe loaded; key ' + key[:6]); out.flush()\n"
                    "time.sleep(0.3)\n"
                    "out.write(key[6:] + b' end\\n'); out.flush()\n")
    exe = _scripted_engine(tmp_path / "chatty-engine", "--ttft-ms", "700", "--itl-ms", "5",
                           "--model", "scripted", before=_write_pgid(pgid_file)
                           + f'echo "engine args: $@"\n{sys.executable} "{leak}"\n')
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
name: t
model: {{id: scripted, local_path: "{tiny_model}"}}
engine: {{kind: llamacpp, executable: "{exe}", args: ["--api-key", "${{BENCH_API_KEY}}"],
          api_key_env: BENCH_API_KEY, ready_timeout_s: 60}}
scenarios:
  - {{name: chat, endpoint: chat, input_len: 16, output_len: 4, num_prompts: 40}}
steps: [02_launch, 03_measure]
""")
    console = tmp_path / "console.txt"
    run_dir = day(tmp_path / "out") / "t"
    with console.open("wb") as sink:
        runner = subprocess.Popen(
            [sys.executable, "-m", "benchlib", "run", str(path), "--outputs",
             str(tmp_path / "out")], stdout=sink, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, "BENCH_API_KEY": SECRET, "JUPYTER_RUNTIME_DIR": str(runtime)})
    try:
        deadline = time.monotonic() + 180
        while not any(f.stat().st_size for f in (run_dir / "measure").glob("*.requests.jsonl")):
            assert runner.poll() is None, console.read_text()[-3000:]
            assert time.monotonic() < deadline, console.read_text()[-3000:]
            time.sleep(0.2)
        runner.send_signal(signal.SIGKILL)  # mid-measure: no finally, no scrub
        runner.wait()
        time.sleep(2)  # the kernel notices its parent is gone and exits
    finally:
        if runner.poll() is None:
            runner.kill()
        _kill_kernels(runtime)
        if pgid_file.is_file() and _group_members(int(pgid_file.read_text())):
            os.killpg(int(pgid_file.read_text()), signal.SIGKILL)
    assert json.loads((run_dir / "run.json").read_text())["finished"] is False
    assert not (run_dir / "03_measure.json").exists()  # it was killed mid-step
    log = (run_dir / "engine.log").read_bytes()
    assert b"\xff\xfe loaded; key *** end" in log and b"--api-key ***" in log
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
    out = console.read_bytes()
    assert b"03_measure: running" in out and SECRET.encode() not in out


def _kill_kernels(runtime: Path) -> None:
    """Kernels of the killed runner (their connection files lie in ``runtime``)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(runtime).encode() in cmdline.read_bytes():
                os.kill(int(cmdline.parent.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue
