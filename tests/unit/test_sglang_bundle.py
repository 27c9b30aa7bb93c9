"""SGLang 0.5.15's bundle for the GPU machine (issue 36): the lock is complete and
consistent (every requirement of every locked wheel locked at a version meeting it, the
image's, or left out with a reason), what is left out is really required by something, the
sgl-kernel trim is the committed record's, and the tools behind them (wheel_trim,
start_imports, gpu_lock's closure check) fail where they must, on small wheels made here."""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import gpu_lock  # noqa: E402
import sglang_bundle  # noqa: E402
import start_imports  # noqa: E402
import wheel_trim  # noqa: E402


def test_the_lock_is_complete_and_consistent() -> None:
    bundle = sglang_bundle.SGLANG_BUNDLE
    assert gpu_lock.check_closure(bundle) == []
    locked = dict(spec.split("==") for spec, _ in gpu_lock.read_lock(bundle.lock))
    assert locked["sglang"] == "0.5.15" and locked["sglang-kernel"] == "0.4.4"
    assert all(len(d) == 64 for _, d in gpu_lock.read_lock(bundle.lock))
    assert not set(locked) & set(bundle.left_out)
    # the image's packages travel only where a specifier excludes the image's version
    carried = set(locked) & gpu_lock.IMAGE_HAS
    assert carried == {"transformers", "tokenizers"}
    assert locked["transformers"] == "5.12.1"  # SGLang's pin; the image has 5.17.0
    assert "torch" not in locked and "numpy" not in locked  # the image's serve


def test_every_left_out_package_is_a_requirement_with_a_reason() -> None:
    bundle = sglang_bundle.SGLANG_BUNDLE
    side = json.loads(bundle.sidecar.read_text())
    required = {gpu_lock.normal(line.split(";")[0].split("[")[0].split("=")[0].split("<")[0]
                                .split(">")[0].split("!")[0].strip())
                for w in side["wheels"].values() for line in w["requires"]
                if gpu_lock.applies(line, w["extras"])}
    assert set(bundle.left_out) <= required, set(bundle.left_out) - required
    lock_text = bundle.lock.read_text()
    assert all(f"#   {name}: {why}" in lock_text for name, why in bundle.left_out.items())
    # measured, not guessed: the bundle is about 307 MiB once sgl-kernel is trimmed
    total = sum(w["bytes"] for w in side["wheels"].values())
    record = json.loads(sglang_bundle.TRIM_RECORD.read_text())
    kernel = side["wheels"]["sglang-kernel"]["bytes"]
    assert kernel == 615_071_908
    assert 300 * 2**20 < total - kernel + record["trimmed_bytes"] < 320 * 2**20


def test_a_requirement_missing_from_the_lock_is_named(tmp_path: Path) -> None:
    bundle = sglang_bundle.SGLANG_BUNDLE
    lock = tmp_path / "s.lock"
    lock.write_text("".join(line + "\n" for line in bundle.lock.read_text().splitlines()
                            if not line.startswith("flashinfer-python==")))
    side = json.loads(bundle.sidecar.read_text())
    del side["wheels"]["flashinfer-python"]
    (tmp_path / "s.lock.json").write_text(json.dumps(side))
    gaps = gpu_lock.check_closure(dataclasses.replace(bundle, lock=lock))
    assert gaps == ["sglang needs flashinfer_python[cu13]==0.6.12: neither locked, nor the "
                    "image's, nor left out"]


def test_an_image_package_travels_when_a_pin_excludes_its_version() -> None:
    bundle = sglang_bundle.SGLANG_BUNDLE
    assert bundle.image_serves("transformers", [">=4.45"])
    assert not bundle.image_serves("transformers", ["==5.12.1"])
    assert not bundle.image_serves("tokenizers", ["<=0.23.0,>=0.22.0"])  # image: 0.23.2
    assert bundle.image_serves("torch", ["==2.11.0"])
    assert not bundle.image_serves("sglang", [])


