"""deepseek4 in the pinned llama.cpp against `posemb layers`, on a GGUF written here.

    VENV/bin/python conformance/llamacpp/deepseek4.py \\
        --llama-cpp /var/cache/posemb/src/llama_cpp_python-0.3.36/vendor/llama.cpp \\
        --posemb BUILD/tools/posemb --posemb-c BUILD/src/c_api/libposemb_c.so [--out DIR]

The pinned converter converts no model transformers builds to deepseek4 (it reads the released
checkpoint's names and MXFP4 experts; tests/model/test_gguf_arch_ds4.cpp says where it stops), so
run.py has no case for it. This writes a tiny random file with the sdist's own gguf-py, holding the
keys and tensors llama_model_deepseek4's load_arch_hparams / load_arch_tensors read
(src/models/deepseek4.cpp): 4 layers of compress ratios 0, 4, 128, 4, YaRN factor 16 from 65536,
nextn_predict_layers 1 without the MTP tensor (as the converter writes it). capture.py then
decodes two ranges in llama.cpp (a child process) and every ROPE node is checked against the plan
of its layer (the tool's, and the C API's rotary_dim, inv_freq and magnitude): rotary_dim, mode NORM, the rotated window's offset (ggml_rope_set_offset: the head's
or the indexer head's last n_rot features), inv_freq and magnitude from the node's op_params
(ggml_reference.effective_inv_freq, 1e-6 relative), and ggml's output against the plan's rotation
of the node's input in float64 (ggml_reference.rotate on the window) within ggml's float32 bound.
The compressed keys (csa_ / hca_ / lid_state_compress) rotate at each block's first position with
the layer's frequencies: their nodes check the frequencies; their positions are llama.cpp's.
Exit status 0 when every node passes.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RATIOS = [0, 4, 128, 4]
N_EMBD, N_HEAD, HEAD, N_ROT = 64, 2, 64, 16
Q_LORA, O_GROUPS, O_LORA, HC = 32, 2, 16, 4
N_EXPERT, N_USED, N_FF_EXP, VOCAB = 4, 2, 32, 256
INDEX_HEADS, INDEX_HEAD = 2, 64  # a multiple of 64: the indexer cache's Hadamard rotation
HASH_LAYERS = 3
INV_FREQ_RTOL = 1e-6


def write_gguf(gguf, path: str) -> None:
    """The file: the keys DeepseekV4Model.set_gguf_parameters writes (conversion/deepseek.py) and
    a float32 random tensor of each shape load_arch_tensors creates."""
    w = gguf.GGUFWriter(path, "deepseek4")
    n = len(RATIOS)
    for add, value in [
        (w.add_block_count, n), (w.add_context_length, 1048576), (w.add_embedding_length, N_EMBD),
        (w.add_feed_forward_length, N_FF_EXP), (w.add_head_count, N_HEAD),
        (w.add_head_count_kv, 1), (w.add_key_length, HEAD), (w.add_value_length, HEAD),
        (w.add_rope_dimension_count, N_ROT), (w.add_rope_freq_base, 10000.0),
        (w.add_rope_scaling_type, gguf.RopeScalingType.YARN), (w.add_rope_scaling_factor, 16.0),
        (w.add_rope_scaling_orig_ctx_len, 65536), (w.add_layer_norm_rms_eps, 1e-6),
        (w.add_q_lora_rank, Q_LORA), (w.add_sliding_window, 8), (w.add_expert_count, N_EXPERT),
        (w.add_expert_used_count, N_USED), (w.add_expert_feed_forward_length, N_FF_EXP),
        (w.add_expert_shared_count, 1), (w.add_expert_weights_scale, 1.5),
        (w.add_expert_weights_norm, True),
        (w.add_expert_gating_func, gguf.ExpertGatingFuncType.SQRTSOFTPLUS),
        (w.add_swiglu_clamp_exp, [10.0] * n), (w.add_swiglu_clamp_shexp, [10.0] * n),
        (w.add_indexer_head_count, INDEX_HEADS), (w.add_indexer_key_length, INDEX_HEAD),
        (w.add_indexer_top_k, 4), (w.add_attention_output_group_count, O_GROUPS),
        (w.add_attention_output_lora_rank, O_LORA), (w.add_attention_compress_ratios, RATIOS),
        (w.add_attention_compress_rope_freq_base, 160000.0), (w.add_hyper_connection_count, HC),
        (w.add_hyper_connection_sinkhorn_iterations, 20), (w.add_hyper_connection_epsilon, 1e-6),
        (w.add_hash_layer_count, HASH_LAYERS), (w.add_nextn_predict_layers, 1),
        (w.add_tokenizer_model, "none"), (w.add_vocab_size, VOCAB),
    ]:
        add(value)
    rng = np.random.default_rng(0)
    for name, ne, integer in _tensors(gguf):
        shape = tuple(reversed(ne))
        data = rng.integers(0, N_EXPERT, size=shape).astype(np.int32) if integer else \
            (rng.standard_normal(shape) * 0.1).astype(np.float32)
        w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _tensors(gguf):
    """(name, ggml ne, int32?) of every tensor load_arch_tensors requires for RATIOS."""
    T = gguf.MODEL_TENSOR

    def t(key, ne, bid=None, suffix=".weight", integer=False):
        return gguf.TENSOR_NAMES[key].format(bid=bid) + suffix, ne, integer

    hc_dim, hc_mix = HC * N_EMBD, (2 + HC) * HC
    out = [t(T.TOKEN_EMBD, [N_EMBD, VOCAB]), t(T.OUTPUT_NORM, [N_EMBD]),
           t(T.OUTPUT, [N_EMBD, VOCAB]), t(T.HC_HEAD_FN, [hc_dim, HC]),
           t(T.HC_HEAD_BASE, [HC]), t(T.HC_HEAD_SCALE, [1])]
    for i, ratio in enumerate(RATIOS):
        out += [t(T.ATTN_NORM, [N_EMBD], i), t(T.ATTN_SINKS, [N_HEAD], i),
                t(T.ATTN_Q_A, [N_EMBD, Q_LORA], i), t(T.ATTN_Q_A_NORM, [Q_LORA], i),
                t(T.ATTN_Q_B, [Q_LORA, N_HEAD * HEAD], i), t(T.ATTN_KV, [N_EMBD, HEAD], i),
                t(T.ATTN_KV_NORM, [HEAD], i),
                t(T.ATTN_OUT_A, [N_HEAD * HEAD // O_GROUPS, O_LORA * O_GROUPS], i),
                t(T.ATTN_OUT_B, [O_GROUPS * O_LORA, N_EMBD], i)]
        for fn, base, scale in ((T.HC_ATTN_FN, T.HC_ATTN_BASE, T.HC_ATTN_SCALE),
                                (T.HC_FFN_FN, T.HC_FFN_BASE, T.HC_FFN_SCALE)):
            out += [t(fn, [hc_dim, hc_mix], i), t(base, [hc_mix], i), t(scale, [3], i)]
        if ratio:
            coff = 2 if ratio == 4 else 1
            out += [t(T.ATTN_COMPRESSOR_WKV, [N_EMBD, coff * HEAD], i),
                    t(T.ATTN_COMPRESSOR_WGATE, [N_EMBD, coff * HEAD], i),
                    t(T.ATTN_COMPRESSOR_APE, [coff * HEAD, ratio], i),
                    t(T.ATTN_COMPRESSOR_NORM, [HEAD], i)]
        if ratio == 4:
            out += [t(T.INDEXER_PROJ, [N_EMBD, INDEX_HEADS], i),
                    t(T.INDEXER_ATTN_Q_B, [Q_LORA, INDEX_HEADS * INDEX_HEAD], i),
                    t(T.INDEXER_COMPRESSOR_WKV, [N_EMBD, 2 * INDEX_HEAD], i),
                    t(T.INDEXER_COMPRESSOR_WGATE, [N_EMBD, 2 * INDEX_HEAD], i),
                    t(T.INDEXER_COMPRESSOR_APE, [2 * INDEX_HEAD, ratio], i),
                    t(T.INDEXER_COMPRESSOR_NORM, [INDEX_HEAD], i)]
        out.append(t(T.FFN_GATE_TID2EID, [N_USED, VOCAB], i, integer=True) if i < HASH_LAYERS
                   else t(T.FFN_EXP_PROBS_B, [N_EXPERT], i, ".bias"))
        out += [t(T.FFN_GATE_INP, [N_EMBD, N_EXPERT], i), t(T.FFN_NORM, [N_EMBD], i),
                t(T.FFN_GATE_EXP, [N_EMBD, N_FF_EXP, N_EXPERT], i),
                t(T.FFN_DOWN_EXP, [N_FF_EXP, N_EMBD, N_EXPERT], i),
                t(T.FFN_UP_EXP, [N_EMBD, N_FF_EXP, N_EXPERT], i),
                t(T.FFN_GATE_SHEXP, [N_EMBD, N_FF_EXP], i),
                t(T.FFN_DOWN_SHEXP, [N_FF_EXP, N_EMBD], i),
                t(T.FFN_UP_SHEXP, [N_EMBD, N_FF_EXP], i)]
    return out


def _freq_error(plan: dict, inv: np.ndarray, mscale: float) -> float:
    """Largest relative error of a plan's inv_freq and attention_scale (inf on a size mismatch)."""
    ours = np.asarray(plan["inv_freq"], dtype=np.float64)
    if ours.size != inv.size:
        return float("inf")
    return max(float(np.max(np.abs(ours - inv) / inv)),
               abs(plan["attention_scale"] - mscale) / mscale)


