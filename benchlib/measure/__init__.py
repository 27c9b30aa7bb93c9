"""Streaming measurement of OpenAI-compatible endpoints, with ``vllm bench serve``'s
definitions and JSON keys and the wire's accuracy (kernel receive stamps)."""

from benchlib.measure._config import MeasureConfig
from benchlib.measure._connection import Endpoint, StreamCapture
from benchlib.measure._datasets import file_prompts, length_range, random_prompts
from benchlib.measure._metrics import percentile_key, summarize
from benchlib.measure._report import format_result
from benchlib.measure._request import Prompt, RequestOutcome, build_body, decode_capture
from benchlib.measure._run import load_tokenizer, measure, read_requests, requests_path

__all__ = [
    "Endpoint",
    "MeasureConfig",
    "Prompt",
    "RequestOutcome",
    "StreamCapture",
    "build_body",
    "decode_capture",
    "file_prompts",
    "format_result",
    "length_range",
    "load_tokenizer",
    "measure",
    "percentile_key",
    "random_prompts",
    "read_requests",
    "requests_path",
    "summarize",
]
