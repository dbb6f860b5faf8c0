"""float64 numpy references of posemb's formulas, written from the papers and from HuggingFace
transformers' modeling_rope_utils.py (`_compute_*_parameters`), models/t5/modeling_t5.py
(`T5Attention._relative_position_bucket`) and models/qwen3_vl/modeling_qwen3_vl.py
(`apply_interleaved_mrope`), for the property tests (test_properties_*.py). Nothing here calls
posemb.
"""
import math

import numpy as np
import torch


# ---- frequencies: inv_freq [rotary_dim / 2], attention factor

def default_inv_freq(d, base):
    # RoFormer: base^(-2i/d), i = 0 .. d/2 - 1 (HF _compute_default_rope_parameters).
    return 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)


def ntk_inv_freq(d, base, factor):
    # NTK-aware: base * s^(d/(d-2)).
    return default_inv_freq(d, base * factor ** (d / (d - 2)))


def dynamic_ntk_inv_freq(d, base, factor, max_pos, seq_len):
    # HF _compute_dynamic_ntk_parameters: seq_len = max(seq_len, max_pos);
    # base * (factor * seq_len / max_pos - (factor - 1))^(d / (d - 2)).
    seq_len = max(seq_len, max_pos)
    return default_inv_freq(d, base * (factor * seq_len / max_pos - (factor - 1)) ** (d / (d - 2)))


def yarn(d, base, factor, original, beta_fast=32.0, beta_slow=1.0, truncate=True,
         attention_factor=None, mscale=None, mscale_all_dim=None):
    # HF _compute_yarn_parameters.
    def get_mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)

    def correction_dim(rotations):
        return (d * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrapolation = 1 - ramp
    pos_freqs = base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    inv = (1 / (factor * pos_freqs)) * (1 - extrapolation) + (1 / pos_freqs) * extrapolation
    return inv, attention_factor


def llama3_inv_freq(d, base, factor, low_freq_factor, high_freq_factor, original):
    # HF _compute_llama3_parameters.
    inv = default_inv_freq(d, base)
    low_wavelen, high_wavelen = original / low_freq_factor, original / high_freq_factor
    wavelen = 2 * math.pi / inv
    out = np.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, out)


def longrope(d, base, short_factor, long_factor, original, factor=1.0, attention_factor=None,
             seq_len=None):
    # HF _compute_longrope_parameters (long factors past original_max_position_embeddings).
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    ext = np.asarray(long_factor if seq_len is not None and seq_len > original else short_factor,
                     np.float64)
    return 1.0 / (ext * base ** (np.arange(0, d, 2, dtype=np.float64) / d)), attention_factor


def proportional_inv_freq(head_dim, base, p, factor):
    # HF "proportional": int(p * head_dim // 2) pairs rotate with the whole head's exponents.
    inv = default_inv_freq(head_dim, base) / factor
    inv[int(p * head_dim // 2):] = 0.0
    return inv


# ---- rotations

def pair_indices(rotary_dim, pairing, offset=0):
    """The feature indices (first, second) of each pair: rotate_half (i, i + d/2), interleaved
    (2i, 2i + 1), shifted by the rotary offset."""
    half = rotary_dim // 2
    i = np.arange(half)
    if pairing == "rotate_half":
        return offset + i, offset + i + half
    return offset + 2 * i, offset + 2 * i + 1


def rotate(x, angles, scale, rotary_dim, pairing, offset=0, inverse=False):
    """x float64 [..., head_dim] rotated per pair: (a, b) -> s (a cos - b sin, a sin + b cos);
    angles [..., pairs] broadcast over x's leading dims. Inverse: R(-p) with 1 / s."""
    x = np.array(x, np.float64)
    if inverse:
        angles, scale = -angles, 1.0 / scale
    c, s = scale * np.cos(angles), scale * np.sin(angles)
    first, second = pair_indices(rotary_dim, pairing, offset)
    a, b = x[..., first].copy(), x[..., second].copy()
    x[..., first] = a * c - b * s
    x[..., second] = a * s + b * c
    return x


def rope(x, positions, inv_freq, scale, pairing, offset=0, layout="bshd", inverse=False):
    """x [batch, seq, heads, dim] ('bshd') or [batch, heads, seq, dim]; positions float64
    [rows, seq], rows 1 or batch."""
    bhsd = layout == "bhsd"
    if bhsd:
        x = np.swapaxes(x, 1, 2)
    angles = positions[:, :, None, None] * inv_freq  # [rows, seq, 1, pairs]
    y = rotate(x, angles, scale, 2 * len(inv_freq), pairing, offset, inverse)
    return np.swapaxes(y, 1, 2) if bhsd else y


def mrope_axes(sections, layout):
    """The axis (0 t, 1 h, 2 w) of each pair."""
    pairs = sum(sections)
    j = np.arange(pairs)
    if layout == "chunked":
        return np.where(j < sections[0], 0, np.where(j < sections[0] + sections[1], 1, 2))
    return np.where((j % 3 == 1) & (j < 3 * sections[1]), 1,
                    np.where((j % 3 == 2) & (j < 3 * sections[2]), 2, 0))


def mrope(x, positions3, inv_freq, scale, pairing, sections, layout):
    """x [batch, seq, heads, dim]; positions3 float64 [3, rows, seq]."""
    axes = mrope_axes(sections, layout)
    chosen = positions3[axes]  # [pairs, rows, seq]
    angles = np.moveaxis(chosen, 0, -1)[:, :, None, :] * inv_freq
    return rotate(x, angles, scale, 2 * len(inv_freq), pairing)


# ---- bias and absolute tables

def alibi_slopes(n, max_bias=8.0):
    # Press et al. get_slopes / MPT gen_slopes: N = 2^ceil(log2 n), s_k = 2^(-B k / N),
    # concat(s_2, s_4, ..., s_N, s_1, s_3, ...)[:n] (for a power of two n: s_h = 2^(-B h / n)).
    big = 2 ** math.ceil(math.log2(n))
    s = 2.0 ** (-max_bias * np.arange(1, big + 1, dtype=np.float64) / big)
    if big == n:
        return s
    return np.concatenate([s[1::2], s[0::2]])[:n]


def t5_bucket(rel, num_buckets, max_distance, bidirectional):
    # T5Attention._relative_position_bucket, in torch as HF runs it (float32 log).
    rel = torch.as_tensor(rel, dtype=torch.long)
    buckets = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).to(torch.long) * num_buckets
        rel = torch.abs(rel)
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return (buckets + torch.where(small, rel, large)).numpy()


def sinusoidal(positions, d, base, layout):
    # Vaswani et al. 2017: w_i = base^(-2i/d); interleaved sin at 2i, cos at 2i + 1; concat
    # sin at i, cos at d/2 + i.
    w = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.asarray(positions, np.float64)[:, None] * w
    out = np.empty((len(angles), d))
    if layout == "interleaved":
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    else:
        out[:, : d // 2], out[:, d // 2:] = np.sin(angles), np.cos(angles)
    return out
