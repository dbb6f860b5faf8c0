#!/usr/bin/env python3
"""Forward + backward of a RoPE rotation of q and k, as ratios from one run: posemb's custom op
(posemb.apply_rope on tensors that require grad: the C++ kernel forward, its transpose backward)
and posemb's composite path (PyTorch ops fed by posemb's tables: what a GPU runs) against
transformers' eager code (LlamaRotaryEmbedding for cos/sin, then apply_rotary_pos_emb).

Shapes [batch, seq, heads, head_dim]: prefill [1, 2048, 32, 128] and decode [32, 1, 32, 128]
(k with 8 heads), float32 and bfloat16, with torch's threads set to 1 and 2. Each figure is the
best of several rounds (the machine may be shared); the load average is printed with them.
Goals (docs/training.md): posemb at most 1/2 of HF eager's time on prefill and no slower on
decode; the composite path within 1.5x of HF eager.

    PYTHONPATH=build/test/python build/venv/bin/python bench/training_bench.py
"""
import os
import timeit

import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

import posemb
from posemb import _ops


def best(fn, number, rounds=5):
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number


def case(batch, seq, dtype):
    q = torch.randn(batch, seq, 32, 128, dtype=dtype, requires_grad=True)
    k = torch.randn(batch, seq, 8, 128, dtype=dtype, requires_grad=True)
    positions = torch.arange(4096 - seq, 4096).expand(batch, seq)
    return q, k, positions


def hf_step(rotary, q, k, positions):
    cos, sin = rotary(q, positions)
    hq, hk = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2)  # BSHD
    (hq.sum() + hk.sum()).backward()


def posemb_step(spec, q, k, positions):
    (posemb.apply_rope(q, positions, spec).sum() + posemb.apply_rope(k, positions, spec).sum()).backward()


def composite_step(spec, q, k, positions):
    qr = _ops.composite_rope(q, positions, 0, spec, "bshd", _ops.FORWARD)
    kr = _ops.composite_rope(k, positions, 0, spec, "bshd", _ops.FORWARD)
    (qr.sum() + kr.sum()).backward()


def main():
    config = LlamaConfig(hidden_size=4096, num_attention_heads=32, rope_theta=500000.0)
    rotary = LlamaRotaryEmbedding(config)
    spec = posemb.default_rope_spec(128, 500000.0)
    print(f"load average {os.getloadavg()[0]:.1f}; time ratios (lower is better for posemb)")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for name, batch, seq, number in (("prefill", 1, 2048, 3), ("decode", 32, 1, 200)):
            for dtype in (torch.float32, torch.bfloat16):
                q, k, positions = case(batch, seq, dtype)
                hf = best(lambda: hf_step(rotary, q, k, positions), number)
                ours = best(lambda: posemb_step(spec, q, k, positions), number)
                composite = best(lambda: composite_step(spec, q, k, positions), number)
                label = f"{name} [{batch}, {seq}, 32, 128] {str(dtype)[6:]} threads {threads}"
                print(f"{label}: HF eager {hf * 1e3:.3f} ms; posemb / HF {ours / hf:.2f}; "
                      f"composite / HF {composite / hf:.2f}")


if __name__ == "__main__":
    main()
