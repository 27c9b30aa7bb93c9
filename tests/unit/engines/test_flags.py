"""The engine flag check: llama.cpp's help text read as llama-server prints it, argparse's
rules as vLLM's FlexibleArgumentParser applies them, the committed SGLang and open-jet sets,
each message naming the field and the flag, (tools/engine_flags.py's wheel readers: test_engine_flags_tool.py).

The engines here are stand-ins that answer the check's two questions the way the real ones
do: a shell script as ``llama-server`` printing the help below for ``--help``, a shell script
as the engine's interpreter printing ``vllm 9.9.9`` for the version query (its parser then
comes from a cache file the test writes). The real engines: tests/integration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.adapters import adapter
from benchlib.engines import (
    KNOWN_DIFFERENCES,
    FlagSet,
    check_engine_args,
    check_recipe_args,
    plan_launch,
)
from benchlib.engines._flagsets import FlagOption, committed, parse_llamacpp_help
from benchlib.engines._flagsets._llamacpp import build_version
from benchlib.recipe import EngineSpec, ModelSpec, Recipe, Speculative

#: a llama-server --help excerpt laid out exactly as common_arg::to_string prints it (spellings
#: from column 0, the first padded to 7, hints after one space, help from column 40 or on the
#: next line, "(env: …)" lines), with the removed --draft family's stubs of 2026 builds and
#: two-value lines of older ones
HELP = """\
load_backend: loaded CPU backend from /opt/llama/libggml-cpu-haswell.so
----- common params -----

-h,    --help, --usage                  print usage and exit
--version                               show version and build info
-lv,   --verbosity, --log-verbosity N   Set the verbosity threshold. Messages with a higher verbosity will be
                                        ignored. Values:
                                         - 3: info
                                         - 4: trace (more info)
                                        (default: 3)
                                        (env: LLAMA_ARG_LOG_VERBOSITY)
-t,    --threads N                      number of CPU threads to use during generation (default: -1)
                                        (env: LLAMA_ARG_THREADS)
-C,    --cpu-mask M                     CPU affinity mask: arbitrarily long hex. Complements cpu-range
                                        (default: "")
--cpu-strict <0|1>                      use strict CPU placement (default: 0)
-c,    --ctx-size N                     size of the prompt context (default: 4096, 0 = loaded from model)
                                        (env: LLAMA_ARG_CTX_SIZE)
-n,    --predict, --n-predict N         number of tokens to predict (default: -1, -1 = infinity)
                                        (env: LLAMA_ARG_N_PREDICT)
