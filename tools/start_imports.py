"""Which distributions a package imports as it starts, read from its wheel (nothing runs).

Why: the GPU machine is reached with parts of 50 MiB, so an engine's bundle leaves out the
requirements its start does not import (Blackwell kernels, video decoders, other hubs). What
"does not import" means is decided here, not guessed: from the entry modules, every import at
module level (inside ``if`` blocks too, such as ``if is_cuda():``; not inside a function, and
not inside a ``try`` whose ``except`` catches ImportError/Exception) is followed through the
wheel's own modules; the first-party modules reached and the third-party top-level names they
import are returned. A name imported only inside functions (SGLang's attention backends, the
FlashAttention-3 loader) is reached only when that function runs: the bundle's reasons say
which setting would run it.

    python tools/start_imports.py WHEEL sglang.launch_server sglang.srt.models.glm4_moe_lite
"""

from __future__ import annotations

import argparse
import ast
import json
import zipfile
from pathlib import Path
from typing import Any

_CAUGHT = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


class _Reach(ast.NodeVisitor):
    """Module-level imports of one module (a ``from X import y`` also yields ``X.y``, which
    may be a submodule)."""

    def __init__(self, package: str) -> None:
        self.package = package  # the module's package, for relative imports
        self.found: list[str] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return  # runs only when called

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for item in node.body:  # a class body runs at import; its methods do not
            self.visit(item)

    def visit_Try(self, node: ast.Try) -> None:
        types = [t for h in node.handlers if h.type is not None
                 for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])]
        caught = {ast.unparse(t).split(".")[-1] for t in types} | (
            {"BaseException"} if any(h.type is None for h in node.handlers) else set())
        if not caught & _CAUGHT:
            for item in node.body:
                self.visit(item)
        for item in (*node.orelse, *node.finalbody):
            self.visit(item)

    def visit_If(self, node: ast.If) -> None:
        if ast.unparse(node.test) == "TYPE_CHECKING":
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [alias.name for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        self.found += [base, *(f"{base}.{a.name}" for a in node.names if a.name != "*")]


def start_imports(wheel: Path, entries: list[str]) -> dict[str, Any]:
    """``{"modules": first-party modules reached, "third_party": top-level names imported
    by them, "why": name → the chain of modules from an entry that imports it}`` from
    ``entries`` through the wheel's module-level imports."""
    with zipfile.ZipFile(wheel) as zf:
        sources = {n: n for n in zf.namelist() if n.endswith(".py")}

        def path_of(module: str) -> tuple[str, bool] | None:
            base = module.replace(".", "/")
            if f"{base}.py" in sources:
                return f"{base}.py", False
            if f"{base}/__init__.py" in sources:
                return f"{base}/__init__.py", True
            return None

        own = {n.split("/")[0] for n in sources}
        seen: set[str] = set()
        third: set[str] = set()
        parent: dict[str, str] = {}
        why: dict[str, list[str]] = {}
        queue = list(entries)
        while queue:
            module = queue.pop(0)
            if module in seen:
                continue
            top = module.split(".")[0]
            found = path_of(module)
            if top not in own:
                if top not in third:
                    chain = [module]
                    while chain[-1] in parent:
                        chain.append(parent[chain[-1]])
                    why[top] = chain[::-1]
                third.add(top)
                continue
            if found is None:
                continue
            seen.add(module)
            parents = module.split(".")  # importing a.b.c runs a and a.b first
            path, is_package = found
            tree = ast.parse(zf.read(path).decode("utf-8"), path)
            reach = _Reach(module if is_package else module.rpartition(".")[0])
            reach.visit(tree)
            for new in [".".join(parents[:i]) for i in range(1, len(parents))] + reach.found:
                if new and new not in seen:
                    parent.setdefault(new, module)
                    queue.append(new)
    return {"modules": sorted(seen), "third_party": sorted(third), "why": why}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wheel", type=Path)
    p.add_argument("entries", nargs="+")
    p.add_argument("--why", nargs="*", default=[], help="top-level names: print their chains")
    args = p.parse_args(argv)
    if not args.wheel.is_file():
        p.error(f"wheel: {args.wheel} is not a file")
    found = start_imports(args.wheel, args.entries)
    print(json.dumps({"modules": len(found["modules"]), "third_party": found["third_party"],
                      "why": {n: found["why"].get(n) for n in args.why}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
