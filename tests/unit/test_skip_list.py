"""``make test`` ends by listing every skip with its reason: pytest's ``-rs`` in the recipe and
the closing ``skips taken`` block of tests/conftest.py, run here on a suite that skips."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_make_test_lists_skips() -> None:
    recipe = (REPO / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"pytest -q -rs\b", recipe), recipe


def test_a_run_ends_with_its_skips_and_reasons(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text()
                                          .replace("from tests._tls_files", "from _tls")
                                          .replace("from tests import _serial",
                                                   "import _serial"))
    (tmp_path / "_serial.py").write_text((REPO / "tests" / "_serial.py").read_text())
    (tmp_path / "_tls.py").write_text("TlsFiles = object\ndef make_tls_files(p): ...\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_ok(): pass\n"
        "@pytest.mark.skip(reason='no engine here')\ndef test_a(): pass\n"
        "@pytest.mark.skip(reason='no engine here')\ndef test_b(): pass\n"
        "def test_c(): pytest.skip('no GPU')\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                         check=False).stdout
    block = out.split("skips taken: 3", 1)[1]
    assert "2 × no engine here" in block and "1 × no GPU" in block, out
    assert "test_x.py::test_a" in block and "test_x.py::test_c" in block, out
