"""``env_secret``: the one lookup of a secret named by an environment variable."""

from __future__ import annotations

import pytest

from benchlib._secrets import env_secret


def test_named_set_unset_and_empty() -> None:
    env = {"BENCH_KEY": "sk-value", "EMPTY_KEY": ""}
    assert env_secret("BENCH_KEY", env) == "sk-value"
    assert env_secret("MISSING_KEY", env) is None
    assert env_secret("EMPTY_KEY", env) is None  # an empty key is no key
    assert env_secret(None, env) is None and env_secret("", env) is None


def test_reads_the_process_environment_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_LATE_KEY", raising=False)
    assert env_secret("BENCH_LATE_KEY") is None
    monkeypatch.setenv("BENCH_LATE_KEY", "sk-late")
    assert env_secret("BENCH_LATE_KEY") == "sk-late"
