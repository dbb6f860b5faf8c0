"""Builds the transformers harness's tiny random models (config.json + safetensors, float32).

    python build_models.py OUT_DIR OUT.json [CASE ...]

Uses conformance/transformers/tiny_models.py (the cases of the transformers harness). OUT.json maps
each case to "ok" or the builder's exception. All cases run in one process (imports dominate).
"""

from __future__ import annotations

import json
import os
import sys

# Appended, not prepended: the transformers harness has a capture.py of its own.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "transformers"))


def all_cases() -> list[str]:
    """Every case of the transformers harness (tiny_models.CASES, in its order), then this
    harness's EXTRA_CASES, NEW_CASES and DRAFT_CASES: the converter is tried on each; one it
    cannot handle is a `convert` row with its message, one without RoPE is loaded and compared
    like the others (no ROPE node on either side)."""
    import tiny_models

    extra = [*EXTRA_CASES, *NEW_CASES, *DRAFT_CASES]
    return [*tiny_models.CASES, *(c for c in extra if c not in tiny_models.CASES)]


# Cases of this harness only: a tiny_models case with some positional fields replaced.
# phi3-orig4000: an original context that is no multiple of 256, so llama.cpp's padding of the
# context (GGML_PAD(n_ctx, 256), llama_context::llama_context) decides LongRoPE's factors: started
# with 3900 it runs 4096 > 4000, the long ones, where transformers at 3900 tokens uses the short.
# phi-mha, glm-wide, olmo3-wide: the tiny models of phi, glm and olmo3 that llama.cpp's loader
# can take (their own tiny models fail check_tensor_dims, rows of their own): conversion/phi.py
# writes no head_count_kv and a feed-forward length of 4 * hidden_size, so llama.cpp's phi2
# assumes as many K/V heads as query heads (phi-mha has 2 of each, and intermediate_size 640);
# src/models/chatglm.cpp and olmo2.cpp size q by n_embd = n_head * head_dim
# (glm-wide and olmo3-wide have hidden_size 256 = 2 heads of 128).
EXTRA_CASES = {
    "phi3-orig4000": ("phi3", lambda o: o | {
        "original_max_position_embeddings": 4000,
        "rope_parameters": o["rope_parameters"] | {"original_max_position_embeddings": 4000}}),
    "phi-mha": ("phi", lambda o: o | {"num_key_value_heads": 2, "intermediate_size": 640}),
    "glm-wide": ("glm", lambda o: o | {"hidden_size": 256}),
    "olmo3-wide": ("olmo3", lambda o: o | {"hidden_size": 256}),
}

# Cases of this harness only for a model type the transformers harness has no tiny_models case for:
# name -> (the transformers model_type, a function of tiny_models giving its config keyword
# arguments, the checkpoint the sizes follow).
# hy_v4: transformers 5.25's HYV4ForCausalLM, which conversion/hy_v4.py (HYV4Model) converts to
# llama.cpp's hy_v4; HYV4Config's MLA and indexer widths (qk_nope 192 + qk_rope 64, index_head_dim
# 128) and rope (default, theta 10000), small sizes; mlp_layer_types and indexer_types given (the
# converter reads both from config.json; as HYV4Config.__post_init__ fills them for 3 layers:
# layer 2 a "shared" indexer layer).
# qwen4_exp: Qwen4ExpForCausalLM, which conversion/qwen4exp.py converts to arch qwen4exp; no
# released config is at hand, so the rope is Qwen3.5-9B's (as the tiny_models case qwen3_5:
# head_dim 256, partial 0.25, interleaved M-RoPE [11, 11, 10], theta 1e7) and the QSA fields are
# small (indexer 2 heads of 64, blocks of 4). transformers' Qwen4ExpTextConfig.__post_init__
# renames the attention layers "indexed_attention" and the converter, reading the config through
# AutoConfig, writes attention.compress_ratios 0 where layer_types is not "full_attention"
# (Qwen4ExpTextModel.set_gguf_parameters): llama.cpp then runs them dense, without QSA.
NEW_CASES = {
    "hy_v4": ("hy_v4", lambda t: dict(
        vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=2, num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, q_lora_rank=32, kv_lora_rank=32, qk_rope_head_dim=64,
        qk_nope_head_dim=192, v_head_dim=64, n_routed_experts=4, num_experts_per_tok=2,
        n_shared_experts=1, moe_intermediate_size=32, index_head_dim=128, index_n_heads=4,
        index_topk=8, mlp_layer_types=["dense", "sparse", "sparse"],
        indexer_types=["full", "full", "shared"]),
        "tencent/Hy4-preview (HYV4Config's MLA, indexer and rope; small sizes)"),
    "qwen4_exp": ("qwen4_exp_text", lambda t: t._small(
        heads=2, **t._QWEN35_TEXT, **t._MOE, shared_expert_intermediate_size=32, hc_count=2,
        hc_lowrank=8, indexer_n_heads=2, indexer_kv_heads=1, indexer_head_dim=64,
        indexer_budget=8, indexer_compress_ratio=4),
        "Qwen4-Exp (Qwen3.5-9B's text rope; the indexer 64 wide, blocks of 4)"),
}


