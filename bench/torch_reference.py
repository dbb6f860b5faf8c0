#!/usr/bin/env python3
"""HuggingFace-style rotary embedding in PyTorch, to compare with `posemb apply`.

For a model's config.json and an input X.npy, rotates X the way HuggingFace transformers does
(LlamaRotaryEmbedding + apply_rotary_pos_emb, or GPT-J's interleaved rotate_every_two) with the
frequencies and attention factor that `posemb freqs` reports for the config, and writes Y.npy:

    angles = positions (float) x inv_freq            # HF: float32, autocast off
    rotate_half:  emb = cat(angles, angles); cos = cos(emb) * s; sin = sin(emb) * s
                  y = x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x2, x1)
    interleaved:  cos, sin repeated twice per pair (repeat_interleave)
                  y = x * cos + rotate_every_two(x) * sin,  rotate_every_two = (-x1, x0) per pair

Only the first rotary_dim features of each head rotate (partial rotary); the rest pass through.
The sequence length given to `posemb freqs` (dynamic NTK, LongRoPE) is --seq-len, else
max(position) + 1, as `posemb apply` and HuggingFace use. FoPE and xPos configs are not handled.

    posemb apply CONFIG --input x.npy --output y_posemb.npy
    python3 bench/torch_reference.py CONFIG --input x.npy --output y_torch.npy --compare y_posemb.npy

Needs Debian's python3-torch and python3-numpy. Nothing in the build depends on this script.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch


def find_posemb(explicit):
    if explicit:
        return explicit
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for preset in ("release", "test"):
        candidate = os.path.join(root, "build", preset, "tools", "posemb")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("posemb")
    if found:
        return found
    sys.exit("torch_reference.py: error: posemb not found; pass --posemb PATH")


def posemb_freqs(posemb, config, seq_len):
    """`posemb freqs CONFIG --seq-len N` as a dict: inv_freq, attention_scale, rotary_dim, pairing."""
    command = [posemb, "freqs", config, "--seq-len", str(seq_len)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("torch_reference.py: error: " + " ".join(command) + ": " + result.stderr.strip())
    return json.loads(result.stdout)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_every_two(x):
    x0 = x[..., 0::2]
    x1 = x[..., 1::2]
    return torch.stack((-x1, x0), dim=-1).flatten(-2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="the model's config.json")
    parser.add_argument("--input", required=True, help="X.npy, float32 or float64")
    parser.add_argument("--output", required=True, help="Y.npy, X's shape and dtype")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--positions", help="P.npy, int64 [seq] or [batch, seq]")
    group.add_argument("--offset", type=int, default=0, help="position of the first token")
    parser.add_argument("--layout", choices=["bshd", "bhsd"], default="bshd")
    parser.add_argument("--pairing", choices=["interleaved", "rotate_half"],
                        help="override the config's pairing")
    parser.add_argument("--seq-len", type=int, help="default: max(position) + 1")
    parser.add_argument("--angle-dtype", choices=["float32", "float64"], default="float32",
                        help="dtype of inv_freq, the angles and cos/sin (HuggingFace: float32)")
    parser.add_argument("--posemb", help="path of the posemb tool (default: build/*/tools/posemb)")
    parser.add_argument("--compare", help="Y.npy to compare with (e.g. posemb apply's output)")
    args = parser.parse_args()

    x_np = np.load(args.input)
    if x_np.dtype not in (np.float32, np.float64) or x_np.ndim != 4:
        sys.exit(f"torch_reference.py: error: {args.input}: expected float32/float64 4-D, "
                 f"got {x_np.dtype} {list(x_np.shape)}")
    x = torch.from_numpy(x_np)
    if args.layout == "bhsd":
        x = x.transpose(1, 2)  # work in [batch, seq, heads, head_dim]
    batch, seq = x.shape[0], x.shape[1]
    if args.positions:
        positions = torch.from_numpy(np.load(args.positions)).to(torch.int64).reshape(-1, seq)
    else:
        positions = (torch.arange(seq, dtype=torch.int64) + args.offset).reshape(1, seq)
    positions = positions.expand(batch, seq)
    seq_len = args.seq_len if args.seq_len is not None else int(positions.max()) + 1

    freqs = posemb_freqs(find_posemb(args.posemb), args.config, seq_len)
    pairing = args.pairing or freqs["pairing"]
    rotary_dim = freqs["rotary_dim"]
    angle_dtype = getattr(torch, args.angle_dtype)
    inv_freq = torch.tensor(freqs["inv_freq"], dtype=torch.float64).to(angle_dtype)

    # [batch, seq, rotary_dim / 2], then broadcast over heads.
    angles = positions.to(angle_dtype)[..., None] * inv_freq
    if pairing == "rotate_half":
        emb = torch.cat((angles, angles), dim=-1)
        rotate = rotate_half
    else:
        emb = torch.repeat_interleave(angles, 2, dim=-1)
        rotate = rotate_every_two
    scale = freqs["attention_scale"]
    cos = (emb.cos() * scale)[:, :, None, :].to(x.dtype)
    sin = (emb.sin() * scale)[:, :, None, :].to(x.dtype)

    x_rot, x_pass = x[..., :rotary_dim], x[..., rotary_dim:]
    y = torch.cat((x_rot * cos + rotate(x_rot) * sin, x_pass), dim=-1)
    if args.layout == "bhsd":
        y = y.transpose(1, 2)
    y_np = np.ascontiguousarray(y.numpy())
    np.save(args.output, y_np)

    if args.compare:
        other = np.load(args.compare)
        if other.shape != y_np.shape:
            sys.exit(f"torch_reference.py: error: {args.compare}: shape {list(other.shape)}, "
                     f"expected {list(y_np.shape)}")
        diff = np.abs(other.astype(np.float64) - y_np.astype(np.float64))
        print(f"max |torch - {os.path.basename(args.compare)}| = {diff.max():.3g} over {diff.size} "
              f"values (max |y| = {np.abs(y_np).max():.3g}; positions {int(positions.min())}.."
              f"{int(positions.max())}, {pairing}, angles in {args.angle_dtype})")


if __name__ == "__main__":
    main()
