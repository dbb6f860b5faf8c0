"""Per-family checks of a captured forward against posemb: layers, rope (exact and hf-float32),
attention settings. Each returns report rows (conformance/report.py)."""

from __future__ import annotations

import numpy as np
import torch

import posemb
import rotation
from report import Row


def rope_block(config, layer_type: str | None) -> dict:
    """The layer's rope block of the saved config (nested per layer type in v5), with the
    config's max_position_embeddings (dynamic NTK's original length)."""
    block = dict(getattr(config, "rope_parameters", None) or {})
    if not block:  # transformers v4: rope_scaling (+ rope_theta at the top level)
        block = dict(getattr(config, "rope_scaling", None) or {})
        block.setdefault("rope_theta", getattr(config, "rope_theta", None))
    if layer_type in block and isinstance(block[layer_type], dict):
        block = dict(block[layer_type])
    block.setdefault("max_position_embeddings", getattr(config, "max_position_embeddings", None))
    return block


def original_length(config) -> int:
    block = rope_block(config, None)
    nested = [v for v in block.values() if isinstance(v, dict)]
    for b in [block] + nested:
        if b.get("original_max_position_embeddings"):
            return int(b["original_max_position_embeddings"])
    return int(getattr(config, "original_max_position_embeddings", None)
               or getattr(config, "max_position_embeddings", None) or 2048)


def layer_theta_module(config, layer: int) -> int | None:
    """The index in GraniteSWAModel.rotary_embs (modular_granite_swa.py: one rotary module per
    distinct non-zero layer_rope_theta, in sorted order) of a layer's module, or None."""
    thetas = getattr(config, "layer_rope_theta", None)
    if not thetas or not thetas[layer]:
        return None
    return sorted({theta for theta in thetas if theta}).index(thetas[layer])


def inv_freq_buffer(buffers: dict, layer_type: str | None, module: int | None = None):
    """transformers' inv_freq buffer for a layer type (float32) as a call left it, or None;
    module: the layer's index in a list of rotary modules (layer_theta_module)."""
    for name, value in buffers.items():
        if module is not None and name.endswith(f"rotary_embs.{module}.inv_freq"):
            return value
        if layer_type and name.endswith(f"rotary_emb.{layer_type}_inv_freq"):
            return value
        # transformers v4: Gemma 3 / 3n's second rotary module for the sliding layers, OLMo 3's
        # rotary module per layer type
        if layer_type == "sliding_attention" and name.endswith("rotary_emb_local.inv_freq"):
            return value
        if layer_type and name.endswith(f"rotary_embs.{layer_type}.inv_freq"):
            return value
    for name, value in buffers.items():
        if name.endswith("rotary_emb.inv_freq"):
            return value
    return None


class RopeStats:
    """Accumulates one check's worst error over calls."""

    def __init__(self):
        self.max_error, self.tolerance, self.failures, self.values, self.notes = 0.0, 0.0, [], 0, []

    def add(self, err: np.ndarray, tol: np.ndarray, where: str):
        self.values += err.size
        self.max_error = max(self.max_error, float(err.max(initial=0.0)))
        self.tolerance = max(self.tolerance, float(tol.max(initial=0.0)))
        bad = err > tol
        if bad.any():
            self.failures.append(f"{where}: {int(bad.sum())} of {err.size} beyond the bound")

    def row(self, case, check, extra=""):
        status = "fail" if self.failures else "pass"
        detail = "; ".join(self.failures[:3] + sorted(set(self.notes))[:3]) or f"{self.values} values"
        return Row(case, check, status, self.max_error, self.tolerance, (extra + " " + detail).strip())


