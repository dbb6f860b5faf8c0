"""M-RoPE in the vLLM harness: the Qwen-VL families' multimodal prompts, the [3, seq] positions
their tiny models run at, the job vLLM's own position code gets (tokens and mm_features), and
the rows comparing vLLM's positions with posemb's and transformers'.

vLLM computes a prompt's positions once per request with the model class's
get_mrope_input_positions (SupportsMRoPE, vllm/model_executor/models/interfaces.py; qwen2_vl.py,
qwen2_5_vl.py, qwen3_vl.py), then rotates with MRotaryEmbedding (rotary_embedding/mrope.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np

# The transformers harness's prompts (bias_checks.MROPE_PROMPTS, MROPE_VIDEO_PROMPTS: Qwen2.5-VL
# videos at 0.5, 1, 2, 1.5 and 4 seconds per temporal grid), and 0.7 s: a second_per_grid_ts
# whose float32 value (0.699999988) puts g * S * tokens_per_second just below an integer.
SECONDS_PROMPTS = ("text:2,video:6x4x4@0.7,text:3",)
# Qwen3-VL / Qwen3.5: each video frame is its own placeholder between timestamp text
# (<t> <vision_start> frame <vision_end>): frames given as one-grid videos one timestamp token
# apart (here: a video of two 4x4 frames, then one of a single 8x4 frame).
FRAME_PROMPTS = ("text:3,image:1x4x6,text:5",
                 "text:2,image:1x8x4,text:2,video:1x4x4,text:3,video:1x4x4,text:3,video:1x8x4,"
                 "text:3")

# The Qwen3-VL tiny model (Qwen/Qwen3-VL-8B-Instruct's positional fields: head_dim 128,
# mrope_section [24, 20, 20] interleaved, theta 5e6, 262144 positions; tower small).
QWEN3_VL = dict(
    text_config=dict(vocab_size=256, hidden_size=256, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=1, head_dim=128,
                     max_position_embeddings=262144, pad_token_id=0, bos_token_id=1,
                     eos_token_id=2,
                     rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                      "mrope_section": [24, 20, 20], "mrope_interleaved": True}),
    vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                       out_hidden_size=256, patch_size=16, spatial_merge_size=2,
                       temporal_patch_size=2, deepstack_visual_indexes=[0],
                       num_position_embeddings=16))

# The Qwen3.5 tiny model (Qwen3.5's positional fields: head_dim 256, partial_rotary_factor 0.25,
# mrope_section [11, 11, 10] interleaved, theta 1e7; one linear-attention and one full-attention
# layer; tower small).
QWEN3_5 = dict(
    text_config=dict(QWEN3_VL["text_config"], head_dim=256,
                     layer_types=["linear_attention", "full_attention"],
                     linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=32,
                     linear_value_head_dim=32,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                      "partial_rotary_factor": 0.25,
                                      "mrope_section": [11, 11, 10], "mrope_interleaved": True}),
    vision_config={k: v for k, v in QWEN3_VL["vision_config"].items()
                   if k != "deepstack_visual_indexes"})

# The GLM-4.1V tiny model (zai-org/GLM-4.1V-9B-Thinking's positional fields: head_dim 128,
# partial_rotary_factor 0.5, mrope_section [8, 12, 12]; tower small).
GLM4V = dict(
    text_config=dict(QWEN3_VL["text_config"], max_position_embeddings=65536,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                      "partial_rotary_factor": 0.5,
                                      "mrope_section": [8, 12, 12]}),
    vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                       out_hidden_size=256, patch_size=14, spatial_merge_size=2,
                       temporal_patch_size=2))


@dataclasses.dataclass(frozen=True)
class MropeModel:
    """What the harness needs to know of an M-RoPE model_type."""

    prompts: tuple
    # videos as frames, each its own placeholder one timestamp token from the next (Qwen3-VL,
    # Qwen3.5, GLM-4V), the feature of a video spanning its frames
    frames: bool = False
    seconds: bool = False  # the processor hands over second_per_grid_ts (Qwen2.5-VL)
    # the tokens around a placeholder (config attributes); None: vLLM's code reads no tokens
    start_end: tuple | None = ("vision_start_token_id", "vision_end_token_id")


def _models() -> dict:
    import bias_checks

    return {
        "qwen2_vl": MropeModel(bias_checks.MROPE_PROMPTS),
        "qwen2_5_vl": MropeModel(bias_checks.MROPE_PROMPTS + bias_checks.MROPE_VIDEO_PROMPTS
                                 + SECONDS_PROMPTS, seconds=True),
        "qwen3_vl": MropeModel(FRAME_PROMPTS, frames=True),
        "qwen3_5": MropeModel(FRAME_PROMPTS, frames=True),
        # glm4_1v.py iter_mm_grid_thw: a video's frames from the placeholder's embed ranges
        "glm4v": MropeModel(FRAME_PROMPTS, frames=True, start_end=None),
    }


def model_of(model_type: str) -> MropeModel | None:
    """The table's row of a model_type, None for a model without M-RoPE."""
    return _models().get(model_type)


