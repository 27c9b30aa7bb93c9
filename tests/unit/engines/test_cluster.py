"""Multi-node engines: ``engine.parallel`` against ``hardware.nodes``/``gpu_count`` (each
mismatch named by its field, exit 2), every node's command for vLLM over Ray, vLLM's
multiprocessing executor and SGLang, each engine flag checked against the engine's flag set
(SGLang's committed 0.5.7 and 0.5.23 sets; vLLM's multi-node options as its 0.32.0 parser
defines them, in a stand-in set — the real parser: tests/integration/test_multinode.py), and
the refusal a run meets. No run on real multi-node hardware is made here, or anywhere in the
kit's tests: the commands are the engines' documented ones."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.engines import (
    FlagSet,
    check_engine_args,
    check_recipe_args,
    plan_cluster,
    plan_launch,
    refuse_multi_node,
)
from benchlib.engines._flagsets import FlagOption
from benchlib.recipe import EngineSpec, ModelSpec, Recipe, RecipeError, recipe_from_dict

MODEL = ModelSpec(id="zai-org/GLM-5.2", served_name="glm")


def _recipe(engine: dict[str, Any], hardware: dict[str, Any], **more: Any) -> Recipe:
    return recipe_from_dict({"name": "r", "model": {"id": "zai-org/GLM-5.2"},
                             "engine": engine, "hardware": hardware,
                             "scenarios": [{"name": "s"}], **more})


@pytest.mark.parametrize("engine,hardware,message", [
    ({"kind": "vllm", "parallel": {"tp": 8}}, {"nodes": 2, "gpu_count": 8},
     r"engine.parallel: tp 8 × pp 1 = 8 GPUs, but the hardware has 2 nodes × 8 GPUs = 16"),
    ({"kind": "vllm"}, {"nodes": 2, "gpu_count": 8},
     r"engine.parallel: hardware.nodes is 2: say how the engine spans them"),
    ({"kind": "sglang", "parallel": {"tp": 16}}, {"nodes": 2},
     r"hardware.gpu_count: hardware.nodes is 2: give the GPUs of each node"),
    ({"kind": "llamacpp"}, {"nodes": 2}, r"hardware.nodes: 2 nodes: the kit spreads only "
                                         r"vLLM and SGLang"),
    ({"kind": "vllm", "parallel": {"tp": 16}}, {"gpu_count": 8},
     r"tp 16 × pp 1 = 16 GPUs, but the hardware has at most hardware.gpu_count 8"),
    ({"kind": "vllm", "parallel": {"tp": 8, "head": "n0"}}, {"gpu_count": 8},
     r"head and init_port are for several nodes"),
    ({"kind": "sglang", "parallel": {"tp": 16, "backend": "ray"}}, {"nodes": 2, "gpu_count": 8},
     r"engine.parallel.backend is vLLM's"),
    ({"kind": "llamacpp", "parallel": {"tp": 2}}, {}, r"parallel sizes for vLLM and SGLang "
                                                      r"only, not llamacpp"),
])
def test_parallel_and_hardware_must_agree(engine: dict[str, Any], hardware: dict[str, Any],
                                          message: str) -> None:
    with pytest.raises(RecipeError, match=message) as err:
        _recipe(engine, hardware)
    assert err.value.exit_code == 2


def test_a_variants_engine_is_held_to_the_same_hardware() -> None:
    with pytest.raises(RecipeError, match=r"variants\[1\].engine.parallel: tp 8 × pp 1"):
        _recipe({"kind": "vllm", "parallel": {"tp": 8, "pp": 2}}, {"nodes": 2, "gpu_count": 8},
                variants=[{"name": "a"}, {"name": "b", "engine": {
                    "kind": "vllm", "parallel": {"tp": 8}}}],
                compare={"differences": ["engine_flags"]})


def test_an_endpoint_on_several_nodes_is_fine_and_runs() -> None:
    recipe = _recipe({"kind": "endpoint", "base_url": "http://10.0.0.1:8000"}, {"nodes": 2})
    refuse_multi_node(recipe)  # the engine is already up: nothing to refuse


def test_single_node_parallel_passes_the_sizes() -> None:
    vllm = EngineSpec(kind="vllm", port=8000, parallel={"tp": 4, "pp": 2})
    argv = plan_launch(vllm, MODEL, Path("/m")).argv
    assert argv[argv.index("--tensor-parallel-size"):][:4] == [
        "--tensor-parallel-size", "4", "--pipeline-parallel-size", "2"]
    assert "--distributed-executor-backend" not in argv  # vLLM picks mp on one node
    sglang = EngineSpec(kind="sglang", port=8000, parallel={"tp": 8})
    assert plan_launch(sglang, MODEL, Path("/m")).argv[-4:] == ["--tp-size", "8", "--pp-size",
                                                                "1"]


def test_vllm_over_ray_starts_ray_on_every_node_and_serves_from_the_head() -> None:
    engine = EngineSpec(kind="vllm", python=Path("/e/bin/python"), host="0.0.0.0",
                        parallel={"tp": 8, "pp": 2, "head": "10.0.0.1"},
                        env={"NCCL_SOCKET_IFNAME": "eth0"}, max_model_len=32768)
    plan = plan_cluster(engine, MODEL, Path("/models/glm"), 2)
    head, worker = plan.nodes
    assert head.commands[0] == ("/e/bin/ray", "start", "--head", "--port", "6379")
    serve = head.commands[1]
    assert serve[:3] == ("/e/bin/python", "-m", "vllm.entrypoints.openai.api_server")
    assert " ".join(serve[-6:]) == ("--tensor-parallel-size 8 --pipeline-parallel-size 2 "
                                    "--distributed-executor-backend ray")
    assert worker.commands == (("/e/bin/ray", "start", "--address", "10.0.0.1:6379"),)
    assert plan.base_url == "http://10.0.0.1:8000" and plan.node_flags == ()
    text = plan.text()
    assert text.splitlines()[0] == "# node 0 of 2: Ray's head, then the server " \
                                   "(http://10.0.0.1:8000)"
    assert "NCCL_SOCKET_IFNAME=eth0 /e/bin/ray start --address 10.0.0.1:6379" in text
    assert "once `/e/bin/ray status` counts 2 nodes" in text


def test_vllm_mp_runs_the_server_on_each_node_the_others_headless() -> None:
    engine = EngineSpec(kind="vllm", parallel={"tp": 8, "pp": 2, "backend": "mp"},
                        args=["--api-key", "${KEY}"])
    plan = plan_cluster(engine, MODEL, Path("/m"), 2)
    (head,), (worker,) = (n.commands for n in plan.nodes)
    assert head[-8:] == ("--nnodes", "2", "--node-rank", "0", "--master-addr", "HEAD_ADDR",
                         "--master-port", "29501")
    assert head[head.index("--distributed-executor-backend") + 1] == "mp"
    assert worker[:4] == ("python3", "-m", "vllm.entrypoints.cli.main", "serve")
    assert worker[-7:] == ("--node-rank", "1", "--master-addr", "HEAD_ADDR", "--master-port",
                           "29501", "--headless")
    assert worker[4:-9] == head[3:-8]  # the same flags otherwise
    text = plan.text()
    assert "--api-key ***" in text and "${KEY}" not in text
    assert "HEAD_ADDR: node 0's address" in text and "engine.host 127.0.0.1" in text


def test_sglang_runs_the_same_server_on_each_node_with_its_rank() -> None:
    engine = EngineSpec(kind="sglang", port=30000,
                        parallel={"tp": 16, "head": "10.0.0.1", "init_port": 20000})
    plan = plan_cluster(engine, MODEL, Path("/m"), 2)
    for rank, node in enumerate(plan.nodes):
        (argv,) = node.commands
        assert argv[:3] == ("python3", "-m", "sglang.launch_server")
        assert argv[-6:] == ("--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr",
                             "10.0.0.1:20000")
    assert plan.nodes[0].role == "the server (http://10.0.0.1:30000)"


def _vllm_multinode(tmp_path: Path) -> tuple[EngineSpec, Path]:
    """A stand-in vLLM whose parser has the options a multi-node command uses, spelt and
    taking values as vLLM 0.32.0's ``make_arg_parser`` defines them."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho vllm 9.9.9\n")
    python.chmod(0o755)
    o = FlagOption
    options = (o(("--model",)), o(("--served-model-name",), "+"), o(("--host",)),
               o(("--port",)), o(("--max-model-len",)), o(("--api-key",), "+"),
               o(("--tensor-parallel-size", "-tp")), o(("--pipeline-parallel-size", "-pp")),
               o(("--distributed-executor-backend",)), o(("--nnodes", "-n")),
               o(("--node-rank", "-r")), o(("--master-addr",)), o(("--master-port",)),
               o(("--headless",), 0), o(("--dtype",)))
    cache = tmp_path / "cache"
    FlagSet("vllm", "9.9.9", "vllm 9.9.9's own parser", options, allow_abbrev=True,
            underscores=True, dotted=True).write(cache / "vllm-9.9.9.json")
    return EngineSpec(kind="vllm", python=python, version="9.9.9", max_model_len=2048,
                      parallel={"tp": 8, "pp": 2}), cache


