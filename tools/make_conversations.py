"""Write ``benchlib/measure/data/conversations-synthetic.jsonl``: the small multi-turn set the
tests and the demo run (``--dataset conversations``). Eight sessions of four user turns; each
opens with a passage of the kit's corpus (the Python Language Reference's topics, PSF-2.0:
``benchlib/measure/data/python-docs.json``) and a request about it, and the later turns ask
follow-up questions, so every turn after the first repeats the whole history before it: what
a prefix cache can reuse. Passages drawn with a fixed seed: run again, it writes the same
bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path

from benchlib.measure import load_corpus

OUT = (Path(__file__).resolve().parents[1]
       / "benchlib/measure/data/conversations-synthetic.jsonl")
#: characters of a passage in the first turn (about 300 tokens)
PASSAGE_CHARS = 1200
FOLLOW_UPS = (
    "What is the most important point in it, in one sentence?",
    "Give a short code example that illustrates it.",
    "Write one question a reader might still have, and answer it briefly.",
)


def sessions(n: int = 8, seed: int = 27) -> list[dict[str, object]]:
    """``n`` sessions, each ``{"id", "turns": [user messages]}``."""
    rng = random.Random(seed)
    passages = [p for p in load_corpus().passages if len(p.text) >= PASSAGE_CHARS // 2]
    out: list[dict[str, object]] = []
    for k, p in enumerate(rng.sample(passages, n)):
        first = (f"Here is a passage from the Python documentation, titled {p.title!r}:\n\n"
                 f"{p.text[:PASSAGE_CHARS]}\n\nSummarize it in two sentences.")
        out.append({"id": f"session-{k}", "turns": [first, *FOLLOW_UPS]})
    return out


if __name__ == "__main__":
    OUT.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sessions()),
                   encoding="utf-8")
