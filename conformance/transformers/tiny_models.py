"""Tiny random transformers models, built offline, whose positional settings are a real checkpoint's.

Interface (used by this harness and by the llama.cpp harness, which converts them to GGUF):

    from tiny_models import CASES, build, config_for
    CASES                      # {case name: Case(model_type, overrides, checkpoint)}
    cfg = config_for("llama")  # the transformers config object of a case (no weights)
    folder = build("llama", "build/tiny", dtype=torch.float32)
    # -> "build/tiny/llama": config.json + model.safetensors (save_pretrained; transformers v5
    #    writes only the keys that differ from the config class's defaults)

A case name is a model_type ("llama") or a variant ("llama-yarn"); `Case.model_type` is the
transformers model_type. The hidden size, layers, heads, experts and vocabulary are made small;
every positional field (rope block, head_dim, rotary fraction, window, chunk, softcap, NoPE
layers, ALiBi heads, T5 buckets, learned table length) is the value of the checkpoint named in
`Case.checkpoint`, and `layer_types` is set explicitly where the config class has it, so both
kinds of layer occur. Weights come from torch.manual_seed(seed) (default 0). The model is built
with eager attention; `build` returns the folder path.
"""

from __future__ import annotations

import dataclasses
import os

import torch


@dataclasses.dataclass(frozen=True)
class Case:
    model_type: str  # transformers' model_type
    overrides: dict  # config keyword arguments: small sizes + the checkpoint's positional fields
    checkpoint: str  # the real checkpoint whose positional fields these are
    auto: str = "causal"  # causal | seq2seq | base | any: which Auto class builds it, or a class name


def _small(heads: int = 2, kv_heads: int = 1, layers: int = 2, **positional) -> dict:
    """Small sizes of a Llama-style config (hidden_size = heads * 32 unless given)."""
    sizes = dict(
        vocab_size=256,
        hidden_size=heads * 32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    sizes.update(positional)
    return sizes


def _alternate(first: str, second: str, n: int, every: int) -> list[str]:
    """layer_types: `second` at every `every`-th layer (1-based), else `first`."""
    return [second if (i + 1) % every == 0 else first for i in range(n)]


_LLAMA31 = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
# Phi-3-mini-128k-instruct's layout (head_dim 96, original 4096, 131072); 48 factors each.
_PHI3_SHORT = [1.0 + 0.005 * i for i in range(48)]
_PHI3_LONG = [1.0 + 1.5 * (i / 47) ** 2 * 30 for i in range(48)]
# Phi-3.5-MoE-instruct's layout (head_dim 128, original 4096, 131072); 64 factors each.
_PHIMOE_SHORT = [1.0 + 0.003 * i for i in range(64)]
_PHIMOE_LONG = [1.0 + 1.2 * (i / 63) ** 2 * 30 for i in range(64)]
_QWEN2VL_VISION = dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2,
                       patch_size=14, spatial_merge_size=2, temporal_patch_size=2)

# Qwen2.5-VL's tower, small; tokens_per_second as the released checkpoints (2).
_QWEN25VL_VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                        out_hidden_size=256, patch_size=14, spatial_merge_size=2,
                        temporal_patch_size=2, tokens_per_second=2, window_size=112,
                        fullatt_block_indexes=[0])

# Qwen3-VL's tower (Qwen3VLVisionConfig), small: patch 16, merge 2, one deepstack layer.
_QWEN3VL_VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                       out_hidden_size=256, patch_size=16, spatial_merge_size=2,
                       temporal_patch_size=2, deepstack_visual_indexes=[0],
                       num_position_embeddings=64)
# Qwen3-VL's text rope (Qwen/Qwen3-VL-8B-Instruct: head_dim 128, theta 5e6, interleaved
# sections [24, 20, 20]) and Qwen3.5's (Qwen/Qwen3.5-9B: head_dim 256, theta 1e7, partial 0.25,
# sections [11, 11, 10]; linear-attention layers between the full ones).
_QWEN3VL_ROPE = {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [24, 20, 20],
                 "mrope_interleaved": True}
_QWEN35_TEXT = dict(head_dim=256, hidden_size=256, max_position_embeddings=262144,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                     "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10],
                                     "mrope_interleaved": True},
                    layer_types=["linear_attention", "full_attention"], linear_num_key_heads=2,
                    linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16)
_MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)

CASES: dict[str, Case] = {
    # ---- Llama-style families of posemb's table, real checkpoints' positional values
    "granite": Case("granite", _small(head_dim=128, hidden_size=256, max_position_embeddings=4096, attention_multiplier=0.0078125, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "ibm-granite/granite-3.0-8b-base (head_dim 128)"),
    "helium": Case("helium", _small(head_dim=128, hidden_size=256, max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 100000.0}), "kyutai/helium-1-preview-2b"),
    "olmo3": Case("olmo3", _small(layers=4, head_dim=128, max_position_embeddings=65536, sliding_window=4096, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, layer_types=["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]), "allenai/Olmo-3-1025-7B (3 sliding : 1 full)"),
    "starcoder2": Case("starcoder2", _small(heads=2, hidden_size=256, max_position_embeddings=16384, sliding_window=4096, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}), "bigcode/starcoder2-7b (head_dim 128)"),
    "smollm3": Case("smollm3", _small(layers=4, head_dim=128, max_position_embeddings=65536, no_rope_layers=[1, 1, 1, 0], rope_parameters={"rope_type": "default", "rope_theta": 5000000.0}), "HuggingFaceTB/SmolLM3-3B (every 4th layer NoPE)"),
    "ernie4_5": Case("ernie4_5", _small(head_dim=128, max_position_embeddings=131072, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}), "baidu/ERNIE-4.5-0.3B-PT"),
    "stablelm": Case("stablelm", _small(heads=2, hidden_size=128, max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}), "stabilityai/stablelm-2-1_6b (head_dim 64, partial 0.25)"),
    "persimmon": Case("persimmon", _small(heads=2, hidden_size=128, max_position_embeddings=16384, rope_parameters={"rope_type": "default", "rope_theta": 25000.0, "partial_rotary_factor": 0.5}), "adept/persimmon-8b-base (head_dim 64, partial 0.5)"),
    "phi": Case("phi", _small(heads=2, hidden_size=160, max_position_embeddings=2048, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.4}), "microsoft/phi-2 (head_dim 80, partial 0.4)"),
    "glm": Case("glm", _small(head_dim=128, max_position_embeddings=131072, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}), "THUDM/glm-4-9b (head_dim 128, partial 0.5)"),
    # ---- Llama-style
    "llama": Case("llama", _small(head_dim=128, max_position_embeddings=131072, rope_parameters=_LLAMA31), "meta-llama/Llama-3.1-8B"),
    "llama-linear": Case("llama", _small(head_dim=128, max_position_embeddings=8192, rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}), "lmsys/vicuna-7b-v1.5-16k (linear 4) style"),
    "llama-dynamic": Case("llama", _small(head_dim=128, max_position_embeddings=4096, rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}), "Llama-2 with dynamic NTK 2"),
    "llama-yarn": Case("llama", _small(head_dim=128, max_position_embeddings=131072, rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0, "original_max_position_embeddings": 32768}), "Qwen/Qwen2.5-7B-Instruct YaRN block"),
    "qwen2": Case("qwen2", _small(heads=2, hidden_size=256, max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, use_sliding_window=True, sliding_window=131072, max_window_layers=1, layer_types=["full_attention", "sliding_attention"]), "Qwen/Qwen2.5-7B-Instruct (head_dim 128)"),
    "qwen2_moe": Case("qwen2_moe", _small(heads=2, hidden_size=256, max_position_embeddings=8192, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32), "Qwen/Qwen1.5-MoE-A2.7B"),
    "qwen3": Case("qwen3", _small(head_dim=128, max_position_embeddings=40960, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, layer_types=["full_attention", "full_attention"]), "Qwen/Qwen3-8B"),
    "qwen3_moe": Case("qwen3_moe", _small(head_dim=128, max_position_embeddings=40960, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32), "Qwen/Qwen3-30B-A3B"),
    "mistral": Case("mistral", _small(head_dim=128, max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, sliding_window=4096), "mistralai/Mistral-7B-v0.1"),
    "mixtral": Case("mixtral", _small(head_dim=128, max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, sliding_window=None, num_local_experts=4, num_experts_per_tok=2), "mistralai/Mixtral-8x7B-v0.1"),
    "gemma2": Case("gemma2", _small(head_dim=256, max_position_embeddings=8192, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0, final_logit_softcapping=30.0, layer_types=["sliding_attention", "full_attention"]), "google/gemma-2-9b"),
    "gemma3_text": Case("gemma3_text", _small(head_dim=256, layers=6, max_position_embeddings=131072, query_pre_attn_scalar=256, sliding_window=1024, rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}, layer_types=_alternate("sliding_attention", "full_attention", 6, 6)), "google/gemma-3-4b-it (text)"),
    "phi3": Case("phi3", _small(heads=2, hidden_size=192, max_position_embeddings=131072, original_max_position_embeddings=4096, sliding_window=262144, rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": _PHI3_SHORT, "long_factor": _PHI3_LONG, "original_max_position_embeddings": 4096}), "microsoft/Phi-3-mini-128k-instruct (layout; factors synthetic)"),
    "gpt_neox": Case("gpt_neox", dict(vocab_size=256, hidden_size=128, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=2048, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}), "EleutherAI/pythia-410m (head_dim 64, rotary_pct 0.25)"),
    "gptj": Case("gptj", dict(vocab_size=256, n_embd=512, n_inner=64, n_layer=2, n_head=2, n_positions=2048, rotary_dim=64), "EleutherAI/gpt-j-6b (head_dim 256, rotary_dim 64)"),
    "falcon": Case("falcon", dict(vocab_size=256, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, multi_query=True, new_decoder_architecture=False, parallel_attn=True, alibi=False, max_position_embeddings=2048, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "tiiuae/falcon-7b (head_dim 64)"),
    "falcon-alibi": Case("falcon", dict(vocab_size=256, hidden_size=128, num_hidden_layers=2, num_attention_heads=32, multi_query=False, new_decoder_architecture=False, parallel_attn=False, bias=True, alibi=True, max_position_embeddings=2048), "tiiuae/falcon-rw-1b (ALiBi, 32 heads)"),
    "deepseek_v3": Case("deepseek_v3", _small(heads=2, kv_heads=2, hidden_size=64, max_position_embeddings=163840, q_lora_rank=32, kv_lora_rank=32, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, n_routed_experts=4, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, rope_interleave=True, rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}), "deepseek-ai/DeepSeek-V3"),
    "deepseek_v32": Case("deepseek_v32", _small(heads=2, kv_heads=2, hidden_size=64, max_position_embeddings=163840, q_lora_rank=32, kv_lora_rank=32, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, n_routed_experts=4, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, index_head_dim=128, index_n_heads=4, index_topk=8, layer_types=["indexed_attention", "indexed_attention"], rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}), "deepseek-ai/DeepSeek-V3.2-Exp (index_head_dim 128; index_n_heads 4 and index_topk 8 small)"),
    "glm_moe_dsa": Case("glm_moe_dsa", _small(layers=3, heads=2, kv_heads=2, hidden_size=64, max_position_embeddings=202752, q_lora_rank=32, kv_lora_rank=32, qk_rope_head_dim=64, qk_nope_head_dim=192, v_head_dim=64, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, index_head_dim=128, index_n_heads=4, index_topk=8, indexer_types=["full", "shared", "full"], indexer_rope_interleave=True, rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 49.5, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}), "zai-org/GLM-5 (MLA qk_rope 64 of 256, index_head_dim 128, indexer_rope_interleave true as released; yarn factor 49.5 = 202752 / 4096, so that vLLM's deepseek_yarn cache covers max_position_embeddings; a shared indexer layer; index_n_heads 4 and index_topk 8 small)"),
    "glm4": Case("glm4", _small(head_dim=128, max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}), "THUDM/GLM-4-9B-0414"),
    "cohere": Case("cohere", _small(heads=2, kv_heads=2, hidden_size=256, max_position_embeddings=8192, rope_parameters={"rope_type": "default", "rope_theta": 8000000.0}), "CohereForAI/c4ai-command-r-v01 (head_dim 128)"),
    "cohere2": Case("cohere2", _small(heads=2, hidden_size=256, layers=4, max_position_embeddings=8192, sliding_window=4096, rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, layer_types=_alternate("sliding_attention", "full_attention", 4, 4)), "CohereForAI/c4ai-command-r7b-12-2024"),
    "cohere2_moe": Case("cohere2_moe", _small(heads=2, hidden_size=256, layers=5, max_position_embeddings=8192, sliding_window=4096, num_experts=2, num_experts_per_tok=1, first_k_dense_replace=1, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "Cohere2MoeConfig defaults (head_dim 128, window 4096, 3 sliding : 1 full; first_k_dense_replace 1 synthetic: a dense prefix layer with force_rope)"),
    "cohere2_moe-prefix2": Case("cohere2_moe", _small(heads=2, hidden_size=256, layers=5, max_position_embeddings=8192, sliding_window=4096, num_experts=2, num_experts_per_tok=1, first_k_dense_replace=2, prefix_dense_sliding_window_pattern=2, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), "Cohere2MoeConfig defaults (synthetic prefix: 2 dense layers at prefix pattern 2, no force_rope)"),
    "llama4_text": Case("llama4_text", _small(head_dim=128, layers=4, max_position_embeddings=262144, intermediate_size_mlp=64, num_local_experts=2, num_experts_per_tok=1, interleave_moe_layer_step=1, attention_chunk_size=8192, no_rope_layers=[1, 1, 1, 0], attn_temperature_tuning=True, floor_scale=8192, attn_scale=0.1, use_qk_norm=True, rope_parameters=_LLAMA31 | {"rope_theta": 500000.0}, layer_types=["chunked_attention", "chunked_attention", "chunked_attention", "full_attention"]), "meta-llama/Llama-4-Scout-17B-16E"),
    "gpt_oss": Case("gpt_oss", _small(heads=2, head_dim=64, hidden_size=64, num_local_experts=2, num_experts_per_tok=1, sliding_window=128, max_position_embeddings=131072, rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096}, layer_types=["sliding_attention", "full_attention"]), "openai/gpt-oss-20b"),
    # ---- the rest of posemb's family table
    "codegen": Case("codegen", dict(vocab_size=256, n_embd=256, n_inner=64, n_layer=2, n_head=4, n_positions=2048, n_ctx=2048, rotary_dim=32, bos_token_id=1, eos_token_id=2), "Salesforce/codegen-350M-mono (head_dim 64, rotary_dim 32)"),
    "deepseek_v2": Case("deepseek_v2", _small(heads=2, kv_heads=2, hidden_size=64, max_position_embeddings=163840, q_lora_rank=None, kv_lora_rank=32, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096}), "deepseek-ai/DeepSeek-V2-Lite"),
    "ernie4_5_moe": Case("ernie4_5_moe", _small(head_dim=128, max_position_embeddings=131072, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, moe_num_experts=4, moe_k=2, moe_num_shared_experts=1, moe_intermediate_size=32, moe_layer_start_index=1), "baidu/ERNIE-4.5-21B-A3B-PT (head_dim 128)"),
    "exaone4": Case("exaone4", _small(layers=4, head_dim=128, max_position_embeddings=131072, sliding_window=4096, rope_parameters={"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, layer_types=_alternate("sliding_attention", "full_attention", 4, 4)), "LGAI-EXAONE/EXAONE-4.0-32B (LLLG, llama3 16)"),
    "falcon_h1": Case("falcon_h1", _small(head_dim=64, hidden_size=64, max_position_embeddings=16384, key_multiplier=0.5, rope_parameters={"rope_type": "default", "rope_theta": 1e11}, mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16, mamba_d_state=8, mamba_chunk_size=16, mamba_expand=1), "tiiuae/Falcon-H1-0.5B-Base (head_dim 64, rope_theta 1e11; key_multiplier synthetic)"),
    "gemma3n_text": Case("gemma3n_text", _small(heads=2, kv_heads=1, layers=10, head_dim=256, hidden_size=64, max_position_embeddings=32768, sliding_window=512, num_kv_shared_layers=5, hidden_size_per_layer_input=8, vocab_size_per_layer_input=256, laurel_rank=4, altup_num_inputs=2, activation_sparsity_pattern=[0.0] * 10, rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}, layer_types=_alternate("sliding_attention", "full_attention", 10, 5)), "google/gemma-3n-E2B (4 sliding : 1 full, last 10 of 30 layers share KV)"),
    "gemma4_text": Case("gemma4_text", _small(heads=2, kv_heads=1, layers=6, head_dim=256, global_head_dim=512, hidden_size=64, max_position_embeddings=131072, sliding_window=512, hidden_size_per_layer_input=8, vocab_size_per_layer_input=256, rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}, layer_types=_alternate("sliding_attention", "full_attention", 6, 6)), "configuration_gemma4.py defaults (5 sliding : 1 full, global head_dim 512, proportional 0.25)"),
    "glm4_moe": Case("glm4_moe", _small(head_dim=128, max_position_embeddings=131072, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.5}, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1), "zai-org/GLM-4.5-Air (head_dim 128, partial 0.5)"),
    "granitemoehybrid": Case("granitemoehybrid", _small(heads=2, hidden_size=128, max_position_embeddings=131072, position_embedding_type="rope", attention_multiplier=0.015625, rope_parameters={"rope_type": "default", "rope_theta": 10000000.0}, num_local_experts=2, num_experts_per_tok=1, shared_intermediate_size=32, mamba_n_heads=4, mamba_d_head=32, mamba_d_state=8, mamba_chunk_size=16, mamba_expand=1, layer_types=["linear_attention", "full_attention"]), "ibm-granite/granite-4.0-micro (head_dim 64, rope_theta 1e7)"),
    "granite_swa": Case("granite_swa", _small(heads=2, hidden_size=128, layers=4, max_position_embeddings=8192, sliding_window=128, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, layer_rope_theta=[10000.0, 0, 500000.0, 10000.0]), "ibm-granite/granite-swash-2b (class defaults: full iff i % 4 == 0, window 128; layer_rope_theta synthetic, with a NoPE layer)"),
    "granitemoe_swa": Case("granitemoe_swa", _small(heads=2, hidden_size=128, layers=4, max_position_embeddings=2048, sliding_window=128, num_local_experts=2, num_experts_per_tok=1, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, layer_rope_theta=[1000000.0, 10000.0, 0, 10000.0]), "GraniteMoeSWAConfig defaults (full iff i % 4 == 0, window 128; layer_rope_theta synthetic, with a NoPE layer)"),
    "hunyuan_v1_dense": Case("hunyuan_v1_dense", _small(head_dim=128, max_position_embeddings=32768, rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1.0, "alpha": 1000.0}), "tencent/Hunyuan-7B-Instruct (dynamic, alpha 1000)"),
    "hunyuan_v1_moe": Case("hunyuan_v1_moe", _small(head_dim=128, max_position_embeddings=32768, rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1.0, "alpha": 1000.0}, num_experts=4, moe_topk=2, moe_intermediate_size=32), "tencent/Hunyuan-A13B-Instruct (dynamic, alpha 1000)"),
    "lfm2": Case("lfm2", _small(layers=4, heads=2, hidden_size=128, max_position_embeddings=128000, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, layer_types=["conv", "conv", "full_attention", "conv"]), "LiquidAI/LFM2-1.2B (head_dim 64)"),
    "minimax": Case("minimax", _small(head_dim=128, max_position_embeddings=10240000, rope_parameters={"rope_type": "default", "rope_theta": 10000000.0}, num_local_experts=2, num_experts_per_tok=1, block_size=16, layer_types=["linear_attention", "full_attention"]), "MiniMaxAI/MiniMax-Text-01-hf (head_dim 128, rope_theta 1e7)"),
    "ministral3": Case("ministral3", _small(head_dim=128, max_position_embeddings=262144, rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0, "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}), "mistralai/Ministral-3-8B-Instruct-2512"),
    "mllama_text_model": Case("mllama_text_model", _small(layers=4, heads=2, hidden_size=256, max_position_embeddings=131072, cross_attention_layers=[3], rope_parameters=_LLAMA31), "meta-llama/Llama-3.2-11B-Vision (text; head_dim 128, cross-attention layer)", auto="MllamaForCausalLM"),
    "phimoe": Case("phimoe", _small(heads=2, hidden_size=256, max_position_embeddings=131072, sliding_window=131072, num_local_experts=2, num_experts_per_tok=1, rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": _PHIMOE_SHORT, "long_factor": _PHIMOE_LONG, "short_mscale": 1.243163121016122, "long_mscale": 1.243163121016122, "original_max_position_embeddings": 4096}), "microsoft/Phi-3.5-MoE-instruct (layout and mscales; factors synthetic)"),
    "qwen3_next": Case("qwen3_next", _small(layers=4, head_dim=256, hidden_size=64, max_position_embeddings=262144, rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25}, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32, linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16, layer_types=_alternate("linear_attention", "full_attention", 4, 4)), "Qwen/Qwen3-Next-80B-A3B-Instruct (head_dim 256, partial 0.25)"),
    # ---- ALiBi, relative bias
    "bloom": Case("bloom", dict(vocab_size=256, hidden_size=64, n_layer=2, n_head=16), "bigscience/bloom-560m (16 heads)"),
    "bloom-12heads": Case("bloom", dict(vocab_size=256, hidden_size=96, n_layer=2, n_head=12), "non-power-of-2 head count (bloom's second slope sequence)"),
    "mpt": Case("mpt", dict(vocab_size=256, d_model=128, n_layers=2, n_heads=32, expansion_ratio=1, max_seq_len=2048, attn_config={"alibi": True, "alibi_bias_max": 8}), "mosaicml/mpt-7b (32 heads)"),
    "mpt-12heads": Case("mpt", dict(vocab_size=256, d_model=96, n_layers=2, n_heads=12, expansion_ratio=1, max_seq_len=2048, attn_config={"alibi": True, "alibi_bias_max": 8}), "non-power-of-2 head count (MPT's own slope order)"),
    "mt5": Case("mt5", dict(vocab_size=256, d_model=64, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=6, relative_attention_num_buckets=32, relative_attention_max_distance=128), "google/mt5-small (6 heads, 32 buckets, 128)", auto="seq2seq"),
    "umt5": Case("umt5", dict(vocab_size=256, d_model=64, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=6, relative_attention_num_buckets=32, relative_attention_max_distance=128), "google/umt5-small (6 heads, 32 buckets, 128, a table per layer)", auto="seq2seq"),
    "t5": Case("t5", dict(vocab_size=256, d_model=64, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=8, relative_attention_num_buckets=32, relative_attention_max_distance=128), "google-t5/t5-small (8 heads, 32 buckets, 128)", auto="seq2seq"),
    # ---- M-RoPE
    "qwen2_5_vl": Case("qwen2_5_vl", dict(text_config=_small(heads=2, hidden_size=256, max_position_embeddings=128000, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]}), vision_config=_QWEN25VL_VISION), "Qwen/Qwen2.5-VL-7B-Instruct (text head_dim 128, tokens_per_second 2)", auto="base"),
    "qwen3_vl": Case("qwen3_vl", dict(text_config=_small(heads=2, hidden_size=256, head_dim=128, max_position_embeddings=262144, rope_parameters=_QWEN3VL_ROPE), vision_config=_QWEN3VL_VISION), "Qwen/Qwen3-VL-8B-Instruct (text head_dim 128, interleaved M-RoPE)", auto="base"),
    "qwen3_vl_moe": Case("qwen3_vl_moe", dict(text_config=_small(heads=2, hidden_size=256, head_dim=128, max_position_embeddings=262144, rope_parameters=_QWEN3VL_ROPE, **_MOE), vision_config=_QWEN3VL_VISION), "Qwen/Qwen3-VL-30B-A3B-Instruct (text head_dim 128, interleaved M-RoPE)", auto="base"),
    "qwen3_5": Case("qwen3_5", dict(text_config=_small(heads=2, **_QWEN35_TEXT), vision_config=_QWEN3VL_VISION), "Qwen/Qwen3.5-9B (text head_dim 256, partial 0.25, interleaved M-RoPE)", auto="base"),
    "qwen3_5_moe": Case("qwen3_5_moe", dict(text_config=_small(heads=2, **_QWEN35_TEXT, **_MOE, shared_expert_intermediate_size=32), vision_config=_QWEN3VL_VISION), "Qwen/Qwen3.5-35B-A3B (text head_dim 256, partial 0.25, interleaved M-RoPE)", auto="base"),
    "qwen2_vl": Case("qwen2_vl", dict(text_config=_small(heads=2, hidden_size=256, max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]}), vision_config=_QWEN2VL_VISION | {"hidden_size": 256}), "Qwen/Qwen2-VL-7B-Instruct (text head_dim 128)", auto="base"),
    # ---- a vision tower's 2-D rope (Pixtral, inside its wrapper's config)
    "mistral3": Case("mistral3", dict(text_config=_small(head_dim=128, max_position_embeddings=131072, sliding_window=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000000.0}), vision_config=dict(hidden_size=128, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, head_dim=64, image_size=1540, patch_size=14, rope_parameters={"rope_type": "axial", "rope_theta": 10000.0}), spatial_merge_size=2), "mistralai/Mistral-Small-3.1-24B-Instruct-2503 (Pixtral tower: head_dim 64, patch 14, theta 1e4)", auto="base"),
    # ---- learned tables
    "gpt2": Case("gpt2", dict(vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=1024), "openai-community/gpt2 (1024 positions)"),
    "opt": Case("opt", dict(vocab_size=256, hidden_size=64, ffn_dim=64, word_embed_proj_dim=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=2048), "facebook/opt-125m (2048 + offset 2)"),
    "bert": Case("bert", dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=512), "google-bert/bert-base-uncased (512)", auto="base"),
    "roberta": Case("roberta", dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=514, pad_token_id=1), "FacebookAI/roberta-base (514, padding_idx 1)", auto="base"),
    "zaya": Case("zaya", _small(heads=2, kv_heads=2, head_dim=128, hidden_size=64, max_position_embeddings=131072, sliding_window=1024, num_experts=2, num_experts_per_tok=1, moe_intermediate_size=32, router_hidden_size=16, layer_types=["hybrid", "hybrid_sliding"], rope_parameters={"hybrid": {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.5}, "hybrid_sliding": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}}), "Zyphra/ZAYA1-8B (configuration_zaya.py defaults: hybrid theta 5e6, hybrid_sliding 1e4, partial 0.5, head_dim 128; the hybrid_sliding layer and window 1024 synthetic)"),
    "dory": Case("dory", _small(heads=2, kv_heads=2, layers=4, head_dim=256, hidden_size=64, max_position_embeddings=8192, sliding_window=1024, n_input_layers=1, n_recurrent_layers=2, n_output_layers=1, n_recurrent_loops=2, layer_types=["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"], rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": {"rope_type": "default", "rope_theta": 10000000.0}}), "configuration_dory.py defaults (3 sliding : 1 full, theta 1e4 / 1e7, head_dim 256, window 1024; saved as (attention, mlp) blocks; 1 input, 2 recurrent layers looped twice, 1 output)"),
}


def config_for(case: str):
    """The transformers config of a case (eager attention), without building weights."""
    from transformers import AutoConfig

    spec = CASES[case]
    config = AutoConfig.for_model(spec.model_type, **spec.overrides)
    config._attn_implementation = "eager"
    for sub in ("text_config", "vision_config"):
        if getattr(config, sub, None) is not None:
            getattr(config, sub)._attn_implementation = "eager"
    return config


def model_for(case: str, dtype=torch.float32, seed: int = 0):
    """The random tiny model of a case, eval(), in dtype."""
    import transformers

    autos = {
        "causal": transformers.AutoModelForCausalLM,
        "seq2seq": transformers.AutoModelForSeq2SeqLM,
        "base": transformers.AutoModel,
    }
    name = CASES[case].auto
    if name == "any":  # a causal LM where the type has one, else the base model
        config = config_for(case)
        name = "causal" if type(config) in transformers.AutoModelForCausalLM._model_mapping else "base"
    auto = autos[name] if name in autos else getattr(transformers, name)
    torch.manual_seed(seed)
    if name in autos:
        model = auto.from_config(config_for(case), dtype=dtype, attn_implementation="eager")
    else:  # a model class: its constructor (the default dtype set around it)
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            model = auto(config_for(case))
        finally:
            torch.set_default_dtype(previous)
    return model.eval()


def build(case: str, out_dir: str, dtype=torch.float32, seed: int = 0) -> str:
    """Builds the case's tiny model and saves it (save_pretrained) in out_dir/<case>; returns it."""
    folder = os.path.join(out_dir, case)
    model_for(case, dtype, seed).save_pretrained(folder)
    return folder


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("cases", nargs="*", help="case names (default: every case)")
    args = parser.parse_args()
    failed = []
    for name in args.cases or CASES:
        try:
            print(build(name, args.out_dir))
        except Exception as error:  # report every case, then fail
            failed.append(name)
            print(f"{name}: {type(error).__name__}: {error}")
    raise SystemExit(1 if failed else 0)
