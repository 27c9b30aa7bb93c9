"""Build open-jet's CUDA megakernel engine (``openjet-engine``) for one GPU architecture.

Why this route: the ``open-jet`` 0.5.1 wheel on PyPI ships the engine as source
(``open_jet-0.5.1.data/purelib/megakernel/``: ``Makefile``, ``qwen38_mk.cu`` …, the HTTP
server ``server/mk_server.py``) and compiles it on the user's machine for the GPU it finds
(``src/megakernel_build.py``: ``make -B -C megakernel -j1 NVCC=… ARCH=sm_XY LLAMA=…
libqwen38mk.so``). The server loads that library with ``ctypes``; the library links
llama.cpp's ``libllama`` (the tokenizer, loaded vocab-only) and ``libggml-base`` (re-encoding
a few tensors at load), so a llama.cpp build with shared libraries must exist first.

Steps (seconds of each in ``BUILD.json``):

1. ``source``: the ``megakernel/`` package out of the wheel (a ``.whl``, an unpacked wheel,
   or a folder ``--stage`` trimmed to the engine), every file checked against the wheel's
   ``RECORD`` hashes (``tools/openjet_wheel.py``), into ``OUT/megakernel/``.
2. ``llama_configure`` / ``llama_build``: llama.cpp from the llama-cpp-python sdist
   (``tools/build_llamacpp.py``'s tree: ``--llama-sdist`` or ``--llama-tree``), CPU only and
   with shared libraries (target ``llama``): the engine only tokenizes and re-encodes with
   it, so a CUDA llama.cpp would add minutes and nothing. Kept as ``OUT/llama/`` (headers and the
   build folder, ``build/bin/lib*.so``: the layout the Makefile's ``LLAMA=`` expects; the
   libraries' runpaths name that folder, so ``OUT`` must not move).
3. ``megakernel``: upstream's own ``make … ARCH=sm_<arch> libqwen38mk.so`` (``-j`` jobs), its
   ``ptxas -v`` report kept for the registers, spills and stack of every kernel.
4. ``check``: the library loaded with ``ctypes`` by ``--python`` (no GPU needed) and every C
   function the server binds looked up; ``jinja2`` (the server's one dependency) imported.

Then ``OUT/openjet-engine``: the wheel's console script (``megakernel.server.mk_server:main``)
over ``OUT/megakernel``, run by ``--python``. ``BUILD.json`` records the open-jet version, the
wheel's sha256, nvcc's release, the arch, the flags make ran, seconds per phase and the
outcome; on failure also the compiler's first error lines and its last lines verbatim, and
the exit status is non-zero with one message naming the phase. The full log: ``build.log``.

Standard library only: it runs with a GPU image's bare ``python3``.
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
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_llamacpp  # beside this file: the llama.cpp tree and its helpers
from openjet_wheel import PACKAGE, BuildFailed, megakernel_files, read_wheel, stage

LIBRARY = "libqwen38mk.so"
#: the C functions server/mk_server.py binds (capi.cpp): a library lacking one is unusable
C_API = ("mk_new", "mk_last_error", "mk_chat_template", "mk_tokenize", "mk_piece", "mk_is_eog",
         "mk_set_sampling", "mk_prefill", "mk_step", "mk_reset", "mk_truncate", "mk_sequence",
         "mk_committed", "mk_checkpoint_pos", "mk_rewind_to_checkpoint")
#: llama.cpp for the tokenizer only: shared libraries, CPU, nothing but the library itself
LLAMA_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DGGML_CUDA=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF",
               "-DLLAMA_BUILD_COMMON=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
               "-DLLAMA_CURL=OFF", "-DGGML_CCACHE=OFF"]
TAIL_LINES, ERROR_LINES = 40, 20


def log(msg: str) -> None:
    print(f"build_openjet: {msg}", file=sys.stderr, flush=True)


@contextmanager
def timed(seconds: dict[str, float], phase: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        seconds[phase] = round(time.perf_counter() - t0, 1)


def run_logged(argv: Sequence[str | Path], logfile: Path, phase: str, **kw: Any) -> list[str]:
    """Run ``argv`` with its output appended to ``logfile``; its lines, or
    :class:`BuildFailed` with them when it exits non-zero."""
    with logfile.open("a") as fh:
        fh.write(f"\n$ {' '.join(map(str, argv))}\n")
    done = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", check=False,
                          **kw)
    output: str = done.stdout
    with logfile.open("a") as fh:
        fh.write(output)
    lines = output.splitlines()
    if done.returncode != 0:
        raise BuildFailed(phase, f"{Path(str(argv[0])).name} exited with {done.returncode}",
                          lines)
    return lines


def error_lines(lines: Sequence[str]) -> list[str]:
    """The compiler's own error lines (nvcc, ptxas, gcc, ld, make), first ones first."""
    pattern = re.compile(r"\berror\b|undefined reference|Error \d+|fatal", re.I)
    return [ln for ln in lines if pattern.search(ln)][:ERROR_LINES]


