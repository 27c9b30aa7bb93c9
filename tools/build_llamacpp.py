"""Build llama.cpp's ``llama-server`` into ``.engines/llamacpp/`` (``make llamacpp``).

Why this route: CI and the benchmark machines reach PyPI but not GitHub, so llama.cpp's own
repository and release tarballs cannot be fetched. The ``llama-cpp-python`` sdist on PyPI
vendors a full, pinned llama.cpp tree (``vendor/llama.cpp``, with its submodule's git HEAD),
so ``pip download --no-binary :all: --no-deps llama-cpp-python==V`` gives us llama.cpp's source
through the one index we can reach, pinned by the sdist's version and checked by pip.

Steps:

1. ``pip download`` the sdist (or take ``--sdist``: a tarball already on disk, e.g. carried to
   an offline GPU machine).
2. Extract only what ``llama-server`` and the GGUF converter need (``vendor/llama.cpp``
   without docs, test vocabularies, benches …) and read the llama.cpp commit from the
   sdist's ``.git/modules/vendor/llama.cpp/HEAD``; copy ``gguf-py``, ``conversion`` and
   ``convert_hf_to_gguf.py`` (the converter of the same tree) into the output folder.
   ``--converter-only`` stops here and keeps the tree (``work/SOURCE.json``): ``make`` converts
   the tiny model to GGUF while a second run, reusing the tree, compiles.
3. ``cmake -G Ninja`` with the server alone: no tests, examples, unified app or web UI, no
   OpenSSL, no curl; static libraries so the one binary is self-contained; the build number
   and commit passed in, so ``llama-server --version`` says which llama.cpp it is (the
   sdist's git clone is shallow: git would count 1 commit).
4. ``cmake --build --target llama-server`` (and each ``--also`` program, e.g.
   ``llama-quantize``); copy them into the output folder's ``bin/``; write ``BUILD.json``
   (commit, build number, sdist version, backend, the flags, the targets, nvcc's release
   for a CUDA build, seconds per phase and ``llama-server --version``); remove the work
   folder.

Backend: ``cuda`` when ``nvcc`` is on PATH *and* a GPU is visible (``nvidia-smi -L`` lists
one, or ``/dev/nvidia0`` exists), else ``cpu``. A CUDA build needs the driver's ``libcuda``
to even start, and takes far longer on a small machine, so nvcc alone (a CUDA toolkit in a
CPU-only container) does not choose it; ``--backend cuda`` forces it.

Building for a GPU machine here (``--cuda-libs``, issue 34: the build leaves the GPU's clock):
a toolkit with nvcc but without cuBLAS or the driver (this machine's) takes cuBLAS's headers
and libraries from a folder (pip's ``nvidia-cublas`` and ``nvidia-cuda-runtime`` wheels of
the GPU image's CUDA release, unpacked: their ``nvidia/cu13``), and links against a stub
``libcuda.so.1`` made of exactly the driver functions the compiled ``ggml-cuda`` calls (read
with ``nm`` after it is compiled, so no list is kept by hand). The binary's RUNPATH is
``$ORIGIN/../lib`` (read back after the link): the GPU machine's job links the image's
cuBLAS there when its loader does not find it, and asks the server for its CUDA devices
before any use.

cmake and ninja: the system's when on PATH, else ``pip install cmake ninja`` into a small
build venv inside the work folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import venv
from pathlib import Path
from typing import Any

SDIST_VERSION = "0.3.36"
#: llama.cpp's release number (tag ``bN``) of a commit. Not in the sdist (its clone is
#: shallow); from the upstream release tag: b11312 is 0c1e57098 (llama-cpp-python 0.3.36)
KNOWN_BUILD_NUMBERS = {"0c1e57098bba43ac29e6e3b677cdceebdd22334f": 11312}
#: the parts of vendor/llama.cpp the server build and the converter need (about 10 MB of
#: 216 MB: docs/ops, the models/ggml-vocab-*.gguf test vocabularies, benches … are left)
KEEP = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", "ggml", "include", "src",
        "tools", "vendor", "gguf-py", "app", "licenses", "LICENSE", "conversion",
        "convert_hf_to_gguf.py", "scripts/ui-assets.cmake")
CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF",
               "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF", "-DGGML_CCACHE=OFF"]


def log(msg: str) -> None:
    print(f"build_llamacpp: {msg}", file=sys.stderr, flush=True)


def gpu_visible() -> bool:
    """Whether this machine has an NVIDIA GPU a CUDA build could use."""
    if Path("/dev/nvidia0").exists():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    done = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "GPU" in done.stdout


def choose_backend(asked: str) -> str:
    if asked != "auto":
        return asked
    return "cuda" if shutil.which("nvcc") and gpu_visible() else "cpu"


def download_sdist(version: str, dest: Path) -> Path:
    """``pip download`` the sdist into ``dest`` with this interpreter's pip."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:",
                    "--no-deps", f"llama-cpp-python=={version}", "-d", str(dest)], check=True)
    found = sorted(dest.glob(f"llama_cpp_python-{version}.tar.gz"))
    if not found:
        raise SystemExit(f"build_llamacpp: pip saved no llama_cpp_python-{version}.tar.gz")
    return found[0]


