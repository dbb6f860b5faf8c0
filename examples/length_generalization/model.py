"""A small decoder-only transformer whose positions come from one `Scheme` (schemes.py).

Pre-norm blocks (LayerNorm, causal self-attention, LayerNorm, GELU MLP of width 4 d_model), tied
input and output embeddings. Attention is written out (scores, bias, causal mask, softmax) so that
every scheme acts where it belongs: an additive table on the token embeddings, a rotation of q and
k, or a bias on the scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ModelShape:
    vocab: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


class Attention(nn.Module):
    def __init__(self, shape: ModelShape, scheme):
        super().__init__()
        self.shape = shape
        self.scheme = scheme
        self.qkv = nn.Linear(shape.d_model, 3 * shape.d_model, bias=False)
        self.out = nn.Linear(shape.d_model, shape.d_model, bias=False)

    def project(self, x: torch.Tensor, positions: torch.Tensor):
        """x [B, S, d_model] -> q, k, v [B, S, H, D], q and k positioned by the scheme."""
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.shape.n_heads, self.shape.head_dim).unbind(2)
        q, k = self.scheme.rotate(q, k, positions)
        return q, k, v

    def scores(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """q, k [B, S, H, D] -> the logits before the causal mask [B, H, S, S], bias included."""
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.shape.head_dim)
        bias = self.scheme.bias(positions)  # [H, S, S] or None
        return scores if bias is None else scores + bias

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # x: [B, S, d_model]; positions: [S] int64
        b, s, _ = x.shape
        q, k, v = self.project(x, positions)
        scores = self.scores(q, k, positions)
        causal = torch.ones(s, s, dtype=torch.bool).tril()
        attn = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        y = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(b, s, -1)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, shape: ModelShape, scheme):
        super().__init__()
        self.norm1 = nn.LayerNorm(shape.d_model)
        self.attn = Attention(shape, scheme)
        self.norm2 = nn.LayerNorm(shape.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(shape.d_model, 4 * shape.d_model),
            nn.GELU(),
            nn.Linear(4 * shape.d_model, shape.d_model),
        )

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), positions)
        return x + self.mlp(self.norm2(x))


class TinyLm(nn.Module):
    """tokens [B, S] -> logits [B, S, vocab]; each layer's scheme from `make_scheme(layer)`."""

    def __init__(self, shape: ModelShape, make_scheme):
        super().__init__()
        self.shape = shape
        self.embed = nn.Embedding(shape.vocab, shape.d_model)
        nn.init.normal_(self.embed.weight, std=0.02)  # GPT-2's init: tied logits start near 0
        self.absolute = make_scheme(-1)  # the scheme's table on the embeddings (or nothing)
        self.blocks = nn.ModuleList(Block(shape, make_scheme(i)) for i in range(shape.n_layers))
        self.norm = nn.LayerNorm(shape.d_model)

    def embed_positions(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """tokens [B, S] -> the first block's input [B, S, d_model] (the absolute table added)."""
        return self.absolute.embed(self.embed(tokens), positions)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], dtype=torch.int64)
        x = self.embed_positions(tokens, positions)
        for block in self.blocks:
            x = block(x, positions)
        return self.norm(x) @ self.embed.weight.T
