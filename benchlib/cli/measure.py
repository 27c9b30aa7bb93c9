"""``benchlib measure``: stream requests at an endpoint and report vLLM-style metrics.

The flags are generated from :class:`~benchlib.measure.MeasureConfig`'s fields: the name
(``_`` → ``-``), the type (``Literal`` → choices, ``bool`` → a switch that flips the default),
the default and the help (the field's description) all come from the model, so a setting
added to :class:`~benchlib.measure.Workload` is a flag too. :data:`_SPECIAL` holds the few
flags whose spelling or syntax is not the field's (vLLM's ``--metric-percentiles``, the
``KEY:MS`` goodput pairs); ``--api-key`` and ``--header`` are the flags that are not fields
(their values are secrets, never in a config, scrubbed from everything printed or written).
A flag left out is left out of the model's input, so its default is the model's.
"""

from __future__ import annotations

import argparse
import json
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from benchlib._exceptions import MeasureError, UsageError, validation_message
from benchlib._secrets import env_secret, scrub_text

if TYPE_CHECKING:
    from benchlib.measure import MeasureConfig

__all__ = ["config_from_args", "flag_table", "register", "run"]


@dataclass(frozen=True, slots=True)
class Flag:
    """One generated flag: the field it sets, its spelling, argparse's keywords, and how its
    raw value becomes the field's value."""

    field: str
    flag: str
    kwargs: dict[str, Any]
    parse: Callable[[Any], Any] | None = None


def _percentiles(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError("--metric-percentiles",
                         f"expected numbers like 50,90,99, got {text!r}") from None


def _goodput(values: Sequence[str]) -> dict[str, float]:
    slos: dict[str, float] = {}
    for item in values:
        key, sep, ms = item.partition(":")
        if not sep or key not in ("ttft", "tpot", "e2el"):
            raise UsageError("--goodput", f"expected ttft:MS, tpot:MS or e2el:MS, got {item!r}")
        try:
            slos[key] = float(ms)
        except ValueError:
            raise UsageError("--goodput", f"{item!r}: {ms!r} is not a number") from None
    return slos


def _sampling(values: Sequence[str]) -> dict[str, Any] | str:
    if list(values) == ["server-default"]:  # no sampling key at all
        return "server-default"
    fields: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError("--sampling", f"expected KEY=VALUE, got {item!r}")
        try:
            fields[key] = json.loads(raw)  # 0.7, true, ["\n"]; anything else is a string
        except ValueError:
            fields[key] = raw
    return fields


#: flags whose spelling or syntax is not the field's: field → (flag, argparse keywords, parse)
_SPECIAL: dict[str, tuple[str, dict[str, Any], Callable[[Any], Any]]] = {
    "percentiles": ("--metric-percentiles", {"metavar": "P,P,…"}, _percentiles),
    "goodput": ("--goodput", {"nargs": "+", "metavar": "KEY:MS"}, _goodput),
    "sampling": ("--sampling", {"nargs": "+", "metavar": "KEY=VALUE"}, _sampling),
}
#: flags that set no field
_NOT_FIELDS = ("--api-key", "--header")


def _plain(annotation: Any) -> Any:
    """``X | None`` → ``X``; anything else unchanged."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _default_text(name: str, info: FieldInfo) -> str:
    """`` (default: …)`` for the help, as the flag would be typed; empty for none."""
    if name == "output_len":  # see config_from_args
        return " (default: 128 for the random and text datasets, none for a file)"
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    if default is None or default == {} or default is False:
        return ""
    if isinstance(default, tuple):
        return f" (default: {','.join(f'{x:g}' for x in default)})"
    return f" (default: {default:g})" if isinstance(default, float) else f" (default: {default})"


def _flag(name: str, info: FieldInfo) -> Flag:
    """The flag of field ``name``: from :data:`_SPECIAL`, else from its type and default."""
    help_text = (info.description or "").replace("%", "%%")
    if name in _SPECIAL:
        flag, syntax, parse = _SPECIAL[name]
        return Flag(name, flag, {**syntax, "help": help_text + _default_text(name, info)},
                    parse)
    kind = _plain(info.annotation)
    if kind is bool:  # a switch away from the default
        if info.get_default():
            return Flag(name, f"--no-{name.replace('_', '-')}",
                        {"action": "store_false", "help": f"{name} off: {help_text}"})
        return Flag(name, f"--{name.replace('_', '-')}",
                    {"action": "store_true", "help": help_text})
    kwargs: dict[str, Any] = {"help": help_text + _default_text(name, info)}
    if info.is_required():
        kwargs["required"] = True
    if get_origin(kind) is Literal:
        kwargs["choices"] = list(get_args(kind))
    elif kind in (int, float, str, Path):
        kwargs["type"] = kind
    else:
        raise TypeError(f"MeasureConfig.{name}: no flag for {kind!r}; add it to _SPECIAL")
    return Flag(name, f"--{name.replace('_', '-')}", kwargs)


def flag_table() -> list[Flag]:
    """One flag per :class:`~benchlib.measure.MeasureConfig` field: the required ones
    first, then in field order."""
    from benchlib.measure import MeasureConfig

    fields = sorted(MeasureConfig.model_fields.items(), key=lambda f: not f[1].is_required())
    return [_flag(name, info) for name, info in fields]


def register(sub: Any) -> None:
    p = sub.add_parser("measure", help="stream requests at an OpenAI-compatible endpoint",
                       description="Measure TTFT, TPOT, ITL, E2EL and throughput with vllm "
                       "bench serve's definitions; output tokens from the server's usage.")
    for f in flag_table():
        p.add_argument(f.flag, dest=f.field, default=argparse.SUPPRESS, **f.kwargs)
    p.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY); never written")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="an extra header on every request (repeatable), e.g. 'Authorization: "
                   "Bearer …' for a hosted API or a proxy's token; replaces benchlib's own "
                   "header of that name; the value is a secret, never printed or written")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> MeasureConfig:
    """The :class:`~benchlib.measure.MeasureConfig` of parsed flags; a bad value raises
    :class:`~benchlib.UsageError` naming its flag (exit code 2)."""
    from benchlib.measure import MeasureConfig

    table = flag_table()
    given = {f.field: f.parse(getattr(args, f.field)) if f.parse else getattr(args, f.field)
             for f in table if hasattr(args, f.field)}
    if "output_len" not in given and given.get("dataset") == "file":
        given["output_len"] = None  # a file's prompts: their own output_len, else no limit
    try:
        return MeasureConfig(**given)
    except ValidationError as exc:
        flags = {f.field: f.flag for f in table}
        raise UsageError("measure", validation_message(exc, flags=flags)) from None


def run(args: argparse.Namespace) -> int:
    from benchlib.measure import format_result, measure
    from benchlib.measure.wire._endpoint import parse_header

    cfg = config_from_args(args)
    headers = [parse_header(h) for h in args.header]
    api_key = args.api_key or env_secret("OPENAI_API_KEY")
    secrets = [v for v in (api_key, *(value for _, value in headers)) if v]
    result = measure(cfg, api_key=api_key, headers=headers)
    print(scrub_text(format_result(result, cfg.percentiles), secrets), flush=True)
    if cfg.result_json is not None:
        print(f"result: {cfg.result_json}", flush=True)
    if result.completed == 0:
        first = next((e for e in result.errors if e), "unknown error")
        raise MeasureError(scrub_text(
            f"all {result.failed} requests failed; first error: {first}", secrets))
    return 0

