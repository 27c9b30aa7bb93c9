"""Multi-turn conversations (issue 27): ``--dataset conversations`` runs each session's turns
in order, each sent with the whole history (earlier user turns and the replies as they
streamed), after the think time; the result reports the median TTFT per turn and the prefix
cache's hit rate from the server's per-response ``timings`` (llama.cpp's ``cache_n``; here
the scripted server's ``--prefix-cache``, which reports what an earlier prompt began with)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.measure import MeasureConfig, measure, read_requests, requests_path

from ._truth import load_jsonl

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "benchlib" / "measure" / "data" / "conversations-synthetic.jsonl"


def test_sessions_send_their_history_and_report_per_turn(
        scripted: Callable[..., Any], tmp_path: Path, tiny_model: Path) -> None:
    server = scripted("--ttft-ms", "10", "--itl-ms", "2", "--prefix-cache")
    out = tmp_path / "conv.json"
    result = measure(MeasureConfig(base_url=server.url, model="scripted", tokenizer=tiny_model,
                                   endpoint="chat", dataset="conversations", dataset_path=SET,
                                   num_prompts=4, max_concurrency=2, output_len=6,
                                   conversation_think_s=0.2, num_warmups=1,
                                   result_json=out, disable_tqdm=True))
    assert result.completed == 16 and result.failed == 0  # 4 sessions × 4 turns
    conv = result.conversations
    assert conv is not None and conv.sessions == 4 and conv.think_s == 0.2
    assert [t.turn for t in conv.per_turn] == [0, 1, 2, 3]
    assert all(t.requests == 4 and t.median_ttft_text_ms for t in conv.per_turn)
    prompts = [t.median_prompt_tokens or 0 for t in conv.per_turn]
    assert prompts == sorted(prompts) and prompts[3] > prompts[0]  # the history grows
    # first turns share only the opening words; later turns repeat their whole history
    assert conv.per_turn[0].prefix_cache_hit_rate is not None
    assert conv.per_turn[0].prefix_cache_hit_rate < 0.2
    for t in conv.per_turn[1:]:
        assert t.prefix_cache_hit_rate is not None and t.prefix_cache_hit_rate > 0.7, t
    assert conv.prefix_cache_hit_rate is not None and 0.5 < conv.prefix_cache_hit_rate < 1
    records = read_requests(requests_path(out))
    by_session: dict[int, list[Any]] = {}
    for r in records:
        assert r.session is not None and r.turn is not None
        by_session.setdefault(r.session, []).append(r)
    truth = {t["id"]: t for t in load_jsonl(server.truth)}
    users = [s["turns"] for s in load_jsonl(SET)]
    for turns in by_session.values():
        turns.sort(key=lambda r: r.turn)
        assert [r.turn for r in turns] == [0, 1, 2, 3]
        for before, after in itertools.pairwise(turns):
            # the next prompt holds this reply and the next user turn beyond the last prompt
            assert after.server_prompt_tokens is not None
            assert before.server_prompt_tokens is not None and before.generated_text
            grew = (len(before.generated_text) + len(users[after.session][after.turn])) // 4
            assert after.server_prompt_tokens - before.server_prompt_tokens >= grew - 1
            # the next turn left after the reply and the think time
            gap = (truth[after.response_id]["arrival_ns"]
                   - truth[before.response_id]["content_writes_ns"][-1]) / 1e6
            assert gap > 190.0, gap
    line = json.loads(requests_path(out).read_text().splitlines()[0])
    assert {"session", "turn"} <= line.keys()
    saved = json.loads(out.read_text())
    assert saved["conversations"]["per_turn"][1]["turn"] == 1


def test_conversations_need_the_chat_endpoint(tmp_path: Path, tiny_model: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlib", "measure", "--base-url",
                           "http://127.0.0.1:9", "--model", "m", "--tokenizer", str(tiny_model),
                           "--dataset", "conversations", "--dataset-path", str(SET)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "--endpoint" in proc.stderr and "Traceback" not in proc.stderr


def test_the_shipped_set_is_what_its_tool_writes() -> None:
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import make_conversations
    finally:
        sys.path.pop(0)
    lines = [json.dumps(s, ensure_ascii=False) for s in make_conversations.sessions()]
    assert SET.read_text(encoding="utf-8").splitlines() == lines
