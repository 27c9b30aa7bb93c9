"""Lock files for the GPU machine: an engine's dependency closure beyond the image, by hash.

pip cannot resolve for the GPU machine (its image's torch 2.11 pins ``nvidia-nccl-cu13``
builds that are not served, and the image's own packages are not pip-installable from here),
so a :class:`Bundle` is resolved by hand: the root's ``Requires-Dist`` and theirs, markers
evaluated for CPython 3.12 on x86-64 Linux, less what the image has (:data:`IMAGE_HAS`, kept
only while its version, where :data:`IMAGE_VERSIONS` knows it, meets every specifier seen:
SGLang 0.5.15 pins ``transformers==5.12.1`` against the image's 5.17.0, so that one travels)
and less the bundle's ``left_out`` (each with its reason), plus its ``added``.

The lock (``name==version sha256`` lines, the left-out list with reasons as comments) is what
``download`` fetches, hash-checked; its sidecar ``.json`` keeps each locked wheel's
``Requires-Dist``, the extras asked of it and its size, so a test can check the closure is
complete and consistent without the network (``check_closure``).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYTHON = "3.12"
#: ``pip download``'s platform tags for the GPU machine (x86-64, glibc 2.39)
PLATFORMS = (*(f"manylinux_2_{n}_x86_64" for n in (39, 35, 34, 31, 28, 27, 26, 24, 17)),
             "manylinux2014_x86_64", "linux_x86_64")

#: distributions the GPU image has (the device tool's KINDS.md package list): never carried
#: unless a specifier excludes the image's version (:data:`IMAGE_VERSIONS`)
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
#: the versions KINDS.md's pip list names (2026-11, one session's list); the rest unknown
IMAGE_VERSIONS: Mapping[str, str] = {
    "accelerate": "1.15.0", "huggingface-hub": "1.33.0", "numpy": "2.5.2", "onnx": "1.23.1",
    "safetensors": "0.8.0", "sentencepiece": "0.2.2", "tiktoken": "0.14.0",
    "tokenizers": "0.23.2", "torch": "2.11.0", "torchaudio": "2.11.0",
    "torchvision": "0.26.0", "transformers": "5.17.0", "triton": "3.6.0"}

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def log(msg: str) -> None:
    print(f"gpu_lock: {msg}", file=sys.stderr, flush=True)


def normal(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Bundle:
    """One engine's closure for the GPU machine: ``root`` (``name==version``), what the
    server needs beyond its list (``added``), what it runs without (``left_out``: name →
    why), and the lock file it is written to (a ``.json`` sidecar beside it)."""

    root: str
    lock: Path
    left_out: Mapping[str, str]
    added: tuple[str, ...] = ()
    image_has: frozenset[str] = IMAGE_HAS
    image_versions: Mapping[str, str] = field(default_factory=lambda: dict(IMAGE_VERSIONS))

    @property
    def sidecar(self) -> Path:
        return self.lock.with_name(self.lock.name + ".json")

    def image_serves(self, name: str, specifiers: list[str]) -> bool:
        """The image's copy of ``name`` meets every specifier (an unknown version: assumed)."""
        from packaging.specifiers import SpecifierSet

        if name not in self.image_has:
            return False
        version = self.image_versions.get(name)
        return version is None or all(SpecifierSet(s).contains(version, prereleases=True)
                                      for s in specifiers)


def pip_download(spec: str, dest: Path, python: str = PYTHON) -> Path:
    """The newest wheel matching ``spec`` for the GPU machine's Python, without its deps."""
    tag = python.replace(".", "")
    before = set(dest.glob("*.whl"))
    argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
            "--python-version", python, "--implementation", "cp", "--abi", f"cp{tag}",
            "--abi", "abi3", "--abi", "none", *(f"--platform={p}" for p in PLATFORMS),
            "-d", str(dest), spec]
    subprocess.run(argv, check=True)
    match = _NAME.match(spec)
    if match is None:
        raise SystemExit(f"gpu_lock: {spec!r} is not a requirement")
    name = normal(match.group(1))
    after = [w for w in dest.glob("*.whl") if normal(w.name.split("-")[0]) == name]
    new = [w for w in after if w not in before] or after
    if not new:
        raise SystemExit(f"gpu_lock: pip downloaded no wheel for {spec}")
    return max(new, key=lambda w: w.stat().st_mtime)


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode("utf-8", "replace")
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Requires-Dist:")]


