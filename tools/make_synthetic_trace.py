"""Write ``benchlib/measure/data/trace-synthetic.jsonl``: the small Mooncake-format trace the
tests and the demo replay. 40 requests at about 10 per second (Poisson gaps, seeded), input
96–1,100 tokens, output 8–32; every prompt starts with block 0 (a shared system prompt), and
a prompt of more than one block shares its second with others (block 1 or 2: two documents)
two times in three. Run again, it writes the same bytes."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "benchlib/measure/data/trace-synthetic.jsonl"


def rows(n: int = 40, rate: float = 10.0, seed: int = 27) -> list[dict[str, object]]:
    rng = random.Random(seed)
    t = 0.0
    out: list[dict[str, object]] = []
    next_id = 3  # 0: the system prompt; 1, 2: the shared documents
    for _ in range(n):
        t += rng.expovariate(rate) * 1000
        n_in = rng.randint(96, 1100)
        n_out = rng.randint(8, 32)
        blocks = math.ceil(n_in / 512)
        ids = [0]
        if blocks > 1:
            ids.append(rng.choice([1, 2, None]) or next_id)
            if ids[-1] == next_id:
                next_id += 1
        while len(ids) < blocks:
            ids.append(next_id)
            next_id += 1
        out.append({"timestamp": round(t), "input_length": n_in, "output_length": n_out,
                    "hash_ids": ids})
    return out


if __name__ == "__main__":
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
