"""Defaults a config leaves out come from transformers' config class; a type it does not
know is read as written, with the assumptions named in the plan."""

from __future__ import annotations

import json
from pathlib import Path

from benchlib.memory import PlanConfig, load_model_config, plan
from benchlib.memory._hf_config import fill_defaults


def test_a_nested_text_config_with_only_non_defaults_is_filled() -> None:
    # transformers writes only what differs from Gemma3TextConfig's defaults
    raw = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
           "text_config": {"model_type": "gemma3_text", "hidden_size": 2560},
           "vision_config": {"model_type": "siglip_vision_model"}}
    filled = fill_defaults(raw)
    assert filled.defaults_from.startswith("transformers ") and "Gemma3Config" in (
        filled.defaults_from)
    assert "num_hidden_layers" in filled.filled and filled.values["hidden_size"] == 2560
    assert filled.values["layer_types"][5] == "full_attention"  # every 6th layer global
    assert not filled.assumed


def test_an_unknown_type_is_read_as_written_with_its_assumptions(tmp_path: Path) -> None:
    cfg = {"model_type": "my_remote_llama", "num_hidden_layers": 2, "hidden_size": 256,
           "num_attention_heads": 4, "vocab_size": 1000, "intermediate_size": 512,
           "auto_map": {"AutoConfig": "configuration_x.XConfig"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    a = load_model_config(tmp_path)
    assert a.defaults_from == "as written"
    assert any(x.startswith("num_key_value_heads") for x in a.assumed)
    assert not any(x.startswith("intermediate_size") for x in a.assumed)
    p = plan(PlanConfig(model=tmp_path, gpu_memory_gib=24, max_model_len=1024))
    assert any("assumed num_key_value_heads" in w for w in p.warnings)


def test_remote_code_is_never_run(tmp_path: Path) -> None:
    # an auto_map pointing at code beside the config is not imported
    (tmp_path / "configuration_x.py").write_text("raise SystemExit('executed')\n")
    cfg = {"model_type": "x_remote", "num_hidden_layers": 1, "hidden_size": 64,
           "num_attention_heads": 1, "vocab_size": 10,
           "auto_map": {"AutoConfig": "configuration_x.XConfig"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert load_model_config(tmp_path).num_layers == 1
