"""vLLM's own reading of a config (posemb/model/engine_vllm.hpp, vllm_readings): the cases whose
config.json leaves to vLLM's model code a default transformers does not share, and the rows that
rotate with posemb at the values `posemb diff --engine vllm` reports for vLLM.

- glm4v-no-partial: GLM-4V's text without partial_rotary_factor or mrope_section. vLLM runs it as
  Glm4ForCausalLM (glm4_1v.py), whose Glm4Attention.__init__ (glm4.py) setdefault()s
  partial_rotary_factor 0.5, and has no M-RoPE without mrope_section (vllm/transformers_utils/
  config.py, uses_mrope): a RotaryEmbedding on the first 32 of 64 features, at 1-D positions.
  transformers 5.25 rotates all 64 (Glm4vTextRotaryEmbedding: partial 1.0, sections [8, 12, 12]).
- glm_moe_dsa-no-interleave: GLM-5 without indexer_rope_interleave: vLLM's indexer_rope_emb
  (vllm/models/deepseek_v32/attention.py) rotates half, transformers' GlmMoeDsaIndexer
  interleaves (the released config.json sets the key true: the glm_moe_dsa case).
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np

# GLM-4V's text, head_dim 64 (Glm4vTextAttention takes hidden_size // heads) so that transformers'
# default sections [8, 12, 12] cover the whole head; no partial_rotary_factor, no mrope_section.
GLM4V_NO_PARTIAL = dict(
    text_config=dict(vocab_size=256, hidden_size=128, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=1, head_dim=64,
                     max_position_embeddings=32768, pad_token_id=0, bos_token_id=1,
                     eos_token_id=2, rope_parameters={"rope_type": "default",
                                                      "rope_theta": 10000.0}),
    vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                       out_hidden_size=128, patch_size=14, spatial_merge_size=2,
                       temporal_patch_size=2))


def register_cases() -> list:
    """Adds the cases to tiny_models.CASES (GLM-5's from the transformers harness's glm_moe_dsa
    case without its indexer_rope_interleave); returns their names."""
    import tiny_models

    glm5 = tiny_models.CASES["glm_moe_dsa"]
    overrides = {k: v for k, v in glm5.overrides.items() if k != "indexer_rope_interleave"}
    cases = {
        "glm4v-no-partial": tiny_models.Case(
            "glm4v", GLM4V_NO_PARTIAL, "zai-org/GLM-4.1V-9B-Thinking's text without "
            "partial_rotary_factor and mrope_section (head_dim 64)", auto="base"),
        "glm_moe_dsa-no-interleave": tiny_models.Case(
            "glm_moe_dsa", overrides, "zai-org/GLM-5 without indexer_rope_interleave",
            auto=glm5.auto),
    }
    for name, case in cases.items():
        tiny_models.CASES.setdefault(name, case)
    return list(cases)


def vllm_plan(build: str, config_path: str, max_model_len: int) -> dict:
    """`posemb diff --engine vllm --max-model-len N config.json --json` of the build's tool:
    layer -> {field: vLLM's value} where vLLM departs (exit 0: nowhere, 3: somewhere)."""
    tool = os.path.join(build, "tools", "posemb")
    done = subprocess.run([tool, "diff", "--engine", "vllm", "--max-model-len",
                           str(max_model_len), config_path, "--json"],
                          capture_output=True, text=True)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"posemb diff --engine vllm: exit {done.returncode}: {done.stderr}")
    plan = {}
    for entry in json.loads(done.stdout):
        plan.setdefault(entry["layer"], {})[entry["field"]] = entry["vllm"]
    return plan


def vllm_spec(spec, fields: dict, indexer: bool):
    """posemb's spec of a call with vLLM's values of the plan put in: a layer's inv_freq (its
    length: rotary_dim / 2), attention_scale and pairing, an indexer's indexer_pairing."""
    import posemb

    if indexer:
        pairing = fields.get("indexer_pairing", spec.pairing)
        inv_freq, scale = spec.inv_freq, spec.attention_scale
    else:
        pairing = fields.get("pairing", spec.pairing)
        inv_freq = np.asarray(fields.get("inv_freq", spec.inv_freq), dtype=np.float64)
        scale = fields.get("attention_scale", spec.attention_scale)
    return posemb.RopeSpec(inv_freq, spec.head_dim, attention_scale=scale, pairing=pairing,
                           rotary_offset=spec.rotary_offset)
