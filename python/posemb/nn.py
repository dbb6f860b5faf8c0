"""posemb's positional schemes as torch.nn modules, for training codebases.

Each module calls posemb's custom ops (posemb/_ops.py), so gradients flow to x and to the
module's parameters, and torch.compile keeps each op as one node. state_dict keys follow the
checkpoints that have the parameter: GPT-2's `wpe.weight` (name the module `wpe`), T5's
`relative_attention_bias.weight`, FoPE's `sin_coef` / `cos_coef` (the reference's
`pos_emb.sin_coef`, [n_kv_heads, D_in, D_out]).

The swap from transformers' Llama code (two lines):

    # before: cos, sin = self.rotary_emb(hidden_states, position_ids)
    #         q, k = apply_rotary_pos_emb(q, k, cos, sin)            # q, k: [b, heads, s, d]
    rotary = posemb.nn.Rotary(posemb.load_model("config.json").layers[0].rope_spec(), "bhsd")
    q, k = rotary(q, k, position_ids)
"""
from typing import List, Optional, Tuple

import numpy as np
import torch
from torch import Tensor

from . import _ops, _posemb
from ._posemb import Error


class Rotary(torch.nn.Module):
    """A rotary scheme with no parameters: RoPE (any scaled variant, a RopeSpec or RopeTable; an
    HfFloat32Rope for transformers' float32 arithmetic, forward and backward as autograd gives them
    through transformers' code), M-RoPE (MropeSpec), vision RoPE (VisionRope) or xPos (XposSpec:
    queries and keys each get their own magnitude). forward(q, k, positions) -> (q, k) rotated,
    differentiable in q and k.

    Swap from transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb (q, k: [b, heads, s, d]):
        rotary = posemb.nn.Rotary(posemb.load_model(path).layers[i].rope_spec(), layout="bhsd")
        q, k = rotary(q, k, position_ids)
    """

    _KIND = {"RopeSpec": "rope", "RopeTable": "rope", "HfFloat32Rope": "rope",
             "MropeSpec": "mrope", "VisionRope": "vision", "XposSpec": "xpos"}

    def __init__(self, source, layout: str = "bshd", threads: int = 1) -> None:
        super().__init__()
        kind = self._KIND.get(type(source).__name__)
        if kind is None:
            raise Error(f"source = {type(source).__name__}: expected one of "
                        f"{', '.join(self._KIND)} (FoPE: posemb.nn.Fope)")
        self.source, self.kind, self.layout, self.threads = source, kind, layout, threads
        roles = ("query", "key") if kind == "xpos" else (None, None)
        self._q_key = _ops.rotation_key(kind, source, roles[0])
        self._k_key = _ops.rotation_key(kind, source, roles[1])

    @classmethod
    def from_model(cls, model, layer: int, seq_len: Optional[int] = None,
                   layout: str = "bshd", angles: str = "exact") -> "Rotary":
        """Layer `layer` of a posemb.load_model(...) result (its rope or M-RoPE spec; with
        angles='hf-float32' its HfFloat32Rope, transformers' float32 arithmetic)."""
        positions = model.layers[layer]
        if positions.rope is None:
            raise Error(f"layer = {layer}: expected a layer with rotary positions "
                        f"(its kind is {positions.kind!r})")
        if model.mrope_index_rules is not None:
            return cls(positions.mrope_spec(seq_len), layout)
        return cls(positions.rope_spec(seq_len, angles=angles), layout)

    def rotate(self, x: Tensor, positions, key: int) -> Tensor:
        p, offset = _ops.positions_arg(positions, x)
        return _ops.rotate(x, p, offset, key, self.layout, _ops.FORWARD, self.threads)

    def forward(self, q: Tensor, k: Tensor, positions) -> Tuple[Tensor, Tensor]:
        return self.rotate(q, positions, self._q_key), self.rotate(k, positions, self._k_key)


class ModelRotary(torch.nn.Module):
    """Every layer's rotary module of a model: layers[i] is Rotary for layer i, or None for a
    layer without rotary positions (Llama 4's NoPE layers, for instance)."""

    def __init__(self, model, seq_len: Optional[int] = None, layout: str = "bshd",
                 angles: str = "exact") -> None:
        super().__init__()
        self.layers: List[Optional[Rotary]] = [
            Rotary.from_model(model, i, seq_len, layout, angles) if layer.rope is not None else None
            for i, layer in enumerate(model.layers)]