-ctxcp, --ctx-checkpoints, --swa-checkpoints N
                                        max number of context checkpoints to create per slot (default:
                                        32)[(more info)](https://github.com/ggml-org/llama.cpp/pull/15293)
                                        (env: LLAMA_ARG_CTX_CHECKPOINTS)
-kvu,  --kv-unified, -no-kvu, --no-kv-unified
                                        use single unified KV buffer shared across all sequences (default:
                                        enabled)
                                        (env: LLAMA_ARG_KV_UNIFIED)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
                                        (env: LLAMA_ARG_FLASH_ATTN)
-lm,   --load-mode MODE                 model loading mode (default: auto)
                                        - auto: mmap, unless a device does not support it
                                        - none: no special loading mode
                                        - mmap: memory-map model (if mmap disabled, slower load but may reduce
                                        pageouts if not using mlock)
                                        (env: LLAMA_ARG_LOAD_MODE)
-ot,   --override-tensor <tensor name pattern>=<buffer type>,...
                                        override tensor buffer type
--lora-scaled FNAME SCALE               path to LoRA adapter with user defined scaling (can be repeated to use
                                        multiple adapters)
--control-vector-layer-range START END
                                        layer range to apply the control vector(s) to, start and end inclusive
-m,    --model FNAME                    model path to load
                                        (env: LLAMA_ARG_MODEL)
--defrag-thold, -dt N                   KV cache defragmentation threshold (DEPRECATED)
                                        (env: LLAMA_ARG_DEFRAG_THOLD)


----- sampling params -----

--temp, --temperature T                 temperature (default: 0.80)
--samplers SAMPLERS                     samplers that will be used for generation in the order, separated by
                                        ';'
                                        (default:
                                        penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature)


----- speculative params -----

--spec-type [none|draft-simple|draft-mtp|ngram-mod]
                                        comma-separated list of speculative types (default: none)
                                        (env: LLAMA_ARG_SPEC_TYPE)
-md,   --model-draft, --spec-draft-model FNAME
                                        draft model for speculative decoding (default: unused)
                                        (env: LLAMA_ARG_MODEL_DRAFT)
--draft, --draft-n, --draft-max N       the argument has been removed. use --spec-draft-n-max or
                                        --spec-ngram-mod-n-max
                                        (env: LLAMA_ARG_DRAFT_MAX)
--draft-min, --draft-n-min N            the argument has been removed. use --spec-draft-n-min or
                                        --spec-ngram-mod-n-min
                                        (env: LLAMA_ARG_DRAFT_MIN)
--spec-draft-n-max N                    number of tokens to draft for speculative decoding (default: 16)
                                        (env: LLAMA_ARG_SPEC_DRAFT_N_MAX)
--spec-draft-n-min N                    minimum number of draft tokens to use for speculative decoding
                                        (default: 0)
                                        (env: LLAMA_ARG_SPEC_DRAFT_N_MIN)
--spec-draft-p-min, --draft-p-min P     minimum speculative decoding probability (greedy) (default: 0.75)


----- example-specific params -----

-a,    --alias STRING                   set alias for model name (to be used by REST API)
                                        (env: LLAMA_ARG_ALIAS)
--host HOST                             ip address to listen, or bind to an UNIX socket if the address ends
                                        with .sock (default: 127.0.0.1)
                                        (env: LLAMA_ARG_HOST)
--port PORT                             port to listen (default: 8080)
                                        (env: LLAMA_ARG_PORT)
--metrics                               enable prometheus compatible metrics endpoint (default: disabled)
                                        (env: LLAMA_ARG_ENDPOINT_METRICS)
-np,   --parallel N                     number of server slots (default: -1, -1 = auto)
                                        (env: LLAMA_ARG_N_PARALLEL)
--jinja, --no-jinja                     whether to use jinja template engine for chat (default: enabled)
                                        (env: LLAMA_ARG_JINJA)
--api-key KEY                           API key to use for authentication, multiple keys can be provided as a
                                        comma-separated list (default: none)
                                        (env: LLAMA_API_KEY)
"""


def test_build_version_of_both_version_lines() -> None:
    assert build_version("version: 7000 (abc1234)\nbuilt with cc") == "b7000 (abc1234)"
    assert build_version("version: 0.5.0-dev (build 11312, commit 0c1e570)") == \
        "b11312 (0c1e570)"
    assert build_version("no version here") == "unknown"


def _opts(text: str) -> dict[tuple[str, ...], FlagOption]:
    return {o.flags: o for o in parse_llamacpp_help(text)}


def test_help_parser_reads_spellings_values_and_stubs() -> None:
    opts = _opts(HELP)
    assert opts["-h", "--help", "--usage"].nargs == 0
    assert opts["-c", "--ctx-size"].nargs is None and opts["-c", "--ctx-size"].metavar == "N"
    # spellings too long for one line: the help starts on the next
    assert opts["-ctxcp", "--ctx-checkpoints", "--swa-checkpoints"].nargs is None
    assert opts["-kvu", "--kv-unified", "-no-kvu", "--no-kv-unified"].nargs == 0
    assert opts["-ot", "--override-tensor"].metavar == "<tensor name pattern>=<buffer type>,..."
    assert opts["--lora-scaled",].nargs == 2 and opts["--control-vector-layer-range",].nargs == 2
    removed = opts["--draft", "--draft-n", "--draft-max"].removed
    assert removed == ("the argument has been removed. use --spec-draft-n-max or "
                       "--spec-ngram-mod-n-max")
    assert opts["--defrag-thold", "-dt"].deprecated and opts["--spec-type",].repeat
    flags = {f for o in opts.values() for f in o.flags}
    # headers, log lines and help prose (which names --spec-ngram-mod-n-max) are no options
    assert "--spec-ngram-mod-n-max" not in flags and len(opts) == 33
    assert all(f.startswith("-") and f.strip("-") for f in flags)


@pytest.fixture
def llama(tmp_path: Path) -> Path:
    """A stand-in llama-server: the help above for --help, its build for --version."""
    (tmp_path / "help.txt").write_text(HELP)
    exe = tmp_path / "llama-server"
    exe.write_text(f'#!/bin/sh\ncase "$1" in\n  --help) cat "{tmp_path}/help.txt";;\n'
                   '  --version) echo "version: 7000 (abc1234)" >&2;;\n  *) exit 1;;\nesac\n')
    exe.chmod(0o755)
    return exe


def _llama(exe: Path, *args: str, **kw: object) -> EngineSpec:
    return EngineSpec(kind="llamacpp", executable=exe, max_model_len=4096, args=list(args),
                      **kw)


def test_llamacpp_flags_pass_and_are_cached_by_binary(llama: Path, tmp_path: Path) -> None:
    from benchlib.engines import _flagsets

    cache = tmp_path / "cache"
    spec = _llama(llama, "--threads", "2", "--ctx_checkpoints", "4", "-fa", "on", "-lm", "none",
                  "--spec-type", "ngram-mod", "--spec-type", "draft-mtp", "--lora-scaled",
                  "a.gguf", "0.5", "--seed-less-flag-value-free", "--jinja")
    with pytest.raises(UsageError, match="--seed-less-flag-value-free is not a flag"):
        check_engine_args(spec, cache=cache)
    check = check_engine_args(spec, spec.args[:-2], cache=cache)
    assert check.checked and check.source.startswith("llama-server --help (sha256 ")
    assert next(p.name for p in cache.iterdir()).startswith("llamacpp-")
    _flagsets._MEMO.clear()
    assert check_engine_args(spec, spec.args[:-2], cache=cache).source.endswith("(cached)")
    llama.write_text(llama.read_text() + "# rebuilt\n")  # another binary: read again
    _flagsets._MEMO.clear()
    assert not check_engine_args(spec, spec.args[:-2], cache=cache).source.endswith("(cached)")
    assert len(list(cache.iterdir())) == 2


@pytest.mark.parametrize("args,message", [
    (["--draft-max", "4"], r"--draft-max: the argument has been removed\. use "
                           r"--spec-draft-n-max .*renamed --spec-draft-n-max"),
    (["-fa", "--jinja"], r"-fa takes a value \(\[on\|off\|auto\]\), but would take --jinja"),
    (["--ctx-size=8"], r"--ctx-size=8 is not a flag of llamacpp b7000 \(abc1234\) "
                       r"\(llama.cpp takes no --flag=value: write --ctx-size 8\)"),
    (["--treads", "2"], r"--treads is not a flag .*did you mean --threads"),
    (["-c", "8192"], r"-c is passed by the kit already, from engine.max_model_len"),
    (["--alias", "x"], r"--alias is passed by the kit already, from model.served_name"),
    (["--threads", "2", "-t", "3"], r"-t is given twice"),
    (["--max-model-len", "8"], r"vLLM's name; llama-server's is -c/--ctx-size"),
    (["--no-mmap"], r"--no-mmap is not a flag .*replaced by -lm/--load-mode .*(--no-mmap: "
                    r"--load-mode none)"),
    (["--port"], r"--port takes a value \(PORT\)"),
])
def test_llamacpp_messages(llama: Path, tmp_path: Path, args: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as err:
        check_engine_args(_llama(llama, *args), cache=tmp_path / "c")
    assert err.value.field == "engine.args" and err.value.exit_code == 2


def test_kit_speculative_flags_are_checked_too(llama: Path, tmp_path: Path) -> None:
    spec = _llama(llama, speculative=Speculative(method="draft", k=4,
                                                 draft_model=Path("d.gguf")))
    # the kit's own flag, removed in this build
    if "--draft-max" in adapter(spec.kind).speculative_args(spec.speculative):
        with pytest.raises(UsageError, match=r"^engine.speculative: the kit's llamacpp "
                           r"command passes --draft-max: the argument has been removed"):
            check_engine_args(spec, cache=tmp_path / "c")
    else:
        assert check_engine_args(spec, cache=tmp_path / "c").checked


def _vllm_options() -> tuple[FlagOption, ...]:
    o = FlagOption
    return (o(("--model",)), o(("--served-model-name",), "+"), o(("--host",)), o(("--port",)),
            o(("--max-model-len",)), o(("--speculative-config", "-sc")), o(("--spec-model",)),
            o(("--spec-tokens",)), o(("--compilation-config", "-cc")),
            o(("--optimization-level",)), o(("--enforce-eager",), 0),
            o(("--enable-prefix-caching", "--no-enable-prefix-caching"), 0),
            o(("--dtype",), None, ("auto", "bfloat16", "half")), o(("--max-num-seqs",)),
            o(("--max-num-batched-tokens",)), o(("--middleware",), repeat=True),
            o(("--tensor-parallel-size", "-tp")), o(("--seed",)), o(("--lora-modules",), "+"),
            o(("--log-config-file",), deprecated="use --logging-config"))


@pytest.fixture
def vllm(tmp_path: Path) -> tuple[EngineSpec, Path]:
    """A stand-in vLLM environment: its interpreter reports vllm 9.9.9, whose parser (vLLM's
    reading rules, a few of its options) is already in the cache."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho vllm 9.9.9\n")
    python.chmod(0o755)
    cache = tmp_path / "cache"
    FlagSet("vllm", "9.9.9", "vllm 9.9.9's own parser", _vllm_options(), allow_abbrev=True,
            underscores=True, dotted=True, attached={"-O": "--optimization-level"},
            ).write(cache / "vllm-9.9.9.json")
    return EngineSpec(kind="vllm", python=python, version="9.9.9", max_model_len=2048), cache


