"""Published results as reference figures: where they come from, what they measured, and
how far they compare with a run.

A :class:`Reference` is one published measurement (a row of a write-up's table, one printed
benchmark block) with its source, date, hardware, engine, checkpoint and caveats as fields,
and the scenario, concurrency and recipe variant it stands beside. Its figures are under the
kit's own keys (:data:`REFERENCE_METRICS`): the ``vllm bench serve`` keys of
:class:`~benchlib.importers.ImportedResult` and the kit's ``per_user_tok_s`` — typed from a
write-up's prose (``results``) or read by :func:`~benchlib.importers.import_results` from a
published block kept beside the file (``imported``), so the printed values come back exactly.
A figure measured differently from the kit's key of the same name (chunks counted as tokens,
a clock started elsewhere) says so in ``measured_as`` and ``caveats``, and 04_compare prints
both next to the number.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from benchlib._exceptions import UsageError, validation_problems
from benchlib.importers import ImportedResult, import_results
from benchlib.recipe import Recipe

__all__ = ["REFERENCE_METRICS", "ImportedFrom", "Reference", "load_references",
           "recipe_references", "unit_of"]

#: the figures a reference may give: the ImportedResult metrics (vLLM's keys) and the kit's
#: own per-user decode rate and engine start-up time
REFERENCE_METRICS: dict[str, str] = {
    **{name: str(f.description) for name, f in ImportedResult.model_fields.items()
       if f.annotation in (float | None, int | None) and name != "source_index"},
    "per_user_tok_s": "one request's decode rate: output tokens after the first per second "
                      "(1000 / TPOT); a write-up's 'tok/s' of a single stream",
    "median_text_chunks_per_s": "one request's streamed chunks with text after the first "
                                "per second: a script's 'tokens/sec' that counts chunks as "
                                "tokens (seed 000's), not per_user_tok_s under speculation",
    "max_itl_ms": "the longest gap between streamed events",
    "mean_request_decode_rate": "each request's own decode rate (1000 / its TPOT), then the "
                                "mean over the requests: a write-up's 'mean tok/s' of "
                                "several prompts (seed 003's), not 1000 / median TPOT",
    "startup_s": "seconds from the engine's start until it served",
    "startup_s_at_most": "an upper bound on the start-up time that the source gives in words "
                         "('within seconds'), not a measured figure",
    "mean_output_tokens": "output tokens per request",
    "mean_input_tokens": "prompt tokens per request",
    "max_completed_input_len": "long-context ramp: the longest prompt that completed",
    "failed_at_input_len": "long-context ramp: the prompt length whose request failed",
    "gsm8k_accuracy": "GSM8K accuracy as SGLang's few_shot_gsm8k scores it (fraction right)",
    "gsm8k_invalid": "few_shot_gsm8k's fraction of answers without a number",
    "gsm8k_latency_s": "few_shot_gsm8k's wall time for the whole batch",
    "gsm8k_output_throughput": "few_shot_gsm8k's completion tokens over its wall time",
}
#: each figure's unit, for the tables (figures not listed: :func:`unit_of` by their suffix)
_UNITS = {"startup_s": "s", "startup_s_at_most": "s", "duration": "s", "gsm8k_latency_s": "s",
          "per_user_tok_s": "tok/s", "output_throughput": "tok/s",
          "median_text_chunks_per_s": "chunks/s", "mean_request_decode_rate": "tok/s",
          "total_token_throughput": "tok/s", "max_output_tokens_per_s": "tok/s",
          "gsm8k_output_throughput": "tok/s", "request_throughput": "req/s",
          "request_goodput": "req/s", "gsm8k_accuracy": "fraction", "gsm8k_invalid": "fraction",
          "max_completed_input_len": "tokens", "failed_at_input_len": "tokens",
          "total_input_tokens": "tokens", "total_output_tokens": "tokens",
          "mean_input_tokens": "tokens", "mean_output_tokens": "tokens"}


def unit_of(figure: str) -> str:
    """The unit a figure is given in (``ms`` for the latency statistics and percentiles,
    ``requests`` for counts, ``x`` for rtfx)."""
    if figure in _UNITS:
        return _UNITS[figure]
    if figure.endswith("_ms"):
        return "ms"
    if figure == "rtfx":
        return "x"
    return "requests"
_PERCENTILE = re.compile(r"^p\d+(?:\.\d+)?_(ttft|tpot|itl|e2el)_ms$")


class ImportedFrom(BaseModel):
    """A published block kept in the repo, read with ``benchlib import``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Path = Field(description="the block's file, relative to the reference file")
    index: int = Field(0, ge=0, description="which result of the file (file order, from 0)")


