"""tools/engine_flags.py: SGLang's and open-jet's flag sets read from their wheels with
``ast`` (nothing installed, nothing run), on small wheels written here that use every form
the readers follow; the committed sets are the tool's output, byte for byte. Regenerated from
the real wheels on PyPI: tests/integration/test_engine_flags.py.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from benchlib.engines._flagsets import DATA_DIR, committed

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import engine_flags

_SERVER_ARGS = """
import argparse
from sglang.srt.arg_groups.arg_utils import A, Arg, add_cli_args_from_dataclass
from sglang.srt.arg_groups.argparse_actions import DeprecatedStoreTrueAction, LoRAPathAction
from sglang.srt.arg_groups.fields import collect_input_fields
from sglang.srt.arg_groups.fields.serving import Serving

_INPUT_NAMESPACES = [Serving]
_annotations, _defaults, _namespaces = collect_input_fields(_INPUT_NAMESPACES)

class ServerArgs:
    own_field: A[Optional[int], "declared on ServerArgs itself"] = None

    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--config", type=str)
        parser.add_argument("--old", action=DeprecatedStoreTrueAction, help="Deprecated. Use --new.")
        parser.add_argument("--old-valued", action=DeprecatedStoreTrueAction, nargs=None)
        parser.add_argument("--multi", action="append", choices=["x", "y"])
        parser.add_argument("positional")
"""
_ACTIONS = """
import argparse
class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)
class LoRAPathAction(argparse.Action):
    pass
"""
_FIELDS = """
class Serving(msgspec.Struct):
    _NS_PATH = "serving"
    host: A[str, "The host."] = "127.0.0.1"
    model_path: A[str, Arg(help="weights", aliases=["--model"])]
    tp_size: A[int, Arg(help="tp", aliases=["--tensor-parallel-size"])] = 1
    # annotated twice (SGLang 0.5.15's dcp_size): one field, one option
    tp_size: A[int, Arg(help="tp again", aliases=["--tensor-parallel-size"])] = 1
    fp8: A[str, Arg(help="gemm", cli_name="--fp8-gemm-backend", choices=NAMED_CHOICES)] = "auto"
    mode: A[Optional[Literal["b", "a"]], "a literal"] = None
    enabled: A[Optional[bool], Arg(help="x", action=argparse.BooleanOptionalAction)] = None
    trust: A[bool, "bool"] = False
    paths: A[list[str] | None, "a list"] = None
    as_json: A[Optional[List[str]], Arg(help="j", type_parser=json_list_type)] = None
    lora: A[Optional[List[str]], Arg(help="l", action=LoRAPathAction,
                                     action_kwargs={"type": str, "nargs": "*"})] = None
    hidden: A[bool, Arg(no_cli=True)] = False
    derived = Derived(doc="not an input")
    plain: int = 3
"""


def _wheel(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_sglang_wheel_reader(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "sglang-1.0-py3-none-any.whl", {
        "sglang/srt/server_args.py": _SERVER_ARGS,
        "sglang/srt/arg_groups/argparse_actions.py": _ACTIONS,
        "sglang/srt/arg_groups/fields/serving.py": _FIELDS})
    flags = engine_flags.flag_set("sglang", "1.0", wheel)
    got = {o.flags: (o.nargs, o.choices, o.repeat, bool(o.deprecated)) for o in flags.options}
    assert got == {
        ("--config",): (None, None, False, False),
        ("--old",): (0, None, False, True),
        ("--old-valued",): (None, None, False, True),
        ("--multi",): (None, ("x", "y"), True, False),
        ("--own-field",): (None, None, False, False),
        ("--host",): (None, None, False, False),
        ("--model-path", "--model"): (None, None, False, False),
        ("--tp-size", "--tensor-parallel-size"): (None, None, False, False),
        ("--fp8-gemm-backend",): (None, None, False, False),  # a name: left unchecked
        ("--mode",): (None, ("a", "b"), False, False),
        ("--enabled", "--no-enabled"): (0, None, False, False),
        ("--trust",): (0, None, False, False),
        ("--paths",): ("+", None, False, False),
        ("--as-json",): (None, None, False, False),
        ("--lora",): ("*", None, False, False),
    }
    assert flags.source == "sglang 1.0 wheel, sglang/srt/server_args.py " \
                           "ServerArgs.add_cli_args (ast)"


def test_openjet_wheel_reader_follows_the_console_script(tmp_path: Path) -> None:
    server = ("import argparse\ndef main():\n    ap = argparse.ArgumentParser()\n"
              "    ap.add_argument('-m', '--model', required=True)\n"
              "    ap.add_argument('--kv', choices=['auto', 'q8'], default='auto')\n"
              "    ap.add_argument('--verbose', action='store_true')\n")
    wheel = _wheel(tmp_path / "open_jet-0.5.1-py3-none-any.whl", {
        "open_jet-0.5.1.data/purelib/megakernel/server/mk_server.py": server,
        "open_jet-0.5.1.dist-info/entry_points.txt":
            "[console_scripts]\nopenjet-engine = megakernel.server.mk_server:main\n"})
    flags = engine_flags.flag_set("openjet", "0.5.1", wheel)
    assert [(o.flags, o.nargs, o.choices) for o in flags.options] == [
        (("-m", "--model"), None, None), (("--kv",), None, ("auto", "q8")),
        (("--verbose",), 0, None)]
    assert "openjet-engine = megakernel.server.mk_server:main" in flags.source


def test_committed_sets_are_the_tools_output() -> None:
    for engine, version in [("sglang", "0.5.23"), ("sglang", "0.5.15"), ("openjet", "0.5.1")]:
        flags = committed(engine, version)
        assert flags is not None and flags.dumps() == (
            DATA_DIR / f"{engine}-{version}.json").read_text(encoding="utf-8")