def test_vllm_reading_rules(vllm: tuple[EngineSpec, Path]) -> None:
    engine, cache = vllm
    args = ["--max_num_seqs", "8", "--dtype=half", "--compilation-config.level", "3",
            "--compilation_config.cudagraph_sizes+", "1,2", "--compilation-config.x+", "3",
            "--compilation-config.x+=4", "-O3", "-tp", "2", "--seed", "-1",
            "--no-enable-prefix-caching", "--middleware", "a", "--middleware", "b",
            "--lora-modules", "a=/x", "b=/y", "--max-num-b", "512", "--log-config-file", "f"]
    check = check_engine_args(engine, args, cache=cache)
    assert check.checked and check.source == "vllm 9.9.9's own parser (cached)"
    assert "--max-num-b is read as --max-num-batched-tokens (an abbreviation" in check.summary
    assert "--log-config-file is deprecated: use --logging-config" in check.summary
    assert check.seconds < 1


@pytest.mark.parametrize("args,message", [
    (["--speculative-model", "x", "--seed", "1"],
     r"^engine.args: --speculative-model is not a flag of vllm 9.9.9: removed in vLLM 0.8 "
     r"\(vllm-project/vllm#15466\): --speculative-config .*; did you mean --spec-model"),
    (["--enforce-eager", "true"], r"'true' is not a flag and --enforce-eager takes no value"),
    (["--enforce-eager=1"], r"--enforce-eager takes no value \(got --enforce-eager=1\)"),
    (["--dtype", "bf17"], r"--dtype bf17: not one of auto, bfloat16, half"),
    (["--dtype"], r"--dtype takes a value \(one of auto, bfloat16, half\)"),
    (["--max_model_len", "5"], r"--max_model_len is passed by the kit already \(as "
                               r"--max-model-len\), from engine.max_model_len"),
    (["--max-num", "5"], r"--max-num is ambiguous here: --max-num-batched-tokens, "
                         r"--max-num-seqs"),
    (["--seed", "--max-num-seqs", "4"], r"--seed takes a value"),
    (["--max-num-seqs", "4", "--max-num-seqs=8"], r"--max-num-seqs=8 is given twice"),
    (["-cc.level", "3", "--compilation-config.level=1"], r"--compilation-config.level=1 is "
                                                         r"given twice"),
    (["--mx-num-seqs", "4", "--port", "1"], r"did you mean --max-num-seqs\?; --port is passed "
                                            r"by the kit already, from engine.port"),
])
def test_vllm_messages(vllm: tuple[EngineSpec, Path], args: list[str], message: str) -> None:
    engine, cache = vllm
    with pytest.raises(UsageError, match=message):
        check_engine_args(engine, args, cache=cache)


