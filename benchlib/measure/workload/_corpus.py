"""The kit's real-text corpus: English prose shipped in the package, for any dataset that
needs real text instead of random tokens.

What: :func:`load_corpus` reads ``benchlib/measure/data/python-docs.json``, the prose of the
Python Language Reference's topics (``pydoc_data.topics``, built offline by
``tools/build_corpus.py`` from the interpreter named in the file), as :class:`Corpus`: its
passages (a section's title and paragraphs), its source and licence, and the licence file
shipped beside it (``LICENSE-PSF.txt``: the PSF License Agreement, PSF-2.0).

Why shipped and not downloaded: a benchmark's prompts must be the same bytes on every machine
and year, offline; 150 KB in the package is that, with its licence where it is used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["CORPUS_FILE", "Corpus", "Passage", "load_corpus"]

#: the corpus inside the package (``benchlib.measure``'s ``data/``)
CORPUS_FILE = "python-docs.json"


@dataclass(frozen=True, slots=True)
class Passage:
    """One section of the source: its heading and its prose paragraphs (``\\n\\n`` apart)."""

    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Corpus:
    """The passages, in the source's order, and where they came from."""

    passages: tuple[Passage, ...]
    source: str  #: what the text is, and from which Python
    licence: str  #: SPDX identifier
    licence_file: Path  #: the licence text shipped beside the corpus
    path: Path  #: the corpus file


def load_corpus() -> Corpus:
    """The shipped corpus (read on each call: 150 KB, milliseconds)."""
    data = Path(str(resources.files("benchlib.measure").joinpath("data")))
    path = data / CORPUS_FILE
    record = json.loads(path.read_text(encoding="utf-8"))
    passages = tuple(Passage(p["title"], p["text"]) for p in record["passages"])
    return Corpus(passages=passages, source=record["source"], licence=record["licence"],
                  licence_file=data / record["licence_file"], path=path)
