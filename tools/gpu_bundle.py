"""What the GPU machine needs beyond its image, pinned here and moved there in parts.

The GPU machine reaches no package registry and a device call carries at most 64 MiB with
the working tree (docs/gpu-run.md). So each *group* of files (the kit's wheels and
llama.cpp's source; vLLM and the wheels it needs; a model wheel …) is packed here into one
tar, split into parts of at most :data:`PART_MIB`, one folder per part
(``.device/parts/<group>-NN/``, each with the group's manifest), so every device call carries
one part by its own name and nothing here changes between calls. There, ``receive`` copies the
parts that arrived into ``.device/work/incoming/<group>/`` (kept while the machine is warm),
checks each against the manifest's sha256, and once a group is whole joins, checks and
unpacks it into ``.device/work/groups/<group>/``. Every step is resumable: a part already
received is not copied again, a whole group already unpacked is not unpacked again, and a
call names what is still missing.

``lock`` (here) resolves vLLM's dependency closure for the GPU machine's Python by hand, as
pip cannot (torch 2.11's ``nvidia-nccl-cu13`` pin is not served): vLLM's ``Requires-Dist``
and theirs, evaluated for CPython 3.12 on x86-64 Linux, less what the image has
(:data:`IMAGE_HAS`) and less the optional kernel packages a BF16 text model on an H200 does
not need (:data:`LEFT_OUT`, each with the reason), plus :data:`ADDED`; written as a lock file
of ``name==version`` lines. ``download`` fetches exactly the locked wheels.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEVICE = REPO / ".device"
PARTS = DEVICE / "parts"
WORK = DEVICE / "work"
INCOMING = WORK / "incoming"
GROUPS = WORK / "groups"
#: a part's size: the call's 64 MiB less the working tree (about 6 MiB) and a margin
PART_MIB = 50
PYTHON = "3.12"
#: ``pip download``'s platform tags for the GPU machine (x86-64, glibc 2.39)
PLATFORMS = (*(f"manylinux_2_{n}_x86_64" for n in (39, 35, 34, 31, 28, 27, 26, 24, 17)),
             "manylinux2014_x86_64", "linux_x86_64")

#: distributions the GPU image has (the device tool's KINDS.md package list): never carried
_IMAGE_HAS = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs build
certifi charset-normalizer click cloudpickle cmake colorama contourpy cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython einops filelock flatbuffers fonttools
frozenlist fsspec grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis
idna imageio iniconfig jinja2 joblib kiwisolver lazy-loader llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl ml-dtypes mpmath msgpack multidict mypy-extensions
nanobind narwhals networkx ninja numba numba-cuda numpy nvidia-cublas nvidia-cuda-cupti
nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile
nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx opencv-python-headless
packaging pandas pathspec pillow pip pluggy portalocker prometheus-client propcache protobuf
psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks python-dateutil pyyaml
regex requests rich safetensors scipy sentencepiece setuptools shellingham six sortedcontainers
sympy tabulate tiktoken tokenizers toolz torch torchaudio torchvision tqdm transformers triton
typer typing-extensions typing-inspect urllib3 uvloop werkzeug wheel wrapt xxhash yarl zipp
"""
IMAGE_HAS = frozenset(_IMAGE_HAS.split())

#: vLLM's requirements a BF16 text model on an H200 serves without, and why (tried there:
#: ../shared/notes/vllm-gpu.md). The engine needs VLLM_USE_FLASHINFER_SAMPLER=0 without
#: FlashInfer, which the recipes set.
LEFT_OUT = {
    "flashinfer-python": "FlashInfer: the sampler is switched off it (VLLM_USE_FLASHINFER_"
                         "SAMPLER=0); it pulls nvidia-cutlass-dsl, hundreds of MiB",
    "flashinfer-cubin": "FlashInfer's kernels (see flashinfer-python)",
    "nvidia-cutlass-dsl": "CuTe DSL kernels (Blackwell attention and MoE paths)",
    "quack-kernels": "CuTe DSL kernels (Blackwell)",
    "tilelang": "TileLang kernels (sparse MLA of DeepSeek-V3.2 / GLM-5)",
    "tokenspeed-mla": "Blackwell MLA decode kernels",
    "humming-kernels": "quantized GEMM kernels for formats a BF16 model does not use",
    "fastsafetensors": "an optional GPU-direct safetensors loader",
    "torchcodec": "video decoding for multimodal models",
    "pynvvideocodec": "video decoding for multimodal models",
    "nvidia-cudnn-frontend": "cuDNN graph API for FlashInfer's prefill",
    "apache-tvm-ffi": "vLLM pins 0.1.10, which breaks xgrammar 0.2.9's import: ADDED's wins",
}
#: what the server needs beyond vLLM's own list (same notes)
ADDED = ("pycountry", "apache-tvm-ffi==0.1.15.post2")
VLLM = "vllm==0.26.0"
LOCK = REPO / "tools" / "vllm-0.26.0-cp312.lock"

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def log(msg: str) -> None:
    print(f"gpu_bundle: {msg}", file=sys.stderr, flush=True)