def extract(sdist: Path, dest: Path) -> tuple[Path, str]:
    """The kept part of ``vendor/llama.cpp`` under ``dest/llama.cpp``, and its commit."""
    tree = dest / "llama.cpp"
    commit = ""
    with tarfile.open(sdist) as tar:
        for member in tar:
            parts = member.name.split("/", 1)
            if len(parts) < 2:
                continue
            rel = parts[1]
            if rel == ".git/modules/vendor/llama.cpp/HEAD":
                handle = tar.extractfile(member)
                assert handle is not None
                commit = handle.read().decode().strip()
                continue
            if not rel.startswith("vendor/llama.cpp/"):
                continue
            inner = rel[len("vendor/llama.cpp/"):]
            if not any(inner == k or inner.startswith(k + "/") for k in KEEP):
                continue
            member.name = inner
            tar.extract(member, tree, filter="data")
    if len(commit) != 40:
        raise SystemExit(f"build_llamacpp: no llama.cpp commit in {sdist.name}")
    return tree, commit


def build_tools(work: Path) -> tuple[str, str]:
    """cmake and ninja: the system's, else pip-installed into ``work/tools-venv``."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if cmake and ninja:
        return cmake, ninja
    env_dir = work / "tools-venv"
    log("cmake/ninja not on PATH: pip install cmake ninja into " + str(env_dir))
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "cmake",
                    "ninja"], check=True)
    return cmake or str(env_dir / "bin" / "cmake"), ninja or str(env_dir / "bin" / "ninja")


def version_line(exe: Path) -> str:
    """What ``llama-server --version`` prints (on stderr), one line per line."""
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                          timeout=60, check=False)
    return (done.stdout + done.stderr).strip()


def driver_stub(build: Path, cmake: str, env: dict[str, str], jobs: int, stub: Path) -> list[str]:
    """Compile ``ggml-cuda``, then write ``stub`` from it (:func:`stub_from_archive`)."""
    subprocess.run([cmake, "--build", str(build), "--target", "ggml-cuda", "-j", str(jobs)],
                   check=True, env=env)
    libs = sorted(build.rglob("libggml-cuda.a"))
    if not libs:
        raise SystemExit(f"build_llamacpp: no libggml-cuda.a under {build}")
    return stub_from_archive(libs[0], stub)


def stub_from_archive(archive: Path, stub: Path) -> list[str]:
    """Write ``stub`` (``libcuda.so`` with soname ``libcuda.so.1``): an empty function for
    each driver call (``cuXxx``; not ``cudaXxx``, the runtime's, nor ``cublasXxx``) that
    ``archive`` leaves undefined. The executable links against it and loads the real driver
    where it runs. Returns the names."""
    listed = subprocess.run(["nm", "-u", "--format=posix", str(archive)],
                            capture_output=True, text=True, check=True).stdout
    names = sorted({f[0] for f in (ln.split() for ln in listed.splitlines())
                    if f and re.fullmatch(r"cu[A-Z]\w*", f[0])})
    if not names:
        raise SystemExit(f"build_llamacpp: {archive.name} calls no driver function: nothing "
                         "to stub")
    source = stub.with_suffix(".c")
    source.write_text("".join(f"void {n}(void) {{}}\n" for n in names))
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(stub),
                    str(source)], check=True)
    log(f"driver stub: {len(names)} functions ({', '.join(names[:4])} …) in {stub}")
    return names


def cuda_lib_flags(libs: Path, stub: Path) -> list[str]:
    """CMake's cuBLAS, its headers and the driver taken from ``libs`` (``include/``,
    ``lib/``) and ``stub``, and ``$ORIGIN/../lib`` searched first at run time."""
    lib = libs / "lib"
    for name in ("libcublas.so.13", "libcublasLt.so.13"):
        if not (lib / name).is_file():
            raise SystemExit(f"build_llamacpp: --cuda-libs {libs} has no lib/{name}")
    include = f"-I{libs / 'include'}"
    return [f"-DCUDA_cublas_LIBRARY={lib / 'libcublas.so.13'}",
            f"-DCUDA_cublasLt_LIBRARY={lib / 'libcublasLt.so.13'}",
            f"-DCUDA_cuda_driver_LIBRARY={stub}", f"-DCMAKE_CUDA_FLAGS={include}",
            f"-DCMAKE_CXX_FLAGS={include}", "-DCMAKE_SKIP_BUILD_RPATH=ON",
            f"-DCMAKE_EXE_LINKER_FLAGS=-Wl,--enable-new-dtags,-rpath,{ORIGIN_ESCAPED}"]


#: the runpath as the link's shell must see it: Ninja runs the link through ``sh``, which
#: would expand a bare ``$ORIGIN`` to nothing (the binary's runpath became ``/../lib``)
ORIGIN_ESCAPED = "\\$ORIGIN/../lib"
RUNPATH = "$ORIGIN/../lib"


def runpath(exe: Path) -> str | None:
    """``exe``'s DT_RUNPATH as ``readelf -d`` shows it, or None."""
    out = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True,
                         check=True).stdout
    found = re.search(r"\(RUNPATH\)\s+Library runpath: \[(.*)\]", out)
    return found.group(1) if found else None