def uses_mrope(config) -> bool:
    """Whether vLLM runs the model with M-RoPE: a row of the table whose text rope block has
    mrope_section (vllm/transformers_utils/config.py, uses_mrope; else 1-D positions and
    get_rope's plain RotaryEmbedding)."""
    block = getattr(text_config(config), "rope_parameters", None) or {}
    return model_of(config.model_type) is not None and "mrope_section" in block


def register_cases() -> list:
    """Adds the M-RoPE cases the transformers harness has no tiny model of (Qwen3-VL, Qwen3.5,
    GLM-4.1V) to tiny_models.CASES, and transformers' rope function of those families to
    capture.ADAPTERS; returns their names."""
    import capture
    import tiny_models

    cases = {"qwen3_vl": (QWEN3_VL, "Qwen/Qwen3-VL-8B-Instruct (text head_dim 128)"),
             "qwen3_5": (QWEN3_5, "Qwen3.5 (text head_dim 256, partial 0.25)"),
             "glm4v": (GLM4V, "zai-org/GLM-4.1V-9B-Thinking (text head_dim 128, partial 0.5)")}
    for name, (overrides, checkpoint) in cases.items():
        tiny_models.CASES.setdefault(name, tiny_models.Case(name, overrides, checkpoint,
                                                            auto="base"))
        capture.ADAPTERS.setdefault(name, capture.Adapter(
            f"{name}.modeling_{name}", "apply_rotary_pos_emb", capture._pair))
    return list(cases)


def text_config(config):
    """The decoder's config: text_config of a Qwen-VL wrapper, else the config."""
    return config.get_text_config() if hasattr(config, "vision_config") else config


def position_sets(config, pmodel, limit: int) -> dict:
    """label -> positions [3, seq] the rotation is compared at: each prompt's positions
    (posemb.mrope_index, the family's rule), and the longest one moved to end at limit - 1 (a
    request whose earlier tokens are in the KV cache: every axis shifted alike)."""
    import posemb

    row = model_of(config.model_type)
    sets = {p: posemb.mrope_index(pmodel, p)[0] for p in row.prompts}
    longest = max(sets.values(), key=lambda v: v.shape[1])
    sets[f"shifted to end at {limit - 1}"] = longest + (limit - 1 - int(longest.max()))
    return sets


