"""Each peer library's positional schemes behind one calling convention, and posemb's counterparts.

A rotary cell is a pair of functions on the same input: x [S, D] (S copies of one head vector, in
the dtype under test) at int positions [S], returning [S, D]:
  peer(x, positions)    the peer library's own call, with its parameters mapped from the cell's
  repro(x, positions)   posemb's documented way to produce the peer's output (its float32 angles,
                        its rounded positions, its frequencies), None where posemb's exact call is it
The exact reference is posemb's own scheme, in float64 (`exact` below).

Shapes follow each peer: OLM and torchtune [batch, seq, heads, dim], rotary-embedding-torch and
x-transformers [batch, heads, seq, dim], HF [batch, heads, seq, dim], mlx [batch, heads, seq, dim].
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import types

import numpy as np
import torch

import posemb

D = 64
BASE = 10000.0


def as_bshd(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(1, x.shape[0], 1, x.shape[1]).contiguous()  # [S, D] -> [1, S, 1, D]


def posemb_rope(x: torch.Tensor, positions, spec) -> torch.Tensor:
    """posemb.apply_rope on x [S, D] at positions [S] (int64 or float64), in x's dtype."""
    return posemb.apply_rope(as_bshd(x), positions, spec).reshape(x.shape)


def exact(x: torch.Tensor, positions: np.ndarray, spec) -> torch.Tensor:
    """posemb's exact rotation of x (widened to float64): the reference every peer is held to."""
    return posemb_rope(x.double(), positions, spec)


def hf32(spec_builder, *args, **kwargs):
    """The same builder with transformers' float32 angle arithmetic (what most peers compute)."""
    return spec_builder(*args, angles="hf-float32", **kwargs)


