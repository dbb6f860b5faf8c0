"""ggml_reference against ggml's own output (tests/data/ggml/vectors.md, ggml v0.21.0 CPU):
the float64 rotation must equal the `fp64:` lines to float rounding and the `ggml:` lines within
compare.float32_angle_bound, for both pairings, positions 0..4095.

    pytest conformance/llamacpp/test_ggml_reference.py   (numpy only; no llama.cpp needed)
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from ggml_reference import effective_inv_freq, float32_angle_bound, rotate  # noqa: E402

VECTORS = os.path.join(HERE, "..", "..", "tests", "data", "ggml", "vectors.md")


def sections():
    """(mode, {position: (ggml values, fp64 values)}) per `## ` section of vectors.md."""
    out, mode, lines = [], None, {}
    for line in open(VECTORS):
        if line.startswith("## "):
            if mode is not None:
                out.append((mode, lines))
            mode, lines = int(re.search(r"\((\d+)\)", line).group(1)), {}
        match = re.match(r"pos=(\d+)\s+(ggml|fp64): (.*)", line)
        if match:
            lines.setdefault(int(match.group(1)), {})[match.group(2)] = np.array(
                match.group(3).split(), dtype=np.float64)
    out.append((mode, lines))
    return out


def node(mode: int, positions) -> dict:
    return dict(n_dims=8, mode=mode, n_ctx_orig=0, freq_base=10000.0, freq_scale=1.0,
                ext_factor=0.0, attn_factor=1.0, beta_fast=0.0, beta_slow=0.0, sections=[0] * 4,
                positions=np.asarray(positions, dtype=np.int32), freq_factors=None)


def test_float64_reference_matches_ggml_vectors():
    checked = 0
    for mode, lines in sections():
        positions = sorted(lines)
        n = node(mode, positions)
        x = np.tile(np.arange(1, 9, dtype=np.float64), (len(positions), 1, 1))
        inv_freq, mscale = effective_inv_freq(n)
        ours = rotate(n, x, inv_freq, mscale)[:, 0]
        bound = float32_angle_bound(n, x, inv_freq, mscale)
        for k, p in enumerate(positions):
            np.testing.assert_allclose(ours[k], lines[p]["fp64"], rtol=1e-6, atol=1e-6)
            assert np.max(np.abs(ours[k] - lines[p]["ggml"])) <= bound
            checked += 1
    assert checked == 16


def test_yarn_ramp_is_ggml_corr_dims():
    # ggml_rope_yarn_corr_dims(128, 4096, 10000, 32, 1): floor(20.94) = 20, ceil(45.03) = 46
    from ggml_reference import corr_dims

    assert corr_dims(128, 4096, 10000.0, 32.0, 1.0) == (20.0, 46.0)
