"""01_download with a GGUF model: the one file named, its shards hashed, the draft hashed."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib._exceptions import UsageError
from benchlib.pipeline.steps.download import download_model
from benchlib.recipe import Recipe, recipe_from_dict


def _write(path: Path, body: bytes = b"GGUF" + b"x" * 100) -> Path:
    path.write_bytes(body)
    return path


def _recipe(local: Path, **engine: object) -> Recipe:
    return recipe_from_dict({
        "name": "g", "model": {"id": "tiny", "local_path": str(local), "format": "gguf"},
        "engine": {"kind": "llamacpp", "executable": "llama-server", **engine},
        "scenarios": [{"name": "chat"}]})


def test_a_file_a_folder_and_a_split_model(tmp_path: Path) -> None:
    one = _write(tmp_path / "m-f16.gguf")
    r = download_model(_recipe(one), tmp_path / "r1.json")
    assert Path(r.model_path) == one and r.files_hash.files == 1
    split = tmp_path / "split"
    split.mkdir()
    shards = [_write(split / f"big-0000{i}-of-00003.gguf") for i in (1, 2, 3)]
    r = download_model(_recipe(split), tmp_path / "r2.json")
    assert Path(r.model_path) == shards[0] and r.files_hash.files == 3


def test_which_file_must_be_said_and_it_must_be_gguf(tmp_path: Path) -> None:
    _write(tmp_path / "a.gguf")
    _write(tmp_path / "b.gguf")
    with pytest.raises(UsageError, match=r"model\.include") as err:
        download_model(_recipe(tmp_path), tmp_path / "r.json")
    assert "a.gguf" in str(err.value) and "b.gguf" in str(err.value)
    bad = _write(tmp_path / "x.gguf", b"PK\x03\x04 not gguf")
    with pytest.raises(UsageError, match="not a GGUF file"):
        download_model(_recipe(bad), tmp_path / "r.json")


def test_the_draft_model_is_hashed_too(tmp_path: Path) -> None:
    target = _write(tmp_path / "t.gguf")
    draft = _write(tmp_path / "d.gguf", b"GGUF" + b"d" * 10)
    r = download_model(_recipe(target, speculative={"method": "draft", "k": 2,
                                                     "draft_model": str(draft)}),
                       tmp_path / "r.json")
    assert r.draft_model == str(draft) and r.draft_files_hash is not None
    assert r.draft_files_hash.sha256 != r.files_hash.sha256
