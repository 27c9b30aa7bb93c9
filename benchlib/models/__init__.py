"""Model artefacts for benchmarks: a tiny random Llama that vLLM serves offline, its GGUF
files (llama.cpp's converter) for llama.cpp, and random-weight GGUFs written straight in a
real model's quantized shape (open-jet's Qwen3.8-27B Q4_K_M)."""

from benchlib.models._gguf_convert import (
    GGUF_OUTTYPES,
    TINY_GGUF_OUTTYPES,
    convert_to_gguf,
    gguf_name,
    import_gguf,
    make_tiny_gguf,
)
from benchlib.models._random_gguf import QUANTS, SHAPES, tensor_plan, write_random_gguf
from benchlib.models._tiny import TINY_MODEL_FILES, make_tiny_model

__all__ = ["GGUF_OUTTYPES", "QUANTS", "SHAPES", "TINY_GGUF_OUTTYPES", "TINY_MODEL_FILES",
           "convert_to_gguf", "gguf_name", "import_gguf", "make_tiny_gguf", "make_tiny_model",
           "tensor_plan", "write_random_gguf"]