def test_kit_speculative_setting_is_not_given_twice(vllm: tuple[EngineSpec, Path]) -> None:
    engine, cache = vllm
    engine = engine.model_copy(update={"speculative": Speculative(method="ngram", k=4)})
    with pytest.raises(UsageError, match=r"-sc is passed by the kit already \(as "
                       r"--speculative-config\), from engine.speculative"):
        check_engine_args(engine, ["-sc", "{}"], cache=cache)
    with pytest.raises(UsageError, match=r"--spec-tokens sets what the kit's "
                       r"--speculative-config sets, from engine.speculative"):
        check_engine_args(engine, ["--spec-tokens", "3"], cache=cache)
    with pytest.raises(UsageError, match=r"--speculative_config.num_speculative_tokens is "
                       r"passed by the kit already"):
        check_engine_args(engine, ["--speculative_config.num_speculative_tokens", "3"],
                          cache=cache)


def test_committed_sglang_and_openjet_sets(tmp_path: Path) -> None:
    absent = tmp_path / "no-python"  # not runnable: the release's committed set is used
    sglang = EngineSpec(kind="sglang", version="0.5.23", python=absent, max_model_len=4096)
    check = check_engine_args(sglang, ["--tp-size", "2", "--enable-dp-attention",
                                       "--mem-fraction-static", "0.8"], cache=tmp_path)
    assert check.checked and "sglang 0.5.23 wheel" in check.source
    assert "--enable-dp-attention is deprecated: Deprecated. Use --attn-dp-size" in check.summary
    for args, message in [(["--max-model-len", "4096"], "SGLang's is --context-length"),
                          (["--model", "x"], r"--model is passed by the kit already \(as "
                                             r"--model-path\), from model")]:
        with pytest.raises(UsageError, match=message):
            check_engine_args(sglang, args, cache=tmp_path)
    openjet = EngineSpec(kind="openjet", version="0.5.1", max_model_len=4096)
    assert check_engine_args(openjet, ["--kv", "q8", "--lib", "/x.so"],
                             cache=tmp_path).checked
    for args, message in [(["--kv", "q4"], "--kv q4: not one of auto, f16, q8"),
                          (["-d", "3"], "-d is passed by the kit already"),
                          (["--ctx-size", "8"], "openjet-engine's is -c/--ctx"),
                          (["-c", "8"], r"-c is passed by the kit already \(as --ctx\)")]:
        with pytest.raises(UsageError, match=message):
            check_engine_args(openjet, args, cache=tmp_path)


