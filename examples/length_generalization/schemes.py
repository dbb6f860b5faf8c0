"""The position schemes the bench trains, each from posemb's ops and training modules.

A scheme is built per model as `SCHEMES[name](shape, train_length)`, which returns
`make_scheme(layer)`: layer -1 is the table added to the token embeddings, layers 0.. the
attention layers. Every scheme object answers three calls (model.py), each a no-op where the scheme
has nothing to say:

- ``embed(x, positions)``: x [B, S, d_model] plus an absolute table (sinusoidal, learned);
- ``rotate(q, k, positions)``: q, k [B, S, H, D] rotated (RoPE, FoPE);
- ``bias(positions)``: [H, S, S] added to the scores (ALiBi, T5), or None.

Settings follow the papers where they fix one: RoPE base 10000 (Su et al. 2021), ALiBi's
geometric slopes 2^(-8h/H) (Press et al. 2022), T5's 32 buckets with max distance 128 (Raffel et
al. 2020), FoPE with its floor at the training length and sigma 0.3 (Hua et al. 2024, sec. 4 and
xtuner's `fope_init_factor`).
"""

from __future__ import annotations

from torch import nn

import posemb
import posemb.nn as pnn

ROPE_BASE = 10000.0
MAX_LENGTH = 1 << 14  # the sinusoidal table's rows: past any length the bench scores


class NoPositions(nn.Module):
    """Nothing anywhere (NoPE: the causal mask alone carries order, Kazemnejad et al. 2023)."""

    def embed(self, x, positions):
        return x

    def rotate(self, q, k, positions):
        return q, k

    def bias(self, positions):
        return None


class Sinusoidal(NoPositions):
    """Vaswani et al. 2017's table (posemb.nn.Sinusoidal) added to the token embeddings."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.table = pnn.Sinusoidal(max_len, d_model)

    def embed(self, x, positions):
        return self.table(x, positions)


class Learned(NoPositions):
    """GPT-2's learned table (posemb.nn.LearnedPositions), train_length rows: a longer input has
    no position to look up (posemb.Error, reported as n/a)."""

    def __init__(self, d_model: int, train_length: int):
        super().__init__()
        self.wpe = pnn.LearnedPositions(train_length, d_model)

    def embed(self, x, positions):
        return self.wpe(x, positions)


class Rope(NoPositions):
    """RoPE (posemb.nn.Rotary: rotate-half pairing, base 10000) on q and k."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.rotary = pnn.Rotary(posemb.default_rope_spec(head_dim, ROPE_BASE))

    def rotate(self, q, k, positions):
        return self.rotary(q, k, positions)


class Fope(NoPositions):
    """FoPE with learnable coefficients (posemb.nn.Fope, the reference's initialisation), one per
    layer."""

    def __init__(self, head_dim: int, n_heads: int, train_length: int, layer: int):
        super().__init__()
        config = posemb.FopeConfig(head_dim=head_dim, n_heads=n_heads, n_kv_heads=n_heads,
                                   theta=ROPE_BASE, train_length=train_length, seed=layer)
        self.fope = pnn.Fope(config)

    def rotate(self, q, k, positions):
        return self.fope(q, k, positions)


class Alibi(NoPositions):
    """ALiBi's bias -slope_h (i - j) over the query and key positions (posemb.nn.Alibi)."""

    def __init__(self, n_heads: int):
        super().__init__()
        self.alibi = pnn.Alibi(n_heads)

    def bias(self, positions):
        return self.alibi(positions, positions)


class T5(NoPositions):
    """T5's learned bucketed relative bias (posemb.nn.T5RelativeBias), causal buckets."""

    def __init__(self, n_heads: int):
        super().__init__()
        self.relative = pnn.T5RelativeBias(n_heads, num_buckets=32, max_distance=128,
                                           bidirectional=False)

    def bias(self, positions):
        return self.relative(positions, positions)


def _per_layer(absolute, attention):
    return lambda layer: absolute() if layer < 0 else attention(layer)


SCHEMES = {
    "nope": lambda s, n: _per_layer(NoPositions, lambda i: NoPositions()),
    "sinusoidal": lambda s, n: _per_layer(lambda: Sinusoidal(s.d_model, MAX_LENGTH),
                                           lambda i: NoPositions()),
    "learned": lambda s, n: _per_layer(lambda: Learned(s.d_model, n), lambda i: NoPositions()),
    "rope": lambda s, n: _per_layer(NoPositions, lambda i: Rope(s.head_dim)),
    "alibi": lambda s, n: _per_layer(NoPositions, lambda i: Alibi(s.n_heads)),
    "t5": lambda s, n: _per_layer(NoPositions, lambda i: T5(s.n_heads)),
    "fope": lambda s, n: _per_layer(NoPositions, lambda i: Fope(s.head_dim, s.n_heads, n, i)),
}
