"""The random-weight GGUF: the 27B plan against what open-jet's megakernel loader demands
(transcribed from megakernel/qwen38_mk.cu of the open-jet 0.5.1 wheel, lines 2335-2467),
random blocks that gguf-py dequantizes to N(0, sigma), the tokenizer padded to the
vocabulary, and the tiny file written here and read back with gguf-py. llama.cpp loading
the tiny file for real: tests/integration/test_random_gguf_llamacpp.py.

gguf-py comes from ``$BENCHLIB_LLAMACPP`` (default ``.engines/llamacpp``, ``make
llamacpp``); the tests that need it skip without it."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlib.cli import main
from benchlib.models._gguf_vocab import CONTROL, NORMAL, read_vocab
from benchlib.models._random_blocks import BLOCK, random_blocks
from benchlib.models._random_gguf import SHAPES, tensor_plan, write_random_gguf

REPO = Path(__file__).resolve().parents[3]
LLAMACPP = Path(os.environ.get("BENCHLIB_LLAMACPP") or REPO / ".engines" / "llamacpp")
needs_gguf = pytest.mark.skipif(not (LLAMACPP / "gguf-py" / "gguf").is_dir(),
                                reason=f"no gguf-py in {LLAMACPP}: make llamacpp")

# qwen38_mk.cu's constants: D, FF, VOCAB, NL (+1 MTP = NLA), QKV, VD, QG, KVD, HD, NVH, HK
D, FF, VOCAB, NL, QKV, VD, QG, KVD, HD, NVH, HK = (5120, 17408, 248320, 64, 10240, 6144,
                                                   12288, 1024, 256, 48, 128)


def _gguf() -> Any:
    from benchlib.models import import_gguf

    return import_gguf(LLAMACPP)


def _megakernel_demands() -> dict[str, tuple[tuple[int, ...], set[str]]]:
    """Every tensor the loader reads: its ne (K, N) and the types its ``need`` accepts."""
    want = {"token_embd.weight": ((D, VOCAB), {"Q4_K"}), "output.weight": ((D, VOCAB), {"Q6_K"}),
            "output_norm.weight": ((D,), {"F32"})}
    for i in range(NL + 1):
        b = f"blk.{i}."
        want |= {b + "attn_norm.weight": ((D,), {"F32"}),
                 b + "post_attention_norm.weight": ((D,), {"F32"}),
                 b + "ffn_gate.weight": ((D, FF), {"Q4_K"}), b + "ffn_up.weight": ((D, FF), {"Q4_K"}),
                 b + "ffn_down.weight": ((FF, D), {"Q4_K", "Q6_K"})}
        if i == NL or (i + 1) % 4 == 0:  # L.attn = mtp || ((i + 1) % 4 == 0)
            want |= {b + "attn_q.weight": ((D, QG), {"Q4_K"}),
                     b + "attn_k.weight": ((D, KVD), {"Q4_K"}),
                     b + "attn_v.weight": ((D, KVD), {"Q4_K", "Q6_K"}),
                     b + "attn_output.weight": ((VD, D), {"Q4_K"}),
                     b + "attn_q_norm.weight": ((HD,), {"F32"}),
                     b + "attn_k_norm.weight": ((HD,), {"F32"})}
        else:
            want |= {b + "attn_qkv.weight": ((D, QKV), {"Q4_K", "Q6_K"}),
                     b + "attn_gate.weight": ((D, VD), {"Q4_K"}),
                     b + "ssm_out.weight": ((VD, D), {"Q5_K"}),
                     b + "ssm_conv1d.weight": ((4, QKV), {"F32"}),  # 4 * QKV floats
                     b + "ssm_dt.bias": ((NVH,), {"F32"}), b + "ssm_a": ((NVH,), {"F32"}),
                     b + "ssm_norm.weight": ((HK,), {"F32"}),
                     b + "ssm_alpha.weight": ((D, NVH), {"F32"}),
                     b + "ssm_beta.weight": ((D, NVH), {"F32"})}
    want |= {f"blk.{NL}.nextn.eh_proj.weight": ((2 * D, D), {"Q8_0"}),
             f"blk.{NL}.nextn.enorm.weight": ((D,), {"F32"}),
             f"blk.{NL}.nextn.hnorm.weight": ((D,), {"F32"}),
             f"blk.{NL}.nextn.shared_head_norm.weight": ((D,), {"F32"})}
    return want


def test_the_27b_plan_is_what_the_megakernel_loads() -> None:
    plan = tensor_plan(SHAPES["qwen38-27b"])
    demands = _megakernel_demands()
    assert [s.name for s in plan if s.name not in demands] == []
    assert [n for n in demands if n not in {s.name for s in plan}] == []
    for spec in plan:
        ne, types = demands[spec.name]
        assert spec.ne == ne and spec.qtype in types, spec


def test_the_27b_mix_and_size() -> None:
    plan = tensor_plan(SHAPES["qwen38-27b"])
    by_type = Counter(s.qtype for s in plan)
    # F32: output_norm, 2 norms x 65 blocks, q/k norms x 17 attention blocks, 6 DeltaNet
    # tensors x 48, 3 nextn norms; Q6_K: output and ffn_down + attn_v/attn_qkv in the 33
    # use_more_bits blocks; Q4_K: the rest of the matrices (token_embd included)
    assert by_type == {"F32": 456, "Q4_K": 294, "Q6_K": 67, "Q5_K": 48, "Q8_0": 1}
    # llama-quantize's use_more_bits over 65 blocks: 0-7, 56-64 and every third between
    wide = sorted(int(s.name.split(".")[1]) for s in plan if s.name.endswith("ffn_down.weight")
                  and s.qtype == "Q6_K")
    assert wide == [*range(8), 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46, 49, 52,
                    55, *range(56, 65)]
    assert sum(s.nbytes for s in plan) == 17_095_778_304  # 15.92 GiB
    for spec in plan:  # every K-quant row holds whole blocks
        assert spec.ne[0] % BLOCK[spec.qtype][0] == 0, spec


@needs_gguf
@pytest.mark.parametrize("qtype", ["Q4_K", "Q5_K", "Q6_K", "Q8_0"])
def test_blocks_dequantize_to_the_asked_spread(qtype: str) -> None:
    gguf = _gguf()
    blocks = random_blocks(qtype, 4096, np.random.default_rng(1), 0.02)
    assert blocks.shape == (4096, BLOCK[qtype][1])
    w = gguf.quants.dequantize(blocks.reshape(-1), gguf.GGMLQuantizationType[qtype])
    assert w.size == 4096 * BLOCK[qtype][0] and np.isfinite(w).all()
    assert abs(float(w.mean())) < 2e-4 and 0.0195 < float(w.std()) < 0.0205
    assert float(np.abs(w).max()) < 0.1  # no outliers: every scale in range
    if qtype in ("Q4_K", "Q5_K"):  # the 6-bit scales and mins as llama.cpp unpacks them
        sc, m = gguf.quants.Q4_K.get_scale_min(blocks[:, 4:16].copy())
        assert sc.min() == 32 and sc.max() == 63 and (m == sc).all()


def test_the_vocabulary_is_padded_to_the_model(tiny_model: Path) -> None:
    vocab = read_vocab(tiny_model, 5000)
    assert len(vocab.tokens) == len(vocab.types) == 5000 and vocab.own_size == 4096
    assert vocab.tokens[4096:4098] == ["<|pad4096|>", "<|pad4097|>"]
    assert set(vocab.types[4096:]) == {NORMAL}  # not scanned for in every prompt
    assert vocab.types[vocab.tokens.index("<|im_end|>")] == CONTROL
    assert NORMAL in vocab.types[:4096] and vocab.merges and " " in vocab.merges[0]
    assert vocab.tokens[vocab.eos_id or 0] == "<|end_of_text|>"
    assert vocab.chat_template and "<|im_start|>" in vocab.chat_template
    with pytest.raises(ValueError, match="more than the model's"):
        read_vocab(tiny_model, 4000)


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    if not (LLAMACPP / "gguf-py" / "gguf").is_dir():
        pytest.skip(f"no gguf-py in {LLAMACPP}: make llamacpp")
    out = tmp_path_factory.mktemp("random") / "tiny.gguf"
    argv = ["random-gguf", "--shape", "tiny", "--quant", "Q4_K_M", "--tokenizer",
            str(tiny_model), "--llamacpp", str(LLAMACPP), "--jobs", "2", "--out", str(out)]
    assert main(argv) == 0
    return out


def test_the_tiny_file_reads_back(tiny_gguf: Path) -> None:
    gguf = _gguf()
    reader = gguf.GGUFReader(tiny_gguf)
    plan = tensor_plan(SHAPES["tiny"])
    got = [(t.name, t.tensor_type.name, tuple(int(n) for n in t.shape)) for t in reader.tensors]
    assert got == [(s.name, s.qtype, s.ne) for s in plan]
    assert [p.name for p in tiny_gguf.parent.iterdir()] == ["tiny.gguf"]  # no partial left
    fields = {k: f.contents() for k, f in reader.fields.items()}
    assert fields["general.architecture"] == "qwen35"
    assert fields["qwen35.block_count"] == 5 and fields["qwen35.nextn_predict_layers"] == 1
    assert fields["qwen35.ssm.group_count"] == 2 and fields["qwen35.ssm.time_step_rank"] == 4
    assert fields["qwen35.full_attention_interval"] == 4
    assert fields["tokenizer.ggml.model"] == "gpt2" and fields["tokenizer.ggml.pre"] == "gpt-2"
    assert len(fields["tokenizer.ggml.tokens"]) == 4096
    end = max(t.data_offset + t.n_bytes for t in reader.tensors)
    assert tiny_gguf.stat().st_size == -(-end // 32) * 32
    tensors = {t.name: t for t in reader.tensors}
    norm = np.asarray(tensors["blk.0.attn_norm.weight"].data)
    assert (norm == 1).all()
    assert (np.asarray(tensors["blk.0.ssm_a"].data) < 0).all()
    ffn = tensors["blk.3.ffn_up.weight"]
    w = gguf.quants.dequantize(np.asarray(ffn.data), ffn.tensor_type)
    assert w.shape == (512, 256) and 0.019 < float(w.std()) < 0.021


def test_same_seed_same_bytes(tiny_gguf: Path, tiny_model: Path, tmp_path: Path) -> None:
    again = write_random_gguf(tmp_path / "again.gguf", SHAPES["tiny"], tiny_model,
                              llamacpp_dir=LLAMACPP, jobs=1)
    assert again.read_bytes() == tiny_gguf.read_bytes()
    other = write_random_gguf(tmp_path / "other.gguf", SHAPES["tiny"], tiny_model,
                              llamacpp_dir=LLAMACPP, seed=1, jobs=1)
    assert other.stat().st_size == again.stat().st_size
    assert other.read_bytes() != again.read_bytes()


@needs_gguf
def test_a_tokenizer_without_template_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes((tiny_model / "tokenizer.json").read_bytes())
    code = main(["random-gguf", "--shape", "tiny", "--tokenizer", str(folder),
                 "--llamacpp", str(LLAMACPP), "--out", str(tmp_path / "x.gguf")])
    assert code == 2 and not (tmp_path / "x.gguf").exists()


def test_the_command_offers_every_shape_and_quant() -> None:
    from benchlib.cli.random_gguf import QUANT_CHOICES, SHAPE_CHOICES
    from benchlib.models import QUANTS

    assert sorted(SHAPE_CHOICES) == sorted(SHAPES) and QUANT_CHOICES == QUANTS


def test_sizes_are_whole_blocks() -> None:
    for shape in SHAPES.values():
        for spec in tensor_plan(shape):
            per, size = BLOCK[spec.qtype]
            assert spec.nbytes == math.prod(spec.ne) // per * size
