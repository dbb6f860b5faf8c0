#!/usr/bin/env python3
"""posemb RoPE side by side with PyTorch's eager HuggingFace-style apply_rotary_pos_emb.

Same shape as the large posemb benchmark, in HuggingFace's layout: q [1, 32, 2048, 128] float32
(batch, heads, seq, head_dim), positions 0..2047, cos/sin prebuilt (not timed), rotate-half
pairing, out of place, one thread (torch.set_num_threads(1)). The posemb figure comes from the
benchmark binary run by this script (rope/table/f32/rotate_half/bhsd/out_of_place: the same
work), so both are measured in one run of this script.

A second torch figure runs the same operations into preallocated tensors (no allocation,
no page faults), as a lower bound for any eager composition of torch ops.

Each side is also timed against a plain copy of the same bytes in its own process (torch:
Tensor.copy_, posemb: memcpy), so the comparison can be read as raw time and as a fraction of
copy bandwidth, which is steadier on a shared machine.

Before timing, the PyTorch result is checked against the rotation evaluated in float64 with
numpy (posemb's binary checks itself against its scalar reference before timing).

Usage (Debian: apt-get install python3-torch python3-numpy):
    /usr/bin/python3 bench/compare_torch.py --bench build/bench/bench/bench_rope
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

SEQ, HEADS, DIM, BASE = 2048, 32, 128, 10000.0
POSEMB_BENCHMARK = "rope/table/f32/rotate_half/bhsd/out_of_place"


def rotate_half(x):
    """HuggingFace transformers (models/llama/modeling_llama.py): [-x2, x1]."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, cos, sin):
    """HuggingFace eager form: q * cos + rotate_half(q) * sin; cos, sin: [seq, head_dim]."""
    return (q * cos) + (rotate_half(q) * sin)


def apply_rotary_preallocated(q, cos, sin, rotated, product, out):
    """The same arithmetic with every intermediate written into preallocated tensors (not how
    HuggingFace writes it): torch's elementwise kernels without allocation and page faults."""
    half = q.shape[-1] // 2
    torch.neg(q[..., half:], out=rotated[..., :half])
    rotated[..., half:].copy_(q[..., :half])
    torch.mul(q, cos, out=product)
    torch.addcmul(product, rotated, sin, out=out)
    return out


def hf_cos_sin():
    """cos/sin [seq, head_dim] the way HuggingFace's LlamaRotaryEmbedding builds them (float32
    inv_freq and angles, emb = cat(freqs, freqs))."""
    inv_freq = 1.0 / (BASE ** (torch.arange(0, DIM, 2, dtype=torch.int64).float() / DIM))
    positions = torch.arange(SEQ, dtype=torch.float32)
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def best_time(fn, repeats, min_seconds=1.0):
    """Smallest wall time of fn() over at least `repeats` calls and `min_seconds`."""
    best, start, calls = float("inf"), time.perf_counter(), 0
    while calls < repeats or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        calls += 1
    return best


def check_torch(q, cos, sin):
    """Largest |torch - float64 rotation| / (|a| + |b|) over a sample of tokens."""
    out = apply_rotary_pos_emb(q, cos, sin).numpy()
    x = q.numpy().astype(np.float64)
    half = DIM // 2
    inv_freq = BASE ** (-np.arange(0, DIM, 2, dtype=np.float64) / DIM)
    worst = 0.0
    for s in range(0, SEQ, 97):
        angle = np.remainder(s * inv_freq, 2 * np.pi)
        c, si = np.cos(angle), np.sin(angle)
        a, b = x[0, :, s, :half], x[0, :, s, half:]
        expected = np.concatenate((a * c - b * si, a * si + b * c), axis=-1)
        norm = np.concatenate((np.abs(a) + np.abs(b),) * 2, axis=-1) + 1e-30
        worst = max(worst, float(np.max(np.abs(out[0, :, s, :] - expected) / norm)))
    return worst


