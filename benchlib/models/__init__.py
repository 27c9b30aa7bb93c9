"""Model artefacts for benchmarks: a tiny random Llama that vLLM serves offline."""

from benchlib.models._tiny import TINY_MODEL_FILES, make_tiny_model

__all__ = ["TINY_MODEL_FILES", "make_tiny_model"]
