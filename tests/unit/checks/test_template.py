"""The chat template the engine applies, read as the engines find it (a flag's file or text,
a GGUF's metadata, the tokenizer folder's jinja file or tokenizer_config.json), and whether it
has the thinking switch the functional checks send."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.checks import read_chat_template, thinking_switch

SWITCH = "{% if enable_thinking %}<think>{% endif %}{{ messages[0]['content'] }}"
PLAIN = "{% for m in messages %}{{ m['content'] }}{% endfor %}"


def _gguf(path: Path, template: str) -> Path:
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "llama")
    writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_template_is_found_where_the_engine_finds_it(tmp_path: Path) -> None:
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": PLAIN}))
    assert read_chat_template(tokenizer=folder) == PLAIN
    listed = [{"name": "tool_use", "template": "x"}, {"name": "default", "template": SWITCH}]
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": listed}))
    assert read_chat_template(tokenizer=folder) == SWITCH
    (folder / "chat_template.jinja").write_text(PLAIN)  # transformers' own file wins
    assert read_chat_template(tokenizer=folder) == PLAIN
    gguf = _gguf(tmp_path / "m.gguf", SWITCH)  # llama.cpp applies the file's own
    assert read_chat_template(model_file=gguf, tokenizer=folder) == SWITCH
    given = tmp_path / "t.jinja"
    given.write_text("from the flag")
    assert read_chat_template(args=["--chat-template", str(given)], model_file=gguf,
                              tokenizer=folder) == "from the flag"
    assert read_chat_template(args=[f"--chat-template={PLAIN}"]) == PLAIN  # inline text


def test_no_template_is_unknown_and_unknown_is_not_no_switch(tmp_path: Path) -> None:
    assert read_chat_template(tokenizer=tmp_path) is None
    assert read_chat_template(model_file=tmp_path / "missing.gguf") is None
    (tmp_path / "tokenizer_config.json").write_text("not json")
    assert read_chat_template(tokenizer=tmp_path) is None
    assert thinking_switch(None) is None
    assert thinking_switch(PLAIN) is False and thinking_switch(SWITCH) is True
