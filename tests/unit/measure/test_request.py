"""benchlib/measure/wire/_request.py: the body a request sends, shaped as ``vllm bench serve``
sends it. (Reading a captured stream is test_decode.py's.)"""

from __future__ import annotations

import json

from benchlib.measure import build_body
from benchlib.measure.wire._request import Prompt


def test_build_body_matches_reference_shape() -> None:
    body = json.loads(build_body(Prompt("hi", 1, 8), "completions", "m", ignore_eos=True))
    assert body["max_tokens"] == 8 and body["stream_options"] == {"include_usage": True}
    assert body["ignore_eos"] is True and body["stream"] is True
    body = json.loads(build_body(Prompt("hi", 1, 8), "chat", "m", ignore_eos=False))
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_completion_tokens"] == 8 and "ignore_eos" not in body