def hf_order(function: str):
    """The feature order transformers' output is in, as a map of posemb's output [..., d].

    DeepSeek's apply_rotary_pos_emb_interleave (modeling_deepseek_v3.py) permutes q/k from
    interleaved pairs (2i, 2i+1) to rotate-half order (i, i + d/2) and then rotates half: its
    output is posemb's interleaved rotation under that same per-head permutation."""
    if function != "apply_rotary_pos_emb_interleave":
        return lambda a: a

    def permute(a):
        d = a.shape[-1]
        return a.reshape(*a.shape[:-1], d // 2, 2).swapaxes(-1, -2).reshape(a.shape)

    return permute


# model_type -> why posemb's hf-float32 mode does not claim bit equality with the family's
# forward (its transcription is LlamaRotaryEmbedding.forward + apply_rotary_pos_emb): the exact
# check stays, the hf-float32 rows become one `rope_hf_float32_not_claimed` row saying why.
HF_FLOAT32_NOT_CLAIMED = {
    "llama4_text": "Llama 4 rotates by a complex multiply (modeling_llama4.py, apply_rotary_emb: "
                   "torch.view_as_complex(x) * freqs_cis from torch.polar), not x cos + "
                   "rotate_half(x) sin: other float32 operations",
    "deepseek_v2": "DeepSeek-V2 rotates by a complex multiply (modeling_deepseek_v2.py, "
                   "apply_rotary_emb: torch.view_as_complex(x) * freqs_cis from torch.polar), not x "
                   "cos + rotate_half(x) sin: other float32 operations",
    "codegen": "CodeGen has no inv_freq buffer: create_sinusoidal_positions (modeling_codegen.py) "
               "builds its sin/cos table as GPT-J does, so the pairs whose torch float32 pow/cos "
               "are not correctly rounded cannot be set apart",
    "gptj": "GPT-J has no inv_freq buffer: create_sinusoidal_positions (modeling_gptj.py) builds "
            "its sin/cos table with einsum from an int64 arange, and without the buffer the pairs "
            "whose torch float32 pow/cos are not correctly rounded cannot be set apart",
}


def rope_rows(case, model, config, pmodel, captures, seq_lens):
    rows = _rope_rows(case, model, config, pmodel, captures, seq_lens)
    why = HF_FLOAT32_NOT_CLAIMED.get(config.model_type)
    if why is None:
        return rows
    return [rows[0], Row(case, "rope_hf_float32_not_claimed", "pass", detail=f"not claimed: {why}")]


def _rope_rows(case, model, config, pmodel, captures, seq_lens):
    """captures: [(label, positions [s] int64, Capture)]; seq_lens[label]: posemb's seq_len."""
    exact, bits, buffer_bits = RopeStats(), RopeStats(), RopeStats()
    pow_pairs = set()
    for label, positions, capture in captures:
        seq_len = seq_lens[label]
        for call in capture.rope:
            layer = pmodel.layers[call.layer]
            where = f"{label} layer {call.layer} {call.name}"
            if layer.rope is None:
                exact.failures.append(f"{where}: transformers rotates, posemb says {layer.kind}")
                continue
            x = call.x_in.float().numpy()
            y_hf = call.x_out.float().numpy()
            order = hf_order(call.function)
            hf_type = _hf_layer_type(config, call.layer, layer)
            block = rope_block(config, hf_type)
            spec_of = _call_spec(layer, call)
            if spec_of is None:
                exact.failures.append(f"{where}: transformers' indexer rotates, posemb's "
                                      f"{layer.layer_type} layer has no indexer")
                continue
            spec = spec_of(seq_len)
            x_full, part = rotation.embed(x, spec)
            y = order(rotation.rotate(x_full, positions, spec, call.layout, part))
            k = rotation.angle_coefficient(spec, layer, seq_len, block)
            tol = order(rotation.bound(x_full, positions, call.layout, spec, k)[..., part])
            exact.add(np.abs(y.astype(np.float64) - y_hf), tol, where)
            # hf-float32: posemb's own float32 angles, then transformers' inv_freq buffer
            if layer.rope.mrope_section:
                bits.notes.append("M-RoPE: hf-float32 is not claimed (posemb refuses it)")
                continue
            try:
                hf = spec_of(seq_len, angles="hf-float32")
            except posemb.Error as error:  # a rope type the hf-float32 mode does not claim
                bits.notes.append(f"hf-float32 is not claimed (posemb refuses it: {error})")
                continue
            # hf-float32 over the layer's whole head, as the exact spec (an indexer's: its slice)
            x_hf, part_hf = (x, slice(None)) if x.shape[-1] == hf.head_dim else (x_full, part)
            y32 = order(rotation.rotate(x_hf, positions, hf, call.layout, part_hf))
            buffer = inv_freq_buffer(capture.buffers, hf_type,
                                     layer_theta_module(config, call.layer))
            same = np.ones(hf.rotary_dim // 2, dtype=bool)
            if buffer is not None and buffer.numel() == hf.rotary_dim // 2:
                same = buffer.numpy() == hf.inv_freq
                pow_pairs |= {(label, i) for i in np.nonzero(~same)[0]}
                own = posemb.HfFloat32Rope(buffer.numpy(), hf.head_dim, hf.attention_scale,
                                           hf.pairing, hf.rotary_offset)
                y_own = order(rotation.rotate(x_hf, positions, own, call.layout, part_hf))
                diff = (y_own.view(np.uint32) != y_hf.view(np.uint32))
                rounded = order(_correctly_rounded(buffer, positions, spec, part, call.layout))
                buffer_bits.add((diff & rounded).astype(np.float64), np.zeros(diff.shape), where)
                buffer_bits.notes.append("features whose torch float32 cos or sin is not the "
                                         "correctly rounded value are held to the exact bound")
                bits.notes.append(buffer_bits.notes[-1])
            mask = order(_pair_mask(same, spec, y32.shape[-1], part))
            if buffer is not None and buffer.numel() == hf.rotary_dim // 2:
                rounded = order(_correctly_rounded(buffer, positions, spec, part, call.layout))
                mask = mask & rounded
            diff = ((y32.view(np.uint32) != y_hf.view(np.uint32)) & mask).astype(np.float64)
            bits.add(diff, np.zeros_like(diff), where)
    if pow_pairs:
        bits.notes.append(f"{len(pow_pairs)} (call, pair)s where transformers' float32 pow "
                          "differs from posemb's correctly rounded inv_freq: held to the exact bound")
    return [exact.row(case, "rope"), bits.row(case, "rope_hf_float32", "differing bits:"),
            buffer_bits.row(case, "rope_hf_float32_buffer", "HfFloat32Rope(transformers inv_freq):")]


def _hf_layer_type(config, index, layer):
    """transformers' name of layer `index`'s type (its rope block key and rotary buffer prefix:
    Zaya's "hybrid"), posemb's where the config has no layer_types."""
    types = getattr(config, "layer_types", None)
    return types[index] if types and index < len(types) else layer.layer_type


def _call_spec(layer, call):
    """posemb's spec builder (seq_len, angles) for a recorded rope call: the layer's lightning
    indexer's for an indexer call (its own pairing on the rope slice), the layer's otherwise;
    None when the call is an indexer's and posemb's layer has none."""
    if not call.indexer:
        return layer.rope_spec
    return layer.indexer.spec if layer.indexer is not None else None


def _correctly_rounded(buffer, positions, spec, part, layout):
    """Features [.., seq, .., d] whose angle's torch float32 cos and sin (the forward's
    `emb.cos()`, `emb.sin()`) are the correctly rounded values: the bitwise claim's domain."""
    angle = buffer[None, :] * torch.from_numpy(positions).float()[:, None]  # [seq, d/2] float32
    exact = angle.double().numpy()
    ok = (angle.cos().numpy() == np.cos(exact).astype(np.float32)) & \
         (angle.sin().numpy() == np.sin(exact).astype(np.float32))
    feats = np.ones((len(positions), spec.head_dim), dtype=bool)
    lo, d = spec.rotary_offset, spec.rotary_dim
    feats[:, lo:lo + d] = np.repeat(ok, 2, axis=1) if spec.pairing == "interleaved" else \
        np.concatenate([ok, ok], axis=1)
    feats = feats[:, part]
    return feats[None, None] if layout == "bhsd" else feats[None, :, None]


def _pair_mask(same: np.ndarray, spec, width: int, part: slice) -> np.ndarray:
    """Features whose pair's float32 inv_freq equals transformers' (the bitwise claim)."""
    mask = np.ones(spec.head_dim, dtype=bool)
    lo, d = spec.rotary_offset, spec.rotary_dim
    if spec.pairing == "interleaved":
        mask[lo:lo + d] = np.repeat(same, 2)
    else:
        mask[lo:lo + d] = np.concatenate([same, same])
    return mask[part] if width != spec.head_dim else mask


def layer_rows(case, model, config, pmodel, capture):
    """Which layers rotate, and each attention module's head_dim, against posemb's layers."""
    n = config.num_hidden_layers
    rows = []
    rotated = sorted({c.layer for c in capture.rope})
    posemb_rope = [l.index for l in pmodel.layers if l.rope is not None]
    # layers whose own lightning indexer rotates (DeepSeek-V3.2, HY V4's "full" indexer layers)
    indexed = sorted({c.layer for c in capture.rope if c.indexer})
    posemb_indexed = [l.index for l in pmodel.layers if l.indexer is not None]
    ok = len(pmodel.layers) == n and rotated == posemb_rope and indexed == posemb_indexed
    indexers = (f"; indexer layers transformers {indexed}, posemb {posemb_indexed}"
                if indexed or posemb_indexed else "")
    rows.append(Row(case, "layers", "pass" if ok else "fail", detail=(
        f"{n} layers; rope layers transformers {rotated}, posemb {posemb_rope}{indexers}; "
        f"posemb kinds {[l.kind for l in pmodel.layers]}")))
    bad = []
    for call in capture.rope:
        layer = pmodel.layers[call.layer]
        if layer.rope is None:
            continue
        width = call.x_in.shape[-1]
        spec_of = _call_spec(layer, call)
        if spec_of is None:
            bad.append(f"layer {call.layer}: transformers' indexer rotates {width} features, "
                       f"posemb's layer has no indexer")
            continue
        spec = spec_of()
        if width not in (spec.head_dim, spec.rotary_dim):
            bad.append(f"layer {call.layer}: transformers rotates {width} features, posemb "
                       f"head_dim {spec.head_dim} rotary_dim {spec.rotary_dim}")
    rows.append(Row(case, "head_dim", "fail" if bad else "pass", detail="; ".join(bad[:3]) or
                    f"rope widths {sorted({c.x_in.shape[-1] for c in capture.rope})}"))
    return rows


# model_type -> config -> the factor the family multiplies k (or q) by before the rope, outside
# the scaling it gives the attention function: posemb's softmax_scale is the product.
LOGIT_FACTOR = {
    # FalconH1Attention.forward (modeling_falcon_h1.py): key_states = k_proj(x) * key_multiplier
    "falcon_h1": lambda config: config.key_multiplier,
}


def _mask_window(capture):
    """The window every layer gets from the mask when the model built only sliding-window masks
    (no full causal one), or None."""
    windows = {w for w in capture.mask_windows if w}
    return windows.pop() if len(windows) == 1 and capture.causal_masks == 0 else None


def attention_rows(case, pmodel, capture, config=None):
    """scaling, sliding window, softcap and sinks per attention call vs posemb's layer.attention."""
    bad, seen = [], 0
    factor = LOGIT_FACTOR.get(getattr(config, "model_type", None), lambda c: 1.0)(config)
    mask_window = _mask_window(capture)
    for call in capture.attention:
        if call.layer < 0:
            continue
        seen += 1
        att = pmodel.layers[call.layer].attention
        scaling = None if call.scaling is None else call.scaling * factor
        if scaling is not None and (att.softmax_scale is None or
                                    abs(att.softmax_scale - scaling) > 1e-12 * abs(scaling)):
            bad.append(f"layer {call.layer} scaling {scaling} vs {att.softmax_scale}")
        window = call.sliding_window or mask_window
        if (window or None) != (att.sliding_window or None):
            bad.append(f"layer {call.layer} sliding_window {window} vs {att.sliding_window}")
        if (call.softcap or None) != (att.logit_softcap or None):
            bad.append(f"layer {call.layer} softcap {call.softcap} vs {att.logit_softcap}")
        if call.sinks != att.attention_sinks:
            bad.append(f"layer {call.layer} sinks {call.sinks} vs {att.attention_sinks}")
    if seen == 0:
        return [Row(case, "attention", "error", detail="no eager attention call recorded")]
    return [Row(case, "attention", "fail" if bad else "pass",
                detail="; ".join(sorted(set(bad))[:4]) or f"{seen} calls")]


def temperature_rows(case, model_type, config, pmodel, captures):
    """The query temperature against the modeling module's own function at every position of
    every set: get_llama_4_attn_scale(position_ids, llama_4_scaling_beta,
    original_max_position_embeddings) on every layer (modeling_ministral3.py,
    modeling_mistral4.py: q * scale before the attention), compute_attention_scaling(position_ids)
    on the layer types whose rope parameters are None (modeling_beam.py, BeamModel.forward), none
    elsewhere; each against the layer's query_temperature.factor(p). [] for the families without
    either function."""
    import importlib

    import capture as capture_module

    module = importlib.import_module(f"transformers.models.{capture_module.ADAPTERS[model_type].module}")
    llama4 = getattr(module, "get_llama_4_attn_scale", None)
    power = getattr(module, "compute_attention_scaling", None)
    if llama4 is None and power is None:
        return []
    block = config.rope_parameters
    worst, bad = 0.0, []
    for label, positions, _ in captures:
        at = torch.from_numpy(positions)[None]
        if llama4 is not None:
            hf = llama4(at, block.get("llama_4_scaling_beta"),
                        block.get("original_max_position_embeddings")).flatten().double().numpy()
            want = {layer.index: hf for layer in pmodel.layers}
        else:
            hf = power(at).flatten().double().numpy()
            want = {i: hf if block[t] is None else None for i, t in enumerate(config.layer_types)}
        for layer in pmodel.layers:
            t, expected = layer.attention.query_temperature, want.get(layer.index)
            if (t is None) != (expected is None):
                bad.append(f"{label} layer {layer.index}: query temperature in transformers "
                           f"{expected is not None}, in posemb {t is not None}")
                continue
            if t is None:
                continue
            ours = np.array([t.factor(int(p)) for p in positions])
            err = float(np.max(np.abs(ours - expected) / expected))
            worst = max(worst, err)
            if err > 1e-6:  # transformers' float32 log (and exp): a few ulps
                bad.append(f"{label} layer {layer.index}: relative error {err:.3g}")
    what = "get_llama_4_attn_scale" if llama4 is not None else "compute_attention_scaling"
    return [Row(case, "query_temperature", "fail" if bad else "pass", worst, 1e-6,
                "; ".join(bad[:3]) or f"{what} at {sum(len(p) for _, p, _ in captures)} "
                f"positions x {len(pmodel.layers)} layers")]


def _bhsd(x: torch.Tensor, layout: str) -> np.ndarray:
    x = x.float()
    return (x if layout == "bhsd" else x.transpose(1, 2)).numpy()


def _whole_of(call, attention, part_of):
    """The whole q or k heads of the attention call whose features at posemb's rotated slice are
    the rope function's output (broadcast over heads: MLA's one k_rot head), with that slice and
    the rope function's input and output as [b, h, s, d]; None when neither is."""
    x_in, x_out = _bhsd(call.x_in, call.layout), _bhsd(call.x_out, call.layout)
    for whole in (attention.query, attention.key):
        if whole is None:
            continue
        whole = whole.float().numpy()
        if whole.shape[:1] + whole.shape[2:3] != x_out.shape[:1] + x_out.shape[2:3] or \
                x_out.shape[1] not in (1, whole.shape[1]):
            continue
        part = part_of(whole.shape[-1], x_out.shape[-1])
        if part is not None and np.array_equal(whole[..., part], np.broadcast_to(
                x_out, whole[..., part].shape)):
            return whole, part, x_in, x_out
    return None


# model_type -> why the whole-head check is not claimed: the family changes q or k after the
# rope function returns, so the heads its attention gets are not the rotation's output.
WHOLE_HEAD_NOT_CLAIMED = {
    "llama4_text": "q and k go through qk_norm (an L2 norm) after the rotation on the RoPE "
                   "layers (modeling_llama4.py, Llama4TextAttention.forward, use_qk_norm)",
    "hunyuan_v1_dense": "query_layernorm / key_layernorm after the rotation "
                        "(modeling_hunyuan_v1_dense.py, HunYuanDenseV1Attention.forward)",
    "hunyuan_v1_moe": "query_layernorm / key_layernorm after the rotation "
                      "(modeling_hunyuan_v1_moe.py, HunYuanMoEV1Attention.forward)",
    "ministral3": "q times get_llama_4_attn_scale after the rotation (modeling_ministral3.py, "
                  "Ministral3Attention.forward; the query_temperature row checks the factor)",
    "mistral4": "q times get_llama_4_attn_scale after the rotation (modeling_mistral4.py, "
                "Mistral4Attention.forward; the query_temperature row checks the factor)",
    "dory": "q times a learned per-feature scale (sqk) after the rotation, and the recurrent "
            "layers run twice (modeling_dory.py, DoryAttention.forward)",
}


def whole_head_rows(case, config, pmodel, captures, seq_lens):
    why = WHOLE_HEAD_NOT_CLAIMED.get(config.model_type)
    if why is not None:
        return [Row(case, "rope_whole_head_not_claimed", "pass", detail=f"not claimed: {why}")]
    return _whole_head_rows(case, config, pmodel, captures, seq_lens)


def _whole_head_rows(case, config, pmodel, captures, seq_lens):
    """The rotated slice in the whole head: transformers' q and k as its attention function gets
    them (whole heads) hold the rope function's output exactly at posemb's
    [rotary_offset, rotary_offset + rotary_dim) (MLA: the trailing qk_rope_head_dim), and
    posemb's layer.rope_spec() rotating the whole head (the slice's input in place) gives them."""
    stats, bits, found = RopeStats(), RopeStats(), 0
    for label, positions, capture in captures:
        attention = {c.layer: c for c in capture.attention if c.query is not None}
        for call in capture.rope:
            layer = pmodel.layers[call.layer]
            if call.indexer or layer.rope is None or call.layer not in attention:
                continue
            where = f"{label} layer {call.layer} {call.name}"
            spec = layer.rope_spec(seq_lens[label])

            def part_of(width, rotated, spec=spec):
                if width != spec.head_dim:
                    return None
                if rotated == width:
                    return slice(None)
                return slice(spec.rotary_offset, spec.rotary_offset + rotated)

            got = _whole_of(call, attention[call.layer], part_of)
            if got is None:
                stats.failures.append(f"{where}: no whole q/k head holds transformers' rotated "
                                      f"features at posemb's slice [{spec.rotary_offset}, "
                                      f"{spec.rotary_offset + spec.rotary_dim}) of "
                                      f"{spec.head_dim}")
                continue
            whole, part, x_in, _ = got
            found += 1
            order = hf_order(call.function)
            before = whole.copy()
            before[..., part] = np.broadcast_to(x_in, before[..., part].shape)
            y = posemb.apply_rope(np.ascontiguousarray(before), positions, spec, layout="bhsd")
            y[..., part] = order(y[..., part])
            k = rotation.angle_coefficient(spec, layer, seq_lens[label],
                                           rope_block(config, _hf_layer_type(config, call.layer,
                                                                             layer)))
            tol = rotation.bound(before, positions, "bhsd", spec, k)
            tol[..., part] = order(tol[..., part])
            stats.add(np.abs(y.astype(np.float64) - whole), tol, where)
            _whole_head_bits(bits, config, capture, call, layer, (before, whole, part, order),
                             positions, seq_lens[label], where)
    if found == 0 and not stats.failures:
        return [Row(case, "rope_whole_head", "error", detail="no rope call with an eager "
                                                             "attention call recorded")]
    return [stats.row(case, "rope_whole_head"),
            bits.row(case, "rope_whole_head_hf_float32", "differing bits:")]


def _whole_head_bits(bits, config, capture, call, layer, heads, positions, seq_len, where):
    """hf-float32 over the whole head: layer.rope_spec(angles='hf-float32') rotating the whole
    q/k (the slice's input in place) gives transformers' whole heads bit for bit, the passed
    features unchanged and the rotated ones where rope_hf_float32 claims bits (the pair's
    float32 inv_freq is transformers' and its torch cos/sin are correctly rounded)."""
    before, whole, part, order = heads
    why = HF_FLOAT32_NOT_CLAIMED.get(config.model_type)
    if why is not None or layer.rope.mrope_section:
        bits.notes.append(f"not claimed: {why or 'M-RoPE (posemb refuses hf-float32 for it)'}")
        return
    try:
        hf = layer.rope_spec(seq_len, angles="hf-float32")
    except posemb.Error as error:
        bits.notes.append(f"hf-float32 is not claimed (posemb refuses it: {error})")
        return
    y32 = posemb.apply_rope(np.ascontiguousarray(before), positions, hf, layout="bhsd")
    y32[..., part] = order(y32[..., part])
    spec = layer.rope_spec(seq_len)
    buffer = inv_freq_buffer(capture.buffers, _hf_layer_type(config, call.layer, layer),
                             layer_theta_module(config, call.layer))
    mask = np.broadcast_to(_pair_mask(np.ones(hf.rotary_dim // 2, dtype=bool), spec,
                                      spec.head_dim, slice(None)), y32.shape).copy()
    if buffer is not None and buffer.numel() == hf.rotary_dim // 2:
        pairs = _pair_mask(buffer.numpy() == hf.inv_freq, spec, spec.head_dim, slice(None))
        rounded = _correctly_rounded(buffer, positions, spec, slice(None), "bhsd")
        mask &= np.broadcast_to(pairs & rounded, y32.shape)
    mask[..., part] = order(mask[..., part])
    diff = ((y32.view(np.uint32) != whole.view(np.uint32)) & mask).astype(np.float64)
    bits.add(diff, np.zeros_like(diff), where)
