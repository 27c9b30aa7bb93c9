"""Secrets scrubbed as bytes (any encoding), as a stream passes (split across reads), and in
a text echo; which values a recipe makes secret."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from benchlib._secrets import (
    ScrubbingWriter,
    SecretFilter,
    scrub_bytes,
    scrub_file,
    scrub_tree,
)
from benchlib.recipe import recipe_from_dict, recipe_secrets

SECRET = "sk-planted-secret-93af"


def test_scrub_tree_rewrites_files_that_are_not_utf8(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_bytes(b"weights \xff\xfe loaded\nargs: --api-key " + SECRET.encode() + b"\n")
    latin = tmp_path / "sub" / "notes.txt"
    latin.parent.mkdir()
    latin.write_bytes("caf\xe9 ".encode("latin-1") + SECRET.encode("latin-1"))
    clean = tmp_path / "clean.txt"
    clean.write_bytes(b"\xff nothing here")
    assert scrub_tree(tmp_path, [SECRET]) == [log, latin]
    assert log.read_bytes() == b"weights \xff\xfe loaded\nargs: --api-key ***\n"
    assert latin.read_bytes() == b"caf\xe9 ***"
    assert clean.read_bytes() == b"\xff nothing here"


def test_json_escaped_values_are_scrubbed_too() -> None:
    secret = 'sk-"quoted"/\\tail-ü'
    import json

    doc = json.dumps({"a": secret}).encode() + json.dumps({"a": secret},
                                                           ensure_ascii=False).encode()
    assert secret.encode() not in scrub_bytes(doc, [secret])
    assert b"***" in scrub_bytes(doc, [secret]) and b"quoted" not in scrub_bytes(doc, [secret])


def test_short_values_are_not_secrets(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc abc")
    assert not scrub_file(path, ["abc"]) and path.read_bytes() == b"abc abc"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_filter_catches_a_secret_split_across_reads(size: int) -> None:
    data = (b"start \xff " + SECRET.encode() + b" middle sk-plan" + b" " + SECRET.encode()
            + b" end sk-planted")
    f = SecretFilter([SECRET, "another-secret-value"])
    out = b"".join(f.feed(data[i:i + size]) for i in range(0, len(data), size)) + f.flush()
    assert out == b"start \xff *** middle sk-plan *** end sk-planted"


def test_filter_holds_back_only_what_could_start_a_secret() -> None:
    f = SecretFilter([SECRET])
    assert f.feed(b"a line\n") == b"a line\n"  # nothing held: no latency in the log
    assert f.feed(b"key sk-pl") == b"key "
    assert f.feed(b"anted-secret-93af!") == b"***!"
    assert SecretFilter([]).feed(b"sk-planted") == b"sk-planted"


def test_scrubbing_writer_filters_an_echo_written_in_pieces() -> None:
    sink = io.StringIO()
    w = ScrubbingWriter(sink, [SECRET])
    for piece in ("cell says ", SECRET[:4], SECRET[4:], " ünïcode sk-pl"):
        w.write(piece)
        w.flush()
    w.close()
    assert sink.getvalue() == "cell says *** ünïcode sk-pl"


def test_recipe_secrets_are_the_key_the_token_and_every_env_reference(tmp_path: Path) -> None:
    recipe = recipe_from_dict({
        "name": "t", "model": {"id": "m", "hf_token_env": "HUB_TOKEN"},
        "engine": {"kind": "vllm", "api_key_env": "KEY", "python": "/bin/true",
                   "args": ["--api-key", "${KEY}", "--extra=${OTHER_THING}"]},
        "scenarios": [{"name": "s"}]})
    env = {"KEY": "key-value-1", "HUB_TOKEN": "hub-token-2", "OTHER_THING": "other-value-3",
           "UNRELATED": "not-a-secret"}
    assert sorted(recipe_secrets(recipe, env)) == ["hub-token-2", "key-value-1", "key-value-1",
                                                   "other-value-3"]