def build_llama(tree: Path, commit: str, prefix: Path, jobs: int, logfile: Path,
                seconds: dict[str, float]) -> bool:
    """``prefix``: llama.cpp's headers and its build folder ``prefix/build`` (shared
    libraries in ``build/bin``, each finding the others through its runpath there), built
    from ``tree``; ``prefix/LLAMA.json`` says from which commit with which flags, and a
    prefix that says the same and has its ``libllama.so`` is kept (a second run after a
    failed engine compile does not build llama.cpp again). Whether it was kept."""
    stamp = {"commit": commit, "cmake_flags": LLAMA_FLAGS}
    marker, build = prefix / "LLAMA.json", prefix / "build"
    if (marker.is_file() and json.loads(marker.read_text()) == stamp
            and (build / "bin" / "libllama.so").exists()):
        log(f"llama.cpp {commit[:9]} kept from an earlier run in {prefix}")
        return True
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    cmake, ninja = build_llamacpp.build_tools(prefix)
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(prefix))
    with timed(seconds, "llama_configure"):
        run_logged([cmake, "-S", tree, "-B", build, "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={ninja}", *LLAMA_FLAGS], logfile,
                   "llama_configure", env=env)
    with timed(seconds, "llama_build"):
        run_logged([cmake, "--build", build, "--target", "llama", "-j", str(jobs)], logfile,
                   "llama_build", env=env)
    shutil.copytree(tree / "include", prefix / "include")
    shutil.copytree(tree / "ggml" / "include", prefix / "ggml" / "include")
    marker.write_text(json.dumps(stamp) + "\n")
    return False


def ptxas_summary(text: str) -> dict[str, Any]:
    """From ``ptxas -v``: the SASS targets, and for each kernel (``mk_cycle``, each ``mmh``
    instance …) its registers, stack frame and spills: what an arch change may move."""
    targets = sorted(set(re.findall(r"for '(sm_\w+)'", text)))
    kernels: dict[str, list[str]] = {}
    name, stack = "", ""
    for line in text.splitlines():
        entry = re.search(r"Compiling entry function '(\S+)'", line)
        if entry:
            short = re.search(r"(mk_cycle|mmh|pk_[a-z_]+?|gather_rows)(?:I|E|$)", entry[1])
            name, stack = (short[1] if short else entry[1]), ""
        elif name and "bytes stack frame" in line and not stack:
            stack = line.strip()
        elif name and (used := re.search(r"Used (\d+) registers", line)):
            kernels.setdefault(name, []).append(f"{used[1]} registers, {stack}")
            name = ""
    return {"targets": targets, "kernels": kernels}


