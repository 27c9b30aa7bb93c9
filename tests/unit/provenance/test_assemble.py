"""Provenance assembled from what a run captured once and what it learned (engine record,
model files), the machine held against the recipe; and runs' provenance compared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchlib.provenance import (
    EngineRecord,
    FilesHash,
    HardwareInfo,
    ModelFiles,
    RunEnvironment,
    assemble_provenance,
    compare_provenance,
    hardware_mismatches,
)
from benchlib.recipe import recipe_from_dict

HARDWARE: dict[str, Any] = {
    "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_gib": 79.6,
              "power_limit_w": 500.0}],
    "gpu_count": 1, "os": "Linux", "kernel": "6", "machine": "x86_64",
    "cpu": {"model": "Xeon", "logical_cores": 2, "memory_total_gib": 4.0}}


def environment(engine_version: str | None) -> RunEnvironment:
    return RunEnvironment(kit_commit="abc", kit_dirty=False, packages={"benchlib": "0.1.0"},
                          environment_yml_sha256="sha256:e",
                          hardware=HardwareInfo.model_validate(HARDWARE),
                          engine_version=engine_version, python="CPython 3.11.9")


RECIPE = recipe_from_dict({
    "name": "t", "model": {"id": "org/m", "revision": "main", "local_path": "/models/m"},
    "engine": {"kind": "vllm", "version": "0.32.0", "python": "/bin/python"},
    "hardware": {"gpu_count": 8, "gpu_name_pattern": "H200", "power_limit_w": 700},
    "scenarios": [{"name": "a"}]})


def test_the_machine_against_the_recipe() -> None:
    assert hardware_mismatches(RECIPE, environment("0.33.0")) == [
        "expected 8 GPUs, found 1",
        "GPU 0 'NVIDIA H100 80GB HBM3' does not match 'H200'",
        "GPU 0 power limit 500.0 W, expected 700.0 W",
        "engine version 0.33.0, recipe pins 0.32.0"]


def test_model_files_from_the_download_else_the_recipes_folder() -> None:
    engine = EngineRecord(command="vllm serve", startup_s=2.0, log_facts={"version": "0.32.0"})
    before = assemble_provenance(RECIPE, environment(None), engine, None)
    assert before.model.path == "/models/m" and before.model.files_hash is None
    assert before.engine.version == "0.32.0"  # from the log when not installed here
    files = ModelFiles(path=Path("/cache/m"), resolved_revision="c0ffee",
                       files_hash=FilesHash(sha256="f", files=3, total_bytes=10))
    after = assemble_provenance(RECIPE, environment("0.32.0"), engine, files)
    assert after.model.path == "/cache/m" and after.model.resolved_revision == "c0ffee"
    assert after.model.files_hash == files.files_hash and after.hardware_mismatches[0]


def test_compare_flags_what_differs() -> None:
    engine = EngineRecord()
    a = assemble_provenance(RECIPE, environment("0.32.0"), engine, None).model_dump()
    b = assemble_provenance(RECIPE, environment("0.33.0"), engine, None).model_dump()
    table = compare_provenance({"a": a, "b": b})
    assert list(table.index[table["differs"]]) == ["engine version"]
    assert table.loc["GPU", "a"] == "NVIDIA H100 80GB HBM3"


def test_driver_and_cuda_against_the_recipes_pins() -> None:
    recipe = recipe_from_dict({
        "name": "t", "model": {"id": "org/m"}, "engine": {"kind": "vllm"},
        "hardware": {"driver_version": "580.178.04", "cuda_version": "12.8.93"},
        "scenarios": [{"name": "a"}]})
    env = environment(None)
    for driver, cuda, expected in (
            ("580.178.04", "12.8", []), ("580.178.04", "13.0", []),
            ("570.86.15", "12.8", ["driver 570.86.15, expected 580.178.04"]),
            ("580.178.04", "12.4", ["the driver's CUDA 12.4 is older than the CUDA 12.8.93 "
                                    "the recipe was built with"])):
        hw = env.hardware.model_copy(update={"driver_version": driver,
                                             "cuda_driver_version": cuda})
        assert hardware_mismatches(recipe, env.model_copy(update={"hardware": hw})) == \
            expected, (driver, cuda)


def test_a_gpu_the_plan_did_not_size_is_named() -> None:
    """Visit 7 ran an H200 recipe on the H100 the tool lent: the plan's KV budget and decode
    floor were the H200's. The run says so on every variant (a report caveat)."""
    def recipe(gpu: str) -> Any:
        return recipe_from_dict({
            "name": "t", "model": {"id": "org/m", "local_path": "/models/m"},
            "engine": {"kind": "vllm"}, "plan": {"gpu": gpu}, "scenarios": [{"name": "a"}]})

    assert hardware_mismatches(recipe("H200"), environment(None)) == [
        "GPU 0 ('NVIDIA H100 80GB HBM3', 79.6 GiB, is the H100-SXM) is not the plan's H200 "
        "(139.8 GiB, 4,800 GB/s): the plan's KV budget and decode floor are the H200's; give "
        "plan.gpu: H100-SXM"]
    for same in ("H100", "h100-sxm", "H100-SXM"):
        assert hardware_mismatches(recipe(same), environment(None)) == [], same
    pcie = recipe("H100-PCIe")  # the same memory, another board: told apart by its words
    assert hardware_mismatches(pcie, environment(None)) == [
        "GPU 0 ('NVIDIA H100 80GB HBM3', 79.6 GiB, is the H100-SXM) is not the plan's "
        "H100-PCIe (79.2 GiB, 2,000 GB/s): the plan's KV budget and decode floor are the "
        "H100-PCIe's; give plan.gpu: H100-SXM"]
    unknown = environment(None)
    unknown.hardware.gpus[0] = unknown.hardware.gpus[0].model_copy(
        update={"name": "Tesla T4", "memory_total_gib": 14.6})
    assert hardware_mismatches(recipe("H100"), unknown)[0].endswith(
        "give plan.gpu_memory_gib and plan.gpu_bandwidth_gbs for this one")
