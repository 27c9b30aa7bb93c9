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

``lock`` (here) writes an engine's lock file (:mod:`gpu_lock`): ``--bundle vllm`` (vLLM 0.26.0,
:data:`VLLM_BUNDLE`: its ``Requires-Dist`` closure less the image's packages and the optional
kernel packages a BF16 text model on an H200 does not need, :data:`LEFT_OUT`) or ``--bundle
sglang`` (SGLang 0.5.15, :mod:`sglang_bundle`). ``download`` fetches exactly the locked wheels.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gpu_lock
import sglang_bundle

REPO = Path(__file__).resolve().parents[1]
DEVICE = REPO / ".device"
PARTS = DEVICE / "parts"
WORK = DEVICE / "work"
INCOMING = WORK / "incoming"
GROUPS = WORK / "groups"
IMAGE_HAS = gpu_lock.IMAGE_HAS
PLATFORMS = gpu_lock.PLATFORMS
PYTHON = gpu_lock.PYTHON
normal = gpu_lock.normal
sha256 = gpu_lock.sha256
#: a part's size at most: the call's 64 MiB less the working tree and a margin
PART_MIB = 50
#: what one device call carries: the working tree and the paths it names
CALL_MIB = 64
#: left free beside the tree and the part (the part's manifest, files written meanwhile)
MARGIN_MIB = 2

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
VLLM_BUNDLE = gpu_lock.Bundle(VLLM, LOCK, LEFT_OUT, ADDED)
BUNDLES = {"vllm": VLLM_BUNDLE, "sglang": sglang_bundle.SGLANG_BUNDLE}

def log(msg: str) -> None:
    print(f"gpu_bundle: {msg}", file=sys.stderr, flush=True)


def read_lock(path: Path = LOCK) -> list[tuple[str, str]]:
    """``(name==version, sha256)`` per locked wheel (default: vLLM's lock)."""
    return gpu_lock.read_lock(path)


def download_locked(dest: Path, lock: Path = LOCK) -> list[Path]:
    """Exactly the locked wheels, each checked against its sha256 (default: vLLM's)."""
    return gpu_lock.download_locked(dest, lock)


# ----------------------------------------------------------------------- pack (here)

def carried_bytes(size: int) -> int:
    """What one file of ``size`` bytes is counted as here: a tar member's 512-byte header and
    the file rounded up to 4 KiB blocks. The device tool counts more than the files' bytes
    (visit 7: 1,052 files of 14,181,388 bytes beside a 52,433,991-byte part, 63.5 MiB of bytes,
    were refused as over 64 MiB); this errs on the large side."""
    return 512 + 4096 * math.ceil(size / 4096)


def tree_bytes(repo: Path = REPO) -> int:
    """What a device call sends of the working tree, counted by :func:`carried_bytes`: the
    tracked files and the untracked ones git does not ignore that exist, and a ``shared/``
    folder in the checkout, which travels ignored or not (the device tool's README)."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], check=True, capture_output=True).stdout
    paths = {repo / os.fsdecode(name) for name in listed.split(b"\0") if name}
    shared = repo / "shared"
    if shared.is_dir():
        paths |= set(shared.rglob("*"))
    return sum(carried_bytes(p.stat().st_size) for p in paths
               if p.is_file() and not p.is_symlink())


def part_mib_beside(tree: int) -> int:
    """The largest part (MiB, at most :data:`PART_MIB`) that a call carries beside a tree
    counted as ``tree`` bytes (:func:`tree_bytes`). Visit 7 found the tree grown to 14 MB:
    tree plus a 50 MiB part was over the call's 64 MiB and the tool refused it."""
    room = CALL_MIB - MARGIN_MIB - math.ceil(tree / 2**20)
    if room < 8:
        raise SystemExit(f"gpu_bundle: the working tree is {tree / 2**20:.1f} MiB: a device "
                         f"call carries {CALL_MIB} MiB in all, which leaves no room for a "
                         "part; move large untracked files out of the tree")
    return min(PART_MIB, room)


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
    lk = sub.add_parser("lock", help="here: resolve an engine's closure into its lock file")
    lk.add_argument("--bundle", choices=sorted(BUNDLES), default="vllm")
    lk.add_argument("--cache", type=Path, default=None,
                    help="where the wheels go (default .device/cache/<bundle>-wheels)")
    sub.add_parser("receive", help="there: take carried parts, unpack whole groups")
    args = p.parse_args(argv)
    if args.command == "lock":
        bundle = BUNDLES[args.bundle]
        cache = args.cache or DEVICE / "cache" / f"{args.bundle}-wheels"
        cache.mkdir(parents=True, exist_ok=True)
        picked = gpu_lock.resolve(bundle, cache)
        removed = sglang_bundle.TRIMS_REMOVED if args.bundle == "sglang" else {}
        gpu_lock.write_lock(bundle, picked, removed)
        mib = sum(p.wheel.stat().st_size for p in picked.values()) / 2**20
        log(f"{bundle.lock.relative_to(REPO)}: {len(picked)} wheels, {mib:.1f} MiB")
        gaps = gpu_lock.check_closure(bundle)
        for gap in gaps:
            log(f"gap: {gap}")
        return 1 if gaps else 0
    print(json.dumps(receive(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
