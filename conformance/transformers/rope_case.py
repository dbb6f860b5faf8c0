"""The rope checks of one case, shared by the main harness (run.py) and the v4-format comparison
(v4.py): a tiny model run through its own modeling code at four position sets, captured, and
compared with posemb.load_model of its config.json."""

from __future__ import annotations

import os


def position_sets(config) -> dict:
    """label -> positions [32]: the start, around the original context, 100k+, past it."""
    import rope_checks
    import torch

    length = rope_checks.original_length(config)
    sets = {"0-31": torch.arange(32), f"around {length}": torch.arange(length - 16, length + 16),
            "100000+": torch.arange(100000, 100032)}
    sets[f"past {2 * length}"] = torch.arange(2 * length, 2 * length + 32)
    return sets


class HfState:
    """transformers' dynamic NTK state (modeling_rope_utils.py, dynamic_frequency_update): the
    cached length grows with max(position_ids) + 1 and resets below the original length."""

    def __init__(self, original: int):
        self.original = self.cached = original

    def call(self, seq_len: int) -> int | None:
        before = self.cached
        if seq_len > self.cached:
            self.cached = seq_len
        if seq_len < self.original and before > self.original:
            self.cached = self.original
        return self.cached if self.cached > self.original else None


def posemb_seq_len(kind, state, seq_len):
    """The seq_len posemb is given for a call of max(position_ids) + 1 = seq_len."""
    if kind == "dynamic":
        return state.call(seq_len)
    return seq_len  # longrope picks short / long per call; the rest ignore it


# The multimodal families whose text positions are M-RoPE ids [3, batch, seq] (get_rope_index).
MROPE_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")


def rope_case(name, out_dir, model=None, folder=None):
    """The rope checks of a case: its tiny model saved under out_dir/models/<name>, or `model`
    built from the config.json in `folder` (the v4 comparison)."""
    import capture
    import rope_checks
    import tiny_models
    import torch

    import posemb

    if model is None:
        model = tiny_models.model_for(name)
        folder = os.path.join(out_dir, "models", name)
        model.save_pretrained(folder)
    model_type = model.config.model_type
    config = model.config.get_text_config() if model_type in MROPE_TYPES else model.config
    pmodel = posemb.load_model(os.path.join(folder, "config.json"))
    kinds = {l.rope.rope_type for l in pmodel.layers if l.rope is not None}
    state = HfState(config.max_position_embeddings)
    captures, seq_lens = [], {}
    limit = getattr(config, "n_positions", None) if model_type in ("gptj", "codegen") else None
    for label, positions in position_sets(config).items():
        if limit is not None and int(positions.max()) >= limit:
            continue  # GPT-J's, CodeGen's rotary reads a precomputed [n_positions] table
            # (modeling_gptj.py, modeling_codegen.py: create_sinusoidal_positions)
        ids = positions[None]
        if model_type in MROPE_TYPES:
            ids = positions[None, None].expand(3, 1, -1)
        captures.append((label, positions.numpy(), capture.forward(model, model_type, ids)))
        seq_lens[label] = posemb_seq_len("dynamic" if "dynamic" in kinds else None, state,
                                         int(positions.max()) + 1)
    rows = rope_checks.layer_rows(name, model, config, pmodel, captures[0][2])
    rows += rope_checks.rope_rows(name, model, config, pmodel, captures, seq_lens)
    rows += rope_checks.whole_head_rows(name, config, pmodel, captures, seq_lens)
    rows += rope_checks.attention_rows(name, pmodel, captures[0][2], config)
    rows += rope_checks.temperature_rows(name, model_type, config, pmodel, captures)
    counts = {"layers": len(pmodel.layers), "positions": sum(len(p) for _, p, _ in captures)}
    return rows, counts
