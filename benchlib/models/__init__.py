"""Model artefacts for benchmarks: a tiny random Llama that vLLM serves offline, and its
GGUF files (llama.cpp's converter) for llama.cpp."""

from benchlib.models._gguf_convert import (
    GGUF_OUTTYPES,
    TINY_GGUF_OUTTYPES,
    convert_to_gguf,
    gguf_name,
    make_tiny_gguf,
)
from benchlib.models._tiny import TINY_MODEL_FILES, make_tiny_model

__all__ = ["GGUF_OUTTYPES", "TINY_GGUF_OUTTYPES", "TINY_MODEL_FILES", "convert_to_gguf",
           "gguf_name", "make_tiny_gguf", "make_tiny_model"]
