"""The committed vLLM flag sets (``benchlib/engines/_flagsets/vllm-*.json``) against the
releases' own parsers, regenerated from the wheels on PyPI by ``tools/vllm_flags.py``.

Opt-in, kept out of the default run: it downloads two ~300 MB wheels and builds each parser
(a minute on two cores). Run it with ``BENCHLIB_VLLM_RELEASE_FLAGS=1`` (and the CPU build of
``make engine``, whose torch the parsers accept), e.g. after editing the tool or the kit's
parser dump."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from benchlib.engines._flagsets import committed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import engine_flags
import vllm_flags

OPT_IN = "BENCHLIB_VLLM_RELEASE_FLAGS"

pytestmark = pytest.mark.skipif(
    os.environ.get(OPT_IN) != "1",
    reason=f"opt-in: set {OPT_IN}=1 to download the vLLM wheels and rebuild their parsers")


@pytest.mark.parametrize("version", ["0.26.0", "0.27.1"])
def test_committed_vllm_sets_match_the_release_parsers(version: str) -> None:
    if not vllm_flags.DEFAULT_PYTHON.is_file():
        pytest.fail(f"{vllm_flags.DEFAULT_PYTHON} is missing: run make engine first")
    fresh = vllm_flags.release_flag_set(version, vllm_flags.DEFAULT_PYTHON)
    stored = committed("vllm", version)
    assert stored is not None, f"no committed set for vllm {version}"
    assert fresh.dumps() == stored.dumps(), "\n".join(engine_flags.diff(stored, fresh))
