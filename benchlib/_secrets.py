"""Secrets: taken from the environment at the last moment, scrubbed from everything written.

Recipes never hold a secret, only the name of the variable that does (``api_key_env``,
``hf_token_env``), and engine arguments may say ``${NAME}``, expanded when the engine starts
and shown unexpanded (then redacted) in every record. Because an engine may still print its
arguments (vLLM logs them), every text file of a run folder is scrubbed of the secret values
once the run ends, whatever happened.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchlib._exceptions import UsageError

__all__ = ["SECRET_FLAGS", "env_names", "expand_env", "is_env_ref", "is_secret_name",
           "scrub_text", "scrub_tree"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: flags whose value is a secret (recorded commands show *** instead)
SECRET_FLAGS = ("--api-key", "--api_key", "--hf-token", "--token", "--hf_token")
_SECRET_NAME_ENDINGS = ("TOKEN", "API_KEY", "SECRET", "PASSWORD")
_MIN_SECRET = 6  # shorter values would scrub ordinary text


def expand_env(arg: str, field: str, env: Mapping[str, str] | None = None) -> str:
    """Replace ``${NAME}`` in ``arg`` from the environment; a missing variable is an error
    naming ``field``."""
    source = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in source:
            raise UsageError(field, f"${{{name}}} is not set in the environment")
        return source[name]

    return _VAR.sub(sub, arg)


def env_names(text: str) -> list[str]:
    """The ``NAME`` of every ``${NAME}`` in ``text``."""
    return _VAR.findall(text)


def is_env_ref(value: str) -> bool:
    """Whether ``value`` is exactly one ``${NAME}`` reference."""
    return _VAR.fullmatch(value) is not None


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return name.upper().endswith(_SECRET_NAME_ENDINGS)


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    for value in secrets:
        if len(value) >= _MIN_SECRET:
            text = text.replace(value, "***")
    return text


def scrub_tree(folder: Path, secrets: Iterable[str]) -> list[Path]:
    """Rewrite every file under ``folder`` that contains a secret; return those files."""
    values = [v for v in secrets if len(v) >= _MIN_SECRET]
    if not values:
        return []
    changed = []
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        clean = scrub_text(text, values)
        if clean != text:
            path.write_text(clean, encoding="utf-8")
            changed.append(path)
    return changed
