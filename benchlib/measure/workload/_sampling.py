"""Which request-body keys a measurement sends, and what each kind of key does.

What: the kit's bodies carry three kinds of keys besides the prompt and the streaming ones —
*sampling* keys, which choose among tokens (:data:`SAMPLING_KEYS`: temperature, top_p,
top_k, min_p, seed, the penalties …), *length* keys, which only bound how many tokens come
back (:data:`LENGTH_KEYS`: max_tokens, max_completion_tokens, ignore_eos, min_tokens), and
whatever else a recipe adds (chat_template_kwargs, stop …). :class:`SentKeys` records which
of each the measured bodies held, from the bytes that were sent, so a result says exactly
what the engine was asked.

Why: the kit sends ``temperature: 0`` unless told otherwise, so runs compare across engines;
a source that sent no sampling keys at all (seed 000's scripts: the server's defaults) ran a
different decode — sampling changes speculative acceptance and with it TPOT. A scenario's
``sampling: server-default`` (:data:`SERVER_DEFAULT`) sends none of them; the length keys
stay, governed by ``output_len`` and ``ignore_eos``, and are recorded apart.

A scenario's ``sampling`` keys are checked when it is read (:func:`check_sampling`): a key
must be a sampling key or one of :data:`EXTRA_KEYS` (the request fields the engines take that
shape an answer without choosing among tokens), and the keys the kit sets itself (the frame,
``max_tokens`` …: ``output_len`` and ``ignore_eos`` say them) are refused. Why: an engine
ignores a key it does not know (``temprature: 0.7`` decodes greedy, silently), so a typo
would run a different decode than the recipe says, and ``--check`` would not see it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EXTRA_KEYS", "LENGTH_KEYS", "SAMPLING_KEYS", "SERVER_DEFAULT", "SentKeys",
           "ServerDefault", "check_sampling", "sent_keys"]

#: ``sampling: server-default``: no sampling key in any body, the server's defaults decide
SERVER_DEFAULT = "server-default"
ServerDefault = Literal["server-default"]

#: keys that choose among tokens (the OpenAI API's and the engines' extensions)
SAMPLING_KEYS = frozenset({
    "temperature", "top_p", "top_k", "min_p", "seed", "presence_penalty",
    "frequency_penalty", "repetition_penalty", "typical_p", "best_of", "n", "logit_bias",
    "use_beam_search", "top_a", "tfs_z", "mirostat", "dynatemp_range"})
#: keys that only bound the output's length
LENGTH_KEYS = frozenset({"max_tokens", "max_completion_tokens", "ignore_eos", "min_tokens"})
#: keys every streamed body has, whatever the settings
_FRAME_KEYS = frozenset({"model", "messages", "prompt", "stream", "stream_options"})
#: keys a recipe's sampling may add that do not choose among tokens (vLLM's and SGLang's
#: request fields: stops, templates, structured output, logprobs, tools)
EXTRA_KEYS = frozenset({
    "stop", "stop_token_ids", "chat_template_kwargs", "chat_template", "skip_special_tokens",
    "include_stop_str_in_output", "spaces_between_special_tokens", "add_generation_prompt",
    "continue_final_message", "add_special_tokens", "response_format", "logprobs",
    "top_logprobs", "reasoning_effort", "structured_outputs", "guided_json", "guided_regex",
    "guided_choice", "guided_grammar", "regex", "json_schema", "ebnf", "separate_reasoning",
    "no_stop_trim", "tools", "tool_choice", "parallel_tool_calls", "user", "priority",
    "min_tokens"})
#: sampling keys whose value must be a number (not text, not null)
_NUMERIC = frozenset({"temperature", "top_p", "top_k", "min_p", "seed", "presence_penalty",
                      "frequency_penalty", "repetition_penalty", "typical_p", "n", "best_of"})


_M = TypeVar("_M", bound=Mapping[str, object])


def check_sampling(sampling: _M) -> _M:
    """``sampling`` if every key is one an engine acts on (module doc); else ``ValueError``
    naming the key."""
    for key, value in sampling.items():
        if key in _FRAME_KEYS or key in LENGTH_KEYS - {"min_tokens"}:
            raise ValueError(f"{key!r} is set by the kit (output_len, ignore_eos and the "
                             "endpoint say it), not by sampling")
        if key not in SAMPLING_KEYS | EXTRA_KEYS:
            raise ValueError(f"unknown key {key!r}: not a sampling key "
                             f"({', '.join(sorted(SAMPLING_KEYS))}) nor a request field the "
                             "kit knows (benchlib.measure.workload._sampling.EXTRA_KEYS); an "
                             "engine would ignore it")
        if key in _NUMERIC and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"{key}: {value!r} is not a number")
    return sampling


class SentKeys(BaseModel):
    """The top-level keys the measured request bodies held, by kind (sorted; the union over
    the bodies)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sampling: Literal["kit", "server-default", "recipe"] = Field(
        description="kit: the kit's temperature 0; recipe: the scenario's sampling keys over "
                    "it; server-default: no sampling key, the server's defaults decide")
    body_keys: list[str] = Field(description="every top-level key of the bodies sent")
    sampling_keys: list[str] = Field(description="keys that choose among tokens "
                                                 "(temperature, top_p, top_k, min_p, seed, "
                                                 "penalties …)")
    length_keys: list[str] = Field(description="keys that only bound the length "
                                               "(max_tokens, max_completion_tokens, "
                                               "ignore_eos, min_tokens)")
    other_keys: list[str] = Field(description="the rest a recipe added (chat_template_"
                                              "kwargs, stop …)")


def sent_keys(bodies: Iterable[bytes], sampling: object) -> SentKeys:
    """What ``bodies`` (the JSON bodies as sent) held, and the setting that made them."""
    keys: set[str] = set()
    for body in bodies:
        keys |= set(json.loads(body))
    mode: Literal["kit", "server-default", "recipe"] = (
        "server-default" if sampling == SERVER_DEFAULT else "recipe" if sampling else "kit")
    return SentKeys(sampling=mode, body_keys=sorted(keys),
                    sampling_keys=sorted(keys & SAMPLING_KEYS),
                    length_keys=sorted(keys & LENGTH_KEYS),
                    other_keys=sorted(keys - SAMPLING_KEYS - LENGTH_KEYS - _FRAME_KEYS))