def check_library(lib: Path, python: str, logfile: Path) -> dict[str, Any]:
    """Load ``lib`` with ``ctypes`` in ``python`` and look up :data:`C_API`; import jinja2."""
    probe = ("import ctypes, json, sys\n"
             "lib = ctypes.CDLL(sys.argv[1])\n"
             "missing = [n for n in sys.argv[2:] if not hasattr(lib, n)]\n"
             "try:\n    import jinja2; j = jinja2.__version__\n"
             "except ImportError:\n    j = None\n"
             "print(json.dumps({'missing': missing, 'jinja2': j}))\n")
    lines = run_logged([python, "-c", probe, lib, *C_API], logfile, "check")
    found: dict[str, Any] = json.loads(lines[-1])
    if found["missing"]:
        raise BuildFailed("check", f"{lib.name} lacks {', '.join(found['missing'])}", lines)
    return found


def write_launcher(out: Path, python: str, version: str, arch: str) -> Path:
    """``out/openjet-engine``: the wheel's console script over ``out/megakernel``."""
    exe = out / "openjet-engine"
    exe.write_text(
        f"#!{python}\n"
        f'"""openjet-engine of open-jet {version} ({arch}), written by tools/build_openjet.py:'
        f' megakernel.server.mk_server:main over this folder."""\n'
        "import os\nimport sys\n\n"
        "sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))\n"
        "from megakernel.server.mk_server import main  # noqa: E402\n\n"
        "sys.exit(main())\n")
    exe.chmod(0o755)
    return exe


def llama_source(args: argparse.Namespace, work: Path) -> tuple[Path, str]:
    """The llama.cpp tree to build from and its commit: ``--llama-tree`` (its commit from a
    ``SOURCE.json`` beside it, as ``tools/build_llamacpp.py`` leaves one), else the sdist's
    tree extracted into ``work``."""
    if args.llama_tree:
        tree = args.llama_tree.resolve()
        marker = tree.parent / "SOURCE.json"
        kept = json.loads(marker.read_text()) if marker.is_file() else {}
        return tree, str(kept.get("commit", ""))
    tarball = args.llama_sdist or build_llamacpp.download_sdist(args.llama_version, work)
    return build_llamacpp.extract(tarball.resolve(), work)


def build(args: argparse.Namespace, out: Path, record: dict[str, Any]) -> None:
    """Every phase into ``out``, filling ``record`` as it goes."""
    seconds: dict[str, float] = record["seconds"]
    logfile = out / "build.log"
    with timed(seconds, "source"):
        files, wheel, sha = read_wheel(args.wheel.resolve())
        version, package, _ = megakernel_files(files)
        root = out / PACKAGE
        for rel, data in package.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    record.update(openjet_version=version, wheel=wheel, wheel_sha256=sha or None,
                  files_verified=len(package))
    prefix = out / "llama"
    work = out / "work"
    with timed(seconds, "llama_source"):
        tree, commit = llama_source(args, work)
    kept = build_llama(tree, commit, prefix, args.jobs, logfile, seconds)
    shutil.rmtree(work, ignore_errors=True)
    record["llama_cpp"] = {"commit": commit or None, "backend": "cpu", "kept": kept,
                           "build_number": build_llamacpp.KNOWN_BUILD_NUMBERS.get(commit),
                           "cmake_flags": LLAMA_FLAGS, "target": "llama",
                           "why": "the engine only tokenizes and re-encodes with it"}
    arch = record["cuda_arch"]
    make = ["make", "-C", root, f"-j{args.jobs}", f"NVCC={args.nvcc}", f"ARCH={arch}",
            f"LLAMA={prefix}", *args.make_var, LIBRARY]
    record["make_command"] = [str(a) for a in make]
    with timed(seconds, "megakernel"):
        try:
            lines = run_logged(make, logfile, "megakernel")
        finally:
            ptxas = root / "ptxas.log"
            if ptxas.is_file():
                record["ptxas"] = ptxas_summary(ptxas.read_text(errors="replace"))
    joined = "\n".join(lines).replace("\\\n", " ").splitlines()  # make's continued lines
    record["nvcc_commands"] = [" ".join(ln.split()) for ln in joined
                               if ln.startswith(str(args.nvcc))]
    with timed(seconds, "check"):
        found = check_library(root / LIBRARY, args.python, logfile)
    record["jinja2"] = found["jinja2"]
    record["launcher"] = str(write_launcher(out, args.python, version, arch))
    if found["jinja2"] is None:
        log(f"warning: {args.python} cannot import jinja2: the server needs it")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wheel", type=Path, required=True,
                   help="the open-jet wheel (.whl), an unpacked wheel, or a --stage folder")
    p.add_argument("--out", type=Path, default=Path(".engines/open-jet"))
    p.add_argument("--cuda-arch", default="90", help="compute capability: 90, sm_90, 8.6 …")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter that runs the server (needs jinja2)")
    p.add_argument("--llama-sdist", type=Path, help="llama-cpp-python sdist tarball "
                   "(whole, or trimmed by tools/gpu_run.py); default: pip download it")
    p.add_argument("--llama-tree", type=Path, help="an extracted llama.cpp tree instead")
    p.add_argument("--llama-version", default=build_llamacpp.SDIST_VERSION)
    p.add_argument("--make-var", action="append", default=[], metavar="NAME=VALUE",
                   help="passed to make, e.g. NVFLAGS=… to try other flags")
    p.add_argument("--stage", type=Path, metavar="DEST",
                   help="only trim the wheel to the engine into DEST, build nothing")
    return p.parse_args(argv)


