"""tools/build_llamacpp.py's source half, on a small sdist-shaped tarball: the converter is
installed from the extracted tree before any compile, and a later full build takes the same
tree (no second download) without touching the converter a GGUF conversion may be using."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from types import ModuleType

from tests._tools import load_tool

REPO = Path(__file__).resolve().parents[2]
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def _tool() -> ModuleType:
    return load_tool("build_llamacpp")


def _sdist(path: Path) -> Path:
    files = {".git/modules/vendor/llama.cpp/HEAD": COMMIT + "\n",
             "vendor/llama.cpp/convert_hf_to_gguf.py": "print('convert')\n",
             "vendor/llama.cpp/gguf-py/gguf/__init__.py": "",
             "vendor/llama.cpp/conversion/__init__.py": "",
             "vendor/llama.cpp/src/llama.cpp": "// source\n",
             "vendor/llama.cpp/docs/ops/huge.md": "left out\n"}
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-0.3.36/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_converter_only_then_the_build_reuses_the_tree(tmp_path: Path) -> None:
    tool = _tool()
    sdist, out = _sdist(tmp_path / "llama_cpp_python-0.3.36.tar.gz"), tmp_path / "out"
    assert tool.main(["--out", str(out), "--sdist", str(sdist), "--converter-only"]) == 0
    assert (out / "convert_hf_to_gguf.py").is_file() and (out / "gguf-py" / "gguf").is_dir()
    tree = out / "work" / "llama.cpp"
    assert (tree / "src" / "llama.cpp").is_file() and not (tree / "docs").exists()
    marker = out / "gguf-py" / "in-use"
    marker.write_text("a conversion is reading this folder")
    sdist.unlink()  # a second download or extract would fail now
    kept_tree, commit, seconds, kept = tool.source_tree("0.3.36", sdist, out / "work")
    assert (kept_tree, commit, kept) == (tree, COMMIT, True) and "download" in seconds
    assert marker.is_file()


def test_another_version_is_fetched_again(tmp_path: Path) -> None:
    tool = _tool()
    sdist, out = _sdist(tmp_path / "llama_cpp_python-0.3.36.tar.gz"), tmp_path / "out"
    tool.main(["--out", str(out), "--sdist", str(sdist), "--converter-only"])
    _, _, _, kept = tool.source_tree("0.3.35", sdist, out / "work")
    assert kept is False


def test_the_driver_stub_holds_exactly_the_driver_calls_the_archive_makes(
        tmp_path: Path) -> None:
    """A CUDA build for the GPU machine made here (--cuda-libs) links against a stub
    libcuda.so.1 of the driver functions ggml-cuda leaves undefined: read from the compiled
    archive, the runtime's (cudaXxx) and cuBLAS's (cublasXxx) left to their own libraries."""
    import subprocess

    tool = _tool()
    (tmp_path / "g.c").write_text(
        "int cuMemCreate(void); int cuDeviceGet(void); int cudaMalloc(void);\n"
        "int cublasCreate_v2(void); int curly(void);\n"
        "int use(void) { return cuMemCreate() + cuDeviceGet() + cudaMalloc() + "
        "cublasCreate_v2() + curly(); }\n")
    subprocess.run(["cc", "-c", "-o", str(tmp_path / "g.o"), str(tmp_path / "g.c")],
                   check=True)
    subprocess.run(["ar", "rcs", str(tmp_path / "libggml-cuda.a"), str(tmp_path / "g.o")],
                   check=True)
    stub = tmp_path / "stub" / "libcuda.so"
    stub.parent.mkdir()
    names = tool.stub_from_archive(tmp_path / "libggml-cuda.a", stub)
    assert names == ["cuDeviceGet", "cuMemCreate"]
    dynamic = subprocess.run(["nm", "-D", "--defined-only", str(stub)], capture_output=True,
                             text=True, check=True).stdout
    assert {ln.split()[-1] for ln in dynamic.splitlines()} >= {"cuDeviceGet", "cuMemCreate"}
    soname = subprocess.run(["objdump", "-p", str(stub)], capture_output=True, text=True,
                            check=True).stdout
    assert "SONAME               libcuda.so.1" in soname


def test_the_runpath_survives_ninjas_shell(tmp_path: Path) -> None:
    """The flag the --cuda-libs build links with, on a one-file CMake project built with
    Ninja as llama.cpp is: the binary's runpath is $ORIGIN/../lib. A bare $ORIGIN in the
    flag is expanded to nothing by the shell Ninja links through (it gave /../lib)."""
    import subprocess

    tool = _tool()
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(t C)\nadd_executable(t t.c)\n")
    (tmp_path / "t.c").write_text("int main(void) { return 0; }\n")
    cmake, ninja = tool.build_tools(tmp_path / "work")
    link = next(f for f in tool.cuda_lib_flags(_cuda_libs(tmp_path), tmp_path / "libcuda.so")
                if f.startswith("-DCMAKE_EXE_LINKER_FLAGS="))
    subprocess.run([cmake, "-S", str(tmp_path), "-B", str(tmp_path / "b"), "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={ninja}", link, "-DCMAKE_SKIP_BUILD_RPATH=ON"],
                   check=True, capture_output=True)
    subprocess.run([cmake, "--build", str(tmp_path / "b")], check=True, capture_output=True)
    assert tool.runpath(tmp_path / "b" / "t") == "$ORIGIN/../lib" == tool.RUNPATH


def _cuda_libs(tmp_path: Path) -> Path:
    """A folder shaped like pip's nvidia/cu13 (what cuda_lib_flags checks for)."""
    libs = tmp_path / "cu13"
    (libs / "lib").mkdir(parents=True)
    (libs / "include").mkdir()
    for name in ("libcublas.so.13", "libcublasLt.so.13"):
        (libs / "lib" / name).write_text("")
    return libs
