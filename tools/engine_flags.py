"""Write the committed flag set of a released SGLang or open-jet, read from its wheel without
installing it: ``pip download NAME==VERSION --no-deps``, the wheel opened as a zip, its
argument parser read with ``ast`` (nothing of the package runs, so no GPU stack is needed).

    python tools/engine_flags.py sglang 0.5.23          # → benchlib/engines/_flagsets/
    python tools/engine_flags.py openjet 0.5.1 --check  # exit 1 if the committed file differs
    python tools/engine_flags.py sglang 0.5.23 --wheel sglang-0.5.23-….whl   # offline

* SGLang (``sglang/srt/server_args.py``): the options ``ServerArgs.add_cli_args`` registers.
  Recent releases derive most of them from annotated fields (``name: A[T, "help"]`` or
  ``A[T, Arg(...)]``) of ``ServerArgs`` and of the namespace classes it collects
  (``collect_input_fields([...])``), the rules of ``add_cli_args_from_dataclass``: the flag is
  ``--name-with-dashes`` or ``Arg.cli_name`` plus ``Arg.aliases``, a ``bool`` is a bare flag,
  a list takes ``+`` values, a ``Literal`` fixes the choices; ``no_cli`` fields have none. The
  rest, and older releases' whole set, are ``parser.add_argument`` calls.
* open-jet: the ``add_argument`` calls of the ``openjet-engine`` console script's function
  (its ``entry_points.txt``).

Choices are kept only where they are literals in the source (a name such as
``QUANTIZATION_CHOICES`` may grow at run time through plugins: left unchecked).
"""

from __future__ import annotations

import argparse
import ast
import configparser
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib.engines._flagsets import DATA_DIR, FlagOption, FlagSet  # noqa: E402

DISTS = {"sglang": "sglang", "openjet": "open-jet"}
_NO_VALUE = {"store_true", "store_false", "store_const", "append_const", "count", "help",
             "version"}
_REPEAT = {"append", "append_const", "extend", "count"}
_UNKNOWN = object()
_DATA_ROOT = re.compile(r"^[^/]+\.data/(?:purelib|platlib)/")


class Wheel:
    """A wheel's Python sources, by module name (``*.data/purelib/`` trees included)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())

    def text(self, name: str) -> str:
        return self.zip.read(name).decode("utf-8")

    def module_path(self, module: str) -> str:
        base = module.replace(".", "/")
        data = {m.group(0) for n in self.names if (m := _DATA_ROOT.match(n))}
        roots = ["", *sorted(data)]
        for root in roots:
            for candidate in (f"{root}{base}.py", f"{root}{base}/__init__.py"):
                if candidate in self.names:
                    return candidate
        raise KeyError(f"{module} is not in {self.path.name}")

    def module(self, module: str) -> ast.Module:
        path = self.module_path(module)
        return ast.parse(self.text(path), path)

    def entry_point(self, script: str) -> str:
        """``module:function`` of a console script."""
        name = next(n for n in self.names if n.endswith(".dist-info/entry_points.txt"))
        config = configparser.ConfigParser()
        config.read_string(self.text(name))
        return config["console_scripts"][script].strip()


def download(dist: str, version: str, dest: Path) -> Path:
    """``pip download DIST==VERSION --no-deps`` into ``dest``; the wheel's path."""
    subprocess.run([sys.executable, "-m", "pip", "download", f"{dist}=={version}", "--no-deps",
                    "--only-binary", ":all:", "-q", "-d", str(dest)], check=True)
    return next(dest.glob("*.whl"))


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return _UNKNOWN
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _name(node: ast.AST | None) -> str:
    """``argparse.BooleanOptionalAction`` → ``BooleanOptionalAction``; ``A`` → ``A``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _imports(tree: ast.Module) -> dict[str, str]:
    """Names a module imports → the module they come from."""
    return {alias.asname or alias.name: node.module
            for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names}


def _action_nargs(wheel: Wheel, where: ast.Module, action: str) -> Any:
    """The ``nargs`` default of a custom ``argparse.Action`` subclass's ``__init__``."""
    module = _imports(where).get(action)
    tree = wheel.module(module) if module else where
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == action:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    named = args.args[len(args.args) - len(args.defaults):]
                    for arg, default in [*zip(named, args.defaults, strict=True),
                                         *zip(args.kwonlyargs, args.kw_defaults, strict=True)]:
                        if arg.arg == "nargs":
                            return _literal(default)
    return None


