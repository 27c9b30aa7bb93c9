"""Random GGML blocks: valid Q4_K, Q5_K, Q6_K and Q8_0 super-blocks (and F32 values) whose
dequantized weights are about N(0, sigma), made straight from random bits.

What: :func:`random_blocks` gives ``n`` blocks of one type as a ``uint8`` array of shape
``(n, block_bytes)``; :data:`BLOCK` says each type's (weights, bytes) per block. The layouts
are llama.cpp's (``ggml/src/ggml-common.h``, b11312):

* ``block_q4_K`` (144 B / 256 weights): ``f16 d``, ``f16 dmin``, 12 bytes of eight 6-bit
  scales and eight 6-bit mins, 128 bytes of 4-bit quants; ``w = d·sc·q − dmin·m``.
* ``block_q5_K`` (176 B): the same header, ``qh[32]`` (the fifth bits), ``qs[128]``.
* ``block_q6_K`` (210 B): ``ql[128]``, ``qh[64]``, ``int8 scales[16]``, ``f16 d`` (last);
  ``w = d·sc·(q − 32)``.
* ``block_q8_0`` (34 B / 32 weights): ``f16 d``, ``int8 qs[32]``; ``w = d·q``.

Why: a 27B-parameter GGUF of random weights has to be written on the GPU machine's small
disk in minutes, so no float copy of the weights is ever made: the quants are the random
bits as they come (uniform, every bit pattern valid), and only the scales are set. Each
K-quant sub-block gets a random 6-bit scale in [32, 63] (Q6_K: a random sign too), its min
equal to its scale and ``dmin = d·(levels − 1)/2``, so every sub-block is centred on 0;
``d`` is chosen so the standard deviation over all weights is ``sigma``. The numbers are
noise, but the kernels read real, well-formed blocks of sane magnitude (no overflow, no
NaN), so an engine's timings are what the real file would give.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["BLOCK", "random_blocks", "random_f32"]

#: ggml type name → (weights per block, bytes per block)
BLOCK: dict[str, tuple[int, int]] = {"Q4_K": (256, 144), "Q5_K": (256, 176),
                                     "Q6_K": (256, 210), "Q8_0": (32, 34), "F32": (1, 4)}
#: the K-quants' sub-block scales are drawn uniformly from this 6-bit range
_SC_LOW, _SC_HIGH = 32, 63
_SC_MEAN_SQ = float(np.mean(np.arange(_SC_LOW, _SC_HIGH + 1, dtype=np.float64) ** 2))

Bytes = npt.NDArray[np.uint8]


def _random_bytes(rng: np.random.Generator, n: int, width: int) -> Bytes:
    """``(n, width)`` random bytes (whole 64-bit draws, writable, no copy)."""
    words = rng.bit_generator.random_raw((n * width + 7) // 8)
    assert isinstance(words, np.ndarray)
    return words.view(np.uint8)[: n * width].reshape(n, width)


def _scales(raw: Bytes) -> Bytes:
    """6-bit scales in [32, 63] from random bytes (the low 5 bits kept, bit 5 set)."""
    out: Bytes = (raw & np.uint8(31)) | np.uint8(32)
    return out


def _pack_scale_min(sc: Bytes, m: Bytes) -> Bytes:
    """Eight 6-bit scales and mins per block → the 12 bytes ``get_scale_min_k4`` reads:
    bytes 0–3 ``sc[0:4]`` with ``sc[4:8]``'s top 2 bits above, bytes 4–7 the same for the
    mins, bytes 8–11 ``sc[4:8]``'s low nibble and ``m[4:8]``'s above it."""
    out = np.empty((sc.shape[0], 12), dtype=np.uint8)
    out[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((m[:, 4:8] & 0x0F) << 4)
    return out


def _f16(value: float) -> Bytes:
    return np.array([value], dtype="<f2").view(np.uint8)


def _k_quant(rng: np.random.Generator, n: int, sigma: float, bits: int, width: int) -> Bytes:
    """Q4_K (``bits`` 4) or Q5_K (5): random quants, centred sub-blocks, std ``sigma``."""
    blocks = _random_bytes(rng, n, width)
    levels = 1 << bits
    # w = sc·(d·q − dmin), q uniform over the levels: mean 0 when dmin = d·(levels − 1)/2
    d = sigma / np.sqrt(_SC_MEAN_SQ * (levels * levels - 1) / 12.0)
    sc = _scales(blocks[:, 4:12])
    blocks[:, 4:16] = _pack_scale_min(sc, sc)
    blocks[:, 0:2] = _f16(d)
    blocks[:, 2:4] = _f16(d * (levels - 1) / 2.0)
    return blocks


def _q6_k(rng: np.random.Generator, n: int, sigma: float) -> Bytes:
    """Q6_K: random 6-bit quants, scales ±[32, 63], std ``sigma``."""
    blocks = _random_bytes(rng, n, 210)
    raw = blocks[:, 192:208]
    sign = (raw & 0x80).astype(bool)
    sc = _scales(raw).view(np.int8).astype(np.int16)
    blocks[:, 192:208] = np.where(sign, -sc, sc).astype(np.int8).view(np.uint8)
    # w = d·sc·(q − 32), q uniform in 0..63: E[(q − 32)²] = (64² − 1)/12 + 1/4
    d = sigma / np.sqrt(_SC_MEAN_SQ * ((64 * 64 - 1) / 12.0 + 0.25))
    blocks[:, 208:210] = _f16(d)
    return blocks


def _q8_0(rng: np.random.Generator, n: int, sigma: float) -> Bytes:
    """Q8_0: random int8 quants, std ``sigma``."""
    blocks = _random_bytes(rng, n, 34)
    mean_sq = float(np.mean(np.arange(-128, 128, dtype=np.float64) ** 2))
    blocks[:, 0:2] = _f16(sigma / np.sqrt(mean_sq))
    return blocks


def random_blocks(qtype: str, n: int, rng: np.random.Generator, sigma: float) -> Bytes:
    """``n`` random blocks of ``qtype`` (a key of :data:`BLOCK` but F32), ``(n, bytes)``."""
    if qtype == "Q4_K":
        return _k_quant(rng, n, sigma, 4, 144)
    if qtype == "Q5_K":
        return _k_quant(rng, n, sigma, 5, 176)
    if qtype == "Q6_K":
        return _q6_k(rng, n, sigma)
    if qtype == "Q8_0":
        return _q8_0(rng, n, sigma)
    raise ValueError(f"no random blocks for {qtype!r}")


def random_f32(init: str, n: int, rng: np.random.Generator, sigma: float) -> Bytes:
    """``n`` float32 values as bytes: ``normal`` N(0, sigma), ``ones`` (norm weights, the
    DeltaNet dt bias) or ``decay`` (``ssm_a`` = −exp(A_log): uniform in [−16, −1])."""
    if init == "normal":
        values = rng.standard_normal(n, dtype=np.float32) * np.float32(sigma)
    elif init == "ones":
        values = np.ones(n, dtype=np.float32)
    elif init == "decay":
        values = -rng.uniform(1.0, 16.0, n).astype(np.float32)
    else:
        raise ValueError(f"no F32 initialisation {init!r}")
    out: Bytes = values.astype("<f4").view(np.uint8)
    return out
