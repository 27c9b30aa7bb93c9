"""The chat template an engine applies, read from the files it was given, and whether it has
a thinking switch.

What: :func:`read_chat_template` finds the template the way the engines do — a template
passed on the command line (``--chat-template`` / ``--chat-template-file``: a file, or the
template itself), else the model's own: a GGUF file's ``tokenizer.chat_template``, else the
tokenizer folder's ``chat_template.jinja`` or ``tokenizer_config.json``'s ``chat_template``
(the ``default`` one of a list). :func:`thinking_switch` says whether it reads
``enable_thinking``, the switch the functional checks send through
``chat_template_kwargs``.

Why: with thinking asked for and no reasoning back, the check must tell a model that cannot
think (its template has no switch: "not supported by this model") from an engine that lacks
a reasoning parser (the switch is there: the reasoning came back mixed into the content).
Reporting either as "ok" would pass on noise.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["TEMPLATE_FLAGS", "THINKING_SWITCH", "read_chat_template", "thinking_switch"]

#: the variable a chat template reads to turn thinking on and off (Qwen3, GLM-4.5+, …)
THINKING_SWITCH = "enable_thinking"
#: command-line flags that replace a model's own template (vLLM, SGLang, llama.cpp)
TEMPLATE_FLAGS = ("--chat-template", "--chat-template-file", "--chat_template")


def _flag_value(args: Sequence[str], flags: Sequence[str]) -> str | None:
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in flags:
            return value if eq else (args[i + 1] if i + 1 < len(args) else None)
    return None


def _from_config(config: Any) -> str | None:
    value = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(value, list):  # [{"name": "default", "template": …}, …]
        value = {t.get("name"): t.get("template") for t in value
                 if isinstance(t, dict)}.get("default")
    return value if isinstance(value, str) else None


def _from_folder(folder: Path) -> str | None:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return None
    try:
        return _from_config(json.loads(config.read_text(encoding="utf-8")))
    except ValueError:
        return None


def _from_gguf(path: Path) -> str | None:
    try:
        from gguf import GGUFReader

        field = GGUFReader(path).get_field("tokenizer.chat_template")
    except (ImportError, ValueError, OSError):
        return None
    value = field.contents() if field is not None else None
    return value if isinstance(value, str) else None


def read_chat_template(*, args: Sequence[str] = (), model_file: Path | None = None,
                       tokenizer: Path | None = None) -> str | None:
    """The template the engine applies: ``args``' template flag (a file's text, or the
    value itself), else a GGUF ``model_file``'s, else the ``tokenizer`` folder's; None
    when none of them has one (a hub model not downloaded here, an endpoint)."""
    flag = _flag_value(args, TEMPLATE_FLAGS)
    if flag:
        path = Path(flag)
        return path.read_text(encoding="utf-8") if path.is_file() else flag
    if model_file is not None and model_file.is_file() and model_file.suffix == ".gguf":
        template = _from_gguf(model_file)
        if template is not None:
            return template
    if tokenizer is not None and tokenizer.is_dir():
        return _from_folder(tokenizer)
    return None


def thinking_switch(template: str | None) -> bool | None:
    """Whether ``template`` reads ``enable_thinking``; None when the template is unknown."""
    return None if template is None else THINKING_SWITCH in template
