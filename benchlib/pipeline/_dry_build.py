"""``benchlib run --check``'s dry build: every request a run will send, built without an
engine.

What: for every variant and scenario of a recipe, at every concurrency (every length of a
ramp), :func:`dry_build` makes the measurement's configuration exactly as ``03_measure`` makes
it (:meth:`~benchlib.recipe.Scenario.measure_config`, the concurrency's seed, each repeat's
own configuration from :func:`~benchlib.measure.repeat_configs`) and builds what it would
send: the prompts and their request bodies (:func:`~benchlib.measure.build_requests`), the
warmups (:func:`~benchlib.measure.warmup_bodies`), the SDK view's requests, the sampling keys
the bodies hold; and the accuracy run's questions and shots. It returns one line per
measurement saying what was built, with each text dataset's shared-prefix share
(:mod:`benchlib.measure.workload._prefix_share`).

Why: a defect that only shows when ``03_measure`` builds its requests (a prompt file too short
for its warmups, a dataset path that is not there, a trace with a request rate) costs the
engine's whole start first — twenty minutes of eight GPUs for a large model. Built here,
the same code raises the same error before anything starts, as a
:class:`~benchlib.UsageError` naming the recipe field (``scenarios.NAME.num_warmups``) and
the variant and concurrency it arose at. Every body sent, warmups included, must fit the
engine's ``max_model_len`` with its prompt counted as the engine counts it: through the chat
template for a chat, with the tokenizer's BOS for a completion (:mod:`benchlib.pipeline._fits`).

Prompt lengths need the prompts' tokenizer (:func:`~benchlib.pipeline._fairness.tokenizer_dir`).
Where it is not on this machine (a hub model the run downloads first), the datasets that cut
text or ids to token counts are built with a byte-level tokenizer standing in for it
(:func:`~benchlib.measure.stand_in_tokenizer`: one token a byte, no file, no download), so
their warmups, sampling keys, repeats and the engine's context are still checked at the
requested lengths, and the line says which tokenizer stood in; their shared-prefix share,
which only the model's tokens can give, is left out. A file's prompts are built without
counting their tokens, as a run without a tokenizer would, and the line says what was not
counted (their lengths, their fit in the context, their shared prefixes), so a passing check
never looks like a counted one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from benchlib._exceptions import UsageError, validation_problems
from benchlib.adapters import adapter
from benchlib.checks import read_chat_template
from benchlib.measure import (
    TOKENIZER_REQUIRED,
    MeasureConfig,
    build_requests,
    load_tokenizer,
    ramp_seed,
    repeat_configs,
    sdk_seed,
    sent_keys,
    stand_in_tokenizer,
    trace_rate_check,
    warmup_bodies,
)
from benchlib.measure.workload._prefix_share import TEXT_DATASETS, prefix_share
from benchlib.pipeline._fairness import tokenizer_dir
from benchlib.pipeline._fits import ContextFit
from benchlib.recipe import Recipe, Scenario

__all__ = ["dry_build"]

_T = TypeVar("_T")

#: datasets whose prompts are cut to token counts: they cannot be built without a tokenizer
#: (the configuration's own list, and SGLang's random prompts, cut by the engine's)
_NEEDS_TOKENIZER = (*TOKENIZER_REQUIRED, "sglang-random")
#: the ``benchlib measure`` flag a measuring error names → the scenario's field
_FIELDS = {"--num-warmups": "num_warmups", "--dataset-path": "dataset_path",
           "--repeats": "repeats", "--endpoint": "endpoint", "--request-rate": "request_rate",
           "--input-len": "input_len", "--random-range-ratio": "random_range_ratio",
           "--dataset": "dataset", "--tokenizer": "model.tokenizer",
           "--output-len": "output_len"}
_CHECK_URL = "http://check.invalid"


def _configs(recipe: Recipe, s: Scenario, tokenizer: Path | None
             ) -> Iterator[tuple[str, MeasureConfig]]:
    """Each measurement of ``s`` as ``03_measure`` configures it, with a label."""
    model = recipe.model.served_model_name
    if s.ramp_input_lens:
        for j, n in enumerate(s.ramp_input_lens):
            yield f"ramp {n} tokens", s.model_copy(update={"repeats": 1}).measure_config(
                base_url=_CHECK_URL, model=model, tokenizer=tokenizer, result_json=None,
                max_concurrency=1, num_prompts=1, input_len=n, num_warmups=0,
                seed=ramp_seed(s.seed, j))
        return
    for i, conc in enumerate(s.concurrencies):
        yield f"concurrency {conc}", s.measure_config(
            base_url=_CHECK_URL, model=model, tokenizer=tokenizer, result_json=None,
            max_concurrency=conc, num_prompts=s.prompts_at(i), input_len=s.input_len,
            seed=s.seed_at(i))


def _build_one(cfg: MeasureConfig, tok: Any | None, sdk: bool,
               context: int | None = None, standing_in: bool = False,
               at_context: bool = False, template: str | None = None) -> str:
    """Build every request of one measurement (all repeats, warmups, the SDK view's); a line
    of what was built. ``context``: the engine's ``max_model_len``, which no request's prompt
    and output may pass together (the engine would refuse each such request; with
    ``at_context``, reach it); ``template``: the chat template the engine applies
    (:class:`~benchlib.pipeline._fits.ContextFit`). ``standing_in``: ``tok`` is the stand-in,
    so lengths are its tokens and no prefix share is counted."""
    trace_rate_check(cfg)
    bodies: list[bytes] = []
    warmups: list[bytes] = []
    first_prompts = None
    fits = ContextFit(tok, context, refuses_at_context=at_context, template=template)
    for r, own in enumerate(repeat_configs(cfg)):
        prompts, built = build_requests(own, tok)
        if r == 0:
            first_prompts = prompts
            warmups = warmup_bodies(own, tok, built)
        bodies += built
        fits.check(built, "--input-len", "a prompt")
    # after the measured ones: a warmup of a drawn dataset fails only as they would; a file's
    # (or a conversations file's) warmups are its later lines, which fewer warmups leave out
    fits.check(warmups, "--num-warmups" if cfg.dataset in ("file", "conversations")
               else "--input-len", "a warmup's prompt")
    through_sdk = ""
    if sdk:
        n = len(build_requests(cfg.model_copy(update={"seed": sdk_seed(cfg.seed)}), tok)[1])
        through_sdk = f", {n} through the openai SDK"
    keys = sent_keys(bodies, cfg.sampling)
    line = (f"{len(bodies)} requests ({cfg.repeats} repeat{'s' * (cfg.repeats > 1)}), "
            f"{len(warmups)} warmups{through_sdk} built; sampling {keys.sampling}"
            f" ({', '.join(keys.sampling_keys) or 'no sampling key'}; length keys "
            f"{', '.join(keys.length_keys) or 'none'})")
    assert first_prompts is not None
    if tok is not None and first_prompts and first_prompts[0].prompt_len:
        lens = [p.prompt_len for p in first_prompts]
        line += f"; prompts {min(lens)}–{max(lens)} {'stand-in ' * standing_in}tokens"
    if (tok is not None and not standing_in and cfg.dataset in TEXT_DATASETS
            and len(first_prompts) > 1):
        line += "; " + prefix_share(tok, first_prompts, *cfg.prefix_unit()).summary()
    return line


def _field(scenario: str, exc: UsageError) -> str:
    return f"scenarios.{scenario}.{_FIELDS.get(exc.field, exc.field.lstrip('-'))}"


def _named_configs(recipe: Recipe, s: Scenario, tokenizer: Path | None, where: str
                   ) -> list[tuple[str, MeasureConfig]]:
    """:func:`_configs`, a configuration 03_measure would refuse raised naming its field."""
    try:
        return list(_configs(recipe, s, tokenizer))
    except ValidationError as exc:
        (field, message), *_ = validation_problems(exc, flags=True)
        raise UsageError(_field(s.name, UsageError(field, message)),
                         f"{where}{message}") from None


def _named(scenario: str, where: str, label: str, fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)``, a :class:`UsageError` raised again naming the scenario's field."""
    try:
        return fn(*args)
    except UsageError as exc:
        raise UsageError(_field(scenario, exc), f"{where}{label}: {exc.message}") from None


def _accuracy(recipe: Recipe) -> str:
    """The accuracy run's questions and shots, read as the harness reads them."""
    spec = recipe.accuracy
    assert spec is not None
    path = spec.data_dir / "test.jsonl"
    if not path.is_file():
        raise UsageError("accuracy.data_dir", f"no test.jsonl in {spec.data_dir}")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise UsageError("accuracy.data_dir", f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(row, dict) or not {"question", "answer"} <= row.keys():
            raise UsageError("accuracy.data_dir", f"{path}:{n}: expected question and answer")
        rows.append(row)
    if spec.task == "few_shot_gsm8k" and spec.num_fewshot >= len(rows):
        raise UsageError("accuracy.num_fewshot", f"{spec.num_fewshot} shots from {path}'s "
                         f"{len(rows)} items leave no question")
    asked = min(spec.limit or len(rows), len(rows))
    short = f" (limit {spec.limit}: the file holds {len(rows)})" \
        if spec.limit and spec.limit > len(rows) else ""
    return (f"accuracy: {spec.task}, {asked} questions{short}, {spec.num_fewshot}-shot, "
            f"{spec.concurrency} at a time, from {path}")


def dry_build(recipe: Recipe) -> list[str]:
    """Build every request ``recipe`` (paths resolved) will send, for every variant and
    scenario (module doc); the lines saying what was built. Raises
    :class:`~benchlib.UsageError` naming the field where a run would raise."""
    lines: list[str] = []
    for name, one in recipe.variant_recipes():
        where = f"variant {name}, " if name else ""
        tok_dir = tokenizer_dir(one, "")
        tok = load_tokenizer(tok_dir) if tok_dir is not None and tok_dir.exists() else None
        engine = adapter(one.engine.kind)
        unit = engine.prefix_block(one.engine.args)
        at_context = engine.refuses_at_context
        # the template the engine applies: its flag's, a GGUF's own, else the tokenizer's
        template = read_chat_template(args=one.engine.args, model_file=one.model.local_path,
                                      tokenizer=tok_dir) if tok is not None else None
        for s in one.scenarios:
            standing_in = tok is None and s.dataset in _NEEDS_TOKENIZER
            use, path, note = tok, tok_dir if tok is not None else None, ""
            if standing_in:
                # the prompts are cut by the byte-level stand-in; the configuration names
                # the absent tokenizer's path (module doc)
                use, path = stand_in_tokenizer(), tok_dir or Path(one.model.id)
                note = (f" (a byte-level tokenizer stood in for the model's, {path}, not on "
                        "this machine: lengths are its tokens, one a byte; no prefix share)")
            elif tok is None:  # sent as written: built, but nothing counted in tokens
                note = (f" (the model's tokenizer, {tok_dir or one.model.id}, is not on this "
                        "machine: the prompts' lengths, their fit in the context and their "
                        "shared prefixes are not counted)")
            for i, (label, cfg) in enumerate(_named_configs(one, s, path, where)):
                if unit is not None:  # as 03_measure sets it, before the engine reports one
                    cfg = cfg.with_prefix_unit(*unit)
                built = _named(s.name, where, label, _build_one, cfg, use, s.sdk_view,
                               one.engine.max_model_len, standing_in, at_context, template)
                seeding = f"; seeding {s.seeding(i)}" if not s.ramp_input_lens else ""
                lines.append(f"{where}scenario {s.name}, {label}: {built}{seeding}{note}")
    if recipe.accuracy is not None:
        lines.append(_accuracy(recipe))
    return lines
