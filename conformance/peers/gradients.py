"""Gradients of q and k through posemb against autograd through the peers' own rotary code.

    PYTHONPATH=build/test/python python conformance/peers/gradients.py [--out DIR]

For each peer (rotary-embedding-torch 0.9.1, torchtune 0.6.1; both rotate interleaved pairs) q
and k in float64 go through the peer's own forward with autograd and through posemb.nn.Rotary
(posemb's custom op, its backward `rotate_backward`, docs/training.md); with a seeded upstream
gradient g, L = sum(g_q * q_out) + sum(g_k * k_out), both gradients are compared per feature:
|posemb - peer| <= 1e-6 * |peer's gradient pair| (the relative bound of issue 48's oracles).

The peers' frequency tables are set to posemb's float64 frequencies (default_rope_spec(64,
10000).inv_freq), because their own tables round the angles to float32 (rotary-embedding-torch's
`freqs` parameter is float32; torchtune's build_rope_cache ends in `.float()`), an error of
u * p * w the rotation tables of conformance/peers/matrix.py already report. What is compared is
the peers' rotation and its autograd: rotary-embedding-torch's rotate_queries_or_keys
(apply_rotary_emb, in float64 throughout) and torchtune's RotaryPositionalEmbeddings.forward
(which rounds x to float32 itself, `x.float()`, a relative 6e-8 well inside the bound).

A mathematical property completes each case: the backward of a rotation is a rotation, so every
pair of posemb's gradient has the norm of the upstream gradient's pair (to 1e-12 relative).
Rows in the one report format (conformance/report.py); exit status non-zero on any non-pass row.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # conformance/: report.py

import report  # noqa: E402
import posemb  # noqa: E402
import posemb.nn  # noqa: E402

D, BASE, HEADS, KV_HEADS = 64, 10000.0, 4, 2
RELATIVE = 1e-6  # per feature, relative to the norm of its pair in the peer's gradient
NORM_RELATIVE = 1e-12


def spec():
    return posemb.default_rope_spec(D, BASE, pairing="interleaved")


def inv_freq() -> torch.Tensor:
    return torch.tensor(np.asarray(spec().inv_freq), dtype=torch.float64)  # [D / 2]


def pair_norm(t: torch.Tensor) -> torch.Tensor:
    """Norm of each interleaved pair, repeated over both of its features: [..., D] -> [..., D]."""
    pairs = t.reshape(*t.shape[:-1], -1, 2)
    return pairs.norm(dim=-1, keepdim=True).expand_as(pairs).reshape(t.shape)


def grads(rotate, q: torch.Tensor, k: torch.Tensor, g_q: torch.Tensor, g_k: torch.Tensor):
    """(q_out, k_out, dL/dq, dL/dk) of L = sum(g_q * rotate(q)) + sum(g_k * rotate(k))."""
    q, k = q.clone().requires_grad_(True), k.clone().requires_grad_(True)
    q_out, k_out = rotate(q, k)
    ((g_q * q_out).sum() + (g_k * k_out).sum()).backward()
    return q_out.detach(), k_out.detach(), q.grad, k.grad


def compare(case: str, check: str, mine: torch.Tensor, peer: torch.Tensor) -> report.Row:
    error = (mine - peer).abs()
    bound = RELATIVE * pair_norm(peer)
    relative = float((error / pair_norm(peer).clamp_min(1e-300)).max())
    bad = int((error > bound).sum())
    return report.Row(case, check, "fail" if bad else "pass", relative, RELATIVE,
                      f"largest |delta| / |pair| over {error.numel()} values"
                      + (f"; {bad} beyond the bound" if bad else ""))


def norm_row(case: str, grad: torch.Tensor, upstream: torch.Tensor, name: str) -> report.Row:
    want = pair_norm(upstream)
    relative = float(((pair_norm(grad) - want).abs() / want).max())
    return report.Row(case, f"{name}_pair_norm", "pass" if relative <= NORM_RELATIVE else "fail",
                      relative, NORM_RELATIVE, "posemb's gradient pairs keep the upstream pairs' norms")


def rows_for(case: str, peer_rotate, mine_rotate, shapes) -> list:
    gen = torch.Generator().manual_seed(0)
    q, k, g_q, g_k = (torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes)
    peer = grads(peer_rotate, q, k, g_q, g_k)
    mine = grads(mine_rotate, q, k, g_q, g_k)
    rows = [compare(case, check, m, p) for check, m, p in
            zip(("forward_q", "forward_k", "grad_q", "grad_k"), mine, peer)]
    return rows + [norm_row(case, mine[2], g_q, "grad_q"), norm_row(case, mine[3], g_k, "grad_k")]


def rotary_embedding_torch_rows() -> list:
    """rotate_queries_or_keys on [batch, heads, seq, D] at positions OFFSET .. OFFSET + S - 1."""
    from rotary_embedding_torch import RotaryEmbedding

    offset, seq = 4090, 16
    module = RotaryEmbedding(D, theta=BASE, cache_if_possible=False)
    module.freqs.data = inv_freq()

    def peer(q, k):
        return (module.rotate_queries_or_keys(q, offset=offset),
                module.rotate_queries_or_keys(k, offset=offset))

    rotary = posemb.nn.Rotary(spec(), layout="bhsd")
    positions = torch.arange(offset, offset + seq)

    def mine(q, k):
        return rotary(q, k, positions)

    shapes = [(2, HEADS, seq, D), (2, KV_HEADS, seq, D)] * 2
    return rows_for("rotary-embedding-torch", peer, mine, shapes)


def torchtune_rows() -> list:
    """RotaryPositionalEmbeddings.forward on [batch, seq, heads, D] at per-row positions."""
    from torchtune.modules import RotaryPositionalEmbeddings

    positions = torch.tensor([list(range(8)) + list(range(4090, 4098)) + list(range(9000, 9008)),
                              list(range(100, 124))])  # [batch 2, seq 24]
    max_len = int(positions.max()) + 1
    module = RotaryPositionalEmbeddings(D, max_seq_len=max_len, base=int(BASE))
    angle = torch.arange(max_len, dtype=torch.float64)[:, None] * inv_freq()[None, :]
    module.cache = torch.stack([angle.cos(), angle.sin()], dim=-1)  # [max_len, D / 2, 2]

    def peer(q, k):
        return module(q, input_pos=positions), module(k, input_pos=positions)

    rotary = posemb.nn.Rotary(spec(), layout="bshd")

    def mine(q, k):
        return rotary(q, k, positions)

    seq = positions.shape[1]
    shapes = [(2, seq, HEADS, D), (2, seq, KV_HEADS, D)] * 2
    return rows_for("torchtune", peer, mine, shapes)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/conformance/peers-gradients")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for case, run in (("rotary-embedding-torch", rotary_embedding_torch_rows),
                      ("torchtune", torchtune_rows)):
        try:
            rows += run()
        except Exception as error:  # reported as the case's error row, never dropped
            rows.append(report.Row(case, "run", "error", detail=f"{type(error).__name__}: {error}"))
    versions = {name: version(name) for name in ("torch", "rotary-embedding-torch", "torchtune")}
    report.write(rows, args.out, "Gradients of q and k: posemb against the peers' autograd", versions)
    counts = report.summary(rows)
    print(f"peer gradients: {counts['checks']} checks: {counts['pass']} pass, {counts['fail']} fail, "
          f"{counts['error']} error")
    for r in rows:
        print(f"  {r.case:24s} {r.check:18s} {r.status:5s} {r.max_error!s:>24s}  {r.detail}")
    return report.exit_status(rows)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