def test_the_committed_trim_removes_fa3_and_blackwell_only() -> None:
    record = json.loads(sglang_bundle.TRIM_RECORD.read_text())
    assert record["source"] == sglang_bundle.KERNEL_WHEEL
    side = json.loads(sglang_bundle.SGLANG_BUNDLE.sidecar.read_text())
    digest = dict(gpu_lock.read_lock(sglang_bundle.LOCK))["sglang-kernel==0.4.4"]
    assert record["source_sha256"] == digest  # the trim starts from the locked wheel
    assert side["wheels"]["sglang-kernel"]["file"] == record["source"]
    assert [r["path"] for r in record["removed"]] == [
        "sgl_kernel/flash_ops.abi3.so", "sgl_kernel/sm100/common_ops.abi3.so"]
    assert record["removed"][0]["bytes"] == 1_758_623_416
    assert record["kept_files"] == 78 and record["trimmed_bytes"] < 20 * 2**20


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def _wheel(path: Path, files: dict[str, bytes], lie: str = "") -> Path:
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for name, data in files.items():
        writer.writerow([name, _hash(b"other" if name == lie else data), len(data)])
    writer.writerow(["k-1.dist-info/RECORD", "", ""])
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("k-1.dist-info/RECORD", rows.getvalue())
    return path


_FILES = {"k/__init__.py": b"x = 1\n", "k/big.so": b"\0" * 5000, "k/sm100/ops.so": b"b" * 300,
          "k/sm90/ops.so": b"h" * 200}


def test_trim_removes_what_it_names_and_checks_the_rest(tmp_path: Path) -> None:
    src = _wheel(tmp_path / "k-1-py3-none-any.whl", _FILES)
    out = tmp_path / "t" / src.name
    record = wheel_trim.trim(src, {"k/big.so": "FA3", "k/sm100/*": "Blackwell"}, out)
    assert [(r["path"], r["why"]) for r in record["removed"]] == [
        ("k/big.so", "FA3"), ("k/sm100/ops.so", "Blackwell")]
    assert record["kept_files"] == 2 and record["removed_bytes"] == 5300
    wheel_trim.check(out, record)
    with zipfile.ZipFile(out) as zf:
        assert sorted(zf.namelist()) == ["k-1.dist-info/RECORD", "k/__init__.py",
                                         "k/sm90/ops.so"]
        assert "big.so" not in zf.read("k-1.dist-info/RECORD").decode()
    again = wheel_trim.trim(src, {"k/big.so": "FA3", "k/sm100/*": "Blackwell"},
                            tmp_path / "u" / src.name)
    assert (tmp_path / "u" / src.name).read_bytes() == out.read_bytes()  # reproducible
    assert again == record


def test_trim_refuses_a_changed_file_a_stray_pattern_and_another_source(tmp_path: Path) -> None:
    bad = _wheel(tmp_path / "k-1-py3-none-any.whl", _FILES, lie="k/sm90/ops.so")
    with pytest.raises(wheel_trim.TrimError, match=r"k/sm90/ops\.so does not match"):
        wheel_trim.trim(bad, {"k/big.so": "FA3"}, tmp_path / "o.whl")
    (tmp_path / "g").mkdir()
    good = _wheel(tmp_path / "g" / "k-1-py3-none-any.whl", _FILES)
    with pytest.raises(wheel_trim.TrimError, match=r"matched nothing: \['k/none\*'\]"):
        wheel_trim.trim(good, {"k/big.so": "FA3", "k/none*": "?"}, tmp_path / "o.whl")
    with pytest.raises(wheel_trim.TrimError, match="sha256"):
        wheel_trim.trim(good, {"k/big.so": "FA3"}, tmp_path / "o.whl", source_sha256="0" * 64)
    record = wheel_trim.trim(good, {"k/big.so": "FA3"}, tmp_path / "o.whl")
    record["kept_files"] += 1
    with pytest.raises(wheel_trim.TrimError, match="the record says"):
        wheel_trim.check(tmp_path / "o.whl", record)


def test_start_imports_follows_module_level_imports_only(tmp_path: Path) -> None:
    src = {
        "p/__init__.py": "",
        "p/main.py": ("import os\nfrom . import a\nif is_cuda():\n    import cudaonly\n"
                      "try:\n    import optional\nexcept (RuntimeError, ImportError):\n"
                      "    pass\ntry:\n    import needed\nexcept KeyError:\n    pass\n"
                      "def f():\n    import lazy\n"
                      "class C:\n    import inclass\n    def m(self):\n        import lazy2\n"
                      "if TYPE_CHECKING:\n    import typing_only\n"),
        "p/a.py": "from .b import thing\n",
        "p/b.py": "import deep.sub\n",
    }
    wheel = tmp_path / "p-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in src.items():
            zf.writestr(name, text)
    found = start_imports.start_imports(wheel, ["p.main"])
    assert found["third_party"] == ["cudaonly", "deep", "inclass", "needed", "os"]
    assert found["modules"] == ["p", "p.a", "p.b", "p.main"]
    assert found["why"]["deep"] == ["p.main", "p.a", "p.b", "deep.sub"]