def arch_name(value: str) -> str:
    """``90``, ``9.0``, ``sm_90`` → ``sm_90`` (``90a`` → ``sm_90a``)."""
    digits = value.strip().lower().removeprefix("sm_").replace(".", "")
    if not re.fullmatch(r"\d{2,3}[af]?", digits):
        raise SystemExit(f"build_openjet: --cuda-arch {value!r} is not a compute capability")
    return f"sm_{digits}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.stage:
        stage(args.wheel, args.stage)
        return 0
    out: Path = args.out.resolve()
    for stale in (PACKAGE, "work", "openjet-engine", "build.log", "BUILD.json"):
        target = out / stale  # llama/ stays: build_llama keeps it when it is still current
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "tool": "tools/build_openjet.py", "target": LIBRARY, "cuda_arch": arch_name(args.cuda_arch),
        "nvcc": build_llamacpp.nvcc_release(args.nvcc) if Path(args.nvcc).is_file() else None,
        "nvcc_path": args.nvcc, "jobs": args.jobs, "python": args.python,
        "machine": platform.machine(), "gpu_visible": build_llamacpp.gpu_visible(),
        "seconds": {}, "outcome": "failed"}
    t0 = time.perf_counter()
    try:
        if record["nvcc"] is None:
            raise BuildFailed("nvcc", f"no nvcc at {args.nvcc} (--nvcc)")
        build(args, out, record)
        record["outcome"] = "ok"
    except BuildFailed as exc:
        record.update(failed_phase=exc.phase, error=str(exc),
                      compiler_errors=error_lines(exc.lines),
                      compiler_tail=exc.lines[-TAIL_LINES:])
    finally:
        record["seconds"]["total"] = round(time.perf_counter() - t0, 1)
        (out / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n")
    if record["outcome"] != "ok":
        log(f"FAILED in {record['error']}; first errors:")
        for line in record["compiler_errors"] or record["compiler_tail"][-10:]:
            print(f"  {line}", file=sys.stderr)
        log(f"full log {out / 'build.log'}; record {out / 'BUILD.json'}")
        return 1
    log(f"open-jet {record['openjet_version']} engine for {record['cuda_arch']} built in "
        f"{record['seconds']['total']:.0f} s: {record['launcher']}; {out / 'BUILD.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
