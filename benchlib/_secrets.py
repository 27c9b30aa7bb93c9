"""Secrets: taken from the environment at the last moment, scrubbed from everything written.

Recipes never hold a secret, only the name of the variable that does (``api_key_env``,
``hf_token_env``), read with :func:`env_secret` where the value is needed, and engine
arguments may say ``${NAME}``, expanded when the engine starts and shown unexpanded (then
redacted) in every record. An engine may still print its
arguments (vLLM logs them), so secrets are scrubbed where text is written, not afterwards:

* :class:`SecretFilter` replaces secret values in a byte stream as it passes (the engine's
  log), holding back only a tail that could be the start of a secret until the next read;
* :class:`ScrubbingWriter` does the same for a text stream (papermill's console echo);
* :func:`scrub_tree` rewrites files of any encoding (bytes, not text) and runs after every
  step and at the end of a run, for whatever else a step wrote.

A value is replaced as UTF-8 bytes and as it reads inside JSON (escaped), by ``***``.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TextIO

from benchlib._exceptions import UsageError

__all__ = ["SECRET_FLAGS", "ScrubbingWriter", "SecretFilter", "env_names", "env_secret",
           "expand_env", "is_env_ref", "is_secret_name", "scrub_bytes",
           "scrub_file", "scrub_text", "scrub_tree"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: flags whose value is a secret (recorded commands show *** instead)
SECRET_FLAGS = ("--api-key", "--api_key", "--hf-token", "--token", "--hf_token")
_SECRET_NAME_ENDINGS = ("TOKEN", "API_KEY", "SECRET", "PASSWORD")
_MIN_SECRET = 6  # shorter values would scrub ordinary text
_MASK = b"***"


def env_secret(name: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The value of the environment variable ``name`` (a recipe's ``api_key_env`` or
    ``hf_token_env``, ``OPENAI_API_KEY``), or ``None`` when no variable is named or it is
    unset or empty: an empty key is no key, never a blank bearer token.

    Read at the moment of use, so the value is never held in a recipe or a record.
    """
    if not name:
        return None
    return (os.environ if env is None else env).get(name) or None


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


def _patterns(secrets: Iterable[str]) -> list[bytes]:
    """Byte patterns to replace, longest first: each value as UTF-8 and as JSON writes it."""
    out: set[bytes] = set()
    for value in secrets:
        if len(value) < _MIN_SECRET:
            continue
        out.add(value.encode("utf-8"))
        for ascii_only in (True, False):
            out.add(json.dumps(value, ensure_ascii=ascii_only)[1:-1].encode("utf-8"))
    return sorted(out, key=len, reverse=True)


def _replace(data: bytes, patterns: list[bytes]) -> bytes:
    for p in patterns:
        data = data.replace(p, _MASK)
    return data


def scrub_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with every secret value replaced by ``***`` (whatever the encoding around)."""
    return _replace(data, _patterns(secrets))


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***``."""
    for value in secrets:
        if len(value) >= _MIN_SECRET:
            text = text.replace(value, "***")
    return text


class SecretFilter:
    """Replace secret values in a stream of byte chunks as they pass.

    A secret split across two chunks is still caught: the longest tail of what was fed that
    could begin a secret (at most ``len(longest) - 1`` bytes) is held back until the next
    :meth:`feed`, and :meth:`flush` returns it at the end of the stream.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        self._patterns = _patterns(secrets)
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        """The part of ``pending + chunk`` that is safe to write now, scrubbed."""
        if not self._patterns:
            return chunk
        data = _replace(self._pending + chunk, self._patterns)
        keep = self._held_tail(data)
        self._pending = data[len(data) - keep:] if keep else b""
        return data[:len(data) - keep]

    def flush(self) -> bytes:
        """What was held back (no secret can complete any more)."""
        rest, self._pending = self._pending, b""
        return rest

    def _held_tail(self, data: bytes) -> int:
        longest = min(len(self._patterns[0]) - 1, len(data))
        for k in range(longest, 0, -1):
            tail = data[-k:]
            if any(p.startswith(tail) for p in self._patterns if len(p) > k):
                return k
        return 0


class ScrubbingWriter:
    """A text stream that passes writes on to ``stream`` with secret values replaced (for
    papermill's ``stdout_file`` / ``stderr_file``: the console echo of every cell).

    Call :meth:`close` at the end: it writes out what was held back (a possible secret's
    beginning) without closing ``stream``.
    """

    def __init__(self, stream: TextIO, secrets: Iterable[str]) -> None:
        self._stream = stream
        self._filter = SecretFilter(secrets)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def write(self, text: str) -> int:
        out = self._decoder.decode(self._filter.feed(text.encode("utf-8")))
        if out:
            self._stream.write(out)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        out = self._decoder.decode(self._filter.flush(), final=True)
        if out:
            self._stream.write(out)
        self._stream.flush()


def scrub_file(path: Path, secrets: Iterable[str]) -> bool:
    """Rewrite ``path`` (any encoding, binary too) without the secret values; return
    whether it held one. The rewrite is atomic: a crash leaves the old or the new file."""
    patterns = _patterns(secrets)
    if not patterns:
        return False
    try:
        data = path.read_bytes()
    except OSError:
        return False
    clean = _replace(data, patterns)
    if clean == data:
        return False
    tmp = path.with_name(f".{path.name}.scrub-tmp")
    tmp.write_bytes(clean)
    os.chmod(tmp, path.stat().st_mode & 0o7777)
    tmp.replace(path)
    return True


def scrub_tree(folder: Path, secrets: Iterable[str]) -> list[Path]:
    """Rewrite every file under ``folder`` that contains a secret; return those files.
    Symbolic links are not followed (they may point outside the folder)."""
    values = [v for v in secrets if len(v) >= _MIN_SECRET]
    if not values:
        return []
    return [path for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.is_symlink() and scrub_file(path, values)]
