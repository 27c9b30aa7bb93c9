"""tools/gpu_llamacpp.py: llama.cpp built here for the GPU machine is packed only when it is
such a build, and installed there only once it answers: the libraries its loader misses are
found and linked beside it (its runpath is $ORIGIN/../lib), and a server that cannot start
fails the job by name (the build there then runs). A real ELF program stands in for
llama-server, linked against a library the loader cannot find until the install links it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests._tools import load_tool

REPO = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    return load_tool("gpu_llamacpp")


def _built(tmp_path: Path, record: dict[str, object]) -> Path:
    built = tmp_path / "built"
    (built / "bin").mkdir(parents=True)
    (built / "bin" / "llama-server").write_text("")
    (built / "bin" / "llama-quantize").write_text("")
    (built / "work").mkdir()
    (built / "BUILD.json").write_text(json.dumps(record))
    return built


def test_only_a_cuda_build_made_for_another_machine_is_packed(tmp_path: Path) -> None:
    tool = _tool()
    with pytest.raises(SystemExit, match="holds no finished build"):
        tool.stage_files(tmp_path / "nothing")
    with pytest.raises(SystemExit, match="not a CUDA build for another machine"):
        tool.stage_files(_built(tmp_path / "cpu", {"backend": "cpu"}))
    built = _built(tmp_path / "cuda", {"backend": "cuda", "cuda_libs": {"driver_stub": []}})
    assert [name for _, name in tool.stage_files(built)] == [
        "BUILD.json", "bin/llama-quantize", "bin/llama-server"]


def _program(tmp_path: Path, devices: str, code: int = 0) -> tuple[Path, Path]:
    """A group holding a real `llama-server` that needs libfakeblas.so.13 (kept in a
    toolkit folder the loader does not search), prints a version line for --version and
    ``devices`` for --list-devices, exiting ``code`` there."""
    toolkit = tmp_path / "toolkit"
    toolkit.mkdir(parents=True)
    (tmp_path / "blas.c").write_text("int blas(void) { return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libfakeblas.so.13", "-o",
                    str(toolkit / "libfakeblas.so.13"), str(tmp_path / "blas.c")], check=True)
    (toolkit / "libfakeblas.so").symlink_to("libfakeblas.so.13")
    (tmp_path / "main.c").write_text(
        "#include <stdio.h>\n#include <string.h>\nint blas(void);\n"
        "int main(int argc, char **argv) {\n"
        '  if (argc > 1 && !strcmp(argv[1], "--version")) {\n'
        '    fprintf(stderr, "version: 11312 (0c1e570)\\n"); return blas(); }\n'
        f'  fprintf(stderr, "{devices}\\n"); return blas() + {code};\n}}\n')
    group = tmp_path / "group"
    (group / "bin").mkdir(parents=True)
    subprocess.run(["cc", "-o", str(group / "bin" / "llama-server"), str(tmp_path / "main.c"),
                    f"-L{toolkit}", "-lfakeblas", "-Wl,-rpath,$ORIGIN/../lib"], check=True)
    (group / "BUILD.json").write_text(json.dumps({"backend": "cuda", "cuda_libs": {}}))
    return group, toolkit


#: what llama-server b11312 prints for --list-devices with one GPU
LISTED = "Available devices:\\n  CUDA0: NVIDIA H100 80GB HBM3 (81079 MiB, 80532 MiB free)"


def test_install_links_what_the_loader_misses_then_the_server_answers(tmp_path: Path) -> None:
    tool = _tool()
    group, toolkit = _program(tmp_path, LISTED)
    assert tool.missing_libraries(group / "bin" / "llama-server") == ["libfakeblas.so.13"]
    dest = tmp_path / "llamacpp"
    record = tool.install(group, dest, dirs=(str(toolkit),))
    assert record["linked"] == {"libfakeblas.so.13": str(toolkit / "libfakeblas.so.13")}
    assert (dest / "lib" / "libfakeblas.so.13").resolve() == toolkit / "libfakeblas.so.13"
    assert tool.missing_libraries(dest / "bin" / "llama-server") == []
    carried = json.loads((dest / "CARRIED.json").read_text())
    assert "version: 11312" in carried["version_output"]
    assert carried["devices"] == ["CUDA0: NVIDIA H100 80GB HBM3 (81079 MiB, 80532 MiB free)"]
    assert (dest / "BUILD.json").is_file()


def test_a_library_nowhere_or_a_server_without_cuda_fails_the_job(tmp_path: Path) -> None:
    """llama.cpp logs a CUDA start-up failure and carries on without a device (a driver
    older than the build's runtime, say): that build must not be taken for one that serves."""
    tool = _tool()
    group, _ = _program(tmp_path / "a", LISTED)
    with pytest.raises(SystemExit, match=r"libfakeblas.so.13 is not on this machine"):
        tool.install(group, tmp_path / "a" / "dest", dirs=(str(tmp_path / "empty"),))
    no_cuda = ("ggml_cuda_init: failed to initialize CUDA: CUDA driver version is "
               "insufficient for CUDA runtime version\\nAvailable devices:")
    group, toolkit = _program(tmp_path / "b", no_cuda)
    with pytest.raises(SystemExit, match=r"lists no CUDA device: ggml_cuda_init: failed"):
        tool.install(group, tmp_path / "b" / "dest", dirs=(str(toolkit),))
    group, toolkit = _program(tmp_path / "c", LISTED, code=1)
    with pytest.raises(SystemExit, match=r"--list-devices exited 1"):
        tool.install(group, tmp_path / "c" / "dest", dirs=(str(toolkit),))
