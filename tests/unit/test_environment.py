"""environment.yml describes the same environment as pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_environment_yml_matches_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(p for p in pip if p != "-e .") == sorted(project["dependencies"])
    assert f"python={project['requires-python'].lstrip('>=')}" in env["dependencies"]