def run_posemb(binary, repetitions):
    """Runs the posemb benchmark binary on the comparable case; returns (seconds, ratio)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [binary, "--benchmark_filter=^" + POSEMB_BENCHMARK + "/manual_time$",
                   "--benchmark_repetitions=%d" % repetitions,
                   "--benchmark_out=" + out.name, "--benchmark_out_format=json"]
        subprocess.run(command, check=True, capture_output=True, text=True)
        report = json.load(open(out.name))
    runs = [b for b in report["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        sys.exit("the posemb benchmark did not run: " + " ".join(command))
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[runs[0]["time_unit"]]
    seconds = min(b["real_time"] for b in runs) * scale
    ratios = sorted(b["ratio"] for b in runs)
    return seconds, ratios[len(ratios) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bench/bench/bench_rope",
                        help="path to the bench_rope binary (bench preset)")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    q = torch.rand(1, HEADS, SEQ, DIM, dtype=torch.float32) * 4 - 2
    cos, sin = hf_cos_sin()
    copy_target = torch.empty_like(q)

    error = check_torch(q, cos, sin)
    print("check torch eager apply_rotary_pos_emb vs float64 rotation: max |err| / (|a|+|b|) = %.2e"
          " (float32 angles, as HuggingFace forms them)" % error)

    rotated, product, out = torch.empty_like(q), torch.empty_like(q), torch.empty_like(q)
    difference = (apply_rotary_preallocated(q, cos, sin, rotated, product, out) -
                  apply_rotary_pos_emb(q, cos, sin)).abs().max().item()
    print("check preallocated variant vs eager: max |difference| = %.2e (rounding order only)"
          % difference)
    if difference > 1e-5:
        sys.exit("the preallocated variant does not compute the eager result")
    torch_seconds = best_time(lambda: apply_rotary_pos_emb(q, cos, sin), args.repeats)
    prealloc_seconds = best_time(
        lambda: apply_rotary_preallocated(q, cos, sin, rotated, product, out), args.repeats)
    torch_copy_seconds = best_time(lambda: copy_target.copy_(q), args.repeats)
    posemb_seconds, posemb_ratio = run_posemb(args.bench, 3)

    moved = 2 * q.numel() * q.element_size()  # bytes read + written by a rotation or a copy
    torch_ratio = torch_copy_seconds / torch_seconds
    print("shape [1, %d, %d, %d] float32, rotate-half, out of place, one thread" % (HEADS, SEQ, DIM))
    print("%-44s %9.3f ms  %6.2f GB/s  %.3f of copy bandwidth" % (
        "torch eager apply_rotary_pos_emb", torch_seconds * 1e3, moved / torch_seconds / 1e9, torch_ratio))
    print("%-44s %9.3f ms  %6.2f GB/s  %.3f of copy bandwidth" % (
        "torch, same ops into preallocated outputs", prealloc_seconds * 1e3,
        moved / prealloc_seconds / 1e9, torch_copy_seconds / prealloc_seconds))
    print("%-44s %9.3f ms  %6.2f GB/s" % ("torch Tensor.copy_ (same bytes)", torch_copy_seconds * 1e3,
                                          moved / torch_copy_seconds / 1e9))
    print("%-44s %9.3f ms  %6.2f GB/s  %.3f of memcpy bandwidth" % (
        "posemb " + POSEMB_BENCHMARK, posemb_seconds * 1e3, moved / posemb_seconds / 1e9, posemb_ratio))
    print("speedup of posemb over torch eager: %.2fx by time, %.2fx as fractions of copy bandwidth"
          % (torch_seconds / posemb_seconds, posemb_ratio / torch_ratio))
    print("speedup of posemb over torch with preallocated outputs: %.2fx by time, %.2fx as fractions"
          " of copy bandwidth" % (prealloc_seconds / posemb_seconds,
                                  posemb_ratio / (torch_copy_seconds / prealloc_seconds)))


if __name__ == "__main__":
    main()
