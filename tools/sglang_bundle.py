"""SGLang 0.5.15 for the GPU machine (issue 36): what travels, what is left out and why.

SGLang 0.5.12 to 0.5.15 pin ``torch==2.11.0``, the image's torch (2.11.0+cu130). Its wheels
and what they need beyond the image are locked in ``tools/sglang-0.5.15-cp312.lock``
(:mod:`gpu_lock`); what is left out is what one Hopper GPU serving GLM-4.7-Flash with Triton
attention does not import as SGLang starts, found by ``tools/start_imports.py`` on the wheels
(module-level imports from ``sglang.launch_server``, the scheduler, the model runner,
``glm4_moe_lite`` and its MTP layer, the Triton backend, EAGLE's v2 worker, the parsers and
the sampler). Kept although only a command line would use them: the grammar backends
(xgrammar, the default for ``response_format``; outlines; llguidance).

Measured (``pip download``, 2026-12-05): ``sglang-kernel`` 0.4.4 is 615,071,908 bytes; its
``sgl_kernel/flash_ops.abi3.so`` (FlashAttention-3) is 1,758,623,416 bytes unpacked. Every
library in it links ``libcudart.so.13`` (``readelf -d``), not ``.so.12``: the CUDA 13 build
matches the image's torch, so no ``nvidia-cuda-runtime-cu12`` travels. FA3 is loaded only by
``sgl_kernel.flash_attn``, which SGLang imports inside functions of the ``fa3`` attention
backend and the FA3 loader (``jit_kernel/flash_attention_v3._load_fa3_kernel_from_sgl``),
never at module level on the start path and never with ``--attention-backend triton``; so it
is trimmed out (:data:`KERNEL_TRIM`), with the Blackwell build (``load_utils`` loads
``sm90/`` on compute capability 9.0). What that breaks: ``--attention-backend fa3`` (and the
default backend SGLang picks for MLA and MHA models on Hopper, which is fa3) fails at its
first import there with "Can not import FA3 in sgl_kernel".
"""

from __future__ import annotations

from pathlib import Path

import gpu_lock

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "tools" / "sglang-0.5.15-cp312.lock"
SGLANG = "sglang==0.5.15"

#: SGLang's requirements left out, and why (``tools/start_imports.py``: none is imported at
#: module level on the start path of the recipe's launch)
LEFT_OUT = {
    "flashinfer-cubin": "FlashInfer's prebuilt cubins (427 MiB, trtllm-gen kernels of the "
                        "Blackwell paths); FlashInfer JIT-builds what Hopper uses (the "
                        "sampler's kernels) with the image's nvcc",
    "flash-attn-4": "FlashAttention-4 (CuTe DSL, Blackwell): the fa4 backend imports it",
    "quack-kernels": "CuTe DSL kernels (Blackwell); 0.6.5 wants nvidia-cutlass-dsl>=4.7 "
                     "against SGLang's ==4.5.2",
    "tilelang": "TileLang kernels (48 MiB) of the sparse-MLA (DSA) models: DeepSeek-V3.2, "
                "GLM-5",
    "tokenspeed-mla": "Blackwell MLA decode kernels, imported only when available",
    "sgl-deep-gemm": "DeepGEMM (FP8 GEMMs, DeepEP's masked layout): imported in a try by "
                     "deep_gemm_wrapper.configurer, which turns it off without it; a BF16 "
                     "model at TP 1 uses neither",
    "nvidia-mathdx": "cuBLASDx/cuFFTDx headers (22 MiB) for JIT kernels SGLang's start does "
                     "not build",
    "nvidia-cudnn-frontend": "cuDNN's graph API for FlashInfer's cuDNN prefill (vision "
                             "towers); 1.32.0 wants nvidia-cutlass-dsl>=4.8 against ==4.5.2",
    "cuda-tile": "cuTile kernels of FlashInfer, not imported as it starts",
    "torchcodec": "video and audio decoding of multimodal models (imported in a try)",
    "timm": "vision towers of multimodal models",
    "datasets": "sglang.bench_serving's data sets; the server does not import it",
    "modelscope": "the ModelScope hub, used only with SGLANG_USE_MODELSCOPE (no hub there)",
    "kernels": "Hugging Face's kernel hub (FA3 from kernels-community; no hub there)",
    "mistral-common": "Mistral models' tokenizer; 1.13.1 caps numpy<2.4 on Python 3.12, "
                      "which would shadow the image's numpy 2.5.2",
    "smg-grpc-servicer": "the gRPC serving mode (--grpc-mode)",
    "torchao": "--torchao-config quantization (off by default)",
}

#: the wheel trimmed after download: pattern → why (tools/wheel_trim.py)
KERNEL_WHEEL = "sglang_kernel-0.4.4-cp310-abi3-manylinux2014_x86_64.whl"
KERNEL_TRIM = {
    "sgl_kernel/flash_ops.abi3.so": "FlashAttention-3 (1.76 GB): loaded only by "
                                    "sgl_kernel.flash_attn, which only the fa3 backend "
                                    "imports; the recipe runs --attention-backend triton",
    "sgl_kernel/sm100/*": "the Blackwell build: load_utils loads sm90/ on compute "
                          "capability 9.0",
}
TRIM_RECORD = REPO / "tools" / "sglang-kernel-0.4.4-hopper.trim.json"
TRIMS_REMOVED = {"sglang-kernel": "sgl_kernel/flash_ops.abi3.so (FlashAttention-3) and "
                                  "sgl_kernel/sm100/ (Blackwell): " + TRIM_RECORD.name}

SGLANG_BUNDLE = gpu_lock.Bundle(SGLANG, LOCK, LEFT_OUT)


def trimmed_kernel(wheel: Path, out_dir: Path) -> Path:
    """``sglang-kernel``'s wheel less :data:`KERNEL_TRIM`, in ``out_dir``, under the same
    name. The committed :data:`TRIM_RECORD` says what the trim must give: a different source,
    a different list of removed files or a different kept set is an error naming it (write
    the record again by deleting it, and review the diff)."""
    import json

    import wheel_trim

    expected = json.loads(TRIM_RECORD.read_text()) if TRIM_RECORD.is_file() else None
    out = out_dir / wheel.name
    record = wheel_trim.trim(wheel, KERNEL_TRIM, out,
                             expected["source_sha256"] if expected else None)
    if expected is None:
        wheel_trim.write_record(record, TRIM_RECORD)
    else:
        for key in ("removed", "kept_files", "kept_bytes"):
            if record[key] != expected[key]:
                raise SystemExit(f"sglang_bundle: the trim's {key} differs from "
                                 f"{TRIM_RECORD.name}")
    wheel_trim.check(out, record)
    return out
