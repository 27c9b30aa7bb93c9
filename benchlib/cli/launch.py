"""``benchlib launch PARAMS``: start a recipe's engine and keep it up until Ctrl-C
(``--dry-run``: print the exact command line and start nothing). A recipe with variants
starts one of them (``--variant NAME``, default the first); ``--dry-run`` prints every
variant's command, each checked, so a seed recipe's whole comparison can be read at once.
``--engine-python`` checks and prints with another interpreter's engine (a CPU build of the
same engine, say, to check a GPU recipe's flags on a laptop).

Before either, ``engine.args`` are checked against the engine's own parser (one line on
stderr says against what; a bad flag exits with code 2 naming it), so a typo costs a second,
not an engine start; ``--no-check-args`` skips that.

A recipe whose engine spans several machines (``hardware.nodes`` > 1, ``engine.parallel``)
prints one block a node under ``--dry-run`` (vLLM over Ray: ``ray start`` on each, the server
on node 0; vLLM ``mp`` and SGLang: the server on each with its ``--node-rank``), every
engine flag of every node checked; without ``--dry-run`` it is refused with the same blocks
(exit 2): the kit starts engines on this machine only (:mod:`benchlib.engines._cluster`).

Every secret of the recipe (the API key, the hub token, each ``${NAME}`` of ``engine.args``)
is filtered out of the engine's log as it is written, so neither the log nor the log tail an
error prints holds a value; the log is scrubbed once more when the engine stops.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from benchlib.adapters import adapter

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser("launch", help="start a recipe's engine (or print its command)")
    p.add_argument("params", type=Path)
    p.add_argument("--dry-run", action="store_true", help="print the command; start nothing")
    p.add_argument("--log", type=Path, default=Path("engine.log"))
    p.add_argument("--no-check-args", action="store_true",
                   help="do not check engine.args against the engine's own parser first")
    p.add_argument("--variant", default=None,
                   help="the variant to start (default: the first); --dry-run prints all")
    p.add_argument("--engine-python", type=Path, default=None,
                   help="use this interpreter's engine (vLLM, SGLang) for every variant "
                        "that runs one in Python: check and print against it")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlib._exceptions import UsageError
    from benchlib._secrets import env_secret, scrub_file
    from benchlib.engines import (
        EngineError,
        EngineProcess,
        check_engine_args,
        lower_priority,
        lowered_lines,
        parse_engine_log,
        plan_cluster,
        plan_launch,
        redact_env,
        refuse_multi_node,
    )
    from benchlib.recipe import open_recipe, recipe_secrets

    recipe = open_recipe(args.params)
    pairs = [(name, _with_python(r, args.engine_python)) for name, r in recipe.variant_recipes()]
    names = [name for name, _ in pairs]
    if args.variant is not None and args.variant not in names:
        raise UsageError("--variant", f"no variant {args.variant!r}; the recipe has "
                         f"{', '.join(n for n in names if n) or 'none'}")
    chosen = [(n, r) for n, r in pairs if (args.dry_run and args.variant is None)
              or n == (args.variant or names[0])]
    nodes = recipe.hardware.nodes
    if not args.dry_run:
        refuse_multi_node(recipe.model_copy(update={"variants": [
            v for v in recipe.variants if v.name == chosen[0][0]]}))
    for name, sub in chosen:
        path = sub.model.local_path or Path(sub.model.id)
        plan = plan_launch(sub.engine, sub.model, path)
        if name and len(pairs) > 1:
            print(f"# variant {name}: {sub.engine.kind} {sub.engine.version or ''}".rstrip())
        if not plan.argv:
            print(f"{plan.kind}: nothing to start; the recipe uses {plan.base_url}")
            continue
        if not args.no_check_args:
            print(check_engine_args(sub.engine, nodes=nodes).summary, file=sys.stderr,
                  flush=True)
        if nodes > 1:  # one block a node; the recipe check made sure it can be planned
            cluster = plan_cluster(sub.engine, sub.model, path, nodes)
            print(f"# {cluster.how}\n{cluster.text()}", flush=True)
            continue
        env = " ".join(f"{k}={v}" for k, v in redact_env(plan.env).items())
        print((env + " " if env else "") + plan.recorded_command, flush=True)
    if args.dry_run or not plan.argv:
        return 0
    recipe = sub
    api_key = env_secret(recipe.engine.api_key_env)
    secrets = recipe_secrets(recipe)
    engine = EngineProcess(plan.resolved_argv(), log_path=args.log, ready_url=plan.ready_url,
                           env=plan.env, ready_timeout=recipe.engine.ready_timeout_s,
                           api_key=api_key, secrets=secrets)
    try:
        with engine:
            facts = parse_engine_log(args.log.read_text(errors="replace"))
            kv = f" (KV cache {facts.kv_cache_tokens:,} tokens)" if facts.kv_cache_tokens else ""
            print(f"ready at {plan.base_url} after {engine.startup_s:.1f} s{kv}; "
                  "Ctrl-C stops it", flush=True)
            if recipe.engine.nice and engine.pgid is not None:
                done = lower_priority(engine.pgid, recipe.engine.nice)
                print("\n".join(lowered_lines(done, recipe.engine.nice)), flush=True)
            while engine.proc is not None and engine.proc.poll() is None:
                time.sleep(1)
            code = engine.proc.returncode if engine.proc is not None else 0
    finally:  # filtered as written; once more in case the file was appended to elsewhere
        scrub_file(args.log, secrets)
    if code:
        raise EngineError(f"the engine exited with code {code}; log {args.log}")
    return 0


def _with_python(recipe: Any, python: Path | None) -> Any:
    """``recipe`` with its engine's interpreter replaced, where it runs one (vLLM, SGLang)."""
    if python is None or not adapter(recipe.engine.kind).takes_python:
        return recipe
    return recipe.model_copy(update={"engine": recipe.engine.model_copy(
        update={"python": Path(python).absolute()})})
