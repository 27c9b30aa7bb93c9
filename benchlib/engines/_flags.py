"""A recipe's engine flags, checked against the pinned engine's own parser before anything
starts: a misspelt flag costs a second, not an engine start (427 s for a large model).

For each flag of ``engine.args`` (and a variant's ``args``) the check finds the option the
engine would read (its exact spelling, ``--foo_bar`` and ``--flag=value`` where the engine
takes them, vLLM's ``--json-flag.key``, argparse's unambiguous abbreviations), takes its
values the way the parser would, and names in one :class:`~benchlib._exceptions.UsageError`
(exit 2) every flag that would fail or mislead: unknown (with the closest real flags and, where
known, what the flag became in other versions: :data:`KNOWN_DIFFERENCES`), removed, missing or
unexpected values, a value outside fixed choices, and flags the kit already passes (the model,
host, port, context length, speculative setting) given again. The flag sets come from
:mod:`benchlib.engines._flagsets`; an engine whose set cannot be had is reported unchecked,
never failed for that.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlib._exceptions import AmbiguousFlag, UsageError
from benchlib.adapters import ADAPTERS, adapter
from benchlib.engines._cluster import plan_cluster
from benchlib.engines._commands import plan_launch
from benchlib.engines._flagsets import KNOWN_DIFFERENCES, FlagOption, FlagSet, engine_flag_set
from benchlib.recipe import EngineSpec, ModelSpec, Recipe

__all__ = ["KNOWN_DIFFERENCES", "FlagCheck", "check_engine_args", "check_recipe_args"]

#: flags the kit passes → the recipe field that sets them, every engine's (its adapter's
#: ``kit_flags``); a flag two engines share names the same field in both
_KIT_FIELDS = {flag: name for a in ADAPTERS.values() for flag, name in a.kit_flags.items()}
assert all(a.kit_flags[f] == _KIT_FIELDS[f] for a in ADAPTERS.values() for f in a.kit_flags)
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass(frozen=True, slots=True)
class FlagCheck:
    """What one check found: ``checked`` False when no flag set could be had (``source``
    says why); ``notes``: deprecated flags, overrides between fields, version mismatches."""

    kind: str
    checked: bool
    source: str
    seconds: float
    variant: str = ""
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """One line for a console: what was checked against what, and how long it took."""
        who = f"variant {self.variant}: " if self.variant else ""
        if not self.checked:
            return f"{who}engine args not checked: {self.source}"
        text = f"{who}engine args checked against {self.source} in {self.seconds:.2f} s"
        return "; ".join([text, *self.notes])


@dataclass(frozen=True, slots=True)
class _Use:
    field: str
    token: str
    option: FlagOption | None
    problem: str | None
    abbreviates: str | None = None  # the abbreviation as written, when it is one
    subkey: str = ""  # vLLM's --json-flag.key: the key it sets


def _normalize(token: str, flags: FlagSet) -> str:
    if flags.underscores and token.startswith("--"):
        head, dot, tail = token.partition(".")
        return head.replace("_", "-") + dot + tail
    return token


def _looks_like_flag(token: str, flags: FlagSet) -> bool:
    if not token.startswith("-") or len(token) < 2 or _NEGATIVE.match(token):
        return False
    return flags.style != "argparse" or " " not in token


def _resolve(token: str, flags: FlagSet) -> tuple[FlagOption | None, str | None, str, bool]:
    """``(option, attached value, spelling as read, dotted)``; option ``None``: unknown."""
    if flags.style != "argparse":
        key = _normalize(token, flags)
        return flags.option(key), None, key, False
    if (opt := flags.option(token)) is not None:
        return opt, None, token, False
    key, eq, value = token.partition("=")
    attached = value if eq else None
    key = _normalize(key, flags)
    if (opt := flags.option(key)) is not None:
        return opt, attached, key, False
    if flags.dotted and "." in key:
        base = key.split(".", 1)[0]
        return flags.option(base), attached, base, True
    for short, target in flags.attached.items():
        if token.startswith(short) and len(token) > len(short):
            return flags.option(target), token[len(short):].removeprefix("="), target, False
        if token == short:
            return flags.option(target), None, target, False
    if not key.startswith("--") and len(key) > 2:
        opt = flags.option(key[:2])
        if opt is not None and opt.nargs != 0:  # argparse's -c4096
            return opt, token[2:], key[:2], False
    if flags.allow_abbrev and key.startswith("--"):
        matches = [f for f in flags.flags if f.startswith(key)]
        if len(matches) == 1:
            return flags.option(matches[0]), attached, token.partition("=")[0], False
        if len(matches) > 1:
            raise AmbiguousFlag(key, matches)
    return None, attached, key, False


def _unknown(token: str, key: str, flags: FlagSet) -> str:
    text = f"{token} is not a flag of {flags.engine} {flags.version}"
    name, eq, value = key.partition("=")
    if eq and flags.style != "argparse" and flags.option(name):
        return text + f" (llama.cpp takes no --flag=value: write {name} {value})"
    known = KNOWN_DIFFERENCES.get(flags.engine, {}).get(key)
    if known:
        text += f": {known[1]}"
    return text + _did_you_mean(key, flags.flags)


def _did_you_mean(key: str, candidates: Sequence[str]) -> str:
    """The closest real flags (difflib's ratio ≥ 0.6), those clearly behind the best left
    out: ``--enforce-eagre`` gets ``--enforce-eager or --no-enforce-eager``, not a third."""
    close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
    if not close:
        return ""
    ratio = [difflib.SequenceMatcher(None, key, c).ratio() for c in close]
    close = [c for c, r in zip(close, ratio, strict=True) if r >= ratio[0] - 0.1]
    return f"; did you mean {' or '.join(close)}?"


def _value_hint(opt: FlagOption) -> str:
    if opt.metavar:
        return f" ({opt.metavar})"
    if opt.choices:
        return f" (one of {', '.join(opt.choices[:8])}{', …' if len(opt.choices) > 8 else ''})"
    return ""


def _scan(flags: FlagSet, argv: Sequence[tuple[str, str]]) -> list[_Use]:
    """Read ``(field, token)`` pairs as the engine's parser would: one :class:`_Use` per
    flag, with what is wrong with it."""
    uses: list[_Use] = []
    i = 0
    while i < len(argv):
        field, token = argv[i]
        i += 1
        if not _looks_like_flag(token, flags):
            before = f" and {uses[-1].token} takes no value" if uses and uses[-1].option \
                and uses[-1].option.nargs == 0 else ""
            uses.append(_Use(field, token, None, f"{token!r} is not a flag{before}"))
            continue
        try:
            opt, value, key, dotted = _resolve(token, flags)
        except AmbiguousFlag as exc:
            uses.append(_Use(field, token, None, str(exc)))
            continue
        if opt is None:
            uses.append(_Use(field, token, None, _unknown(token, key, flags)))
            if value is None and i < len(argv) and not _looks_like_flag(argv[i][1], flags):
                i += 1  # most likely its value: one problem, not two
            continue
        problems: list[str] = []
        if opt.removed:
            problems.append(f"{token}: {opt.removed}")
            known = KNOWN_DIFFERENCES.get(flags.engine, {}).get(key)
            if known:
                problems[-1] += f" ({known[1]})"
        nargs = None if dotted else opt.nargs
        values = [] if value is None else [value]
        hint = _value_hint(opt)
        if value is not None and nargs == 0:
            problems.append(f"{key} takes no value (got {token})")
        elif value is None and nargs != 0:
            wanted = nargs if isinstance(nargs, int) else 1
            many = nargs in ("*", "+")
            while i < len(argv) and (many or len(values) < wanted):
                nxt = argv[i][1]
                if flags.style == "argparse" and _looks_like_flag(nxt, flags):
                    break
                if flags.style != "argparse" and flags.option(_normalize(nxt, flags)):
                    problems.append(f"{key} takes a value{hint}, but would take {nxt}")
                values.append(nxt)
                i += 1
                if nargs == "?":
                    break
            if len(values) < wanted and nargs not in ("?", "*"):
                problems.append(f"{key} takes {wanted if wanted > 1 else 'a'} "
                                f"value{'s' if wanted > 1 else ''}{hint}")
        if opt.choices and flags.style == "argparse":
            for v in values:
                if "${" not in v and v not in opt.choices:
                    problems.append(f"{key} {v}: not one of {', '.join(opt.choices)}")
        subkey = _normalize(token, flags).partition("=")[0].partition(".")[2] if dotted else ""
        uses.append(_Use(field, token, opt, "; ".join(problems) or None,
                         key if key not in opt.flags and not dotted else None, subkey))
    return uses


def _canonical(opt: FlagOption, engine: str) -> str:
    for group in adapter(engine).same_setting if engine in ADAPTERS else ():
        if group & set(opt.flags):
            return min(group)
    return opt.name


def _kit_fields(engine: EngineSpec, nodes: int) -> list[tuple[str, str]]:
    """The flags the kit itself passes (program left out), each with the field that owns
    it: ``engine``, or ``engine.speculative`` for the speculative setting's (at the end of
    the server's command); on several nodes, then each node's own (``--node-rank`` …)."""
    bare = engine.model_copy(update={"args": []})
    model = ModelSpec(id="model")
    node_flags: tuple[tuple[str, ...], ...] = ()
    if nodes > 1 and bare.parallel is not None and adapter(bare.kind).multi_node:
        cluster = plan_cluster(bare, model, Path("MODEL"), nodes)
        argv, node_flags = list(cluster.serve), cluster.node_flags
    else:
        argv = plan_launch(bare, model, Path("MODEL"), port=8000).argv
    start = 3 if len(argv) > 2 and argv[1] == "-m" else 1  # python -m module, or a binary
    kit, n_spec = argv[start:], len(adapter(engine.kind).speculative_args(engine.speculative))
    fields = [("engine", t) for t in kit[:len(kit) - n_spec]]
    fields += [("engine.speculative", t) for t in kit[len(kit) - n_spec:]]
    return fields + [("engine", t) for flags in node_flags for t in flags]


def _check(engine: EngineSpec, sources: Sequence[tuple[str, Sequence[str]]], variant: str,
           cache: Path | None, nodes: int = 1) -> FlagCheck:
    started = time.perf_counter()
    flags, source = engine_flag_set(engine, cache)
    if flags is None:
        return FlagCheck(engine.kind, False, source, time.perf_counter() - started, variant)
    kit_fields = _kit_fields(engine, nodes)
    problems: list[tuple[str, str]] = []
    notes: list[str] = []
    if nodes > 1 and engine.parallel is not None:
        notes.append(f"each of the {nodes} nodes' commands checked too (benchlib launch "
                     "--dry-run prints them; benchlib starts none of them)")
    if engine.version and flags.version != engine.version and \
            adapter(engine.kind).flag_versions_comparable:
        notes.append(f"engine.version says {engine.version}; checked against "
                     f"{flags.version}, the version installed")
    kit_uses = [u for u in _scan(flags, kit_fields) if u.option or u.problem]
    for use in kit_uses:
        if use.problem:
            problems.append((use.field, f"the kit's {engine.kind} command passes "
                             f"{use.problem}: the kit needs updating for this engine version"))
    given = {_canonical(u.option, flags.engine): u for u in kit_uses if u.option}
    user = [(field, token) for field, args in sources for token in args]
    for use in _scan(flags, user):
        if use.problem:
            problems.append((use.field, use.problem))
        if use.option is None:
            continue
        if use.option.deprecated:
            notes.append(f"{use.token} is deprecated: {use.option.deprecated}")
        if use.abbreviates:
            notes.append(f"{use.abbreviates} is read as {use.option.name} (an abbreviation: "
                         "spell it out, a later version may make it ambiguous)")
        canon = _canonical(use.option, flags.engine)
        earlier = given.get(canon)
        if earlier is None or earlier.field not in ("engine", "engine.speculative"):
            canon += "." + use.subkey if use.subkey else ""  # each key of a JSON flag
            earlier = given.get(canon)
        if earlier is not None and earlier.field in ("engine", "engine.speculative"):
            owner = ("engine.speculative" if earlier.field == "engine.speculative"
                     else _KIT_FIELDS.get(earlier.token))
            if use.option is not earlier.option:
                what = f"sets what the kit's {earlier.token} sets"
            elif use.token.partition("=")[0] != earlier.token:
                what = f"is passed by the kit already (as {earlier.token})"
            else:
                what = "is passed by the kit already"
            fix = f", from {owner}: set {owner} instead" if owner else ": leave it out"
            problems.append((use.field, f"{use.token} {what}{fix}"))
        elif earlier is not None and not use.option.repeat and not canon.endswith("+"):
            if earlier.field == use.field:
                problems.append((use.field, f"{use.token} is given twice (the engine "
                                 "keeps only the last)"))
            else:
                notes.append(f"{use.field} {use.token} overrides {earlier.field}'s")
        given[canon] = use
    if problems:
        first = problems[0][0]
        raise UsageError(first, "; ".join(msg if field == first else f"{field}: {msg}"
                                          for field, msg in problems))
    return FlagCheck(engine.kind, True, source, time.perf_counter() - started, variant,
                     tuple(notes))


def check_engine_args(engine: EngineSpec, argv: Sequence[str] | None = None, *,
                      field: str = "engine.args", cache: Path | None = None,
                      nodes: int = 1) -> FlagCheck:
    """Check ``argv`` (default: ``engine.args``), which the recipe gives at ``field``, against
    ``engine``'s own parser and against the flags the kit passes itself (on ``nodes`` > 1
    machines: every node's, :func:`~benchlib.engines._cluster.plan_cluster`).

    Raises :class:`~benchlib._exceptions.UsageError` naming ``field``, each bad flag and
    the closest real ones; returns what was checked against what (or why nothing was).
    """
    args = list(engine.args if argv is None else argv)
    return _check(engine.model_copy(update={"args": args}), [(field, args)], "", cache,
                  nodes)


def check_recipe_args(recipe: Recipe, *, cache: Path | None = None) -> list[FlagCheck]:
    """Check the engine flags of ``recipe`` (each variant's: its engine's ``args`` then its
    own), each flag named by the field it came from (``engine.args``,
    ``variants[1].engine.args``, ``variants[1].args``)."""
    nodes = recipe.hardware.nodes
    if not recipe.variants:
        return [check_engine_args(recipe.engine, cache=cache, nodes=nodes)]
    out = []
    for i, ((name, sub), variant) in enumerate(zip(recipe.variant_recipes(), recipe.variants,
                                                   strict=True)):
        base = "engine" if variant.engine is None else f"variants[{i}].engine"
        sources = [(f"{base}.args", list((variant.engine or recipe.engine).args)),
                   (f"variants[{i}].args", list(variant.args))]
        out.append(_check(sub.engine, sources, name, cache, nodes))
    return out