class Fope(torch.nn.Module):
    """FoPE with learnable coefficients sin_coef, cos_coef [n_kv_heads, D_in, D_out] (float32
    parameters, as the reference FourierEmbedding holds them). forward(q, k, positions) -> (q, k).

    init: "eye_xavier_norm" (the reference's default and posemb.make_fope: a step-eye plus
    Xavier-normal noise of gain config.sigma, drawn from config.seed) or "xavier_norm" (noise only,
    torch.nn.init.xavier_normal_ with gain config.sigma on the 3-D tensors, torch's generator).

    Swap from transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb:
        fope = posemb.nn.Fope(posemb.FopeConfig(head_dim=128, n_heads=32, n_kv_heads=8,
                                                train_length=4096), layout="bhsd")
        q, k = fope(q, k, position_ids)
    """

    def __init__(self, config, init: str = "eye_xavier_norm", layout: str = "bshd",
                 threads: int = 1) -> None:
        super().__init__()
        initial = _posemb.make_fope(config)
        sin_coef = torch.from_numpy(np.array(initial.sin_coef, dtype=np.float32))
        cos_coef = torch.from_numpy(np.array(initial.cos_coef, dtype=np.float32))
        if init == "xavier_norm":
            for coef in (sin_coef, cos_coef):
                torch.nn.init.xavier_normal_(coef, gain=config.sigma)
        elif init != "eye_xavier_norm":
            raise Error(f"init = {init!r}: expected 'eye_xavier_norm' or 'xavier_norm'")
        self.sin_coef = torch.nn.Parameter(sin_coef)
        self.cos_coef = torch.nn.Parameter(cos_coef)
        self.config, self.layout, self.threads = config, layout, threads
        self._config_key = _ops.source_key(config)

    def rotate(self, x: Tensor, positions) -> Tensor:
        p, offset = _ops.positions_arg(positions, x)
        return _ops.fope(x, p, offset, self.sin_coef, self.cos_coef, self._config_key,
                         self.layout, _ops.FORWARD, self.threads)

    def forward(self, q: Tensor, k: Tensor, positions) -> Tuple[Tensor, Tensor]:
        return self.rotate(q, positions), self.rotate(k, positions)


class LearnedPositions(torch.nn.Module):
    """A learned absolute table `weight` [max_len, d] added to token embeddings h [b, s, d]
    (GPT-2's wpe: name the module `wpe` and its key is `wpe.weight`). Initialised N(0, init_std^2)
    by posemb.learned_position_table(max_len, d, seed)."""

    def __init__(self, max_len: int, d: int, seed: int = 0, init_std: float = 0.02) -> None:
        super().__init__()
        table = _posemb.learned_position_table(max_len, d, seed, init_std)
        self.weight = torch.nn.Parameter(torch.from_numpy(np.array(table)))

    def forward(self, h: Tensor, positions) -> Tensor:
        return _ops.add_positions_tensor(h, positions, self.weight.to(h.dtype), False)


class Sinusoidal(torch.nn.Module):
    """The sinusoidal table [max_len, d] (a buffer, not saved) added to h [b, s, d]."""

    def __init__(self, max_len: int, d: int, base: float = 10000.0,
                 layout: str = "interleaved") -> None:
        super().__init__()
        table = _posemb.sinusoidal_table(max_len, d, base, layout, "float64")
        self.register_buffer("table", torch.from_numpy(np.array(table)), persistent=False)

    def forward(self, h: Tensor, positions) -> Tensor:
        return _ops.add_positions_tensor(h, positions, self.table.to(h.dtype), False)


class Alibi(torch.nn.Module):
    """ALiBi's bias [heads, q_len, k_len] from explicit query and key positions (no parameter;
    the logits' gradient passes through the addition). Positions as tensors off the CPU give the
    bias on their device (the composite path: posemb's slopes, the distances in float64 there)."""

    def __init__(self, n_heads: int, max_bias: float = 8.0, form: str = "causal") -> None:
        super().__init__()
        self.slopes = _posemb.alibi_slopes(n_heads, max_bias)
        self.form = form

    def forward(self, q_positions, k_positions, dtype=torch.float32) -> Tensor:
        if isinstance(q_positions, Tensor) and _ops.use_composite(q_positions):
            k = torch.as_tensor(k_positions, device=q_positions.device)
            return _ops.composite_alibi(self.slopes, q_positions, k, self.form, dtype)
        bias = _posemb.alibi_bias(self.slopes, np.asarray(q_positions), np.asarray(k_positions),
                                  self.form, "float64")
        return torch.from_numpy(np.array(bias)).to(dtype)


class T5RelativeBias(torch.nn.Module):
    """T5's learnable relative bias: `relative_attention_bias` an nn.Embedding [num_buckets,
    heads] (the checkpoint's key `relative_attention_bias.weight`). forward(q_positions,
    k_positions) -> bias [heads, q_len, k_len], differentiable in the table."""

    def __init__(self, heads: int, num_buckets: int = 32, max_distance: int = 128,
                 bidirectional: bool = True) -> None:
        super().__init__()
        self.buckets = _posemb.T5Buckets(num_buckets, max_distance, bidirectional)
        self.relative_attention_bias = torch.nn.Embedding(num_buckets, heads)

    def forward(self, q_positions, k_positions) -> Tensor:
        return _ops.t5_bias_tensor(self.relative_attention_bias.weight, self.buckets,
                                   q_positions, k_positions)
