"""A GPU run of a recipe through the lent GPU machine (docs/gpu-run.md): ``stage`` here,
``prepare`` and ``bench`` there.

The GPU machine reaches no package registry and takes the working tree plus at most 64 MiB
of carried files, so what it needs travels in ``.device/bundle/`` (ignored by git, carried by
the device tool's ``carry``) and everything large is made there, in ``.device/work/`` (kept
between calls while the machine stays warm):

``stage`` (here, with the kit's venv)
    ``.device/bundle/``: llama.cpp's source, trimmed from the llama-cpp-python sdist to what
    ``llama-server``, ``llama-quantize`` and the GGUF converter need (about 10 MB, laid out
    like the sdist so ``tools/build_llamacpp.py --sdist`` takes it); the wheels of the kit's
    dependencies that the GPU image lacks, for its Python (``--python``, several allowed),
    pinned to this venv's versions; and a byte-level BPE tokenizer of the model's vocabulary
    size, trained on this Python's stdlib sources (gzipped). Prints the device calls.
``prepare`` (there, with the image's ``python3``)
    a venv over the image's packages (torch, transformers, numpy …) with the wheels and the
    kit installed (``bench`` tries again if it failed); llama.cpp built with CUDA
    (``llama-server`` and ``llama-quantize``) in the background while a random-weight model
    of Llama-3-8B's shape is made on the GPU with
    transformers, given the staged tokenizer, converted to a BF16 GGUF with llama.cpp's
    converter (``benchlib.models.convert_to_gguf``) and, once the build is done, quantized
    to Q4_K_M. Seconds per part in ``.device/work/prepare.json``. A part whose output exists
    is skipped (a second call on the same warm machine resumes).
``bench`` (there)
    ``benchlib run`` of the recipe, then the run folder packed into ``$OUT/run.tar.gz`` with
    ``prepare.json``, llama.cpp's ``BUILD.json`` and ``nvidia-smi -q`` beside it.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import io
import json
import os
import platform
import shutil
import site
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEVICE = REPO / ".device"
BUNDLE = DEVICE / "bundle"
WORK = DEVICE / "work"
RECIPE = "params/h200-llamacpp.yaml"
SDIST_VERSION = "0.3.36"
TRIMMED = f"llama-cpp-python-{SDIST_VERSION}-trimmed.tar.gz"
MODEL_NAME = "llama3-8b-shape"
MODELS = WORK / "models"
LLAMACPP = WORK / "llamacpp"
VENV = WORK / "venv"
#: the quantized variant the recipe compares with BF16 (llama-quantize's type name)
QUANT = "Q4_K_M"

#: Meta-Llama-3-8B's config.json, less its weights: a real architecture's shape (8.03 B
#: parameters, GQA 32/8 heads, 128,256-token vocabulary), random weights
LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
    "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
    "vocab_size": 128256, "initializer_range": 0.02, "use_cache": True,
    "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
#: a few-million-parameter model of the same kind, for trying ``make-model`` on a CPU
SMALL: dict[str, Any] = {**LLAMA3_8B, "hidden_size": 256, "intermediate_size": 512,
                         "num_hidden_layers": 2, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "head_dim": 64}

#: large distributions the GPU image has (KINDS.md's package list): never carried
DEVICE_HAS = frozenset({
    "numpy", "pandas", "matplotlib", "pillow", "fonttools", "kiwisolver", "contourpy",
    "transformers", "tokenizers", "huggingface-hub", "hf-xet", "safetensors", "regex",
    "pyyaml", "pyparsing", "cycler", "python-dateutil", "six", "torch"})
#: what a dependency needs only on the GPU machine's Python (``pip download`` reads markers
#: with this interpreter's version): papermill wants aiohttp from Python 3.12 on
FOR_NEWER_PYTHONS = ("aiohttp>=3.9",)
#: ``pip download``'s platform tags for the GPU machine (x86-64, glibc 2.39)
PLATFORMS = ("manylinux_2_39_x86_64", "manylinux_2_35_x86_64", "manylinux_2_34_x86_64",
             "manylinux_2_31_x86_64", "manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_26_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux_2_12_x86_64", "manylinux2010_x86_64",
             "manylinux_2_5_x86_64", "manylinux1_x86_64")

SPECIAL_TOKENS = ("<|pad|>", "<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>",
                  "<|im_end|>")  # ids 0..4, as the config's pad/bos/eos ids say
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + "
    "'\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def log(msg: str) -> None:
    print(f"gpu_run: {msg}", file=sys.stderr, flush=True)


def _mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


@contextmanager
def _timed(seconds: dict[str, float], part: str) -> Iterator[None]:
    t0 = time.monotonic()
    yield
    seconds[part] = round(time.monotonic() - t0, 1)
    log(f"{part}: {seconds[part]:.1f} s")


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


def download_wheels(dest: Path, pythons: Sequence[str]) -> list[Path]:
    """Wheels of the kit's dependencies and theirs for each Python version, less what the GPU
    image has (:data:`DEVICE_HAS`)."""
    dest.mkdir(parents=True, exist_ok=True)
    constraints = _constraints(dest.parent)
    for version in pythons:
        tag = version.replace(".", "")
        argv = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                "--python-version", version, "--implementation", "cp", "--abi", f"cp{tag}",
                "--abi", "abi3", "--abi", "none", *(f"--platform={p}" for p in PLATFORMS),
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


def write_tokenizer(dest: Path, vocab_size: int) -> Path:
    """A byte-level BPE of exactly ``vocab_size`` tokens (the special tokens first), trained
    on this Python's stdlib sources, with a ChatML template: ``tokenizer.json.gz`` and
    ``tokenizer_config.json``. llama.cpp's converter declares it as the ``gpt-2``
    pre-tokenizer (its split regex)."""
    import sysconfig

    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(stdlib.rglob("*.py")) if "site-packages" not in p.parts]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    short = vocab_size - tok.get_vocab_size(with_added_tokens=True)
    if short > 0:  # a small corpus stops early: plain (not special) tokens fill the rest
        tok.add_tokens([AddedToken(f"<|fill_{i}|>", normalized=False) for i in range(short)])
    if tok.get_vocab_size(with_added_tokens=True) != vocab_size:
        raise SystemExit(f"gpu_run: the tokenizer has {tok.get_vocab_size()} tokens, not "
                         f"{vocab_size}")
    dest.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest / "tokenizer.json.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(tok.to_str())
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for i, t in enumerate(SPECIAL_TOKENS)}
    (dest / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": SPECIAL_TOKENS[1],
        "eos_token": SPECIAL_TOKENS[2], "pad_token": SPECIAL_TOKENS[0],
        "add_bos_token": True, "clean_up_tokenization_spaces": False,
        "model_max_length": LLAMA3_8B["max_position_embeddings"],
        "added_tokens_decoder": added, "chat_template": CHAT_TEMPLATE}, indent=2) + "\n")
    return dest


def device_calls() -> list[dict[str, Any]]:
    """The two device calls, as the device tool's ``run`` takes them."""
    carry = [str(BUNDLE.relative_to(REPO))]
    return [{"carry": carry, "timeout_s": 600,
             "command": "PYTHONUNBUFFERED=1 python3 tools/gpu_run.py prepare 2>&1"},
            {"carry": carry, "timeout_s": 600,
             "command": "PYTHONUNBUFFERED=1 python3 tools/gpu_run.py bench 2>&1"}]