def test_unchecked_engines_say_why(tmp_path: Path) -> None:
    for spec, why in [
        (EngineSpec(kind="openjet"), "openjet without engine.version"),
        (EngineSpec(kind="openjet", version="9.9"), "no flag set for open-jet 9.9 (committed: "
                                                    "0.5.1; add one with tools/engine_flags.py"),
        (EngineSpec(kind="endpoint", base_url="http://127.0.0.1:1"), "an endpoint"),
        (EngineSpec(kind="llamacpp", executable=tmp_path / "absent"), "does not exist"),
    ]:
        check = check_engine_args(spec, ["--anything"], cache=tmp_path)
        assert not check.checked and why in check.summary, check.summary


def test_known_differences_name_real_flags(llama: Path, tmp_path: Path) -> None:
    sets = {"sglang": committed("sglang", "0.5.23"), "openjet": committed("openjet", "0.5.1"),
            "llamacpp": FlagSet("llamacpp", "b7000", "help", tuple(parse_llamacpp_help(HELP)),
                                "llamacpp")}
    for engine, flags in sets.items():
        assert flags is not None
        for old, (new, _) in KNOWN_DIFFERENCES[engine].items():
            option = flags.option(old)
            assert option is None or option.removed, (engine, old)
            assert all(flags.option(f) is not None for f in new), (engine, new)


def test_variants_name_their_fields(tmp_path: Path) -> None:
    engine = {"kind": "openjet", "version": "0.5.1", "args": ["--kv", "q8"]}
    recipe = Recipe.model_validate({
        "name": "r", "model": {"id": "m"}, "engine": engine, "scenarios": [{"name": "s"}],
        "compare": {"differences": ["engine_flags"]},
        "variants": [{"name": "a"}, {"name": "b", "args": ["--kv", "f16"]},
                     {"name": "c", "engine": {**engine, "args": ["--kvv", "q8"]}}]})
    with pytest.raises(UsageError, match=r"^variants\[2\].engine.args: --kvv is not a flag "
                                         r"of openjet 0.5.1; did you mean --kv\?"):
        check_recipe_args(recipe, cache=tmp_path)
    good = recipe.model_copy(update={"variants": recipe.variants[:2]})
    checks = check_recipe_args(good, cache=tmp_path)
    assert [c.variant for c in checks] == ["a", "b"]
    assert "variants[1].args --kv overrides engine.args's" in checks[1].summary
    bad = good.model_copy(update={"variants": [good.variants[0], good.variants[1].model_copy(
        update={"args": ["--kv"]})]})
    with pytest.raises(UsageError, match=r"^variants\[1\].args: --kv takes a value"):
        check_recipe_args(bad, cache=tmp_path)


def test_openjet_command_is_the_real_entry_point() -> None:
    model = ModelSpec(id="q", served_name="q")
    plan = plan_launch(EngineSpec(kind="openjet", port=18080, max_model_len=4096), model,
                       Path("/m.gguf"))
    # its MTP depth defaults to 4: speculation off is said (-d 0)
    assert plan.argv == ["openjet-engine", "--model", "/m.gguf", "--host", "127.0.0.1",
                         "--port", "18080", "--ctx", "4096", "-d", "0"]
    assert plan.ready_url == "http://127.0.0.1:18080/health"
    plan = plan_launch(EngineSpec(kind="openjet", python=Path("/e/bin/python"), port=1), model,
                       Path("/m.gguf"))
    assert plan.argv[:3] == ["/e/bin/python", "-m", "megakernel"]
