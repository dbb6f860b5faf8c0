"""ALiBi (Bloom, MPT, Falcon-ALiBi) and T5 bias checks: the families' own bias builders against
posemb's slopes, bias and buckets. Each case returns report rows."""

from __future__ import annotations

import importlib
import inspect
import os

import numpy as np
import torch

import posemb
import tiny_models
from report import Row

F32 = 2.0**-23  # float32 relative spacing: the slope builders run in float32 pow


def _slopes_row(case, hf_slopes: np.ndarray, ours: np.ndarray) -> Row:
    # base^k with the base rounded to float32 (k u) and a float32 pow (1 ulp): (n + 2) u, n heads
    tol = (len(ours) + 2) * F32 / 2
    err = float(np.max(np.abs(hf_slopes - ours) / ours))
    return Row(case, "alibi_slopes", "pass" if err <= tol else "fail", err, tol, f"{len(ours)} heads")


def _bias_row(case, hf_bias: np.ndarray, ours: np.ndarray, what: str) -> Row:
    err = float(np.max(np.abs(hf_bias - ours)))
    tol = 4 * F32 * float(np.max(np.abs(ours)))
    return Row(case, "alibi_bias", "pass" if err <= tol else "fail", err, tol, what)


def _bfloat16(x: np.ndarray) -> np.ndarray:
    """x rounded to float32, then to bfloat16 (nearest even), as float64."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32).astype(np.float64)


def _falcon_bfloat16_rows(name, hf, heads, k_pos):
    """Falcon's build_alibi_tensor computes `slopes[..., None].bfloat16() * arange_tensor`: torch
    promotes the int64 positions to bfloat16 too, so the bias is bfloat16(slope' * bfloat16(k)),
    slope' = alibi_slopes(round_to="bfloat16"); reproduced bit for bit."""
    slopes = posemb.alibi_slopes(heads, round_to="bfloat16")
    bad = int((slopes != hf[:, 1]).sum())
    rows = [Row(name, "alibi_slopes_bfloat16", "pass" if bad == 0 else "fail", float(bad), 0.0,
                f"{heads} heads: alibi_slopes(round_to='bfloat16'), bit for bit")]
    bias = _bfloat16(slopes[:, None] * _bfloat16(k_pos.astype(np.float64))[None, :])
    bad = int((bias != hf).sum())
    rows.append(Row(name, "alibi_bias_bfloat16", "pass" if bad == 0 else "fail", float(bad), 0.0,
                    f"bfloat16(slope' * bfloat16(k)), keys 0..{len(k_pos) - 1}, bit for bit"))
    return rows


def alibi_case(name, out_dir):
    spec = tiny_models.CASES[name]
    model = tiny_models.model_for(name)
    folder = os.path.join(out_dir, "models", name)
    model.save_pretrained(folder)
    pmodel = posemb.load_model(os.path.join(folder, "config.json"))
    kinds = {layer.kind for layer in pmodel.layers}
    cfg = model.config
    rows = [Row(name, "layers", "pass" if kinds == {"alibi"} else "fail", detail=f"posemb kinds {sorted(kinds)}")]
    seq = 4096
    k_pos = np.arange(seq, dtype=np.int64)
    if spec.model_type in ("bloom", "falcon"):
        # build_alibi_tensor(attention_mask, num_heads, dtype) -> [heads, 1, seq]: slope * k
        module = importlib.import_module(f"transformers.models.{spec.model_type}.modeling_{spec.model_type}")
        heads = cfg.num_attention_heads
        alibi = module.build_alibi_tensor(torch.ones(1, seq, dtype=torch.int64), heads, torch.float32)
        hf = alibi[:, 0, :].double().numpy()
        ours = posemb.alibi_slopes(heads)
        rows.append(_slopes_row(name, hf[:, 1], ours))
        # softmax is shift-invariant per query row: slope * k equals causal -slope (q - k) + slope q
        q = seq - 1
        ref = posemb.alibi_bias_row(ours, q, k_pos, form="causal", dtype="float64") + ours[:, None] * q
        rows.append(_bias_row(name, hf, ref, f"query {q}, keys 0..{seq - 1} (row shift slope * q)"))
        if spec.model_type == "falcon":
            rows += _falcon_bfloat16_rows(name, hf, heads, k_pos)
    else:
        # MPT: build_mpt_alibi_tensor(num_heads, seq, alibi_bias_max) -> [heads, 1, seq]:
        # slope * (k - (seq - 1))
        module = importlib.import_module("transformers.models.mpt.modeling_mpt")
        heads, max_bias = cfg.n_heads, cfg.attn_config.alibi_bias_max
        hf = module.build_mpt_alibi_tensor(heads, seq, max_bias)[:, 0, :].double().numpy()
        ours = posemb.alibi_slopes(heads, max_bias=float(max_bias))
        rows.append(_slopes_row(name, -hf[:, -2], ours))
        ref = posemb.alibi_bias_row(ours, seq - 1, k_pos, form="causal", dtype="float64")
        rows.append(_bias_row(name, hf, ref, f"query {seq - 1}, keys 0..{seq - 1}"))
    return rows, {"layers": len(pmodel.layers), "positions": seq}


def _t5_table_blocks(stack_module) -> list[int]:
    """Per block of a T5 stack, the block whose relative_attention_bias its self-attention adds:
    T5 / mT5 compute the bias in the block that has the table (block 0) and pass it on
    (modeling_t5.py, T5Stack.forward: position_bias); UMT5's every attention has its own
    (modeling_umt5.py, UMT5Attention: has_relative_attention_bias=True in every layer)."""
    blocks = []
    for i, block in enumerate(stack_module.block):
        attention = block.layer[0].SelfAttention
        blocks.append(i if attention.has_relative_attention_bias else blocks[0])
    return blocks


def t5_case(name, out_dir):
    model = tiny_models.model_for(name)
    folder = os.path.join(out_dir, "models", name)
    model.save_pretrained(folder)
    pmodel = posemb.load_model(os.path.join(folder, "config.json"))
    cfg = model.config
    rows = []
    layer = pmodel.layers[0]
    b = layer.relative_bias
    ok = b is not None and (b.num_buckets, b.max_distance) == (
        cfg.relative_attention_num_buckets, cfg.relative_attention_max_distance)
    rows.append(Row(name, "layers", "pass" if ok else "fail", detail=(
        f"posemb {[l.kind + '/' + l.stack for l in pmodel.layers]}, buckets "
        f"{b and (b.num_buckets, b.max_distance, b.bidirectional)}")))
    positions = np.concatenate([np.arange(64), np.arange(100000, 100064)]).astype(np.int64)
    for stack, bidirectional in (("encoder", True), ("decoder", False)):
        stack_module = getattr(model, stack)
        player = [l for l in pmodel.layers if l.stack == stack]
        first = min(l.index for l in player)
        hf_tables = _t5_table_blocks(stack_module)
        ours_tables = [l.relative_bias_table_layer - first for l in player]
        rows.append(Row(name, f"t5_table_layers_{stack}", "pass" if hf_tables == ours_tables else
                        "fail", detail=f"table of each layer: transformers {hf_tables}, posemb "
                                       f"{ours_tables} (within the stack)"))
        buckets = posemb.T5Buckets(cfg.relative_attention_num_buckets,
                                   cfg.relative_attention_max_distance, bidirectional)
        attention = stack_module.block[0].layer[0].SelfAttention
        rel = torch.from_numpy(positions[None, :] - positions[:, None])
        if "bidirectional" in inspect.signature(attention._relative_position_bucket).parameters:
            hf_buckets = attention._relative_position_bucket(
                rel, bidirectional=bidirectional, num_buckets=cfg.relative_attention_num_buckets,
                max_distance=cfg.relative_attention_max_distance).numpy()
        else:  # UMT5Attention._relative_position_bucket: the module's is_decoder and config
            hf_buckets = attention._relative_position_bucket(rel).numpy()
        ours = posemb.t5_bucket_matrix(buckets, positions, positions)
        bad = int((hf_buckets != ours).sum())
        rows.append(Row(name, f"t5_buckets_{stack}", "pass" if bad == 0 else "fail", float(bad), 0.0,
                        f"{ours.size} (q, k) pairs, positions 0..63 and 100000..100063"))
        # compute_bias(q_len, k_len) -> [1, heads, q, k] from each table's relative_attention_bias
        n, err = 256, 0.0
        for block in sorted(set(hf_tables)):
            attention = stack_module.block[block].layer[0].SelfAttention
            with torch.no_grad():
                hf_bias = attention.compute_bias(n, n)[0].numpy()
            weight = attention.relative_attention_bias.weight.detach().numpy()
            our_bias = posemb.t5_bias(posemb.T5BiasTable(buckets, weight), np.arange(n), np.arange(n))
            err = max(err, float(np.max(np.abs(hf_bias - our_bias))))
        rows.append(Row(name, f"t5_bias_{stack}", "pass" if err == 0 else "fail", err, 0.0,
                        f"[heads, {n}, {n}] of {len(set(hf_tables))} table(s) (a table lookup: equal)"))
    return rows, {"layers": len(pmodel.layers), "positions": len(positions)}


# prompt layouts (posemb's segment syntax) for get_rope_index: an image, then a video whose
# temporal grid is longer than its merged spatial grid
MROPE_PROMPTS = ("text:3,image:1x4x6,text:5", "text:2,image:1x8x4,text:1,video:6x4x4,text:3")
# Qwen2.5-VL: videos at several seconds per temporal grid (tokens_per_second 2: temporal ids
# 0, 1, 2, ... at 0.5 s, 0, 4, 8, ... at 2 s), between text.
MROPE_VIDEO_PROMPTS = ("text:2,video:6x4x4@0.5,text:3", "text:2,video:6x4x4@1,text:3",
                       "text:2,video:6x4x4@2,text:3,image:1x4x6,text:2",
                       "text:1,video:3x8x4@1.5,text:2,video:2x4x4@4,text:4")
# Qwen3-VL / Qwen3.5: a real prompt puts timestamp text before each video frame, and
# get_rope_index (5.25.0, Qwen3VLModel) splits video_grid_thw into one-frame grids and takes one
# per run of video tokens: each frame is a one-grid video between text.
MROPE_FRAME_PROMPTS = ("text:3,image:1x4x6,text:5",
                       "text:2,image:1x8x4,text:1,video:1x4x4,text:2,video:1x4x4,text:3",
                       "text:1,video:1x8x4,text:2,video:1x8x4,text:1,image:1x4x4,text:2")
# The prompts of each M-RoPE model_type (rope_case.MROPE_TYPES).
MROPE_PROMPTS_OF = {"qwen2_vl": MROPE_PROMPTS, "qwen2_5_vl": MROPE_PROMPTS + MROPE_VIDEO_PROMPTS,
                    **{t: MROPE_FRAME_PROMPTS for t in ("qwen3_vl", "qwen3_vl_moe", "qwen3_5",
                                                         "qwen3_5_moe")}}


def _hf_mrope(model, prompt, merge):
    """transformers' get_rope_index of a prompt: positions [3, seq] and the rope delta."""
    types, images, videos, seconds = [], [], [], []
    for segment in prompt.split(","):
        kind, size = segment.split(":")
        if kind == "text":
            types += [0] * int(size)
            continue
        size, _, second = size.partition("@")
        t, h, w = (int(v) for v in size.split("x"))
        types += [1 if kind == "image" else 2] * (t * h * w // merge**2)
        (images if kind == "image" else videos).append([t, h, w])
        if kind == "video":
            seconds.append(float(second or 1.0))
    ids = torch.arange(len(types))[None] % 200 + 3
    grids = [torch.tensor(g) if g else None for g in (images, videos)]
    extra = {"second_per_grid_ts": torch.tensor(seconds)} if seconds and \
        model.config.model_type == "qwen2_5_vl" else {}
    with torch.no_grad():
        hf, delta = model.get_rope_index(ids, torch.tensor([types]), *grids, **extra)
    return hf[:, 0].numpy(), int(delta.reshape(-1)[0]), len(types)


def mrope_case(name, out_dir):
    """get_rope_index(input_ids, mm_token_type_ids, image_grid_thw, video_grid_thw) -> [3, 1, seq]
    against posemb.mrope_index(load_model(config.json), segments)."""
    model = tiny_models.model_for(name)
    folder = os.path.join(out_dir, "models", name)
    model.save_pretrained(folder)
    pmodel = posemb.load_model(os.path.join(folder, "config.json"))
    merge = model.config.vision_config.spatial_merge_size
    prompts = MROPE_PROMPTS_OF[model.config.model_type]
    rows = []
    for check, resume in (("mrope_ids", None), ("mrope_ids_v5", "spatial_extent")):
        bad = []
        for prompt in prompts:
            hf, hf_delta, _ = _hf_mrope(model, prompt, merge)
            ours, delta = posemb.mrope_index(pmodel, prompt, resume=resume)
            if hf.shape != ours.shape or not (hf == ours).all() or hf_delta != delta:
                bad.append(f"{prompt}: transformers t {hf[0].tolist()[-6:]} delta {hf_delta}, "
                           f"posemb {ours[0].tolist()[-6:]} delta {delta}")
        rows.append(Row(name, check, "fail" if bad else "pass",
                        detail="; ".join(bad[:2]) or f"{len(prompts)} prompts, resume "
                                                      f"{resume or 'past_largest'}"))
    return rows


def vision_case(name, out_dir):
    """Pixtral's vision tower (modeling_pixtral.py, PixtralVisionRotaryEmbedding: axial 2-D
    rope over patch rows and columns) run on a 6 x 4 and a 4 x 7 patch image: the q / k its
    apply_rotary_pos_emb rotated against posemb.apply_vision_rope with the tower that
    load_model reads from the wrapper's config.json (vision_patch_positions: row-major)."""
    import capture

    model = tiny_models.model_for(name)
    folder = os.path.join(out_dir, "models", name)
    model.save_pretrained(folder)
    pmodel = posemb.load_model(os.path.join(folder, "config.json"))
    vision = model.config.vision_config
    capture.ADAPTERS.setdefault("pixtral", capture.Adapter("pixtral.modeling_pixtral",
                                                           "apply_rotary_pos_emb", capture._pair))
    rope = pmodel.vision
    rows = [Row(name, "vision_head_dim", "pass" if rope is not None and rope.head_dim ==
                vision.head_dim else "fail",
                detail=f"transformers {vision.head_dim}, posemb {rope and rope.head_dim}")]
    patch, worst, tol, values = vision.patch_size, 0.0, 0.0, 0
    for h, w in ((6, 4), (4, 7)):
        with capture.recording(model.vision_tower, "pixtral") as cap, torch.no_grad():
            model.vision_tower(torch.randn(1, 3, h * patch, w * patch),
                               image_sizes=torch.tensor([[h * patch, w * patch]]))
        positions = posemb.vision_patch_positions(rope, 1, h, w)
        for call in cap.rope:
            x = np.ascontiguousarray(call.x_in.numpy())
            ours = posemb.apply_vision_rope(x, positions, rope, layout="bhsd")
            worst = max(worst, float(np.abs(ours - call.x_out.numpy()).max()))
            # float32 cos / sin of angles below max(h, w) <= 7 rad, the product and the sum:
            # a few float32 ulps of the largest input
            tol = max(tol, 16 * F32 * float(np.abs(x).max()))
            values += x.size
    rows.append(Row(name, "vision_rope", "pass" if values and worst <= tol else "fail", worst, tol,
                    f"{values} values, patch grids 6x4 and 4x7"))
    return rows, {"layers": len(pmodel.layers), "positions": 6 * 4 + 4 * 7}