def stage(args: argparse.Namespace) -> int:
    seconds: dict[str, float] = {}
    BUNDLE.mkdir(parents=True, exist_ok=True)
    with _timed(seconds, "llama.cpp source"):
        sdist = args.sdist
        if sdist is None:
            cache = DEVICE / "cache"
            sdist = cache / f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
            if not sdist.is_file():
                subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary",
                                ":all:", "--no-deps", f"llama-cpp-python=={SDIST_VERSION}",
                                "-d", str(cache)], check=True)
        trimmed = BUNDLE / TRIMMED
        if args.force or not trimmed.is_file():
            trim_sdist(sdist, trimmed)
    with _timed(seconds, "wheels"):
        wheels = BUNDLE / "wheels"
        if args.force:
            shutil.rmtree(wheels, ignore_errors=True)
        kept = download_wheels(wheels, args.python)
    with _timed(seconds, "tokenizer"):
        tokenizer = BUNDLE / "tokenizer"
        if args.force or not (tokenizer / "tokenizer.json.gz").is_file():
            write_tokenizer(tokenizer, int(LLAMA3_8B["vocab_size"]))
    total = _mib(BUNDLE)
    log(f"{BUNDLE.relative_to(REPO)}: {total:.1f} MiB ({_mib(trimmed):.1f} llama.cpp, "
        f"{len(kept)} wheels {_mib(wheels):.1f}, tokenizer {_mib(tokenizer):.1f})")
    if total > 60:
        raise SystemExit("gpu_run: the bundle is over 60 MiB: the device carries 64 MiB "
                         "with the working tree")
    print("device calls (the device tool's run, one after the other, no pause between):")
    for call in device_calls():
        print(json.dumps(call))
    return 0


