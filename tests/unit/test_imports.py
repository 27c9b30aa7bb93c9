"""benchlib's import graph has no loop, between modules or between layers.

Every ``import benchlib…`` and ``from benchlib… import …`` of every module under
``benchlib/`` counts, at module level and inside functions alike (a lazy import only moves a
loop to run time); imports under ``if TYPE_CHECKING:`` do not (they never run).

Package ``__init__`` files re-export their private modules, so an edge is drawn to the module
that defines the imported name, not to the package: ``from benchlib.memory import plan`` in
``benchlib.engines._x`` is an edge to ``benchlib.memory._plan``. The exception is an import
of a package from inside it (``from benchlib.memory import X`` in ``benchlib.memory._y``):
that runs the package's ``__init__``, which imports its modules, so the edge goes to the
package node, whose own edges go to the modules it imports; a loop through it is real.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlib._layers import LAYERS, layer_of

ROOT = Path(__file__).resolve().parents[2] / "benchlib"


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line`` of ``source``'s file."""

    source: str
    target: str
    line: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST, type_checking: bool = False
                     ) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all levels, ``if TYPE_CHECKING:`` bodies left out
    (kept with ``type_checking``: the layers hold for the types a module names too)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module name of ``from <node.module> import …`` written in ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


class Graph:
    """Module → module edges of benchlib, re-exports resolved as the module docstring says."""

    def __init__(self, type_checking: bool = False) -> None:
        self.type_checking = type_checking
        self.modules = _modules()
        self.packages = {m for m, p in self.modules.items() if p.name == "__init__.py"}
        self.trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p))
                      for m, p in self.modules.items()}
        self.edges: list[Edge] = []
        for module in self.modules:
            self._collect(module)

    def defining_module(self, package: str, name: str, seen: frozenset[str] = frozenset()
                        ) -> str:
        """The module that defines ``name`` which ``package``'s ``__init__`` re-exports."""
        if f"{package}.{name}" in self.modules:
            return f"{package}.{name}"
        for node in _runtime_imports(self.trees[package]):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _absolute(package, True, node)
            if source in self.modules and any((a.asname or a.name) == name for a in node.names):
                if source in self.packages and source not in seen and source != package:
                    return self.defining_module(source, name, seen | {package})
                return source
        return package

    def _inside(self, module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    def _targets(self, module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in self.modules:
                    yield alias.name
            return
        source = _absolute(module, module in self.packages, node)
        if source not in self.modules:
            return
        if source not in self.packages or self._inside(module, source):
            yield source
            # ``from pkg import submodule`` also runs the submodule
            for alias in node.names:
                if f"{source}.{alias.name}" in self.modules:
                    yield f"{source}.{alias.name}"
            return
        for alias in node.names:
            yield self.defining_module(source, alias.name)

    def _collect(self, module: str) -> None:
        for node in _runtime_imports(self.trees[module], self.type_checking):
            for target in self._targets(module, node):
                if target != module:
                    self.edges.append(Edge(module, target, node.lineno))

    def cycles(self, key: dict[str, str] | None = None) -> list[list[Edge]]:
        """One loop (the edges that close it) per strongly connected group of modules;
        empty when the graph has no loop.

        With ``key``, modules are merged first (module → layer) and edges inside one
        merged node are dropped.
        """
        def k(m: str) -> str:
            return key[m] if key else m

        out: dict[str, list[tuple[str, Edge]]] = {}
        for e in sorted(self.edges, key=lambda e: (e.source, e.target, e.line)):
            if k(e.source) != k(e.target):
                out.setdefault(k(e.source), []).append((k(e.target), e))
        return [_loop_in(group, out) for group in _groups(out)]


Adjacency = dict[str, list[tuple[str, Edge]]]


def _groups(out: Adjacency) -> list[set[str]]:
    """Strongly connected groups of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target, _ in out.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(out):
        if node not in index:
            visit(node)
    return groups


def _loop_in(group: set[str], out: Adjacency) -> list[Edge]:
    """A shortest loop through the group's first node (breadth-first, inside the group)."""
    start = min(group)
    came: dict[str, tuple[str, Edge]] = {}
    queue = [start]
    while start not in came:
        node = queue.pop(0)
        for target, edge in out.get(node, []):
            if target in group and target not in came:
                came[target] = (node, edge)
                queue.append(target)
    loop: list[Edge] = []
    node = start
    while not loop or node != start:
        node, edge = came[node]
        loop.insert(0, edge)
    return loop


def _describe(edges: list[Edge]) -> str:
    return "\n".join(f"  {e.source} imports {e.target} (line {e.line})" for e in edges) + "\n"


def _layer(module: str) -> str:
    """``benchlib.memory._plan`` → ``benchlib.memory``; top-level modules stay themselves."""
    return ".".join(module.split(".")[:2])


def test_graph_sees_every_module_and_lazy_imports() -> None:
    g = Graph()
    assert "benchlib.memory._plan" in g.modules and "benchlib.cli" in g.packages
    assert any(e.source == "benchlib.cli.plan" and e.target.startswith("benchlib.memory.")
               for e in g.edges), "the lazy import inside cli.plan.run was missed"
    assert not any(e.source == "benchlib._secrets" and e.target.startswith("benchlib.recipe")
                   for e in g.edges), "a TYPE_CHECKING import counted as an edge"


def test_a_package_imported_from_inside_itself_is_a_node() -> None:
    g = Graph()
    assert g.defining_module("benchlib.memory", "plan") == "benchlib.memory._plan"
    assert g.defining_module("benchlib", "UsageError") == "benchlib._exceptions"


def test_a_loop_is_found_and_named() -> None:
    g = Graph()
    g.edges = [Edge("p.x.a", "p.x.b", 1), Edge("p.x.b", "p.x.c", 2), Edge("p.x.c", "p.x.a", 3),
               Edge("p.x.c", "p.x.d", 4), Edge("p.y.e", "p.y.f", 5)]
    assert g.cycles() == [g.edges[:3]]
    g.edges += [Edge("p.x.d", "p.y.e", 6), Edge("p.y.f", "p.x.a", 7)]
    layers = {m: _layer(m) for e in g.edges for m in (e.source, e.target)}
    assert [[(e.source, e.target) for e in loop] for loop in g.cycles(layers)] == [
        [("p.x.d", "p.y.e"), ("p.y.f", "p.x.a")]]


def test_no_module_import_cycle() -> None:
    loops = Graph().cycles()
    assert not loops, "import cycles:\n" + "\n".join(map(_describe, loops))


def test_no_layer_import_cycle() -> None:
    """Subpackages (and top-level modules) import each other one way only: no layer loop,
    even through lazy imports of different modules."""
    g = Graph()
    loops = g.cycles({m: _layer(m) for m in g.modules})
    assert not loops, "layer cycles:\n" + "\n".join(map(_describe, loops))


def upward(edges: list[Edge]) -> list[Edge]:
    """The edges that break :data:`benchlib._layers.LAYERS`: to a package of the same or a
    higher layer (inside one package anything goes; the root package stands outside)."""
    bad = []
    for e in edges:
        src, dst = layer_of(e.source), layer_of(e.target)
        if _layer(e.source) == _layer(e.target) or src is None or dst is None:
            continue
        if dst >= src:
            bad.append(e)
    return bad


def test_every_package_has_a_layer() -> None:
    names = {m.split(".")[1] for m in _modules() if m.count(".") >= 1}
    assert names == {n for layer in LAYERS for n in layer}, (
        "benchlib/_layers.py lists the packages: add a new one to its layer")


def test_imports_only_go_down_the_declared_layers() -> None:
    """Every import, TYPE_CHECKING ones included, goes to a lower layer."""
    bad = upward(Graph(type_checking=True).edges)
    assert not bad, "imports against benchlib/_layers.py:\n" + _describe(bad)


def test_a_planted_upward_import_is_caught() -> None:
    """The check can fail: measure (layer 2) importing pipeline (5), and recipe importing
    engines (same-or-higher), are named; a package importing itself or a lower one is not."""
    planted = [Edge("benchlib.measure.load._run", "benchlib.pipeline._runner", 7),
               Edge("benchlib.recipe._schema", "benchlib.engines._flags", 9),
               Edge("benchlib.recipe._schema", "benchlib.scripted._server", 11),
               Edge("benchlib.pipeline._runner", "benchlib.pipeline._declare", 3),
               Edge("benchlib.pipeline._runner", "benchlib.measure.load._run", 4)]
    assert upward(planted) == planted[:3]


def test_no_cycle_with_type_checking_imports() -> None:
    g = Graph(type_checking=True)
    loops = g.cycles({m: _layer(m) for m in g.modules})
    assert not loops, "layer cycles:\n" + "\n".join(map(_describe, loops))


def test_the_report_reads_runs_not_the_pipeline() -> None:
    """The report reads a run folder through benchlib.runs (the folder, the typed results,
    the summary table), never the pipeline that wrote it — TYPE_CHECKING imports too."""
    bad = [e for e in Graph(type_checking=True).edges
           if e.source.startswith("benchlib.report") and e.target.startswith("benchlib.pipeline")]
    assert not bad, _describe(bad)