def nvcc_release(nvcc: str) -> str | None:
    """The CUDA toolkit the engine is built with (its runtime): ``nvcc --version``'s release
    line, e.g. ``Cuda compilation tools, release 13.0, V13.0.88``."""
    lines = version_line(Path(nvcc)).splitlines()
    return next((line for line in lines if "release" in line), lines[-1] if lines else None)


def source_tree(version: str, sdist: Path | None, work: Path
                ) -> tuple[Path, str, dict[str, float], bool]:
    """The extracted llama.cpp tree, its commit, the seconds it took and whether it was kept:
    the one a ``--converter-only`` run left in ``work`` (``SOURCE.json`` says which sdist),
    else a new download and extract."""
    marker = work / "SOURCE.json"
    if marker.is_file():
        kept = json.loads(marker.read_text())
        if kept.get("version") == version and Path(kept["tree"]).is_dir():
            log(f"llama.cpp tree of llama-cpp-python {version} kept from an earlier run")
            return Path(kept["tree"]), str(kept["commit"]), dict(kept["seconds"]), True
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    tarball = sdist.resolve() if sdist else download_sdist(version, work)
    seconds["download"] = round(time.monotonic() - t0, 1)
    t0 = time.monotonic()
    tree, commit = extract(tarball, work)
    seconds["extract"] = round(time.monotonic() - t0, 1)
    marker.write_text(json.dumps({"version": version, "tree": str(tree), "commit": commit,
                                  "seconds": seconds}) + "\n")
    return tree, commit, seconds, False


