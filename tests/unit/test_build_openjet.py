"""tools/build_openjet.py on a fake open-jet wheel whose Makefile compiles a C stub of the
engine's C API with ``cc`` (seconds, no CUDA): the wheel's files checked against its RECORD,
the staged (trimmed) wheel, the make call and the BUILD.json record, a failing compile's own
words kept verbatim with a non-zero exit, and the ptxas report. llama.cpp's own build is
skipped: a current ``llama/LLAMA.json`` is kept, as on a second run. The real build for
sm_90 (nvcc 13.0 on this machine's 2 cores, 480 s) is kept as tests/data/openjet/
BUILD-sm90.json and read below."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests._tools import load_tool

REPO = Path(__file__).resolve().parents[2]
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
PKG = "open_jet-0.5.1.data/purelib/megakernel/"
DIST = "open_jet-0.5.1.dist-info/"

STUB = "\n".join(f"int {name}(void) {{ return 0; }}" for name in (
    "mk_new", "mk_last_error", "mk_chat_template", "mk_tokenize", "mk_piece", "mk_is_eog",
    "mk_set_sampling", "mk_prefill", "mk_step", "mk_reset", "mk_truncate", "mk_sequence",
    "mk_committed", "mk_checkpoint_pos", "mk_rewind_to_checkpoint")) + "\n"
PTXAS = """ptxas info    : Compiling entry function '_ZN45_GLOBAL__N_8mk_cycleENS_6LaunchE' for 'sm_90'
ptxas info    : Function properties for _ZN45_GLOBAL__N_8mk_cycleENS_6LaunchE
    2544 bytes stack frame, 1052 bytes spill stores, 1764 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 16 bytes smem
"""
#: the recipe upstream's Makefile has for the library, with cc standing in for nvcc
MAKEFILE = """ARCH ?= 86
override ARCH := sm_$(patsubst sm_%,%,$(ARCH))
libqwen38mk.so: capi.c
\t@printf '%s' "$$PTXAS" > ptxas.log
\t$(NVCC) -arch=$(ARCH) -I$(LLAMA)/include capi.c \\
\t\t-o $@
"""
FAILING = """libqwen38mk.so:
\t@echo 'qwen38_mk.cu(181): error: identifier "__ldcg_evict" is undefined'
\t@echo '1 error detected in the compilation of "qwen38_mk.cu".'
\t@false
"""
#: nvcc --version, then the compile: cc with the -arch flag dropped
NVCC = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi
shift
exec cc -shared -fPIC "$@"
"""


def _tool() -> ModuleType:
    return load_tool("build_openjet")


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def _wheel(path: Path, makefile: str = MAKEFILE, tamper: bool = False) -> Path:
    files = {PKG + "Makefile": makefile, PKG + "capi.c": STUB,
             PKG + "server/mk_server.py": "def main():\n    return 0\n",
             PKG + "server/__init__.py": "", PKG + "__init__.py": "",
             DIST + "METADATA": "Metadata-Version: 2.4\nName: open-jet\nVersion: 0.5.1\n",
             "src/cli.py": "print('the agent, not the engine')\n"}
    record = "".join(f"{name},{_hash(text.encode())},{len(text)}\n" for name, text in files.items())
    if tamper:
        files[PKG + "capi.c"] += "// changed after the wheel was made\n"
    files[DIST + "RECORD"] = record + f"{DIST}RECORD,,\n"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return path


