"""Writes the llamacpp-* cases: model.gguf (metadata only) and expected.json.

The key/values are those of real conversions by llama.cpp's convert_hf_to_gguf.py (llama-cpp-python
0.3.36's vendored tree) of tiny random transformers models (tokenizer keys left out); the files are
written with gguf-py (gguf 0.19.0). The expected objects are computed here in float64 from the
rules of that llama.cpp as read in its source (cited per rule), not from posemb.

Run: python make_llamacpp_archs.py (from this folder, with gguf installed).
"""

import json
import math
import os

import gguf

U32, F32, STR = "u32", "f32", "str"

# name -> (arch, [(key without the arch prefix, type, value)], source)
CASES = {
    "llamacpp-qwen2moe": ("qwen2moe", [
        ("block_count", U32, 2), ("context_length", U32, 8192), ("embedding_length", U32, 256),
        ("feed_forward_length", U32, 64), ("attention.head_count", U32, 2),
        ("attention.head_count_kv", U32, 1), ("rope.freq_base", F32, 1e6),
        ("attention.layer_norm_rms_epsilon", F32, 1e-6), ("expert_count", U32, 4),
        ("expert_used_count", U32, 2), ("expert_feed_forward_length", U32, 32),
        ("expert_shared_feed_forward_length", U32, 32)], "Qwen2MoeForCausalLM"),
    "llamacpp-gemma2": ("gemma2", [
        ("context_length", U32, 8192), ("embedding_length", U32, 64), ("block_count", U32, 2),
        ("feed_forward_length", U32, 64), ("attention.head_count", U32, 2),
        ("attention.head_count_kv", U32, 1), ("attention.layer_norm_rms_epsilon", F32, 1e-6),
        ("attention.key_length", U32, 256), ("attention.value_length", U32, 256),
        ("attn_logit_softcapping", F32, 50.0), ("final_logit_softcapping", F32, 30.0),
        ("attention.sliding_window", U32, 4096)], "Gemma2ForCausalLM"),
    "llamacpp-command-r": ("command-r", [
        ("block_count", U32, 2), ("context_length", U32, 8192), ("embedding_length", U32, 256),
        ("feed_forward_length", U32, 64), ("attention.head_count", U32, 2),
        ("attention.head_count_kv", U32, 2), ("rope.freq_base", F32, 8e6),
        ("attention.layer_norm_epsilon", F32, 1e-5), ("logit_scale", F32, 0.0625),
        ("rope.scaling.type", STR, "none")], "CohereForCausalLM"),
    "llamacpp-gpt-oss": ("gpt-oss", [
        ("block_count", U32, 2), ("context_length", U32, 131072), ("embedding_length", U32, 64),
        ("feed_forward_length", U32, 64), ("attention.head_count", U32, 2),
        ("attention.head_count_kv", U32, 1), ("rope.scaling.type", STR, "yarn"),
        ("rope.scaling.factor", F32, 32.0), ("rope.scaling.original_context_length", U32, 4096),
        ("rope.scaling.yarn_beta_fast", F32, 32.0), ("rope.scaling.yarn_beta_slow", F32, 1.0),
        ("rope.freq_base", F32, 150000.0), ("attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("expert_count", U32, 2), ("expert_used_count", U32, 1),
        ("attention.key_length", U32, 64), ("attention.value_length", U32, 64),
        ("attention.sliding_window", U32, 128), ("expert_feed_forward_length", U32, 64)],
        "GptOssForCausalLM"),
    "llamacpp-deepseek2": ("deepseek2", [
        ("block_count", U32, 2), ("context_length", U32, 163840), ("embedding_length", U32, 64),
        ("feed_forward_length", U32, 64), ("attention.head_count", U32, 2),
        ("attention.head_count_kv", U32, 1), ("rope.scaling.type", STR, "yarn"),
        ("rope.scaling.factor", F32, 40.0), ("rope.scaling.original_context_length", U32, 4096),
        ("rope.scaling.yarn_beta_fast", F32, 32.0), ("rope.scaling.yarn_beta_slow", F32, 1.0),
        ("rope.freq_base", F32, 10000.0), ("attention.layer_norm_rms_epsilon", F32, 1e-6),
        ("expert_count", U32, 4), ("expert_used_count", U32, 2), ("expert_group_count", U32, 2),
        ("expert_group_used_count", U32, 1), ("attention.key_length", U32, 96),
        ("attention.value_length", U32, 32), ("leading_dense_block_count", U32, 1),
        ("vocab_size", U32, 256), ("attention.q_lora_rank", U32, 32),
        ("attention.kv_lora_rank", U32, 32), ("attention.key_length_mla", U32, 192),
        ("attention.value_length_mla", U32, 128), ("expert_feed_forward_length", U32, 32),
        ("expert_shared_count", U32, 1), ("expert_weights_scale", F32, 2.5),
        ("rope.dimension_count", U32, 64), ("rope.scaling.yarn_log_multiplier", F32, 0.1)],
        "DeepseekV3ForCausalLM"),
}


def write_gguf(path, arch, kvs):
    writer = gguf.GGUFWriter(path, arch)
    writer.add_string("general.type", "model")
    for key, kind, value in kvs:
        add = {U32: writer.add_uint32, F32: writer.add_float32, STR: writer.add_string}[kind]
        add(f"{arch}.{key}", value)
    writer.add_uint32("general.file_type", 0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def f32(x):
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def inv_freq(n_rot, base, scale, yarn, n_ctx_orig):
    # ggml_rope_yarn_corr_dims (ggml/src/ggml.c), beta 32 / 1 (llama_hparams defaults; neither
    # qwen2moe, gemma2, command-r, openai-moe nor deepseek2 reads yarn_beta_*), and rope_yarn
    # with ext_factor 1 for yarn (llama_context::llama_context) (ggml/src/ggml-cpu/ops.cpp).
    def corr(beta):
        return n_rot * math.log(n_ctx_orig / (2 * math.pi * beta)) / (2 * math.log(base))
    lo, hi = (max(0.0, math.floor(corr(32))), min(n_rot - 1.0, math.ceil(corr(1)))) if yarn else (0, 0)
    out = []
    for i in range(n_rot // 2):
        extrap = base ** (-2 * i / n_rot)
        ramp = (1 - min(1.0, max(0.0, (i - lo) / max(0.001, hi - lo)))) if yarn else 0.0
        out.append(scale * extrap * (1 - ramp) + extrap * ramp)
    return out


def layer(il, head_dim, n_rot, base, pairing, softmax, window, yarn=None, attn=1.0):
    scale = 1.0 / yarn[0] if yarn else 1.0
    return {
        "layer": il, "positions": "rope", "rope_type": "yarn" if yarn else "default",
        "head_dim": head_dim, "rotary_dim": n_rot,
        "inv_freq": inv_freq(n_rot, base, scale, bool(yarn), yarn[1] if yarn else 0),
        "attention_scale": attn, "pairing": pairing, "softmax_scale": softmax,
        "sliding_window": window, "attention_chunk_size": None, "query_temperature": None,
        "mrope_section": None, "mrope_layout": None,
    }


def mscale(factor, m):  # get_mscale, llama_context::llama_context (src/llama-context.cpp)
    return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0


def expected():
    out = {}
    # qwen2moe: NEOX (llama_model_rope_type), n_rot = head_dim = 256 / 2 (load_hparams;
    # GGML_ASSERT in src/models/qwen2moe.cpp), kq_scale 1/sqrt(n_embd_head), no SWA.
    out["llamacpp-qwen2moe"] = [layer(il, 128, 128, 1e6, "rotate_half", 128 ** -0.5, None)
                                for il in (0, 1)]
    # gemma2 (src/models/gemma2.cpp): NEOX; load_swa_pattern(ml, 2): layer 0 SWA (window 4096),
    # layer 1 global; SWA base = global base (10000: no rope.freq_base key); f_attention_scale
    # key_length^-0.5 (2 layers: not the 27B).
    out["llamacpp-gemma2"] = [layer(0, 256, 256, 1e4, "rotate_half", 256 ** -0.5, 4096),
                              layer(1, 256, 256, 1e4, "rotate_half", 256 ** -0.5, None)]
    # command-r: NORM, not permuted by the converter -> interleaved; scaling type none
    # (llama_context: scale 1); kq_scale 1/sqrt(n_embd_head) = 1/sqrt(256 / 2).
    out["llamacpp-command-r"] = [layer(il, 128, 128, f32(8e6), "interleaved", 128 ** -0.5, None)
                                 for il in (0, 1)]
    # gpt-oss (src/models/openai-moe.cpp): NEOX; SWA pattern 2 (layer 0 window 128); YaRN 32 /
    # 4096 on both layers (SWA scale = global scale); yarn_attn_factor = get_mscale(32, 1) /
    # (1 + 0.1 ln 32), times rope_yarn's 1 + 0.1 ln 32: magnitude 1 + 0.1 ln 32; kq 1/sqrt(64).
    attn = mscale(32, 1) / (1 + 0.1 * math.log(32)) * (1 + 0.1 * math.log(32))
    out["llamacpp-gpt-oss"] = [
        layer(0, 64, 64, 150000.0, "rotate_half", 0.125, 128, (32.0, 4096), attn),
        layer(1, 64, 64, 150000.0, "rotate_half", 0.125, None, (32.0, 4096), attn)]
    # deepseek2 (src/models/deepseek2.cpp): NORM -> interleaved; head_dim key_length_mla 192,
    # n_rot 64; rope_yarn_log_mul = 0.1f / 0.1f = 1 -> yarn_attn_factor get_mscale(40, 1) /
    # get_mscale(40, 1) / (1 + 0.1 ln 40): magnitude 1; kq_scale mscale^2 / sqrt(192) with
    # mscale = 1 * (1 + 0.1 * 1 * ln 40).
    log_mul = f32(0.1) / f32(0.1)
    ds_attn = mscale(40, log_mul) / mscale(40, log_mul) / (1 + 0.1 * math.log(40))
    ds_m = ds_attn * (1 + 0.1 * math.log(40)) * (1 + 0.1 * log_mul * math.log(40))
    out["llamacpp-deepseek2"] = [
        layer(il, 192, 64, 1e4, "interleaved", ds_m * ds_m / math.sqrt(192), None, (40.0, 4096),
              ds_attn * (1 + 0.1 * math.log(40)))
        for il in (0, 1)]
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    objects = expected()
    for name, (arch, kvs, source) in CASES.items():
        folder = os.path.join(here, name)
        os.makedirs(folder, exist_ok=True)
        write_gguf(os.path.join(folder, "model.gguf"), arch, kvs)
        case = {
            "_source": f"the key/values of convert_hf_to_gguf.py's conversion of a tiny random "
                       f"{source} (llama-cpp-python 0.3.36), tokenizer keys left out",
            "_note": "float64 expectations from llama.cpp's rules (make_llamacpp_archs.py)",
            "kind": "correct", "arch": arch,
            "oracle": "llama-cpp-python 0.3.36's llama.cpp: src/llama-model.cpp load_hparams / "
                      "llama_model_rope_type, src/models/*.cpp load_arch_hparams and graph "
                      "builders, src/llama-context.cpp yarn cparams, ggml rope_yarn",
            "freqs": [{"args": ["--layer", str(o["layer"])], "expect": o} for o in objects[name]],
        }
        with open(os.path.join(folder, "expected.json"), "w") as out:
            json.dump(case, out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()
