"""llama.cpp's CUDA build made here and carried to the GPU machine (issue 34: "build what can
be built here … checked there before use, falling back to building there").

Here, off the GPU's clock: ``tools/build_llamacpp.py --backend cuda --cuda-arch 90
--cuda-libs DIR`` compiles ``llama-server`` and ``llama-quantize`` for sm_90 with nvcc and
cuBLAS from pip's wheels (no GPU, no driver: a stub ``libcuda.so.1``); :func:`stage_files`
packs them as the ``llamacpp`` group (uncompressed: two 40 MiB parts for llama-server, four
with llama-quantize), which saves the visit the 4 to 7 minutes of its build there
(docs/gpu-run.md).

There (job ``llamacpp-carried``): :func:`install` puts them where the recipes name them,
links each CUDA library the loader does not find into ``lib/`` beside ``bin/`` (the binary's
runpath is ``$ORIGIN/../lib``: the image's cuBLAS may live in its toolkit or in the pip
packages its torch uses), then runs ``llama-server --version`` and ``--list-devices`` on the
GPU. Anything short of a version line and a CUDA device listed (llama.cpp only logs a CUDA
start-up failure and goes on without one) fails the job, and the ``llamacpp`` job then
builds there as before.
"""

from __future__ import annotations

import json
import re
import shutil
import site
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["BUILT", "find_library", "install", "missing_libraries", "stage_files"]

#: where ``build_llamacpp.py --out`` puts the carried build here
BUILT = Path(__file__).resolve().parents[1] / ".device" / "llamacpp-cuda90"
#: the folders a CUDA library may be in on the GPU machine's image, after the loader's own
CUDA_DIRS = ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")


def stage_files(built: Path) -> list[tuple[Path, str]]:
    """The ``llamacpp`` group: the programs and ``BUILD.json`` of a finished ``--cuda-libs``
    build (its work folder left behind). A build made for this machine (no ``cuda_libs``
    in its record) or not finished is refused by name."""
    record_path = built / "BUILD.json"
    if not record_path.is_file():
        raise SystemExit(f"gpu_llamacpp: {built} holds no finished build (tools/"
                         "build_llamacpp.py --backend cuda --cuda-arch 90 --cuda-libs DIR "
                         f"--out {built})")
    record = json.loads(record_path.read_text())
    if record.get("backend") != "cuda" or "cuda_libs" not in record:
        raise SystemExit(f"gpu_llamacpp: {built} is not a CUDA build for another machine "
                         f"(backend {record.get('backend')}, no cuda_libs in BUILD.json)")
    files = [(record_path, "BUILD.json")]
    files += [(exe, f"bin/{exe.name}") for exe in sorted((built / "bin").iterdir())]
    return files


def missing_libraries(exe: Path) -> list[str]:
    """The shared libraries ``ldd`` says the loader does not find for ``exe``."""
    out = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=False)
    return re.findall(r"^\s*(\S+) => not found", out.stdout, flags=re.M)


def find_library(name: str, dirs: tuple[str, ...] = CUDA_DIRS) -> Path | None:
    """``name`` (e.g. ``libcublas.so.13``) in the toolkit's folders, else in the Python
    packages' ``nvidia/*/lib`` (pip's CUDA wheels, which the image's torch loads)."""
    for folder in dirs:
        if (Path(folder) / name).exists():
            return Path(folder) / name
    for packages in site.getsitepackages():
        found = sorted(Path(packages).glob(f"nvidia/*/lib/{name}"))
        if found:
            return found[0]
    return None


def _ask(server: Path, flag: str) -> str:
    """What ``server flag`` prints; a failed exit raises, naming the flag."""
    done = subprocess.run([str(server), flag], capture_output=True, text=True, timeout=120,
                          check=False)
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise SystemExit(f"gpu_llamacpp: llama-server {flag} exited {done.returncode}: "
                         f"{output[-2000:]}")
    return output


def install(group: Path, dest: Path, dirs: tuple[str, ...] = CUDA_DIRS) -> dict[str, Any]:
    """The carried programs into ``dest/bin``, what the loader misses linked into
    ``dest/lib``, then ``llama-server --version`` and ``--list-devices`` run (a CUDA device
    listed). Returns what was done (written to ``dest/CARRIED.json``); raises ``SystemExit``
    with the reason when it cannot serve."""
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    for exe in sorted((group / "bin").iterdir()):
        shutil.copy2(exe, dest / "bin" / exe.name)
        (dest / "bin" / exe.name).chmod(0o755)
    server = dest / "bin" / "llama-server"
    linked: dict[str, str] = {}
    for name in missing_libraries(server):
        found = find_library(name, dirs)
        if found is None:
            raise SystemExit(f"gpu_llamacpp: {name} is not on this machine (ldd {server})")
        (dest / "lib").mkdir(exist_ok=True)
        link = dest / "lib" / name
        link.unlink(missing_ok=True)
        link.symlink_to(found)
        linked[name] = str(found)
    still = missing_libraries(server)
    if still:
        raise SystemExit(f"gpu_llamacpp: still not found after linking: {', '.join(still)}")
    output = _ask(server, "--version")
    if "version:" not in output:
        raise SystemExit(f"gpu_llamacpp: llama-server --version printed no version: "
                         f"{output[-2000:]}")
    # a CUDA start-up failure is only logged and the server goes on without a device: the
    # build serves here only if it lists a CUDA device
    devices = _ask(server, "--list-devices")
    cuda = re.findall(r"^\s*(CUDA\d+: .*)$", devices, flags=re.M)
    if not cuda or "failed to initialize" in devices:
        raise SystemExit(f"gpu_llamacpp: llama-server lists no CUDA device: {devices[-2000:]}")
    record = {"build": json.loads((group / "BUILD.json").read_text()), "linked": linked,
              "version_output": output, "devices": cuda}
    shutil.copy2(group / "BUILD.json", dest / "BUILD.json")
    (dest / "CARRIED.json").write_text(json.dumps(record, indent=2) + "\n")
    return record
