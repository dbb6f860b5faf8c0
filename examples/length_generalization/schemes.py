"""The position schemes the bench compares, each from posemb's training modules and spec builders.

A trained scheme is built per model as `row.build(shape, train_length)`, which returns
`make_scheme(layer)`: layer -1 is the table added to the token embeddings, layers 0.. the
attention layers. Every scheme object answers three calls (model.py), each a no-op where the scheme
has nothing to say:

- ``embed(x, positions)``: x [B, S, d_model] plus an absolute table (sinusoidal, learned);
- ``rotate(q, k, positions)``: q, k [B, S, H, D] rotated (RoPE, xPos, FoPE);
- ``bias(positions)``: [H, S, S] added to the scores (ALiBi, T5), or None.

Two rows train nothing of their own: RoPE + YaRN and RoPE + dynamic NTK evaluate the RoPE model's
weights with the frequencies posemb's spec builders give for the evaluated length
(`row.eval_spec(head_dim, train_length, length)`), as a long-context deployment does.

Settings follow the papers where they fix one: RoPE base 10000 (Su et al. 2021), ALiBi's
geometric slopes 2^(-8h/H) (Press et al. 2022), T5's 32 causal buckets with max distance 128
(Raffel et al. 2020), xPos with gamma 0.4 and scale base 512 (Sun et al. 2022), FoPE with its
clip floor at the training length, D_out = head_dim / 4 and sigma 0.3 (Hua et al. 2024, sec. 4; the
authors' FourierEmbedding defaults, which posemb.FopeConfig's defaults are). The ablation rows
keep one half of FoPE each: FS mixes every frequency (floor_ratio 0: nothing clipped) with
learned coefficients; CF is RoPE with the clipped frequencies set to zero and kept (identity
coefficients, sigma 0, frozen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

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


class Rotary(NoPositions):
    """A parameter-free rotary scheme on q and k (posemb.nn.Rotary): RoPE from a RopeSpec, xPos
    from an XposSpec. `use(spec)` swaps the frequencies (YaRN, dynamic NTK at evaluation)."""

    def __init__(self, spec):
        super().__init__()
        self.use(spec)

    def use(self, spec) -> None:
        self.rotary = pnn.Rotary(spec)

    def rotate(self, q, k, positions):
        return self.rotary(q, k, positions)


class Fope(NoPositions):
    """FoPE (posemb.nn.Fope, the reference's initialisation), one per layer; `frozen` keeps the
    coefficients at their initial values (the CF ablation)."""

    def __init__(self, config, frozen: bool = False):
        super().__init__()
        self.fope = pnn.Fope(config)
        for p in self.fope.parameters():
            p.requires_grad_(not frozen)

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


def rope_spec(head_dim: int):
    return posemb.default_rope_spec(head_dim, ROPE_BASE)


def fope_config(shape, train_length: int, layer: int, **settings):
    return posemb.FopeConfig(head_dim=shape.head_dim, n_heads=shape.n_heads,
                             n_kv_heads=shape.n_heads, theta=ROPE_BASE,
                             train_length=train_length, seed=layer, **settings)


def absolute(table):
    """make_scheme for a table on the embeddings and nothing in attention."""
    return lambda layer: table() if layer < 0 else NoPositions()


def in_attention(per_layer):
    """make_scheme for nothing on the embeddings and per_layer(layer) in every attention layer."""
    return lambda layer: NoPositions() if layer < 0 else per_layer(layer)


@dataclass(frozen=True)
class SchemeRow:
    """One row of the tables: how to build it, or which trained row it re-evaluates and how."""

    name: str
    label: str  # the plots' legend
    build: Optional[Callable] = None  # (shape, train_length) -> make_scheme(layer)
    trained_as: Optional[str] = None  # the row whose model this row evaluates (None: itself)
    eval_spec: Optional[Callable] = None  # (head_dim, train_length, length) -> RopeSpec

    @property
    def model(self) -> str:
        return self.trained_as or self.name


ROWS = [
    SchemeRow("nope", "NoPE", lambda s, n: in_attention(lambda i: NoPositions())),
    SchemeRow("sinusoidal", "sinusoidal",
              lambda s, n: absolute(lambda: Sinusoidal(s.d_model, MAX_LENGTH))),
    SchemeRow("learned", "learned", lambda s, n: absolute(lambda: Learned(s.d_model, n))),
    SchemeRow("rope", "RoPE", lambda s, n: in_attention(lambda i: Rotary(rope_spec(s.head_dim)))),
    # YaRN with factor length / L (its defaults beta_fast 32, beta_slow 1 and attention factor
    # 0.1 ln(factor) + 1); at length L the factor is 1 and the spec is RoPE's.
    SchemeRow("rope+yarn", "RoPE + YaRN (eval)", trained_as="rope",
              eval_spec=lambda d, n, length: posemb.yarn_rope_spec(
                  d, ROPE_BASE, max(length / n, 1.0), n)),
    # Dynamic NTK as transformers applies it, factor 1: base * (length / L)^(d / (d - 2)) past L.
    SchemeRow("rope+ntk", "RoPE + dynamic NTK (eval)", trained_as="rope",
              eval_spec=lambda d, n, length: posemb.dynamic_ntk_rope_spec(
                  d, ROPE_BASE, 1.0, n, length)),
    SchemeRow("alibi", "ALiBi", lambda s, n: in_attention(lambda i: Alibi(s.n_heads))),
    SchemeRow("t5", "T5 buckets", lambda s, n: in_attention(lambda i: T5(s.n_heads))),
    SchemeRow("xpos", "xPos", lambda s, n: in_attention(
        lambda i: Rotary(posemb.XposSpec(rope_spec(s.head_dim), gamma=0.4, scale_base=512.0)))),
    SchemeRow("fope", "FoPE", lambda s, n: in_attention(lambda i: Fope(fope_config(s, n, i)))),
    SchemeRow("fope-fs", "FoPE: FS only", lambda s, n: in_attention(
        lambda i: Fope(fope_config(s, n, i, floor_ratio=0.0)))),
    SchemeRow("fope-cf", "FoPE: CF only", lambda s, n: in_attention(lambda i: Fope(
        fope_config(s, n, i, drop_clipped=False, d_out=s.head_dim // 2, sigma=0.0),
        frozen=True))),
]
SCHEMES = {row.name: row for row in ROWS}