# ----------------------------------------------------------------- prepare (GPU machine)

def _run(argv: Sequence[str | Path], logfile: Path | None = None, **kw: Any) -> None:
    log("$ " + " ".join(str(a) for a in argv))
    if logfile is None:
        subprocess.run([str(a) for a in argv], check=True, **kw)
        return
    with logfile.open("w") as fh:
        done = subprocess.run([str(a) for a in argv], stdout=fh, stderr=subprocess.STDOUT,
                              check=False, **kw)
    if done.returncode:
        tail = logfile.read_text(errors="replace").splitlines()[-30:]
        raise SystemExit("\n".join(tail) + f"\ngpu_run: {argv[0]} … exited {done.returncode}")


def _facts() -> dict[str, str]:
    """What the machine is: Python, GPU, nvcc, disk."""
    def out(*argv: str) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"({exc})"
        return (done.stdout + done.stderr).strip()

    usage = shutil.disk_usage(REPO)
    return {"python": platform.python_version(), "machine": platform.machine(),
            "gpus": out("nvidia-smi", "-L"),
            "nvcc": out("nvcc", "--version").splitlines()[-2:][0] if shutil.which("nvcc")
            else "(no nvcc)",
            "cpus": str(os.cpu_count()), "disk_free_gib": f"{usage.free / 2**30:.0f}"}


def image_site_packages() -> list[str]:
    """This interpreter's site-packages when it is itself a venv: the image's ``python3`` is
    ``/opt/torch/.venv/bin/python3``, and a venv made from it with
    ``--system-site-packages`` sees the base Python's packages, not the image's (torch,
    transformers …), which :func:`make_venv` adds with a ``.pth`` file."""
    if sys.prefix == sys.base_prefix:
        return []
    return [p for p in site.getsitepackages() if Path(p).is_dir()]


def make_venv(python: str) -> Path:
    """``.device/work/venv`` over the image's packages, with the carried wheels and the kit
    (editable, so the notebooks import this checkout). Run by ``python`` itself."""
    exe = VENV / "bin" / "python"
    if not (VENV / ".ok").is_file():
        _run([python, "-m", "venv", "--system-site-packages", str(VENV)])
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        image = image_site_packages()
        if image:
            pth = VENV / "lib" / version / "site-packages" / "_image.pth"
            pth.write_text("\n".join(image) + "\n")
        _run([exe, "-m", "pip", "install", "-q", "--no-index", "--find-links",
              BUNDLE / "wheels", "--no-build-isolation", "-e", str(REPO)],
             logfile=WORK / "logs" / "venv.log")
        (VENV / ".ok").touch()
    return exe


def make_model(out: Path, shape: dict[str, Any], device: str, seed: int = 0) -> Path:
    """A random-weight ``LlamaForCausalLM`` of ``shape``, made on ``device`` in bfloat16
    (transformers' own initialisation: normal(0, 0.02), norms 1), saved as safetensors, with
    the staged tokenizer."""
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")

    config = transformers.LlamaConfig(**{k: v for k, v in shape.items()
                                         if k not in ("architectures", "model_type")})
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = transformers.LlamaForCausalLM(config)
    model.to(torch.bfloat16)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial), max_shard_size="5GB")
    tokenizer = BUNDLE / "tokenizer"
    with gzip.open(tokenizer / "tokenizer.json.gz", "rt", encoding="utf-8") as src:
        (partial / "tokenizer.json").write_text(src.read(), encoding="utf-8")
    shutil.copy2(tokenizer / "tokenizer_config.json", partial / "tokenizer_config.json")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
    return out


