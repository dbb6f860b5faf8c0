#!/usr/bin/env python3
"""RoPE speed in Python: posemb.apply_rope_ against the peer libraries, as ratios from one run.

Shapes (rotate-half or interleaved, each peer in its own pairing and native layout; one tensor
rotated per call, cos/sin built once where the peer caches them):
  prefill [1, 2048, 32, 128]; decode [32, 1, 32, 128] (32 sequences, one token each at position
  4095) and [1, 1, 32, 128]; float32 and bfloat16; 1 and 2 threads (torch.set_num_threads and
  posemb's threads=; mlx's CPU backend picks its own).
Peers: HF apply_rotary_pos_emb (eager and torch.compile), rotary-embedding-torch, OLM,
x-transformers, torchtune, mlx.fast.rope. HF's function rotates q and k together: it is called with
k a single token so that the time is q's rotation plus a small constant.

Each figure is the best of several timed rounds (the machine may be shared: the load average is
printed). The ratio column is peer time / posemb time (> 1: posemb faster).

    PYTHONPATH=build/peers/python python bench/peers_bench.py [--no-compile]
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np
import torch

import posemb

THETA = 10000.0
SHAPES = {"prefill [1, 2048, 32, 128]": (1, 2048, 32, 128), "decode [32, 1, 32, 128]": (32, 1, 32, 128),
          "decode [1, 1, 32, 128]": (1, 1, 32, 128)}
START = 4095  # decode position


def best(fn, seconds: float = 0.5, rounds: int = 7) -> float:
    """Best per-call time: calls per round sized to ~seconds / rounds."""
    fn()
    once = timeit.timeit(fn, number=1)
    number = max(1, int(seconds / rounds / max(once, 1e-7)))
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number


def positions_of(b: int, s: int) -> torch.Tensor:
    first = 0 if s > 1 else START
    return (torch.arange(s) + first).expand(b, s).contiguous()  # [b, s]


def posemb_fn(x, threads):
    spec = posemb.default_rope_spec(128, THETA)  # rotate-half
    b, s = x.shape[:2]
    pos = positions_of(b, s).numpy() if b > 1 else (0 if s > 1 else START)
    return lambda: posemb.apply_rope_(x, pos, spec, threads=threads)


def hf_fn(x, compiled):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    b, s, h, d = x.shape
    q = x.transpose(1, 2).contiguous()  # [b, h, s, d]
    k = q[:, :1, :1, :].contiguous()
    inv = 1.0 / (THETA ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = positions_of(b, s).float()[..., None] * inv  # [b, s, d/2]
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    if compiled:
        fn = torch.compile(apply_rotary_pos_emb)
        return lambda: fn(q, q, cos, sin)  # compiled: q twice (k must broadcast like q)
    return lambda: apply_rotary_pos_emb(q, k, cos, sin)


def ret_fn(x):
    from rotary_embedding_torch import RotaryEmbedding

    rope = RotaryEmbedding(x.shape[-1])
    q = x.transpose(1, 2).contiguous()  # [b, h, s, d]
    offset = 0 if x.shape[1] > 1 else START
    return lambda: rope.rotate_queries_or_keys(q, offset=offset)


def olm_fn(x):
    from olm.nn.embeddings.positional.rope import RotaryPositionalEmbedding

    rope = RotaryPositionalEmbedding(x.shape[-1], max_seq_len=START + 1)
    pos = positions_of(*x.shape[:2])
    return lambda: rope(x, pos)  # x: [b, s, h, d]


def xt_fn(x):
    from x_transformers.x_transformers import RotaryEmbedding, apply_rotary_pos_emb

    rope = RotaryEmbedding(x.shape[-1])
    q = x.transpose(1, 2).contiguous()  # [b, h, s, d]
    freqs, scale = rope(positions_of(*x.shape[:2]))  # [b, s, d], built once
    return lambda: apply_rotary_pos_emb(q, freqs, scale)


def tt_fn(x):
    from torchtune.modules import RotaryPositionalEmbeddings

    rope = RotaryPositionalEmbeddings(x.shape[-1], max_seq_len=START + 1, base=int(THETA))
    pos = positions_of(*x.shape[:2])
    return lambda: rope(x, input_pos=pos)  # x: [b, s, h, d]


def mlx_fn(x):
    import mlx.core as mx

    dtype = {torch.float32: mx.float32, torch.bfloat16: mx.bfloat16}[x.dtype]
    a = mx.array(x.transpose(1, 2).float().numpy()).astype(dtype)  # [b, h, s, d]
    mx.eval(a)
    offset = 0 if x.shape[1] > 1 else START

    def run():
        mx.eval(mx.fast.rope(a, x.shape[-1], traditional=False, base=THETA, scale=1.0, offset=offset))
    return run


def peers(compile_hf: bool):
    out = [("HF apply_rotary_pos_emb eager", lambda x, t: hf_fn(x, False))]
    if compile_hf:
        out.append(("HF apply_rotary_pos_emb torch.compile", lambda x, t: hf_fn(x, True)))
    out += [("rotary-embedding-torch", lambda x, t: ret_fn(x)), ("OLM RotaryPositionalEmbedding", lambda x, t: olm_fn(x)),
            ("x-transformers", lambda x, t: xt_fn(x)), ("torchtune RotaryPositionalEmbeddings", lambda x, t: tt_fn(x)),
            ("mlx.fast.rope", lambda x, t: mlx_fn(x))]
    return out


def main(argv) -> int:
    parser = argparse.ArgumentParser(description="posemb vs the peer libraries, RoPE in Python")
    parser.add_argument("--no-compile", action="store_true", help="skip HF under torch.compile")
    parser.add_argument("--shape", choices=["prefill", "decode"], help="only the shapes starting so")
    parser.add_argument("--threads", type=int, choices=[1, 2], help="only this thread count")
    args = parser.parse_args(argv[1:])
    print(f"load average at start: {os.getloadavg()}  (cpus: {os.cpu_count()})")
    print(f"{'shape':28s} {'dtype':9s} thr {'peer':40s} {'peer us':>10s} {'posemb us':>10s} {'ratio':>7s}")
    for shape_name, shape in SHAPES.items():
        if args.shape and not shape_name.startswith(args.shape):
            continue
        for dtype in (torch.float32, torch.bfloat16):
            for threads in [args.threads] if args.threads else (1, 2):
                torch.set_num_threads(threads)
                x = torch.randn(*shape).to(dtype)
                ours = best(posemb_fn(x.clone(), threads))
                fastest = None
                for name, make in peers(not args.no_compile):
                    try:
                        t = best(make(x.clone(), threads))
                    except Exception as e:  # noqa: BLE001
                        print(f"{shape_name:28s} {str(dtype)[6:]:9s} {threads:3d} {name:40s} error: "
                              f"{type(e).__name__}: {str(e)[:80]}")
                        continue
                    fastest = min(fastest or (t, name), (t, name))
                    print(f"{shape_name:28s} {str(dtype)[6:]:9s} {threads:3d} {name:40s} {t * 1e6:10.1f} "
                          f"{ours * 1e6:10.1f} {t / ours:7.2f}")
                if fastest:
                    print(f"  -> fastest peer {fastest[1]}: posemb {fastest[0] / ours:.2f}x")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
