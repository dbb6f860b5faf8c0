"""posemb's rotation of recorded q/k, and the bound it is held to against transformers' output.

The bound is posemb's tolerance model (include/posemb/rotary/tolerance.hpp, RotationTolerance,
and include/posemb/model/hf_float32_scheme.hpp, rotation_tolerance): per output feature at
position p, |delta| <= m r (4.5 u_s + 8 u + u p w K), r the norm of the input pair, m the
attention scale, w the largest inverse frequency, K = 8 + the variant's float32 steps
(+ ln(base') d / (d - 2) when 2i / d is not exact in float32). The Python package does not bind
it, so it is restated here from those two headers.
"""

from __future__ import annotations

import math

import numpy as np

import posemb

U = 2.0**-24


def angle_coefficient(spec, layer, seq_len, rope_block: dict) -> float:
    """K of hf_float32_scheme.hpp rotation_tolerance."""
    kind = layer.rope.rope_type
    k = 8.0
    if kind in ("linear", "longrope"):
        k += 1.0
    elif kind == "yarn":
        k += 8.0
    elif kind == "llama3":
        hi, lo = rope_block.get("high_freq_factor", 4.0), rope_block.get("low_freq_factor", 1.0)
        k += 4.0 * hi / (hi - lo) + 4.0
    elif kind == "dynamic":
        length_max = rope_block["max_position_embeddings"]
        length = seq_len if seq_len is not None else length_max
        if length > length_max:
            ratio = rope_block["factor"] * length / length_max
            k += 3.0 * ratio / (ratio - (rope_block["factor"] - 1.0)) + 2.0
    d = spec.rotary_dim
    if d & (d - 1):
        k += abs(math.log(float(np.min(spec.inv_freq)))) * d / (d - 2.0)
    return k


def pair_norms(x: np.ndarray, spec) -> np.ndarray:
    """|(a, b)| of each feature's pair, [..., head_dim] (0 outside the rotary slice)."""
    r = np.zeros_like(x, dtype=np.float64)
    lo, d = spec.rotary_offset, spec.rotary_dim
    part = x[..., lo:lo + d].astype(np.float64)
    if spec.pairing == "interleaved":
        a, b = part[..., 0::2], part[..., 1::2]
        n = np.sqrt(a * a + b * b)
        r[..., lo:lo + d:2], r[..., lo + 1:lo + d:2] = n, n
    else:
        a, b = part[..., : d // 2], part[..., d // 2:]
        n = np.sqrt(a * a + b * b)
        r[..., lo:lo + d // 2], r[..., lo + d // 2:lo + d] = n, n
    return r


def bound(x: np.ndarray, positions: np.ndarray, layout: str, spec, k: float) -> np.ndarray:
    """The per-feature bound for input x [b, h, s, d] or [b, s, h, d] at positions [s]."""
    p = positions.astype(np.float64)
    p = p[None, None, :, None] if layout == "bhsd" else p[None, :, None, None]
    w = float(np.max(spec.inv_freq))
    rel = spec.attention_scale * (4.5 * U + 8 * U + U * np.abs(p) * w * k)
    return rel * pair_norms(x, spec)


def embed(x: np.ndarray, spec) -> tuple[np.ndarray, slice]:
    """x whose last axis is only the rotary slice, placed in zeros of head_dim (else x)."""
    if x.shape[-1] == spec.head_dim:
        return np.ascontiguousarray(x), slice(None)
    if x.shape[-1] != spec.rotary_dim:
        raise ValueError(f"input last axis {x.shape[-1]} is neither head_dim {spec.head_dim} "
                         f"nor rotary_dim {spec.rotary_dim}")
    full = np.zeros(x.shape[:-1] + (spec.head_dim,), dtype=x.dtype)
    part = slice(spec.rotary_offset, spec.rotary_offset + spec.rotary_dim)
    full[..., part] = x
    return full, part


def rotate(x: np.ndarray, positions: np.ndarray, source, layout: str, part: slice) -> np.ndarray:
    return posemb.apply_rope(x, positions, source, layout=layout)[..., part]