class Reference(BaseModel):
    """One published measurement, and the part of a run it stands beside."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="unique within the file")
    source: str = Field(description="where it was published (a URL or the write-up's title)")
    published: str | None = Field(None, description="when it was measured or published")
    hardware: str = Field(description="the machine, as the source describes it")
    engine: str = Field(description="engine, version or commit, and its speculation")
    checkpoint: str = Field(description="the weights' files and format")
    measured_as: str = Field(description="how the source measured: its client, clock and "
                             "token count, in a sentence")
    caveats: list[str] = Field(default_factory=list, description="why the figures may not "
                               "compare one for one with a run of the recipe")
    scenario: str | None = Field(None, description="the recipe scenario it stands beside")
    concurrency: int | None = Field(None, ge=1, description="at which concurrency")
    variant: str | None = Field(None, description="the recipe variant it stands beside")
    results: dict[str, float] = Field(default_factory=dict, description="figures typed from "
                                      "the source, under REFERENCE_METRICS keys")
    imported: ImportedFrom | None = Field(None, description="figures read from a published "
                                          "block (merged under results; results win)")

    @field_validator("results")
    @classmethod
    def _known_keys(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = [k for k in value if k not in REFERENCE_METRICS and not _PERCENTILE.match(k)]
        if unknown:
            raise ValueError(f"unknown figure {', '.join(map(repr, unknown))}: use the kit's "
                             "keys (median_ttft_ms, per_user_tok_s, output_throughput, "
                             "p99_ttft_ms, …)")
        return value

    def figures(self, base: Path) -> dict[str, float]:
        """Every figure: the imported block's (``base``: the reference file's folder), then
        the typed ones over them."""
        out: dict[str, float] = {}
        if self.imported is not None:
            found = import_results(base / self.imported.file)
            if self.imported.index >= len(found):
                raise UsageError(f"{self.name}.imported.index",
                                 f"{self.imported.file} holds {len(found)} results")
            data = found[self.imported.index].to_json()
            out.update({k: float(v) for k, v in data.items()
                        if isinstance(v, int | float) and not isinstance(v, bool)
                        and (k in REFERENCE_METRICS or _PERCENTILE.match(k))
                        and k != "source_index"})
        out.update(self.results)
        return out


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    references: list[Reference] = Field(min_length=1)


def load_references(path: Path) -> list[tuple[Reference, dict[str, float]]]:
    """The references of a YAML file, each with its figures; a bad file is a
    :class:`~benchlib._exceptions.UsageError` (exit 2) naming the key."""
    where = str(path)
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(where, f"cannot read the references ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise UsageError(where, f"not valid YAML: {exc}") from None
    try:
        refs = _File.model_validate(data).references
    except ValidationError as exc:
        lines = "; ".join(f"{k or '(top level)'}: {m}" for k, m in validation_problems(exc))
        raise UsageError(where, lines) from None
    names = [r.name for r in refs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(where, f"reference names must be unique: {', '.join(dupes)}")
    return [(r, r.figures(path.parent)) for r in refs]


def recipe_references(recipe: Recipe) -> list[tuple[Reference, dict[str, float]]]:
    """The references ``recipe.compare.references`` names (paths resolved), each checked to
    stand beside something the recipe measures: a scenario it has, a concurrency that
    scenario runs, a variant it names."""
    out = []
    scenarios = {s.name: s for s in recipe.scenarios}
    variants = {v.name for v in recipe.variants}
    for i, path in enumerate(recipe.compare.references):
        field = f"compare.references[{i}]"
        if not path.is_file():
            raise UsageError(field, f"no such file: {path}")
        for ref, figures in load_references(path):
            where = f"{field} ({path.name}) {ref.name}"
            if ref.scenario is not None and ref.scenario not in scenarios:
                raise UsageError(where, f"scenario {ref.scenario!r} is not in the recipe "
                                 f"({', '.join(scenarios)})")
            if (ref.scenario is not None and ref.concurrency is not None
                    and not scenarios[ref.scenario].ramp_input_lens
                    and ref.concurrency not in scenarios[ref.scenario].concurrencies):
                raise UsageError(where, f"scenario {ref.scenario!r} runs no concurrency "
                                 f"{ref.concurrency}")
            if ref.variant is not None and ref.variant not in variants:
                raise UsageError(where, f"variant {ref.variant!r} is not in the recipe "
                                 f"({', '.join(variants) or 'none'})")
            out.append((ref, figures))
    return out
