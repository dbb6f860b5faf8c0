"""ggml's ROPE op evaluated in float64 from a captured node's op_params (the independent reference).

The rules are ggml/src/ggml-cpu/ops.cpp of the pinned llama.cpp: ggml_rope_cache_init (theta =
p * theta_scale^i / ff_i, theta_scale = base^(-2 / n_dims)), rope_yarn (theta_interp = freq_scale
* theta_extrap; with ext_factor != 0: ramp mix of rope_yarn_ramp and mscale *= 1 + 0.1 ln(1 /
freq_scale)), rope_yarn_ramp (y = (i - low) / max(0.001, high - low), 1 - clamp(y, 0, 1)); the
corr dims of ggml_rope_yarn_corr_dims (ggml/src/ggml.c); M-RoPE's sector rule of
ggml_mrope_cache_init (mode 8 contiguous sections, mode 40 interleaved, mode 24 vision: contiguous
sections, each section's exponent restarting at 0, n_dims pairs (i, i + n_dims) over ne0 = 2 n_dims,
ggml_compute_forward_rope_flt). ggml does this in float32; here it is float64.
"""

from __future__ import annotations

import math

import numpy as np

MODES = {0: "normal", 2: "neox", 8: "mrope", 24: "vision", 40: "imrope"}
VISION = 24


def n_pairs(node: dict) -> int:
    """Rotated pairs: n_dims / 2, vision n_dims (its n_dims is half the head)."""
    return node["n_dims"] if node["mode"] == VISION else node["n_dims"] // 2


def corr_dims(n_dims: int, n_ctx_orig: int, base: float, beta_fast: float, beta_slow: float):
    """ggml_rope_yarn_corr_dims: the pair range [low, high] of YaRN's ramp (IEEE semantics:
    n_ctx_orig 0, as test-backend-ops passes, gives log(0) = -inf, so [0, -inf])."""

    def dim(n_rot: float) -> float:
        with np.errstate(divide="ignore"):
            ratio = np.log(np.float64(n_ctx_orig) / (n_rot * 2 * np.pi))
        return n_dims * ratio / (2 * np.log(base))

    return float(max(0.0, np.floor(dim(beta_fast)))), float(min(n_dims - 1.0, np.ceil(dim(beta_slow))))


def effective_inv_freq(node: dict) -> tuple[np.ndarray, float]:
    """Per pair i: the angle per position ggml uses, and the magnitude scale (mscale).

    inv_freq[i] = (freq_scale (1 - mix_i) + mix_i) * base^(-2i / n_dims) / ff_i, mix_i = ramp_i *
    ext_factor (0 without YaRN); mscale = attn_factor (* (1 + 0.1 ln(1 / freq_scale)) with YaRN).
    """
    n = n_pairs(node)
    i = np.arange(n, dtype=np.float64)
    exponent = i - _section_start(node) if node["mode"] == VISION else i
    theta = float(node["freq_base"]) ** (-2.0 * exponent / node["n_dims"])
    if node["freq_factors"] is not None:
        theta = theta / node["freq_factors"][:n].astype(np.float64)
    scale, ext = float(node["freq_scale"]), float(node["ext_factor"])
    mscale = float(node["attn_factor"])
    mix = np.zeros(n)
    if ext != 0.0:
        low, high = corr_dims(node["n_dims"], node["n_ctx_orig"], node["freq_base"],
                              node["beta_fast"], node["beta_slow"])
        with np.errstate(invalid="ignore"):
            mix = (1 - np.clip((i - low) / max(0.001, high - low), 0, 1)) * ext
        mscale *= 1.0 + 0.1 * math.log(1.0 / scale)
    return (scale * (1 - mix) + mix) * theta, mscale


def _section_start(node: dict) -> np.ndarray:
    """Per pair, the first sector of its section (vision: where ggml resets that axis's theta)."""
    sector = np.arange(n_pairs(node)) % sum(node["sections"])
    starts = np.concatenate([[0], np.cumsum(node["sections"])[:-1]])
    return starts[pair_sections(node)] + (np.arange(n_pairs(node)) - sector)


def pair_sections(node: dict) -> np.ndarray:
    """The M-RoPE axis (0 t, 1 h, 2 w, 3 e) of each pair, rope_multi's sector rule: sector = i mod
    sum(sections); mode 40 interleaves t h w (axis k below 3 s_k), modes 8 and 24 take the
    sections in order."""
    n = n_pairs(node)
    s = node["sections"]
    section = np.empty(n, dtype=int)
    for k in range(n):
        sector = k % sum(s)
        if node["mode"] == 40:
            section[k] = next((a for a in (1, 2, 0) if sector % 3 == a and sector < 3 * s[a]), 3)
        else:
            section[k] = np.searchsorted(np.cumsum(s), sector, side="right")
    return section


def pair_positions(node: dict, n_tokens: int) -> np.ndarray:
    """positions [n_tokens, n_dims / 2]: one position per pair (M-RoPE: its section's)."""
    n = n_pairs(node)
    pos = node["positions"].astype(np.float64)
    if node["mode"] in (0, 2):
        return np.repeat(pos[:n_tokens, None], n, axis=1)
    return pos.reshape(4, -1)[pair_sections(node), :n_tokens].T


def rotate(node: dict, x: np.ndarray, inv_freq: np.ndarray, mscale: float) -> np.ndarray:
    """x [tokens, heads, head_dim] rotated by angle pos * inv_freq in float64, ggml's pairing.

    mode normal pairs (2i, 2i + 1); neox and M-RoPE pair (i, i + n), n = n_pairs; dims >= 2 n pass.
    """
    n = n_pairs(node)
    if node["mode"] not in MODES:
        raise ValueError(f"ROPE mode {node['mode']} is not one of {sorted(MODES)}")
    angle = pair_positions(node, x.shape[0]) * inv_freq[None, :]
    cos, sin = (np.cos(angle) * mscale)[:, None, :], (np.sin(angle) * mscale)[:, None, :]
    out = x.astype(np.float64).copy()
    if node["mode"] == 0:
        a, b = out[..., 0 : 2 * n : 2].copy(), out[..., 1 : 2 * n : 2].copy()
        out[..., 0 : 2 * n : 2], out[..., 1 : 2 * n : 2] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = out[..., :n].copy(), out[..., n : 2 * n].copy()
        out[..., :n], out[..., n : 2 * n] = a * cos - b * sin, a * sin + b * cos
    return out


def float32_angle_bound(node: dict, x: np.ndarray, inv_freq: np.ndarray, mscale: float) -> float:
    """ggml's float32 error on y: |x| mscale (p max_i(i inv_freq_i) 2.4e-7 + 1e-6).

    ggml_rope_cache_init forms theta_i = p * theta_scale^i by i float32 products (relative error
    <= 2 i 2^-24 on the angle), cosf/sinf and the products add a few ulp (the 1e-6 term); the
    existing ggml comparison (tests/data/ggml/vectors.md: 5.5e-6 at p 4095 on |x| 8) is inside.
    """
    p = float(np.max(np.abs(node["positions"])))
    i = np.arange(inv_freq.size)
    return float(np.max(np.abs(x))) * mscale * (p * float(np.max(i * inv_freq)) * 2.4e-7 + 1e-6)
