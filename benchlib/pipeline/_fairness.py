"""The fair-A/B probe: what a recipe cannot state, asked of each running engine.

Right after a variant's engine is up (02_launch), one short request per endpoint the scenarios
use — a prompt of the first such scenario's shape drawn with its own seed (a measured prompt
sent here would be a prefix-cache hit later), ``max_tokens`` :data:`PROBE_TOKENS`, the
scenario's own sampling and ``ignore_eos`` — records how the engine counted the prompt
(usage.prompt_tokens), how many tokens it produced, whether it streamed usage, and the hash of
the prompts the client made. The runner sets each variant's probe against the first variant's
before that variant measures (:func:`probe_differences`): an engine that does not honour
``max_tokens`` is refused outright; a different prompt-token count (tokenizer or chat
template), a different prompt set, or missing usage is refused unless the recipe declares it in
``compare.differences`` (the vocabulary and reasons: :mod:`benchlib.recipe._fair`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchlib.measure import measure, probe_seed
from benchlib.pipeline._standalone import tls_options
from benchlib.recipe import DIFFERENCES, Recipe
from benchlib.runs import Probe

__all__ = ["PROBE_TOKENS", "Probe", "probe_differences", "probe_engine", "tokenizer_dir"]

PROBE_TOKENS = 16



def tokenizer_dir(recipe: Recipe, model_path: str | Path) -> Path | None:
    """Where the prompts' tokenizer comes from: ``model.tokenizer``, else the downloaded or
    local model folder (a GGUF file has none: then ``model.tokenizer`` is needed)."""
    if recipe.model.tokenizer is not None:
        return recipe.model.tokenizer
    for candidate in (Path(model_path) if model_path else None, recipe.model.local_path):
        if candidate is not None and candidate.is_dir():
            return candidate
    return None


def probe_engine(recipe: Recipe, base_url: str, *, tokenizer: Path | None,
                 api_key: str | None) -> list[Probe]:
    """One probe per endpoint the recipe's scenarios use, in the scenarios' order."""
    probes: list[Probe] = []
    for s in recipe.scenarios:
        if any(p.endpoint == s.endpoint for p in probes):
            continue
        # one request of PROBE_TOKENS: a trace's line or a conversation's turns would set
        # their own lengths and counts, so those probe with the text dataset's prompt
        plain = {"dataset": "text"} if s.dataset in ("trace", "conversations") else {}
        short = s.model_copy(update={"output_len": PROBE_TOKENS, "repeats": 1, **plain})
        cfg = short.measure_config(base_url=base_url, model=recipe.model.served_model_name,
                                   tokenizer=tokenizer, result_json=None, max_concurrency=1,
                                   num_prompts=1, input_len=min(s.input_len, 256),
                                   num_warmups=0, seed=probe_seed(s.seed),
                                   **tls_options(recipe, base_url))
        r = measure(cfg, api_key=api_key)
        ok = r.completed == 1
        source = next((k for k, v in r.output_tokens_source.model_dump().items() if v),
                      "none")
        probes.append(Probe(
            endpoint=s.endpoint, scenario=s.name, prompts_sha256=r.benchlib.prompts_sha256,
            prompt_tokens=r.total_input_tokens_server if ok else None,
            output_tokens=r.total_output_tokens if ok else None,
            output_tokens_source=source if ok else "none", max_tokens=PROBE_TOKENS,
            ignore_eos=s.ignore_eos, error="" if ok else next(e for e in r.errors if e)))
    return probes


def probe_differences(reference: Sequence[Probe], probes: Sequence[Probe]
                      ) -> list[tuple[str | None, str]]:
    """``(setting, what differs)`` for each way ``probes`` (a variant's) differ from the
    ``reference`` variant's; setting ``None``: not declarable (the engine cannot be
    compared at all: the probe failed, or it did not honour ``max_tokens``)."""
    out: list[tuple[str | None, str]] = []
    ref = {p.endpoint: p for p in reference}
    for p in probes:
        if p.error:
            out.append((None, f"{p.endpoint} probe failed: {p.error}"))
            continue
        if p.ignore_eos and p.output_tokens != p.max_tokens \
                and p.output_tokens_source == "usage":
            out.append((None, f"{p.endpoint}: asked for {p.max_tokens} tokens with "
                              f"ignore_eos, the engine produced {p.output_tokens}: it does "
                              "not honour max_tokens / ignore_eos"))
        r = ref.get(p.endpoint)
        if r is None or r.error:
            continue
        if r.prompts_sha256 != p.prompts_sha256:
            out.append(("tokenizer", f"{p.endpoint}: the client made other prompts "
                                     f"(sha256 {p.prompts_sha256} against "
                                     f"{r.prompts_sha256})"))
        if (r.output_tokens_source == "usage") != (p.output_tokens_source == "usage"):
            who = "the reference" if r.output_tokens_source == "usage" else "this variant"
            out.append(("usage", f"{p.endpoint}: only {who} streams usage"))
        if None not in (r.prompt_tokens, p.prompt_tokens) \
                and r.prompt_tokens != p.prompt_tokens:
            setting = "chat_template" if p.endpoint == "chat" else "tokenizer"
            out.append((setting, f"{p.endpoint}: the same prompt is {p.prompt_tokens} tokens "
                                 f"here and {r.prompt_tokens} on the reference "
                                 f"({DIFFERENCES[setting]})"))
    return out