@pytest.mark.parametrize("backend", ["ray", "mp"])
def test_every_vllm_node_flag_is_checked(tmp_path: Path, backend: str) -> None:
    engine, cache = _vllm_multinode(tmp_path)
    engine = engine.model_copy(update={"parallel": engine.parallel.model_copy(  # type: ignore[union-attr]
        update={"backend": backend})})
    check = check_engine_args(engine, ["--dtype", "bfloat16"], cache=cache, nodes=2)
    assert check.checked and "each of the 2 nodes' commands checked too" in check.summary
    for args, owner in [(["-tp", "8"], "engine.parallel.tp"),
                        (["--pipeline_parallel_size", "2"], "engine.parallel.pp"),
                        (["--distributed-executor-backend", "ray"], "engine.parallel.backend")]:
        with pytest.raises(UsageError, match=f"from {owner}: set {owner} instead"):
            check_engine_args(engine, args, cache=cache, nodes=2)
    if backend == "mp":
        for args, owner in [(["--nnodes", "2"], "hardware.nodes"),
                            (["--master-port", "1"], "engine.parallel.init_port")]:
            with pytest.raises(UsageError, match=f"from {owner}"):
                check_engine_args(engine, args, cache=cache, nodes=2)


def test_a_vllm_without_the_multinode_flags_is_named(tmp_path: Path) -> None:
    """A vLLM older than 0.11 has no --nnodes: the kit's command is refused, saying so."""
    engine, cache = _vllm_multinode(tmp_path)
    flags = FlagSet.read_cached(cache / "vllm-9.9.9.json")
    assert flags is not None
    old = tuple(o for o in flags.options if o.name not in ("--nnodes", "--node-rank"))
    FlagSet("vllm", "9.9.9", "vllm 9.9.9's own parser", old, allow_abbrev=True,
            underscores=True, dotted=True).write(cache / "vllm-9.9.9.json")
    from benchlib.engines import _flagsets
    _flagsets._MEMO.clear()
    mp = engine.model_copy(update={"parallel": engine.parallel.model_copy(  # type: ignore[union-attr]
        update={"backend": "mp"})})
    with pytest.raises(UsageError, match=r"the kit's vllm command passes --nnodes is not a "
                                         r"flag of vllm 9.9.9"):
        check_engine_args(mp, [], cache=cache, nodes=2)
    assert check_engine_args(engine, [], cache=cache, nodes=2).checked  # Ray needs none


