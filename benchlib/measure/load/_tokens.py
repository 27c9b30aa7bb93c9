"""What happens to a request once it ends, before its record is written: output tokens and
per-chunk token counts.

Output tokens come from the server's usage; where it sent none, the model's tokenizer counts
the generated text (flagged ``tokenizer`` in the record), and without a tokenizer the request
fails with the reason — never a silent 0. Each text chunk's token count (to split ITLs per
token and bucket tokens in time, never to count the output) comes from re-tokenizing.
This runs in the measuring process, or in each local worker process with its own tokenizer
(:mod:`benchlib.measure.load._workers`); over Ray, in the driver (a tokenizer folder is a path on
its host).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib._exceptions import UsageError
from benchlib.measure.wire._decode import chunk_token_counts
from benchlib.measure.wire._request import RequestOutcome

__all__ = ["NO_TOKEN_COUNT", "Finish", "finisher_at", "load_tokenizer", "outcome_finisher",
           "stand_in_tokenizer"]

#: per-chunk token counts of an ended request (and its output tokens filled in)
Finish = Callable[[RequestOutcome], list[float]]


def _transformers() -> Any:
    """transformers, imported offline and quiet (its notice that torch is absent is no
    concern of a tokenizer's)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import transformers

    return transformers


def load_tokenizer(path: Path) -> Any:
    """A Hugging Face tokenizer from a local folder (never the hub)."""
    if not path.is_dir() and not path.is_file():
        raise UsageError("--tokenizer", f"no such folder: {path}")
    auto = _transformers().AutoTokenizer
    try:
        return auto.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UsageError("--tokenizer", f"cannot load a tokenizer from {path}: {exc}") from None


def stand_in_tokenizer() -> Any:
    """A byte-level tokenizer (each of the 256 bytes one token, no merges), made in memory in
    the form :func:`load_tokenizer` returns: what ``benchlib run --check`` builds prompts with
    where the model's own tokenizer is not on the machine (lengths in its tokens, one a byte;
    never used to measure)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return _transformers().PreTrainedTokenizerFast(tokenizer_object=tok)


#: the named error of a request whose output length cannot be known
NO_TOKEN_COUNT = ("output tokens unknown: the server sent no usage and no tokenizer was "
                  "given (pass --tokenizer, or ask the server for usage)")


def outcome_finisher(tokenizer: Any | None) -> Finish:
    """What happens to each ended request before its record is written: output tokens from
    the tokenizer when the server sent no usage (never a silent 0: without one the request
    fails with the reason), and its per-chunk token counts. Runs in the measuring process (a
    worker process counts its own)."""
    def finish(o: RequestOutcome) -> list[float]:
        if o.success and o.output_tokens_source == "none":
            if tokenizer is not None:
                o.output_tokens = len(tokenizer(o.generated,
                                                add_special_tokens=False)["input_ids"])
                o.output_tokens_source = "tokenizer"
            else:
                o.success, o.error = False, NO_TOKEN_COUNT
        return chunk_token_counts(o, tokenizer) if o.success else []
    return finish


def finisher_at(tokenizer: Path | None) -> Finish:
    """:func:`outcome_finisher` with the tokenizer at ``tokenizer`` (a worker loads its own)."""
    return outcome_finisher(load_tokenizer(tokenizer) if tokenizer is not None else None)