def rounded_positions(positions: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """Positions as a peer that forms them in the input's dtype sees them (float64 for posemb)."""
    return torch.from_numpy(positions).to(dtype).double().numpy()


# ---- OLM (openlanguagemodel 2.2.1): interleaved pairs, float32 angles from a precomputed table ----


def olm_module(cls, max_position: int, **kwargs):
    from olm.nn.embeddings.positional import rope as olm_rope
    from olm.nn.embeddings.positional.llama3_rope import Llama3RotaryPositionalEmbedding

    classes = {"rope": olm_rope.RotaryPositionalEmbedding, "partial": olm_rope.PartialRotaryPositionalEmbedding,
               "scaled": olm_rope.ScaledRotaryPositionalEmbedding, "llama3": Llama3RotaryPositionalEmbedding}
    return classes[cls](D, max_seq_len=max_position + 1, **kwargs)


def olm_call(module):
    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        # x: [1, S, 1, D]; seq_positions: [1, S]
        return module(as_bshd(x), torch.from_numpy(positions).view(1, -1)).reshape(x.shape)
    return run


# ---- rotary-embedding-torch 0.9.1: interleaved pairs; positions formed in x's dtype ------------------


def ret_call(module):
    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        # One token per call at offset p, as a KV-cache decode step: x [1, heads 1, seq 1, D].
        rows = [module.rotate_queries_or_keys(x[i].view(1, 1, 1, -1), offset=int(p)).view(-1)
                for i, p in enumerate(positions)]
        return torch.stack(rows)
    return run


# ---- x-transformers 2.31.10: interleaved pairs, float32 angles, arbitrary positions -----------------


def xt_call(module):
    from x_transformers.x_transformers import apply_rotary_pos_emb

    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        freqs, scale = module(torch.from_numpy(positions))  # freqs: [1, S, rotary_dim]
        # x: [batch 1, heads 1, S, D]
        return apply_rotary_pos_emb(x.view(1, 1, *x.shape), freqs, scale).reshape(x.shape)
    return run


# ---- torchtune 0.6.1: interleaved pairs, float32 cache, computes in float32 ---------------------------


def tt_call(module):
    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        # x: [1, S, 1, D]; input_pos: [1, S]
        return module(as_bshd(x), input_pos=torch.from_numpy(positions).view(1, -1)).reshape(x.shape)
    return run


# ---- mlx 0.32.4: mx.fast.rope (and nn.RoPE, its wrapper); one scalar offset per call -----------------


def mlx_call(dims: int, traditional: bool, base: float = BASE, scale: float = 1.0, use_nn: bool = False):
    import mlx.core as mx
    import mlx.nn as mnn

    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        dtype = {torch.float32: mx.float32, torch.bfloat16: mx.bfloat16}[x.dtype]
        rope = mnn.RoPE(dims, traditional=traditional, base=base, scale=scale) if use_nn else None
        rows = []
        for i, p in enumerate(positions):
            a = mx.array(x[i].float().numpy()).astype(dtype).reshape(1, 1, 1, -1)  # [B, heads, T, D]
            out = rope(a, offset=int(p)) if use_nn else mx.fast.rope(
                a, dims, traditional=traditional, base=base, scale=scale, offset=int(p))
            rows.append(torch.from_numpy(np.array(out.astype(mx.float32))).view(-1))
        return torch.stack(rows).to(x.dtype)
    return run


# ---- HuggingFace transformers 5.25.0: LlamaRotaryEmbedding + apply_rotary_pos_emb (rotate half) ------


def hf_call(rope_parameters: dict, max_position_embeddings: int = 2048, partial: float = 1.0):
    """Llama's rotary embedding; with partial < 1 Phi's (Llama's ignores partial_rotary_factor), whose
    attention rotates the first D * partial features and passes the rest (modeling_phi.PhiAttention)."""
    from transformers import LlamaConfig, PhiConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    from transformers.models.phi.modeling_phi import PhiRotaryEmbedding

    params = dict(rope_parameters)
    if partial < 1.0:
        params["partial_rotary_factor"] = partial
        module = PhiRotaryEmbedding(PhiConfig(hidden_size=D, num_attention_heads=1, partial_rotary_factor=partial,
                                              max_position_embeddings=max_position_embeddings, rope_parameters=params))
    else:
        module = LlamaRotaryEmbedding(LlamaConfig(hidden_size=D, num_attention_heads=1, head_dim=D,
                                                  max_position_embeddings=max_position_embeddings, rope_parameters=params))
    rotary = int(D * partial)

    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        ids = torch.from_numpy(positions).view(1, -1)
        q = x.view(1, 1, *x.shape)  # [batch 1, heads 1, S, D]
        cos, sin = module(q, ids)
        rot, rest = q[..., :rotary], q[..., rotary:]
        out, _ = apply_rotary_pos_emb(rot, rot, cos, sin)
        return torch.cat([out, rest], dim=-1).reshape(x.shape)
    return run


def olm_ntk_base(base: float, factor: float, d: int) -> float:
    """OLM's and the peers' NTK-aware base: base * factor^(d/(d-2)) (posemb.ntk_rope_spec's formula)."""
    return base * factor ** (d / (d - 2))


def olm_yarn_inv_freq(factor: float, beta: float = 32.0) -> np.ndarray:
    """OLM's `yarn` frequencies, written out: a hard switch on wavelength, no ramp, no attention factor.
    Pairs with wavelength > beta keep inv_i; the others (the fast pairs) get inv_i / factor."""
    inv = 1.0 / (torch.tensor(BASE) ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    return torch.where(2 * math.pi / inv > beta, inv, inv / factor).double().numpy()


# ---- timm 1.0.31: timm/layers/pos_embed_sincos.py (vision RoPE over a feature-map shape) -----------


def timm_rope_module():
    """timm's own timm/layers/pos_embed_sincos.py, imported without running timm/__init__.py.

    The package's __init__ (through timm.layers.create_norm and norm_act) imports torchvision for
    FrozenBatchNorm2d, and PyPI's torchvision is the CUDA build (its _C needs libc10_cuda.so). The
    rotary module itself needs only torch and timm.layers' _fx (torchvision optional there), grid
    and trace_utils, which are loaded from the installed package as they are.
    """
    if "timm.layers.pos_embed_sincos" in sys.modules:
        return sys.modules["timm.layers.pos_embed_sincos"]
    root = os.path.dirname(importlib.util.find_spec("timm").origin)
    for name, folder in (("timm", root), ("timm.layers", os.path.join(root, "layers"))):
        package = types.ModuleType(name)
        package.__path__ = [folder]  # a package whose __init__ is not run; submodules load as usual
        sys.modules.setdefault(name, package)
    return importlib.import_module("timm.layers.pos_embed_sincos")


def timm_call(dim: int):
    """timm's table over the 1-D feature shape [max position + 1], gathered at the positions."""
    def run(x: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        rot = timm_rope_module()
        sin, cos = rot.build_rotary_pos_embed([int(positions.max()) + 1], dim=2 * dim, in_pixels=False,
                                              temperature=BASE)  # [n, dim] each
        index = torch.from_numpy(positions)
        return rot.apply_rot_embed(x, sin[index], cos[index])  # x: [S, dim]
    return run
