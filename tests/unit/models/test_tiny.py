from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from safetensors.numpy import load_file

from benchlib.models import TINY_MODEL_FILES, _tiny, make_tiny_model

SMALL = {"hidden_size": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
         "intermediate_size": 128, "vocab_size": 1024}  # fmt: skip


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return make_tiny_model(tmp_path_factory.mktemp("m") / "tiny", seed=0)


def _bytes(d: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_files_and_no_leftovers(model_dir: pathlib.Path) -> None:
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(TINY_MODEL_FILES)
    assert [p.name for p in model_dir.parent.iterdir()] == ["tiny"]  # temp folder renamed away


def test_same_seed_identical_bytes(model_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert _bytes(make_tiny_model(tmp_path / "again", seed=0)) == _bytes(model_dir)


def test_different_seed_different_weights(tmp_path: pathlib.Path) -> None:
    a = load_file(str(make_tiny_model(tmp_path / "a", seed=1, **SMALL) / "model.safetensors"))
    b = load_file(str(make_tiny_model(tmp_path / "b", seed=2, **SMALL) / "model.safetensors"))
    assert a.keys() == b.keys()
    assert not np.array_equal(a["model.embed_tokens.weight"], b["model.embed_tokens.weight"])
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (
        tmp_path / "b" / "tokenizer.json"
    ).read_bytes()


def test_config_matches_tensors(model_dir: pathlib.Path) -> None:
    cfg = json.loads((model_dir / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["model_type"] == "llama"
    h, v, i = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    hd = cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    expected = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,),
                "lm_head.weight": (v, h)}  # fmt: skip
    for n in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{n}."
        expected |= {
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
            p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h),
            p + "mlp.down_proj.weight": (h, i),
        }  # fmt: skip
    tensors = load_file(str(model_dir / "model.safetensors"))
    assert {k: t.shape for k, t in tensors.items()} == expected
    emb = tensors["model.embed_tokens.weight"]
    assert emb.dtype == np.float16 and np.isfinite(emb).all()
    # bfloat16-exact: the low 16 bits of the float32 value are zero
    assert not (emb.astype(np.float32).view(np.uint32) & 0xFFFF).any()
    gen = json.loads((model_dir / "generation_config.json").read_text())
    assert cfg["eos_token_id"] in gen["eos_token_id"]


def test_tokenizer_with_transformers(model_dir: pathlib.Path) -> None:
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    cfg = json.loads((model_dir / "config.json").read_text())
    assert len(tok) == cfg["vocab_size"]
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (
        cfg["bos_token_id"], cfg["eos_token_id"], cfg["pad_token_id"]
    )  # fmt: skip
    for text in ["def f(x):\n    return x  # ok", "  leading, ünïcödé ✓ 日本語 🙂\t\n", ""]:
        ids = tok(text)["input_ids"]
        assert ids[0] == tok.bos_token_id
        assert max(ids) < cfg["vocab_size"]
        assert tok.decode(ids, skip_special_tokens=True) == text
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == (
        "<|begin_of_text|><|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    ids = tok(rendered, add_special_tokens=False)["input_ids"]
    assert ids.count(tok.bos_token_id) == 1
    assert ids.count(tok.convert_tokens_to_ids("<|im_end|>")) == 2


def test_small_corpus_padded_to_vocab_size(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tiny, "_corpus", lambda: ["abc abc abd"])
    out = make_tiny_model(tmp_path / "m", **{**SMALL, "vocab_size": 300})
    tok = json.loads((out / "tokenizer.json").read_text())
    ids = set(tok["model"]["vocab"].values()) | {t["id"] for t in tok["added_tokens"]}
    assert ids == set(range(300))
    assert any(t["content"] == "<|reserved_0|>" for t in tok["added_tokens"])


def test_refuses_foreign_folder_and_replaces_own(tmp_path: pathlib.Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        make_tiny_model(foreign, **SMALL)
    assert (foreign / "notes.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["foreign"]
    own = make_tiny_model(tmp_path / "own", seed=1, **SMALL)
    first = _bytes(own)
    make_tiny_model(own, seed=2, **SMALL)
    assert _bytes(own) != first
    assert sorted(p.name for p in own.iterdir()) == sorted(TINY_MODEL_FILES)


def test_interrupted_run_leaves_nothing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_tiny, "save_file", boom)
    with pytest.raises(KeyboardInterrupt):
        make_tiny_model(tmp_path / "m", **SMALL)
    assert list(tmp_path.iterdir()) == []


def test_bad_shapes_rejected(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError):
        make_tiny_model(tmp_path / "m", hidden_size=100, num_heads=3)
    with pytest.raises(ValueError):
        make_tiny_model(tmp_path / "m", vocab_size=100)
