"""A recipe's speculative setting (:class:`~benchlib.recipe.Speculative`) as each engine's
own flags.

* vLLM: ``--speculative-config '{"method": …, "num_speculative_tokens": k, "model": …}'``
  (the one flag vLLM ≥ 0.10 takes; ``--speculative-model`` / ``--num-speculative-tokens``
  are gone), ``options`` merged into the JSON (``prompt_lookup_max`` …).
* SGLang: ``--speculative-algorithm`` (NGRAM, EAGLE, EAGLE3, …) with
  ``--speculative-num-draft-tokens`` and ``--speculative-draft-model-path``; ``options``
  become ``--speculative-key-with-dashes value`` (``num_steps: 3`` →
  ``--speculative-num-steps 3``, seed 001's EAGLE settings). A model's own MTP layers are
  SGLang's EAGLE algorithm with no draft path.
* open-jet: ``-d k``, the MTP depth; off is ``-d 0`` (its default is depth 4, so "off" must be
  said).
* llama.cpp (build ≥ ~9000, where ``--draft-max`` became a stub that fails):
  ``--spec-type draft-simple --spec-draft-model FILE --spec-draft-n-max k`` for a draft model,
  ``ngram-simple`` (``--spec-ngram-simple-size-m k``), ``ngram-cache`` for lookup decoding,
  ``draft-eagle3`` / ``draft-mtp``; ``options`` become ``--key-with-dashes value``
  (``spec_draft_n_min: 1`` → ``--spec-draft-n-min 1``).

A method an engine does not have is refused by name (exit 2) before anything starts.
"""

from __future__ import annotations

import json

from benchlib._exceptions import UsageError
from benchlib.recipe import EngineSpec

__all__ = ["speculative_args"]

_SGLANG = {"ngram": "NGRAM", "eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "EAGLE"}
_LLAMACPP = {"draft": "draft-simple", "ngram": "ngram-simple", "lookup": "ngram-cache",
             "eagle3": "draft-eagle3", "mtp": "draft-mtp"}
_LLAMACPP_K = {"draft": "--spec-draft-n-max", "ngram": "--spec-ngram-simple-size-m",
               "lookup": "--spec-draft-n-max", "eagle3": "--spec-draft-n-max",
               "mtp": "--spec-draft-n-max"}
_VLLM = {"ngram": "ngram", "draft": "draft_model", "eagle": "eagle", "eagle3": "eagle3",
         "mtp": "mtp", "suffix": "suffix", "dflash": "dflash"}


def speculative_args(engine: EngineSpec) -> list[str]:
    """The flags that give ``engine`` its speculative setting; ``[]`` when it is off."""
    spec = engine.speculative
    if engine.kind == "openjet":
        if spec.method in ("off", "mtp") and not spec.options:
            return ["-d", str(spec.k or 0)]
    elif not spec.on:
        return []
    field = "engine.speculative.method"
    if engine.kind == "vllm" and spec.method in _VLLM:
        config: dict[str, object] = {"method": _VLLM[spec.method]}
        if spec.k is not None:
            config["num_speculative_tokens"] = spec.k
        if spec.draft_model is not None:
            config["model"] = str(spec.draft_model)
        config.update(spec.options)
        return ["--speculative-config", json.dumps(config, separators=(",", ":"))]
    if engine.kind == "sglang" and spec.method in _SGLANG:
        out = ["--speculative-algorithm", _SGLANG[spec.method]]
        if spec.k is not None:
            out += ["--speculative-num-draft-tokens", str(spec.k)]
        if spec.draft_model is not None:
            out += ["--speculative-draft-model-path", str(spec.draft_model)]
        for key, value in spec.options.items():
            out += [f"--speculative-{key.replace('_', '-')}", str(value)]
        return out
    if engine.kind == "llamacpp" and spec.method in _LLAMACPP:
        out = ["--spec-type", _LLAMACPP[spec.method]]
        if spec.draft_model is not None:
            out += ["--spec-draft-model", str(spec.draft_model)]
        if spec.k is not None:
            out += [_LLAMACPP_K[spec.method], str(spec.k)]
        for key, value in spec.options.items():
            out += [f"--{key.replace('_', '-')}", str(value)]
        return out
    raise UsageError(field, f"{engine.kind} cannot speculate with {spec.method!r} through the "
                     "kit; pass the engine's own flags in engine.args and say what they do in "
                     "the variant's name")
