"""transformers' own rope of a tiny model, per layer, as angles and magnitude (the diff verdicts' truth).

    angles, scale = hf_angles(model, layer, positions, pairs, seq_len)  # [len(positions), pairs]

The model's text rotary embedding module (the one `*RotaryEmbedding` that is not a vision one)
is called as its decoder calls it: forward(x, position_ids) (and layer_type = config.layer_types
[layer] where the forward takes one, Gemma 3), so dynamic / LongRoPE updates run as in
transformers. cos/sin give angle = atan2(sin, cos), scale = |(cos, sin)|; pair i is column i of
a rotate_half layout, column 2i of an interleaved one, column i of a one-column-per-pair one.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch


def rotary_module(model):
    """The text rotary embedding module of a transformers model."""
    for name, module in model.named_modules():
        kind = type(module).__name__
        if kind.endswith("RotaryEmbedding") and "Vision" not in kind and "visual" not in name:
            return module
    raise LookupError(f"{type(model).__name__}: no text *RotaryEmbedding module")


def hf_angles(model, layer: int, positions: np.ndarray, pairs: int,
              seq_len: int) -> tuple[np.ndarray, float]:
    """transformers' angles [seq, pairs] and magnitude at the given positions of one layer, as
    part of a sequence of seq_len tokens: position seq_len - 1 rides along, so dynamic / LongRoPE
    updates (max position + 1) see seq_len, as llama.cpp's context size per sequence.

    cos/sin have `pairs` columns (gpt-oss, Llama 4's complex freqs_cis: one per pair) or 2 * pairs
    (rotate_half [c0..c(n-1), c0..c(n-1)] or interleaved [c0, c0, c1, c1, ...])."""
    rope = rotary_module(model)
    ids = torch.as_tensor(np.append(positions, seq_len - 1), dtype=torch.long)[None]
    x = torch.zeros(1, dtype=torch.float32)
    kwargs = {}
    if "layer_type" in inspect.signature(rope.forward).parameters:
        config = getattr(model.config, "text_config", None) or model.config
        kwargs["layer_type"] = config.layer_types[layer]
    with torch.no_grad():
        out = rope(x, ids, **kwargs)
    cos, sin = out if isinstance(out, tuple) else (out.real, out.imag)
    cos, sin = cos[0, :-1].double().numpy(), sin[0, :-1].double().numpy()
    if cos.shape[-1] == 2 * pairs and np.allclose(cos[..., ::2], cos[..., 1::2]):
        cos, sin = cos[..., ::2], sin[..., ::2]
    elif cos.shape[-1] == 2 * pairs:
        cos, sin = cos[..., :pairs], sin[..., :pairs]
    return np.arctan2(sin, cos), float(np.median(np.hypot(cos, sin)))