def check_node(node: dict, layer: dict, library: dict) -> tuple[bool, str]:
    """One ROPE node against its layer's plan from the tool and from the C API (the checks of the
    module docstring)."""
    from ggml_reference import effective_inv_freq, float32_angle_bound, rotate

    inv, mscale = effective_inv_freq(node)
    ours, scale = np.asarray(layer["inv_freq"], dtype=np.float64), layer["attention_scale"]
    freq_err = max(_freq_error(layer, inv, mscale), _freq_error(library, inv, mscale))
    x = node["x"].astype(np.float64)
    off = x.shape[-1] - layer["rotary_dim"]  # the last n_rot of the node's head
    shape_ok = node["mode"] == 0 and layer["rope_mode"] == "norm" and \
        node["n_dims"] == layer["rotary_dim"] == library["rotary_dim"] and node["n_offs"] == off
    ours_y = np.concatenate([x[..., :off], rotate(node, x[..., off:], ours, scale)], axis=-1)
    err = float(np.max(np.abs(ours_y - node["y"])))
    bound = float32_angle_bound(node, x, inv, mscale)
    positions = node["positions"][: x.shape[0]]
    detail = (f"{node['name']} pos {positions[0]}..{positions[-1]}: base {node['freq_base']:.0f}, "
              f"scale {node['freq_scale']:.4g}, ext {node['ext_factor']:.0f}, "
              f"attn {node['attn_factor']:.6f}, n_offs {node['n_offs']}; inv_freq/magnitude "
              f"(tool, library) rel err {freq_err:.2e}, |posemb - ggml| {err:.2e} (bound {bound:.2e})")
    return shape_ok and freq_err <= INV_FREQ_RTOL and err <= bound, detail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-cpp", required=True)
    parser.add_argument("--posemb", required=True)
    parser.add_argument("--posemb-c", required=True)
    parser.add_argument("--out", default=os.path.join("build", "conformance", "llamacpp"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    import gguf

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "deepseek4.gguf")
    write_gguf(gguf, path)
    nodes_file = path + ".nodes.pickle"
    subprocess.run([sys.executable, os.path.join(HERE, "capture.py"), path, "512",
                    json.dumps([[0, 16], [120, 16]]), nodes_file], check=True)
    plan = json.loads(subprocess.run([args.posemb, "layers", path, "--seq-len", "512", "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    from c_plan import c_plans

    library = c_plans(args.posemb_c, path, 512)
    with open(nodes_file, "rb") as f:
        nodes = pickle.load(f)
    layers = {int(re.search(r"-(\d+)$", node["name"]).group(1)) for node in nodes}
    failed = 0 if layers == set(range(len(plan))) == set(library) else 1
    print(f"{'pass' if not failed else 'FAIL'} layers: llama.cpp {sorted(layers)}, "
          f"posemb {len(plan)}, C API {sorted(library)}")
    for node in nodes:
        il = int(re.search(r"-(\d+)$", node["name"]).group(1))
        ok, detail = check_node(node, plan[il], library[il])
        failed += not ok
        print(f"{'pass' if ok else 'FAIL'} {detail}")
    print(f"{len(nodes)} ROPE nodes, {failed} failing")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
