"""The gap-5 drift of a trained model: the drift table's measurement (examples/drift_table.cpp,
docs/examples.md) applied to the model's first attention layer.

The drift table moves one query/key pair along the sequence with its gap fixed at 5 and reports
the spread (max - min) of the score s(n + 5, n) over the key position n; a scheme whose score
depends on the gap alone has spread 0. Here the pair is every pair of token embeddings (a at the
query position, b at the key position) of the trained model, through its absolute table, the first
block's LayerNorm, Wq, Wk, its rotation and its bias, in every head:

    s_abh(n) = q_h(a, n + 5) . k_h(b, n) / sqrt(D) + bias_h(n + 5, n)       n = 0 .. length - 6

and the figure is the spread over n, averaged over (a, b, h): the logits' drift, in nats.
"""

from __future__ import annotations

import math

import torch

import posemb

GAP = 5


@torch.no_grad()
def gap5_drift(model, length: int) -> float:
    """The mean over token pairs and first-layer heads of max_n s - min_n s; NaN where the scheme
    has no position past the training length (a learned table)."""
    vocab = model.shape.vocab
    positions = torch.arange(length, dtype=torch.int64)
    tokens = torch.arange(vocab)[:, None].expand(vocab, length)  # [V, S]: token a everywhere
    block = model.blocks[0]
    try:
        x = block.norm1(model.embed_positions(tokens, positions))  # [V, S, d_model]
    except posemb.Error:
        return math.nan
    q, k, _ = block.attn.project(x, positions)  # [V, S, H, D]
    scores = torch.einsum("anhd,bnhd->abhn", q[:, GAP:], k[:, :-GAP])  # [V, V, H, S - 5]
    scores = scores / math.sqrt(model.shape.head_dim)
    bias = block.attn.scheme.bias(positions)  # [H, S, S] or None
    if bias is not None:
        scores = scores + torch.diagonal(bias, offset=-GAP, dim1=1, dim2=2)  # [H, S - 5]
    return float((scores.amax(-1) - scores.amin(-1)).mean())