def _model_and_gguf(args: argparse.Namespace) -> int:
    """``make-model``, run by the image's python3 (torch, transformers; the kit on
    PYTHONPATH: its model and converter code need neither pydantic nor the venv): the model
    folder, then its BF16 GGUF; the safetensors are removed after (the GGUF is served)."""
    from benchlib.models import convert_to_gguf

    shape = LLAMA3_8B if args.shape == "llama3-8b" else SMALL
    out = Path(args.out)
    seconds: dict[str, float] = {}
    gguf = out.with_name(f"{out.name}-bf16.gguf")
    if not gguf.is_file():
        with _timed(seconds, "model"):
            make_model(out, shape, args.device)
        with _timed(seconds, "convert_bf16"):
            convert_to_gguf(out, gguf, "bf16", llamacpp_dir=Path(args.llamacpp))
        if not args.keep_weights:
            for f in [*out.glob("*.safetensors"), *out.glob("*.safetensors.index.json")]:
                f.unlink()
    print(json.dumps(seconds))
    return 0


def prepare(args: argparse.Namespace) -> int:
    t_all = time.monotonic()
    (WORK / "logs").mkdir(parents=True, exist_ok=True)
    cuda_bin = Path("/usr/local/cuda/bin")
    if shutil.which("nvcc") is None and (cuda_bin / "nvcc").is_file():
        os.environ["PATH"] = f"{cuda_bin}:{os.environ.get('PATH', '')}"
    record_path = WORK / "prepare.json"
    record: dict[str, Any] = (json.loads(record_path.read_text()) if record_path.is_file()
                              else {"seconds": {}})
    seconds: dict[str, float] = record["seconds"]
    record["machine"] = _facts()
    log(json.dumps(record["machine"]))
    sdist = BUNDLE / TRIMMED
    build_cmd = [sys.executable, str(REPO / "tools" / "build_llamacpp.py"), "--out",
                 str(LLAMACPP), "--sdist", str(sdist), "--backend", "cuda", "--cuda-arch",
                 args.cuda_arch, "--jobs", str(args.jobs), "--also", "llama-quantize"]
    build: subprocess.Popen[bytes] | None = None
    built = (LLAMACPP / "bin" / "llama-quantize").is_file()
    if not built:
        with _timed(seconds, "llama.cpp source"):
            _run([*build_cmd, "--converter-only"], logfile=WORK / "logs" / "source.log")
        t_build = time.monotonic()
        build_log = (WORK / "logs" / "build.log").open("w")
        log("llama.cpp build started (background): logs/build.log")
        build = subprocess.Popen(build_cmd, stdout=build_log, stderr=subprocess.STDOUT)
    venv_error = None
    with _timed(seconds, "venv"):
        try:  # the benchmark's, not the model's: a failure here leaves the rest to go on
            make_venv(sys.executable)
        except (SystemExit, subprocess.CalledProcessError) as exc:
            venv_error = str(exc)
            log(f"venv failed: {exc}")
    model_dir = MODELS / MODEL_NAME
    bf16 = MODELS / f"{MODEL_NAME}-bf16.gguf"
    quant = MODELS / f"{MODEL_NAME}-{QUANT.lower()}.gguf"
    if not bf16.is_file():  # the image's python3: torch, transformers; the kit from here
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "make-model",
                               "--out", str(model_dir), "--llamacpp", str(LLAMACPP)],
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        sys.stderr.write(done.stderr[-3000:])
        if done.returncode:
            raise SystemExit(f"gpu_run: make-model exited {done.returncode}")
        seconds.update(json.loads(done.stdout.strip().splitlines()[-1]))
        seconds["model_and_convert"] = round(time.monotonic() - t0, 1)
    if build is not None:
        code = build.wait()
        seconds["llama.cpp build (wall)"] = round(time.monotonic() - t_build, 1)
        if code:
            tail = (WORK / "logs" / "build.log").read_text(errors="replace")
            raise SystemExit(tail[-4000:] + f"\ngpu_run: the llama.cpp build exited {code}")
    build_record = json.loads((LLAMACPP / "BUILD.json").read_text())
    record["llamacpp"] = {k: build_record.get(k) for k in ("commit", "build_number",
                                                            "backend", "nvcc", "seconds",
                                                            "version_output")}
    if not quant.is_file():
        with _timed(seconds, "quantize"):
            partial = quant.with_name(f".{quant.name}.partial")
            _run([LLAMACPP / "bin" / "llama-quantize", bf16, partial, QUANT,
                  str(args.jobs)], logfile=WORK / "logs" / "quantize.log")
            os.replace(partial, quant)
    record["files_gib"] = {p.name: round(p.stat().st_size / 2**30, 3) for p in (bf16, quant)}
    seconds["prepare (this call)"] = round(time.monotonic() - t_all, 1)
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    out = os.environ.get("OUT")
    if out:
        shutil.copy2(record_path, Path(out) / "prepare.json")
    if venv_error:
        log(f"the venv is not ready ({venv_error}): bench tries again")
        return 1
    return 0