def install_converter(tree: Path, out: Path) -> None:
    """``convert_hf_to_gguf.py`` with its ``gguf-py`` and ``conversion`` into ``out``: the
    converter of the same tree the server is built from (usable before the compile ends)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("gguf-py", "conversion"):
        shutil.rmtree(out / name, ignore_errors=True)
        shutil.copytree(tree / name, out / name)
    shutil.copy2(tree / "convert_hf_to_gguf.py", out / "convert_hf_to_gguf.py")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(".engines/llamacpp"))
    p.add_argument("--version", default=SDIST_VERSION, help="llama-cpp-python sdist version")
    p.add_argument("--sdist", type=Path, help="use this sdist tarball instead of downloading")
    p.add_argument("--backend", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--cuda-arch", default="native", help="CMAKE_CUDA_ARCHITECTURES")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--keep-work", action="store_true", help="keep the source and build tree")
    p.add_argument("--also", action="append", default=[], metavar="TARGET",
                   help="another llama.cpp program to build beside llama-server, into bin/ "
                        "(e.g. llama-quantize); repeat for several")
    p.add_argument("--cuda-libs", type=Path,
                   help="build for a GPU machine on one without cuBLAS or a driver: cuBLAS "
                        "from this folder (include/, lib/: pip's nvidia/cu13), the driver "
                        "stubbed (see the module's docstring)")
    p.add_argument("--converter-only", action="store_true",
                   help="only fetch the tree and install the GGUF converter (its work folder "
                        "is kept, and a later full build compiles from it)")
    args = p.parse_args(argv)
    out: Path = args.out.resolve()
    work = out / "work"
    tree, commit, seconds, kept = source_tree(args.version, args.sdist, work)
    if not kept:  # a kept tree's converter is in place already, maybe converting right now
        install_converter(tree, out)
    if args.converter_only:
        log(f"converter of llama.cpp {commit[:9]}: {out / 'convert_hf_to_gguf.py'}")
        return 0
    build_number = KNOWN_BUILD_NUMBERS.get(commit)
    backend = choose_backend(args.backend)
    if args.cuda_libs is not None and backend != "cuda":
        raise SystemExit("build_llamacpp: --cuda-libs builds for a GPU machine: give "
                         "--backend cuda too (this machine would build for its CPU)")
    flags = [*CMAKE_FLAGS, f"-DLLAMA_BUILD_NUMBER={build_number or 0}",
             f"-DLLAMA_BUILD_COMMIT={commit[:7]}"]
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(work))  # never read the kit's git
    if backend == "cuda":
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            raise SystemExit("build_llamacpp: --backend cuda needs nvcc on PATH")
        env["CUDACXX"] = nvcc
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={args.cuda_arch}"]
    stub = work / "stub" / "libcuda.so"
    if args.cuda_libs is not None:  # a CUDA build (checked above)
        stub.parent.mkdir(parents=True, exist_ok=True)
        flags += cuda_lib_flags(args.cuda_libs.resolve(), stub)
    log(f"llama.cpp {commit[:9]} (build {build_number}) from llama-cpp-python "
        f"{args.version}, backend {backend}, {args.jobs} jobs")
    cmake, ninja = build_tools(work)
    build = work / "build"
    t0 = time.monotonic()
    subprocess.run([cmake, "-S", str(tree), "-B", str(build), "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={ninja}", *flags], check=True, env=env)
    seconds["configure"] = round(time.monotonic() - t0, 1)
    t0 = time.monotonic()
    stubbed = driver_stub(build, cmake, env, args.jobs, stub) if args.cuda_libs else []
    targets = ["llama-server", *args.also]
    subprocess.run([cmake, "--build", str(build), "--target", *targets, "-j",
                    str(args.jobs)], check=True, env=env)
    seconds["build"] = round(time.monotonic() - t0, 1)
    (out / "bin").mkdir(exist_ok=True)
    for target in targets:
        shutil.copy2(build / "bin" / target, out / "bin" / target)
    exe = out / "bin" / "llama-server"
    if stubbed and runpath(exe) != RUNPATH:
        raise SystemExit(f"build_llamacpp: {exe}'s runpath is {runpath(exe)!r}, not "
                         f"{RUNPATH!r}: the machine it is built for would not find the "
                         "CUDA libraries linked beside it")
    record: dict[str, Any] = {
        "commit": commit, "build_number": build_number,
        "build_number_source": ("upstream release tag (not in the sdist)" if build_number
                                else "unknown: the sdist's git clone is shallow"),
        "sdist": f"llama-cpp-python=={args.version}", "backend": backend,
        "cmake_flags": flags, "targets": targets, "jobs": args.jobs,
        "machine": platform.machine(),
        "nvcc": nvcc_release(env["CUDACXX"]) if backend == "cuda" else None,
        "seconds": seconds,
        "version_output": (version_line(exe) if not stubbed else
                           "not run: built without a GPU (--cuda-libs); the GPU machine's "
                           "job runs it before use"),
    }
    if stubbed:
        record["cuda_libs"] = {"driver_stub": stubbed, "rpath": RUNPATH}
    (out / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n")
    if not args.keep_work:
        shutil.rmtree(work)
    log(f"{exe} ({backend}) built in {seconds['configure'] + seconds['build']:.0f} s "
        f"(download {seconds['download']:.0f} s); {out / 'BUILD.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