def _sdist(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in {".git/modules/vendor/llama.cpp/HEAD": COMMIT + "\n",
                           "vendor/llama.cpp/include/llama.h": "// llama\n"}.items():
            info = tarfile.TarInfo(f"llama_cpp_python-0.3.36/{name}")
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    return path


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    nvcc = tmp_path / "cuda" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text(NVCC)
    nvcc.chmod(0o755)
    out = tmp_path / "out"
    tool = _tool()
    (out / "llama" / "build" / "bin").mkdir(parents=True)  # as a first run left it: kept
    (out / "llama" / "build" / "bin" / "libllama.so").write_text("")
    (out / "llama" / "LLAMA.json").write_text(json.dumps(
        {"commit": COMMIT, "cmake_flags": tool.LLAMA_FLAGS}))
    monkeypatch.setenv("PTXAS", PTXAS)
    return {"nvcc": nvcc, "out": out, "sdist": _sdist(tmp_path / "llama.tar.gz")}


def _argv(setup: dict[str, Path], wheel: Path) -> list[str]:
    return ["--wheel", str(wheel), "--out", str(setup["out"]), "--cuda-arch", "9.0",
            "--jobs", "2", "--nvcc", str(setup["nvcc"]), "--llama-sdist", str(setup["sdist"])]


def test_builds_records_and_writes_the_launcher(tmp_path: Path, setup: dict[str, Path]) -> None:
    tool = _tool()
    wheel = _wheel(tmp_path / "open_jet-0.5.1-py3-none-any.whl")
    assert tool.main(_argv(setup, wheel)) == 0
    out = setup["out"]
    record = json.loads((out / "BUILD.json").read_text())
    assert record["outcome"] == "ok" and record["cuda_arch"] == "sm_90"
    assert record["openjet_version"] == "0.5.1" and record["files_verified"] == 5
    assert record["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert record["nvcc"] == "Cuda compilation tools, release 13.0, V13.0.88"
    assert record["llama_cpp"]["commit"] == COMMIT and record["llama_cpp"]["kept"] is True
    assert "ARCH=sm_90" in record["make_command"] and "-j2" in record["make_command"]
    [command] = record["nvcc_commands"]  # make's continued line joined
    assert "-arch=sm_90" in command and command.endswith("capi.c -o libqwen38mk.so")
    assert record["ptxas"]["targets"] == ["sm_90"]
    assert record["ptxas"]["kernels"]["mk_cycle"] == [
        "128 registers, 2544 bytes stack frame, 1052 bytes spill stores, 1764 bytes spill loads"]
    assert set(record["seconds"]) >= {"source", "megakernel", "check", "total"}
    assert (out / "megakernel" / "libqwen38mk.so").is_file()
    assert not (out / "megakernel" / "src").exists() and not (out / "work").exists()
    launcher = (out / "openjet-engine").read_text()
    assert launcher.startswith(f"#!{sys.executable}\n")
    assert "from megakernel.server.mk_server import main" in launcher


def test_a_failed_compile_keeps_its_words(tmp_path: Path, setup: dict[str, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    wheel = _wheel(tmp_path / "open_jet-0.5.1-py3-none-any.whl", makefile=FAILING)
    assert _tool().main(_argv(setup, wheel)) == 1
    record = json.loads((setup["out"] / "BUILD.json").read_text())
    assert record["outcome"] == "failed" and record["failed_phase"] == "megakernel"
    said = 'qwen38_mk.cu(181): error: identifier "__ldcg_evict" is undefined'
    assert said in record["compiler_errors"] and said in record["compiler_tail"]
    assert said in capsys.readouterr().err and "launcher" not in record


def test_a_file_that_differs_from_the_record_is_refused(tmp_path: Path,
                                                        setup: dict[str, Path]) -> None:
    wheel = _wheel(tmp_path / "open_jet-0.5.1-py3-none-any.whl", tamper=True)
    assert _tool().main(_argv(setup, wheel)) == 1
    record = json.loads((setup["out"] / "BUILD.json").read_text())
    assert record["failed_phase"] == "source" and "capi.c" in record["error"]


def test_the_staged_wheel_builds_the_same(tmp_path: Path, setup: dict[str, Path]) -> None:
    tool = _tool()
    wheel = _wheel(tmp_path / "open_jet-0.5.1-py3-none-any.whl")
    staged = tmp_path / "staged"
    assert tool.main(["--wheel", str(wheel), "--stage", str(staged)]) == 0
    assert not (staged / "src").exists() and (staged / DIST / "RECORD").is_file()
    assert tool.main(_argv(setup, staged)) == 0
    record = json.loads((setup["out"] / "BUILD.json").read_text())
    assert record["wheel"] == wheel.name
    assert record["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


@pytest.mark.parametrize(("given", "arch"), [("90", "sm_90"), ("9.0", "sm_90"),
                                             ("sm_86", "sm_86"), ("90a", "sm_90a")])
def test_arch_names(given: str, arch: str) -> None:
    assert _tool().arch_name(given) == arch


def test_a_bad_arch_is_refused() -> None:
    with pytest.raises(SystemExit, match="not a compute capability"):
        _tool().arch_name("hopper")


def test_the_real_sm90_build_record() -> None:
    """open-jet 0.5.1's megakernel built for the H200's sm_90 with nvcc 13.0, here (no GPU):
    the library loaded and every C function the server binds found; the persistent kernel
    (mk_cycle) held to 128 registers spills, the other 15 kernels do not."""
    build = json.loads((REPO / "tests" / "data" / "openjet" / "BUILD-sm90.json").read_text())
    assert build["outcome"] == "ok" and build["cuda_arch"] == "sm_90"
    assert build["openjet_version"] == "0.5.1" and build["nvcc"].endswith("V13.0.88")
    assert build["gpu_visible"] is False
    kernels = build["ptxas"]["kernels"]
    spilling = {k for k, lines in kernels.items()
                if any("0 bytes spill stores, 0 bytes spill loads" not in x for x in lines)}
    assert len(kernels) == 16 and spilling == {"mk_cycle"}