# ------------------------------------------------------------------- bench (GPU machine)

def _run_folder(output: str) -> Path:
    """The run folder ``benchlib run`` named (its ``run: PATH`` line)."""
    for line in output.splitlines():
        for prefix in ("run: ", "resuming: "):
            if line.startswith(prefix):
                return Path(line[len(prefix):].strip())
    raise SystemExit("gpu_run: benchlib run named no run folder")


def bench(args: argparse.Namespace) -> int:
    (WORK / "logs").mkdir(parents=True, exist_ok=True)
    make_venv(sys.executable)
    benchlib = VENV / "bin" / "benchlib"
    needed = [benchlib, LLAMACPP / "bin" / "llama-server",
              MODELS / f"{MODEL_NAME}-bf16.gguf", MODELS / f"{MODEL_NAME}-{QUANT.lower()}.gguf"]
    missing = [str(p.relative_to(REPO)) for p in needed if not p.exists()]
    if missing:
        raise SystemExit(f"gpu_run: run prepare first (missing: {', '.join(missing)})")
    out = Path(os.environ.get("OUT") or WORK / "out")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    argv = [str(benchlib), "run", args.recipe, *(["--force"] if args.force else [])]
    log("$ " + " ".join(argv))
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    lines = []
    with (out / "bench.log").open("w") as fh:
        for line in proc.stdout:
            sys.stdout.write(line)
            fh.write(line)
            lines.append(line)
    code = proc.wait()
    seconds = round(time.monotonic() - t0, 1)
    run_dir = _run_folder("".join(lines))
    log(f"benchlib run exited {code} after {seconds} s: {run_dir}")
    for src, name in ((WORK / "prepare.json", "prepare.json"),
                      (LLAMACPP / "BUILD.json", "BUILD.json")):
        if src.is_file():
            shutil.copy2(src, out / name)
    smi = subprocess.run(["nvidia-smi", "-q"], capture_output=True, text=True, check=False)
    (out / "nvidia-smi-q.txt").write_text(smi.stdout)
    (out / "bench.json").write_text(json.dumps({"exit_code": code, "seconds": seconds,
                                                "run_dir": str(run_dir)}) + "\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name)
    (out / "run.tar.gz").write_bytes(buf.getvalue())
    log(f"{out / 'run.tar.gz'}: {len(buf.getvalue()) / 2**20:.1f} MiB")
    return code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("stage", help="here: fill .device/bundle and print the device calls")
    s.add_argument("--sdist", type=Path, help="the llama-cpp-python sdist (else pip download)")
    s.add_argument("--python", nargs="+", default=["3.12", "3.13"],
                   help="the GPU machine's Python (its image: 3.12); wheels for each")
    s.add_argument("--force", action="store_true", help="make every part again")
    s.set_defaults(func=stage)
    r = sub.add_parser("prepare", help="there: build llama.cpp, make the model and its GGUFs")
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    r.add_argument("--cuda-arch", default="90", help="CMAKE_CUDA_ARCHITECTURES (H200: 90)")
    r.set_defaults(func=prepare)
    m = sub.add_parser("make-model", help="there, in the venv: the model folder and its BF16 "
                                          "GGUF (prepare runs it)")
    m.add_argument("--out", required=True)
    m.add_argument("--llamacpp", default=str(LLAMACPP))
    m.add_argument("--shape", choices=["llama3-8b", "small"], default="llama3-8b")
    m.add_argument("--device", default="cuda")
    m.add_argument("--keep-weights", action="store_true", help="keep the safetensors")
    m.set_defaults(func=_model_and_gguf)
    b = sub.add_parser("bench", help="there: benchlib run, the run folder packed into $OUT")
    b.add_argument("--recipe", default=RECIPE)
    b.add_argument("--force", action="store_true", help="a new run folder")
    b.set_defaults(func=bench)
    args = p.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