def _option(flags: list[str], kw: Mapping[str, ast.AST], wheel: Wheel, where: ast.Module,
            help_text: str = "") -> FlagOption:
    """One option from ``add_argument``'s keywords, as argparse would register it."""
    action_node = kw.get("action")
    action = _literal(action_node) if isinstance(action_node, ast.Constant) else \
        _name(action_node)
    nargs = _literal(kw["nargs"]) if "nargs" in kw else None
    if action in _NO_VALUE:
        nargs = 0
    elif action == "BooleanOptionalAction":
        nargs = 0
        flags = flags + ["--no-" + f[2:] for f in flags if f.startswith("--")]
    elif action and action not in ("store", "append", "extend") and "nargs" not in kw:
        nargs = _action_nargs(wheel, where, str(action))
    choices = _literal(kw.get("choices"))
    if not (isinstance(choices, list | tuple) and all(isinstance(c, str) for c in choices)):
        choices = None
    metavar = _literal(kw.get("metavar"))
    text = _literal(kw.get("help"))
    text = text if isinstance(text, str) else help_text
    is_deprecated = ("deprecated" in str(action).lower()
                     or text.lstrip("(").lower().startswith("deprecated"))
    deprecated = (" ".join(text.split())[:300] or "deprecated") if is_deprecated else None
    return FlagOption(tuple(flags), nargs if nargs is not _UNKNOWN else None,
                      tuple(sorted(choices)) if choices else None,
                      metavar if isinstance(metavar, str) else None, action in _REPEAT,
                      deprecated)


def add_argument_options(func: ast.AST, wheel: Wheel, where: ast.Module) -> list[FlagOption]:
    """Every ``*.add_argument("-x", "--xx", …)`` call inside ``func`` (positionals left out)."""
    out = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _name(node.func) == "add_argument":
            flags = [_literal(a) for a in node.args]
            if flags and all(isinstance(f, str) and f.startswith("-") for f in flags):
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                out.append(_option(flags, kw, wheel, where))
    return out


def _unwrap(node: ast.expr) -> ast.expr:
    """``Optional[X]``, ``X | None``, ``Union[X, None]`` → ``X``."""
    if isinstance(node, ast.Subscript) and _name(node.value) == "Optional":
        return _unwrap(node.slice)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [p for p in (node.left, node.right)
                 if not (isinstance(p, ast.Constant) and p.value is None)]
        return _unwrap(parts[0]) if len(parts) == 1 else node
    if isinstance(node, ast.Subscript) and _name(node.value) == "Union" and \
            isinstance(node.slice, ast.Tuple):
        parts = [p for p in node.slice.elts if not (isinstance(p, ast.Constant)
                                                     and p.value is None)]
        return _unwrap(parts[0]) if len(parts) == 1 else node
    return node