def normal(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------------- lock (here)

def _pip_download(spec: str, dest: Path, python: str = PYTHON) -> Path:
    """The newest wheel matching ``spec`` for the GPU machine's Python, without its deps."""
    tag = python.replace(".", "")
    before = set(dest.glob("*.whl"))
    argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
            "--python-version", python, "--implementation", "cp", "--abi", f"cp{tag}",
            "--abi", "abi3", "--abi", "none", *(f"--platform={p}" for p in PLATFORMS),
            "-d", str(dest), spec]
    subprocess.run(argv, check=True)
    name = normal(_NAME.match(spec).group(1))  # type: ignore[union-attr]
    after = [w for w in dest.glob("*.whl") if normal(w.name.split("-")[0]) == name]
    new = [w for w in after if w not in before] or after
    if not new:
        raise SystemExit(f"gpu_bundle: pip downloaded no wheel for {spec}")
    return max(new, key=lambda w: w.stat().st_mtime)


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode("utf-8", "replace")
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Requires-Dist:")]


def _environment(extra: str = "") -> dict[str, str]:
    """PEP 508 marker values of the GPU machine's Python (3.12 on x86-64 Linux)."""
    return {"python_version": PYTHON, "python_full_version": PYTHON + ".3",
            "platform_machine": "x86_64", "platform_system": "Linux", "sys_platform": "linux",
            "os_name": "posix", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": extra}


def resolve(root: str, added: Sequence[str], cache: Path) -> dict[str, tuple[str, Path]]:
    """``name → (version, wheel)`` of the closure of ``root`` and ``added`` less
    :data:`IMAGE_HAS` and :data:`LEFT_OUT`: every requirement's specifiers collected, the
    newest wheel meeting all of them taken, its own requirements followed, until nothing
    changes (a later, tighter specifier re-picks a package)."""
    from packaging.requirements import Requirement

    wanted: dict[str, list[str]] = {}  # name → specifiers seen
    extras: dict[str, set[str]] = {}
    forced = {normal(Requirement(a).name): str(Requirement(a).specifier) for a in added}
    picked: dict[str, tuple[str, Path]] = {}
    queue = [Requirement(root), *(Requirement(a) for a in added)]
    while queue:
        req = queue.pop(0)
        name = normal(req.name)
        if name in IMAGE_HAS or (name in LEFT_OUT and name not in forced):
            continue
        specs = wanted.setdefault(name, [])
        spec = forced.get(name, str(req.specifier))
        changed = name not in picked
        if spec and spec not in specs and (name not in forced or not specs):
            specs.append(spec)
            changed = True
        new_extras = set(req.extras) - extras.setdefault(name, set())
        extras[name] |= new_extras
        if not changed and not new_extras:
            continue
        wheel = _pip_download(name + ",".join(specs), cache)
        version = wheel.name.split("-")[1]
        if picked.get(name, ("", None))[0] == version and not new_extras:
            continue
        picked[name] = (version, wheel)
        log(f"{name}=={version}" + (f" [{','.join(sorted(extras[name]))}]"
                                     if extras[name] else ""))
        for line in wheel_requirements(wheel):
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate(_environment(e))
                                         for e in ("", *sorted(extras[name]))):
                queue.append(dep)
    return picked


def write_lock(picked: dict[str, tuple[str, Path]], path: Path) -> None:
    lines = [f"# vLLM 0.26.0 for the GPU machine's CPython {PYTHON} (x86-64 Linux), beyond its",
             "# image: tools/gpu_bundle.py lock. name==version sha256",
             *(f"{name}=={version} {sha256(wheel)}"
               for name, (version, wheel) in sorted(picked.items()))]
    path.write_text("\n".join(lines) + "\n")


def read_lock(path: Path = LOCK) -> list[tuple[str, str]]:
    """``(name==version, sha256)`` per locked wheel."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            spec, digest = line.split()
            out.append((spec, digest))
    return out


def download_locked(dest: Path, lock: Path = LOCK) -> list[Path]:
    """Exactly the locked wheels, each checked against its sha256."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = []
    for spec, digest in read_lock(lock):
        name, version = spec.split("==")
        have = [w for w in dest.glob("*.whl") if normal(w.name.split("-")[0]) == name
                and w.name.split("-")[1] == version]
        wheel = have[0] if have else _pip_download(spec, dest)
        if sha256(wheel) != digest:
            raise SystemExit(f"gpu_bundle: {wheel.name} does not match the lock's sha256 "
                             f"({digest[:12]}…): delete it and run again")
        wheels.append(wheel)
    return wheels


# ----------------------------------------------------------------------- pack (here)