# Draft models of this harness only: the tiny model's Case fields and the case whose GGUF lends
# it token_embd and output (llama.cpp runs a draft with its target's context as ctx_other).
# muse_glimmer_assistant: MuseGlimmerAssistantModel (transformers 5.25), which
# conversion/muse_glimmer.py converts to dflash; it has neither embeddings nor a head
# ("dflash requires ctx_other to be set", src/llama-context.cpp), so capture.py runs it beside
# the tiny llama (hidden size 64, 256 tokens, as here). Positional fields: the config class's
# defaults (head_dim 128, rope_theta 500000, window 2048), one sliding and one full layer.
DRAFT_CASES = {
    "muse_glimmer_assistant": (dict(
        model_type="muse_glimmer_assistant", auto="MuseGlimmerAssistantModel",
        checkpoint="MuseGlimmerAssistantConfig defaults (meta-models/Muse-Glimmer-30B-assistant)",
        overrides=dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=128,
                       sliding_window=2048, layer_types=["sliding_attention", "full_attention"],
                       rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
                       pad_token_id=0, bos_token_id=1, eos_token_id=2, mask_token_id=3)), "llama"),
}


def draft_target(case: str) -> str | None:
    """The case whose GGUF a draft case runs beside (ctx_other), None for other cases."""
    return DRAFT_CASES[case][1] if case in DRAFT_CASES else None


def register_extra_cases(tiny_models) -> None:
    """Adds EXTRA_CASES, NEW_CASES and DRAFT_CASES to tiny_models.CASES (model_for / build then
    know them)."""
    import dataclasses

    for name, (base, change) in EXTRA_CASES.items():
        case = tiny_models.CASES[base]
        extra = dataclasses.replace(case, overrides=change(case.overrides))
        tiny_models.CASES.setdefault(name, extra)
    for name, (model_type, overrides, checkpoint) in NEW_CASES.items():
        tiny_models.CASES.setdefault(name, tiny_models.Case(model_type, overrides(tiny_models),
                                                            checkpoint))
    for name, (fields, _) in DRAFT_CASES.items():
        tiny_models.CASES.setdefault(name, tiny_models.Case(**fields))


def write_vocab_stub(folder: str) -> None:
    """tokenizer.json with vocab_size entries and no added tokens: Gemma's converter trims
    token_embd to len(model.vocab) + len(added_tokens) (conversion/gemma.py modify_tensors)
    even on the no-vocab path, so the stub keeps every row. No other field is read."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    size = (config.get("text_config") or config)["vocab_size"]
    stub = {"model": {"type": "WordLevel", "vocab": {f"t{i}": i for i in range(size)}},
            "added_tokens": []}
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(stub, f)


def main() -> None:
    import tiny_models

    register_extra_cases(tiny_models)
    out_dir, out_json, *cases = sys.argv[1:]
    results = {}
    for case in cases or all_cases():
        try:
            write_vocab_stub(tiny_models.build(case, out_dir))
            results[case] = "ok"
        except Exception as error:
            results[case] = f"{type(error).__name__}: {error}"
        print(f"{case}: {results[case]}", file=sys.stderr, flush=True)
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