def prompt_job(prompt: str, config) -> dict:
    """The prompt as vLLM's position code gets it: token ids (text 3.., the token before a
    vision placeholder vision_start_token_id, the one after vision_end_token_id; the placeholder
    image_token_id / video_token_id; GLM-4V's code reads none) and one feature per image or
    video (offset, length: the placeholder's, a video of frames with its vision_start and
    vision_end; is_embed: its frames' tokens; grid before the merge; second_per_grid_ts of a
    Qwen2.5-VL video: the processor's field)."""
    row = model_of(config.model_type)
    merge = config.vision_config.spatial_merge_size
    start, end = (getattr(config, a) for a in row.start_end) if row.start_end else (1, 2)
    # Qwen3-VL's video placeholder spans <vision_start> frame <vision_end> (qwen3_vl.py
    # _iter_mm_grid_hw finds each frame's vision_start from the feature's offset on)
    framed = row.frames
    tokens, features = [], []
    for segment in prompt.split(","):
        kind, size = segment.split(":")
        if kind == "text":
            tokens += [3 + (len(tokens) + i) % 200 for i in range(int(size))]
            continue
        size, _, second = size.partition("@")
        t, h, w = (int(v) for v in size.split("x"))
        count = t * h * w // merge**2
        tokens[-1] = start
        wrap = framed and kind == "video"
        features.append({"modality": kind, "offset": len(tokens) - wrap, "length": count + 2 * wrap,
                         "grid": [t, h, w],
                         "seconds": float(second or 1.0) if kind == "video" and row.seconds
                         else None})
        tokens += [getattr(config, f"{kind}_token_id")] * count
    for f in features:
        tokens[f["offset"] + f["length"] - (framed and f["modality"] == "video")] = \
            end
    features = _videos_of_frames(features) if framed else features
    for f in features:  # which placeholder tokens take the encoder's embeddings (is_embed)
        f["is_embed"] = [tok == config.video_token_id
                         for tok in tokens[f["offset"]:f["offset"] + f["length"]]] \
            if framed and f["modality"] == "video" else None
    return {"prompt": prompt, "tokens": tokens, "features": features}


def _videos_of_frames(features: list) -> list:
    """Videos as frames: one-grid videos of one size whose placeholders are one timestamp token
    apart (<vision_end> <t> <vision_start>) are the frames of one video, one feature (T, h, w)."""
    out = []
    for f in features:
        last = out[-1] if out else None
        if (last and f["modality"] == last["modality"] == "video"
                and f["grid"][1:] == last["grid"][1:]
                and f["offset"] == last["offset"] + last["length"] + 1):
            last["grid"][0] += 1
            last["length"] = f["offset"] + f["length"] - last["offset"]
        else:
            out.append(dict(f, grid=list(f["grid"])))
    return out


def position_rows(name, model, pmodel, meta, outputs) -> list:
    """vLLM's positions and rope delta of each prompt against posemb.mrope_index (the family's
    rule, resume past the largest id) and transformers' get_rope_index."""
    import bias_checks
    from report import Row

    import posemb

    if "mrope" in meta["errors"]:
        return [Row(name, "vllm_mrope_ids", "error", detail=meta["errors"]["mrope"])]
    row = model_of(model.config.model_type)
    merge = model.config.vision_config.spatial_merge_size
    bad = {"posemb": [], "transformers": []}
    for i, prompt in enumerate(row.prompts):
        ours = outputs[f"mrope.{i}"]
        delta = meta["mrope_deltas"][i]
        theirs = {"transformers": bias_checks._hf_mrope(model, prompt, merge)[:2],
                  "posemb": posemb.mrope_index(pmodel, prompt)}
        for who, (theirs, their_delta) in theirs.items():
            if theirs.shape != ours.shape or not (theirs == ours).all() or their_delta != delta:
                where = np.argwhere(theirs != ours) if theirs.shape == ours.shape else []
                first = int(where[0][1]) if len(where) else None
                bad[who].append(f"{prompt}: first difference at token {first}, vLLM t "
                                f"{ours[0].tolist()[-6:]} delta {delta}, {who} t "
                                f"{theirs[0].tolist()[-6:]} delta {their_delta}")
    rows = []
    for who, check in (("posemb", "vllm_mrope_ids"),
                       ("transformers", "vllm_mrope_ids_transformers")):
        rows.append(Row(name, check, "fail" if bad[who] else "pass",
                        detail="; ".join(bad[who][:2]) or
                        f"{len(row.prompts)} prompts, {meta['mrope_class']}"
                        f".get_mrope_input_positions"))
    return rows
