"""Build the kit's real-text corpus from the running Python's own documentation, offline.

What: the prose of ``pydoc_data.topics`` (the Python Language Reference's topics that
``help()`` shows: every CPython ships them) becomes ``benchlib/measure/data/python-docs.json``::

    {"source": …, "python": "3.11.7", "licence": "PSF-2.0", "licence_file": …,
     "sha256_of_source": …, "passages": [{"title": …, "text": "paragraph\\n\\nparagraph"}, …]}

one passage per section (its heading as the title), keeping only prose: indented blocks
(grammar, code, quotes), tables and headings are dropped, hard-wrapped lines are joined
(a word hyphenated at a line break joined back), paragraphs shorter than ``--min-chars`` or
ending in a colon (they introduce a dropped example) left out, and a section several topics
share kept once. The interpreter's ``LICENSE.txt`` (the PSF License Agreement under which the
documentation is distributed) is copied beside it as ``LICENSE-PSF.txt``.

Why this source: it is English prose written for people, it is in every Python (no download,
no network), its licence (PSF-2.0) allows redistribution with the licence kept beside it,
and at about 150 KB (136,000 characters, 30,700 SmolLM2 tokens) it fills prompts of tens of
thousands of tokens before repeating while staying small in the package. The file is
committed; this tool says how it was made (the interpreter's version is recorded, as another
release's topics differ).

Usage: ``python tools/build_corpus.py [--out benchlib/measure/data]``.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import re
import shutil
import sys
import sysconfig
from pathlib import Path

_UNDERLINE = re.compile(r"^[*=\-~^]{3,}$")
_BREAK_HYPHEN = re.compile(r"[A-Za-z]-$")


def _join(lines: list[str]) -> str:
    """Hard-wrapped lines as one line; ``non-`` + ``negative`` → ``non-negative``."""
    out = ""
    for line in (ln.strip() for ln in lines):
        if out and not _BREAK_HYPHEN.search(out):
            out += " "
        out += line
    return out


def passages(topics: dict[str, str], min_chars: int) -> list[dict[str, str]]:
    """One passage per section of each topic, prose paragraphs only, in topic order."""
    found: list[dict[str, str]] = []
    for key in sorted(topics):
        title, paragraphs = key, list[str]()
        for block in re.split(r"\n\s*\n", topics[key]):
            lines = [ln for ln in block.split("\n") if ln.strip()]
            if not lines:
                continue
            if len(lines) >= 2 and _UNDERLINE.match(lines[-1].strip()):  # a heading
                if paragraphs:
                    found.append({"title": title, "text": "\n\n".join(paragraphs)})
                title, paragraphs = _join(lines[:-1]), []
                continue
            if any(ln.startswith((" ", "\t", "+", "|")) for ln in lines):
                continue  # grammar, code, a quote or a table
            text = _join(lines)
            if len(text) >= min_chars and not text.endswith(":"):  # ":" led to dropped code
                paragraphs.append(text)
        if paragraphs:
            found.append({"title": title, "text": "\n\n".join(paragraphs)})
    unique: dict[str, dict[str, str]] = {}  # a section several topics share (augassign …)
    for passage in found:
        unique.setdefault(passage["text"], passage)
    return list(unique.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "benchlib/measure/data")
    parser.add_argument("--min-chars", type=int, default=120,
                        help="shortest paragraph kept (shorter ones are mostly captions)")
    args = parser.parse_args(argv)
    import pydoc_data.topics as source

    licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    if not licence.is_file():
        print(f"build_corpus: {licence} is missing: this interpreter has no licence file to "
              "ship beside the corpus; use a full CPython install", file=sys.stderr)
        return 2
    found = passages(source.topics, args.min_chars)
    version = sys.version.split()[0]
    record = {
        "source": f"pydoc_data/topics.py of CPython {version}: the prose of the Python "
                  "Language Reference's topics (what help() shows)",
        "python": version, "licence": "PSF-2.0", "licence_file": "LICENSE-PSF.txt",
        "sha256_of_source": hashlib.sha256(inspect.getsource(source).encode()).hexdigest(),
        "built_by": "tools/build_corpus.py", "passages": found,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "python-docs.json"
    out.write_text(json.dumps(record, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    shutil.copyfile(licence, args.out / "LICENSE-PSF.txt")
    chars = sum(len(p["text"]) for p in found)
    print(f"corpus: {out} ({len(found)} passages, {chars:,} characters, "
          f"{out.stat().st_size:,} bytes; CPython {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