def pack(group: str, files: Iterable[tuple[Path, str]], part_mib: int = PART_MIB,
         out: Path = PARTS) -> list[Path]:
    """``files`` (path, name in the tar) as one uncompressed tar split into part folders
    ``out/<group>-NN/`` (each holding its part and the group's manifest); earlier parts of the
    group are removed first. Returns the part folders, to be carried one per call."""
    for old in out.glob(f"{group}-[0-9][0-9]"):
        shutil.rmtree(old)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        whole = Path(tmp) / f"{group}.tar"
        with tarfile.open(whole, "w", format=tarfile.PAX_FORMAT) as tar:
            for path, arcname in files:
                tar.add(path, arcname=arcname)
        size = part_mib * 2**20
        parts: list[dict[str, Any]] = []
        with whole.open("rb") as fh:
            for i, block in enumerate(iter(lambda: fh.read(size), b"")):
                parts.append({"name": f"{group}.tar.{i:02d}", "bytes": len(block),
                              "sha256": hashlib.sha256(block).hexdigest()})
                folder = out / f"{group}-{i:02d}"
                folder.mkdir()
                (folder / parts[-1]["name"]).write_bytes(block)
        manifest: dict[str, Any] = {"group": group, "sha256": sha256(whole),
                                    "bytes": whole.stat().st_size, "parts": parts}
    folders = sorted(out.glob(f"{group}-[0-9][0-9]"))
    for folder in folders:
        (folder / f"{group}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"{group}: {manifest['bytes'] / 2**20:.1f} MiB in {len(folders)} parts")
    return folders


# -------------------------------------------------------------------- receive (there)

def receive(parts_root: Path = PARTS, incoming: Path = INCOMING,
            groups: Path = GROUPS) -> dict[str, Any]:
    """Take every carried part into ``incoming`` (checked), unpack each group that is whole;
    returns per group what is there and what is missing. One process at a time (a lock
    file): the driver and a call both receive."""
    incoming.mkdir(parents=True, exist_ok=True)
    with (incoming / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _receive(parts_root, incoming, groups)


def _receive(parts_root: Path, incoming: Path, groups: Path) -> dict[str, Any]:
    status: dict[str, Any] = {}
    manifests: dict[str, dict[str, Any]] = {}
    for mf in sorted(parts_root.glob("*-[0-9][0-9]/*.manifest.json")):
        manifests[json.loads(mf.read_text())["group"]] = json.loads(mf.read_text())
        part_dir = mf.parent
        dest = incoming / mf.name.removesuffix(".manifest.json")
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(mf, dest / mf.name)
        for part in part_dir.glob("*.tar.[0-9][0-9]"):
            target = dest / part.name
            if not target.is_file() or target.stat().st_size != part.stat().st_size:
                shutil.copy2(part, target.with_suffix(target.suffix + ".partial"))
                os.replace(target.with_suffix(target.suffix + ".partial"), target)
    for mf in sorted(incoming.glob("*/*.manifest.json")):
        manifest = json.loads(mf.read_text())
        manifests.setdefault(manifest["group"], manifest)
    for group, manifest in manifests.items():
        status[group] = _assemble(manifest, incoming / group, groups / group)
    return status


def _assemble(manifest: dict[str, Any], incoming: Path, dest: Path) -> dict[str, Any]:
    done = dest / ".whole"
    if done.is_file() and done.read_text().strip() == manifest["sha256"]:
        return {"whole": True, "missing": []}
    missing = [p["name"] for p in manifest["parts"] if not (incoming / p["name"]).is_file()]
    if missing:  # checked only once all are there: the driver asks every few seconds
        return {"whole": False, "missing": missing}
    bad = []
    for part in manifest["parts"]:
        if sha256(incoming / part["name"]) != part["sha256"]:
            bad.append(part["name"])
            (incoming / part["name"]).unlink()
    if bad:
        return {"whole": False, "missing": bad, "corrupt": bad}
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    joined = hashlib.sha256()
    stream = io.BytesIO()
    for part in manifest["parts"]:
        data = (incoming / part["name"]).read_bytes()
        joined.update(data)
        stream.write(data)
    if joined.hexdigest() != manifest["sha256"]:
        raise SystemExit(f"gpu_bundle: {manifest['group']}: the joined parts do not match")
    stream.seek(0)
    with tarfile.open(fileobj=stream) as tar:
        tar.extractall(dest, filter="data")
    done.write_text(manifest["sha256"] + "\n")
    return {"whole": True, "missing": []}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    lk = sub.add_parser("lock", help="here: resolve vLLM's closure into the lock file")
    lk.add_argument("--cache", type=Path, default=DEVICE / "cache" / "vllm-wheels")
    sub.add_parser("receive", help="there: take carried parts, unpack whole groups")
    args = p.parse_args(argv)
    if args.command == "lock":
        args.cache.mkdir(parents=True, exist_ok=True)
        picked = resolve(VLLM, ADDED, args.cache)
        write_lock(picked, LOCK)
        mib = sum(w.stat().st_size for _, w in picked.values()) / 2**20
        log(f"{LOCK.relative_to(REPO)}: {len(picked)} wheels, {mib:.1f} MiB")
        return 0
    print(json.dumps(receive(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