def environment(extra: str = "") -> dict[str, str]:
    """PEP 508 marker values of the GPU machine's Python (3.12 on x86-64 Linux)."""
    return {"python_version": PYTHON, "python_full_version": PYTHON + ".3",
            "platform_machine": "x86_64", "platform_system": "Linux", "sys_platform": "linux",
            "os_name": "posix", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": extra}


def applies(line: str, extras: list[str]) -> bool:
    """Whether a ``Requires-Dist`` line holds on the GPU machine for these extras."""
    from packaging.requirements import Requirement

    marker = Requirement(line).marker
    return marker is None or any(marker.evaluate(environment(e)) for e in ("", *extras))


@dataclass
class Picked:
    version: str
    wheel: Path
    extras: set[str] = field(default_factory=set)


def resolve(bundle: Bundle, cache: Path) -> dict[str, Picked]:
    """``name → Picked`` of the closure of ``bundle.root`` and ``bundle.added`` less what
    the image serves and what is left out: every requirement's specifiers collected, the
    newest wheel meeting all of them taken, its own requirements followed, until nothing
    changes (a later, tighter specifier re-picks a package, or carries an image's one)."""
    from packaging.requirements import Requirement

    wanted: dict[str, list[str]] = {}  # name → specifiers seen
    forced = {normal(Requirement(a).name): str(Requirement(a).specifier) for a in bundle.added}
    picked: dict[str, Picked] = {}
    queue = [Requirement(bundle.root), *(Requirement(a) for a in bundle.added)]
    while queue:
        req = queue.pop(0)
        name = normal(req.name)
        if name in bundle.left_out and name not in forced:
            continue
        specs = wanted.setdefault(name, [])
        spec = forced.get(name, str(req.specifier))
        if spec and spec not in specs and (name not in forced or not specs):
            specs.append(spec)
        if name not in picked and bundle.image_serves(name, specs):
            continue
        have = picked.get(name)
        new_extras = set(req.extras) - (have.extras if have else set())
        from packaging.specifiers import SpecifierSet

        fits = have is not None and all(SpecifierSet(s).contains(have.version, prereleases=True)
                                        for s in specs)
        if fits and not new_extras:
            continue
        if have is None or not fits:
            wheel = pip_download(name + ",".join(specs), cache)
            have = picked[name] = Picked(wheel.name.split("-")[1], wheel,
                                         have.extras if have else set())
        have.extras |= new_extras
        log(f"{name}=={have.version}" + (f" [{','.join(sorted(have.extras))}]"
                                          if have.extras else ""))
        queue += [Requirement(line) for line in wheel_requirements(have.wheel)
                  if applies(line, sorted(have.extras))]
    return picked


def write_lock(bundle: Bundle, picked: Mapping[str, Picked], removed: Mapping[str, str]) -> None:
    """The lock (hashes, the left-out list with reasons) and its sidecar (requirements,
    extras, sizes); ``removed``: what trimming took out of a locked wheel, and why."""
    lines = [f"# {bundle.root} for the GPU machine's CPython {PYTHON} (x86-64 Linux), beyond "
             "its image: tools/gpu_bundle.py lock. name==version sha256",
             "# left out (its requirements that one Hopper GPU and the recipe run without):",
             *(f"#   {name}: {why}" for name, why in sorted(bundle.left_out.items())),
             *(["# trimmed after download (tools/wheel_trim.py):"] if removed else []),
             *(f"#   {name}: {why}" for name, why in sorted(removed.items())),
             *(f"{name}=={p.version} {sha256(p.wheel)}" for name, p in sorted(picked.items()))]
    bundle.lock.write_text("\n".join(lines) + "\n")
    sidecar = {"root": bundle.root, "added": list(bundle.added),
               "left_out": dict(sorted(bundle.left_out.items())),
               "image_versions": dict(sorted(bundle.image_versions.items())),
               "wheels": {name: {"version": p.version, "file": p.wheel.name,
                                 "bytes": p.wheel.stat().st_size, "extras": sorted(p.extras),
                                 "requires": wheel_requirements(p.wheel)}
                          for name, p in sorted(picked.items())}}
    bundle.sidecar.write_text(json.dumps(sidecar, indent=1) + "\n")


def read_lock(path: Path) -> list[tuple[str, str]]:
    """``(name==version, sha256)`` per locked wheel."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            spec, digest = line.split()
            out.append((spec, digest))
    return out


def check_closure(bundle: Bundle) -> list[str]:
    """What the lock misses: every requirement of every locked wheel (for its extras) must be
    locked at a version meeting it, served by the image, or left out on purpose. Returns one
    line per gap (empty: complete and consistent)."""
    from packaging.requirements import Requirement

    side: dict[str, Any] = json.loads(bundle.sidecar.read_text())
    locked = dict(spec.split("==") for spec, _ in read_lock(bundle.lock))
    gaps = []
    if set(locked) != set(side["wheels"]):
        gaps.append(f"the lock and its sidecar name different wheels: "
                    f"{sorted(set(locked) ^ set(side['wheels']))}")
    roots = [Requirement(bundle.root), *(Requirement(a) for a in bundle.added)]
    needs = [("(root)", r) for r in roots]
    for name, wheel in side["wheels"].items():
        needs += [(name, Requirement(line)) for line in wheel["requires"]
                  if applies(line, wheel["extras"])]
    forced = {normal(r.name) for r in roots[1:]}
    for parent, req in needs:
        dep = normal(req.name)
        if dep in locked:
            if not req.specifier.contains(locked[dep], prereleases=True) and dep not in forced:
                gaps.append(f"{parent} needs {req}, the lock has {dep}=={locked[dep]}")
        elif dep in bundle.left_out:
            continue
        elif not bundle.image_serves(dep, [str(req.specifier)] if req.specifier else []):
            gaps.append(f"{parent} needs {req}: neither locked, nor the image's, nor left out")
    return gaps


def download_locked(dest: Path, lock: Path) -> list[Path]:
    """Exactly the locked wheels, each checked against its sha256."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = []
    for spec, digest in read_lock(lock):
        name, version = spec.split("==")
        have = [w for w in dest.glob("*.whl") if normal(w.name.split("-")[0]) == name
                and w.name.split("-")[1] == version]
        wheel = have[0] if have else pip_download(spec, dest)
        if sha256(wheel) != digest:
            raise SystemExit(f"gpu_lock: {wheel.name} does not match the lock's sha256 "
                             f"({digest[:12]}…): delete it and run again")
        wheels.append(wheel)
    return wheels