def field_options(cls: ast.ClassDef, wheel: Wheel, where: ast.Module) -> list[FlagOption]:
    """The options ``add_cli_args_from_dataclass`` derives from ``cls``'s annotated fields.
    A field annotated twice in the class body (SGLang 0.5.15's ``dcp_size``) is one field, as
    in Python's class namespace: the later annotation at the earlier one's place."""
    out: dict[str, FlagOption] = {}
    for item in cls.body:
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                and isinstance(item.annotation, ast.Subscript)
                and _name(item.annotation.value) in ("A", "Annotated")
                and isinstance(item.annotation.slice, ast.Tuple)):
            continue
        inner, *extras = item.annotation.slice.elts
        meta: dict[str, ast.AST] | None = None
        for extra in extras:
            if isinstance(extra, ast.Call) and _name(extra.func) == "Arg":
                meta = {k.arg: k.value for k in extra.keywords if k.arg}
                break
            if not isinstance(extra, ast.Call):  # a bare help string
                meta = {"help": extra}
                break
        if meta is None or _literal(meta.get("no_cli")) is True:
            continue
        cli_name = _literal(meta.get("cli_name"))
        name = cli_name if isinstance(cli_name, str) else \
            "--" + item.target.id.replace("_", "-")
        aliases = _literal(meta.get("aliases"))
        flags = [name, *(aliases if isinstance(aliases, list) else [])]
        kw = {k: v for k, v in meta.items() if k in ("action", "nargs", "choices", "help")}
        extra_kw = meta.get("action_kwargs")
        if isinstance(extra_kw, ast.Dict):
            kw.update({_literal(k): v for k, v in zip(extra_kw.keys, extra_kw.values,
                                                      strict=True) if k is not None})
        if "action" not in kw:
            inner = _unwrap(inner)
            head = _name(inner.value) if isinstance(inner, ast.Subscript) else _name(inner)
            if head == "bool":
                kw["action"] = ast.Constant("store_true")
            elif head == "Literal" and isinstance(inner, ast.Subscript) and "choices" not in kw:
                values = inner.slice.elts if isinstance(inner.slice, ast.Tuple) else [inner.slice]
                kw["choices"] = ast.List(list(values))
            elif head in ("List", "list") and "type_parser" not in meta and "nargs" not in kw:
                kw["nargs"] = ast.Constant("+")
        out[item.target.id] = _option(flags, kw, wheel, where)
    return list(out.values())


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def sglang_options(wheel: Wheel) -> list[FlagOption]:
    """SGLang's server options, as ``ServerArgs.add_cli_args`` registers them."""
    tree = wheel.module("sglang.srt.server_args")
    server_args = _classes(tree)["ServerArgs"]
    add_cli = next(n for n in server_args.body
                   if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args")
    options = add_argument_options(add_cli, wheel, tree)
    if not any(_name(n.func) == "add_cli_args_from_dataclass"
               for n in ast.walk(add_cli) if isinstance(n, ast.Call)):
        return options
    sources: list[tuple[ast.ClassDef, ast.Module]] = [(server_args, tree)]
    lists = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    imports = _imports(tree)
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and _name(call.func) == "collect_input_fields":
            listed = call.args[0]
            listed = lists.get(_name(listed), listed) if isinstance(listed, ast.Name) else listed
            for elt in listed.elts if isinstance(listed, ast.List | ast.Tuple) else []:
                module = wheel.module(imports[_name(elt)])
                sources.append((_classes(module)[_name(elt)], module))
    for cls, module in sources:
        options += field_options(cls, wheel, module)
    return options


def openjet_options(wheel: Wheel) -> tuple[list[FlagOption], str]:
    """open-jet's server options (the ``openjet-engine`` script's ``add_argument`` calls)
    and the ``module:function`` they come from."""
    target = wheel.entry_point("openjet-engine")
    module_name, _, function = target.partition(":")
    tree = wheel.module(module_name)
    func = next(n for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.name == function)
    return add_argument_options(func, wheel, tree), target


def flag_set(engine: str, version: str, wheel_path: Path) -> FlagSet:
    """The flag set of ``engine`` ``version`` from its wheel."""
    wheel = Wheel(wheel_path)
    if engine == "sglang":
        options = sglang_options(wheel)
        where = "sglang/srt/server_args.py ServerArgs.add_cli_args"
    else:
        options, target = openjet_options(wheel)
        where = f"openjet-engine = {target}"
    seen: set[str] = set()
    for opt in options:
        clash = seen & set(opt.flags)
        if clash:
            raise ValueError(f"{wheel_path.name}: {sorted(clash)} registered twice")
        seen |= set(opt.flags)
    return FlagSet(engine, version, f"{DISTS[engine]} {version} wheel, {where} (ast)",
                   tuple(options), "argparse", allow_abbrev=True)


def wheel_flag_set(engine: str, version: str, wheel: Path | None = None) -> FlagSet:
    """:func:`flag_set` of a given wheel, or of one downloaded from PyPI for the purpose."""
    if wheel is not None:
        return flag_set(engine, version, wheel)
    with tempfile.TemporaryDirectory(prefix="engine-flags-") as tmp:
        return flag_set(engine, version, download(DISTS[engine], version, Path(tmp)))


def diff(old: FlagSet, new: FlagSet) -> list[str]:
    """One line per option that differs between two sets."""
    before = {o.flags: o for o in old.options}
    after = {o.flags: o for o in new.options}
    return [f"{'/'.join(f)}: {before.get(f)} → {after.get(f)}"
            for f in sorted(before.keys() | after.keys()) if before.get(f) != after.get(f)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", choices=sorted(DISTS))
    parser.add_argument("version")
    parser.add_argument("--wheel", type=Path, help="a downloaded wheel (default: pip download)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    flags = wheel_flag_set(args.engine, args.version, args.wheel)
    return write_or_check(flags, DATA_DIR / f"{args.engine}-{args.version}.json", args.check,
                          "the wheel")


def write_or_check(flags: FlagSet, path: Path, check: bool, source: str) -> int:
    """Write ``flags`` to ``path`` (the committed set), or with ``check`` compare them with it:
    one line per option that differs, exit status 1 when anything does."""
    if not check:
        flags.write(path)
        print(f"{path.relative_to(REPO)}: {len(flags.options)} options", file=sys.stderr)
        return 0
    if not path.is_file():
        print(f"{path.relative_to(REPO)} does not exist", file=sys.stderr)
        return 1
    stored = FlagSet.read(path)
    lines = diff(stored, flags)
    same = stored.to_json() == flags.to_json()
    print("\n".join(lines) or f"{path.relative_to(REPO)}: "
          f"{'same as' if same else 'options equal to, header unlike'} {source}",
          file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
