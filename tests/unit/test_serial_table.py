"""tests/_serial.py: the table that splits make test into its two passes is checked against
what is collected, so a renamed test cannot leave the serial pass unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests._serial import SERIAL_TESTS

REPO = Path(__file__).resolve().parents[2]
FAULTS = "tests/integration/test_faults.py"
LISTED = sorted(f for m, f in SERIAL_TESTS if m == FAULTS)

CONFTEST = """
import pytest
from tests import _serial

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    _serial.apply(items)
"""


def _suite(tmp_path: Path, faults: str) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    integration = tmp_path / "tests" / "integration"
    integration.mkdir(parents=True)
    (integration / "test_load.py").write_text("def test_any():\n    pass\n")
    (integration / "test_faults.py").write_text(faults)
    return tmp_path


def _collect(root: Path, *args: str, target: str = "tests"
             ) -> subprocess.CompletedProcess[str]:
    """pytest --collect-only of ``target`` (a folder or a test id under ``root``)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--collect-only", "--rootdir", str(root),
                           *args, str(root / target)], capture_output=True, text=True,
                          cwd=root, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
                          check=False)


def test_a_serial_module_and_a_serial_test_are_marked(tmp_path: Path) -> None:
    root = _suite(tmp_path, "".join(f"def {f}():\n    pass\n" for f in LISTED)
                  + "def test_not_listed():\n    pass\n")
    out = _collect(root, "-m", "serial").stdout
    assert "test_load.py::test_any" in out and all(f in out for f in LISTED), out
    assert "test_not_listed" not in out, out


def test_a_listed_test_gone_from_its_module_stops_the_run(tmp_path: Path) -> None:
    root = _suite(tmp_path, "".join(f"def {f}():\n    pass\n" for f in LISTED[1:])
                  + "def test_renamed():\n    pass\n")
    proc = _collect(root)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert f"tests/_serial.py names tests that do not exist: ['{FAULTS}::{LISTED[0]}']" in said


def test_one_test_of_a_listed_module_can_be_chosen(tmp_path: Path) -> None:
    """Choosing one test by its id leaves the module's other listed tests uncollected, not gone."""
    root = _suite(tmp_path, "".join(f"def {f}():\n    pass\n" for f in LISTED))
    proc = _collect(root, target=f"{FAULTS}::{LISTED[0]}")
    assert proc.returncode == 0 and "1 test collected" in proc.stdout, proc.stdout + proc.stderr