@pytest.mark.parametrize("version", ["0.5.7", "0.5.23"])
def test_sglang_node_flags_against_the_committed_sets(tmp_path: Path, version: str) -> None:
    recipe = _recipe({"kind": "sglang", "version": version, "python": str(tmp_path / "none"),
                      "parallel": {"tp": 16}, "args": ["--mem-fraction-static", "0.85"]},
                     {"nodes": 2, "gpu_count": 8})
    (check,) = check_recipe_args(recipe, cache=tmp_path)
    assert check.checked and f"sglang {version} wheel" in check.source
    for args, owner in [(["--tp-size", "16"], "engine.parallel.tp"),
                        (["--node-rank", "1"], "hardware.nodes"),
                        (["--dist-init-addr", "h:1"], "engine.parallel.head")]:
        with pytest.raises(UsageError, match=f"from {owner}"):
            check_engine_args(recipe.engine, args, cache=tmp_path, nodes=2)


def test_a_run_is_refused_with_each_nodes_commands() -> None:
    recipe = _recipe({"kind": "sglang", "parallel": {"tp": 16, "head": "10.0.0.1"},
                      "host": "0.0.0.0", "port": 30000}, {"nodes": 2, "gpu_count": 8})
    with pytest.raises(UsageError) as err:
        refuse_multi_node(recipe)
    text = str(err.value)
    assert err.value.exit_code == 2 and text.startswith("hardware.nodes: r spans 2 nodes")
    assert "# node 1 of 2" in text and "--node-rank 1 --dist-init-addr 10.0.0.1:5000" in text
    assert "engine.kind: endpoint and engine.base_url: http://10.0.0.1:30000" in text
    assert "has not been made with this kit" in text


def test_launch_dry_run_prints_a_block_per_node(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from benchlib.cli import launch

    path = tmp_path / "r.yaml"
    path.write_text("name: r\nmodel: {id: m}\nengine: {kind: sglang, version: '0.5.23', "
                    "parallel: {tp: 8, pp: 2, head: n0}}\nhardware: {nodes: 2, gpu_count: 8}"
                    "\nscenarios: [{name: s}]\n")

    def args(dry: bool) -> argparse.Namespace:
        return argparse.Namespace(params=path, dry_run=dry, log=tmp_path / "log",
                                  no_check_args=False, variant=None, engine_python=None)

    assert launch.run(args(True)) == 0
    out, err = capsys.readouterr()
    assert out.count("python3 -m sglang.launch_server") == 2 and "--pp-size 2" in out
    assert "# node 0 of 2" in out and "# node 1 of 2" in out
    assert "each of the 2 nodes' commands checked too" in err
    with pytest.raises(UsageError, match="starts engines only on the machine it runs on"):
        launch.run(args(False))


def test_variants_differing_in_layout_must_say_so() -> None:
    """The layout was engine.args before engine.parallel; it is still an engine flag of
    the comparison, named beside every number."""
    variants = [{"name": "tp8", "engine": {"kind": "vllm", "parallel": {"tp": 8}}},
                {"name": "pp2", "engine": {"kind": "vllm", "parallel": {"tp": 4, "pp": 2}}}]
    with pytest.raises(RecipeError, match=r"variants differ in engine_flags \(tp8: vllm: "
                                          r"\[tp 8 × pp 1\]; pp2: vllm: \[tp 4 × pp 2\]\)"):
        _recipe({"kind": "vllm"}, {"gpu_count": 8}, variants=variants)
    _recipe({"kind": "vllm"}, {"gpu_count": 8}, variants=variants,
            compare={"differences": ["engine_flags"]})
