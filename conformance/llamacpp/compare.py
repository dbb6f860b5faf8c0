"""The per-layer checks of one captured ROPE node against posemb (and transformers for diff).

    params_row(case, node, plan, lib)   # (a) posemb layers' and the C API's plan == the node's
                                        #     (an indexer node: the plan's "indexer" of its layer)
    rotation_rows(case, node, plan)     # (b) posemb's rotation of the node's input == its output
    engines_differ(node, hf_angles)     # (c) does llama.cpp's rope really differ from transformers'

`plan` is one layer object of `posemb layers MODEL.gguf --seq-len N --json`.
"""

from __future__ import annotations

import re

import numpy as np

import posemb
from ggml_reference import MODES, effective_inv_freq, float32_angle_bound, rotate
from report import Row

# ggml mode -> posemb's rope_mode of a GGUF layer (layer_plan.hpp)
POSEMB_MODE = {0: "norm", 2: "neox", 8: "mrope", 40: "imrope"}
PAIRING = {0: "interleaved", 2: "rotate_half"}
INV_FREQ_RTOL = 1e-6  # op_params are float32 (freq_base, freq_scale, factors): ~1e-7 relative


def layer_of(name: str) -> int | None:
    """The layer index llama.cpp's graph builders put in a node's name ("Qcur-3" -> 3)."""
    match = re.search(r"-(\d+)", name)
    return int(match.group(1)) if match else None


def node_layer(node: dict) -> int | None:
    """The layer of a ROPE node: from its name, else from its input's (src/models/lfm2.cpp names
    q and k before ggml_rope_ext, "model.layers.{}.self_attn.q_layernorm-2", not after)."""
    layer = layer_of(node["name"])
    return layer if layer is not None else layer_of(node.get("src_name", ""))


def node_label(node: dict) -> str:
    start, count = node["range"]
    return f"{node['name']} pos {start}..{start + count - 1}"


def params_row(case: str, node: dict, plan: dict, library: dict | None) -> Row:
    """(a) rotary_dim, rope_mode, inv_freq (relative), attention_scale, M-RoPE sections of the
    tool's plan; rotary_dim, inv_freq and attention_scale of the library's (c_plan, the C API)."""
    label = f"{case} {node_label(node)}"
    if node["mode"] not in MODES:
        return Row(label, "params", "fail", detail=f"ROPE mode {node['mode']} unknown to posemb")
    inv_freq, mscale = effective_inv_freq(node)
    problems = []
    if is_indexer(node):
        _indexer_problems(node, plan.get("indexer"), problems)
    else:
        if node.get("n_offs", 0) != 0:
            problems.append(f"rotated window at offset {node['n_offs']} (posemb rotates from dim 0)")
        if plan.get("rope_mode") != POSEMB_MODE.get(node["mode"]):
            problems.append(f"rope_mode {plan.get('rope_mode')} vs mode {node['mode']}")
    if node["mode"] in (8, 40) and list(plan.get("mrope_section") or [])[:3] != node["sections"][:3]:
        problems.append(f"mrope_section {plan.get('mrope_section')} vs {node['sections']}")
    err = _plan_error(plan, node, inv_freq, mscale, problems, "")
    if library is None:
        problems.append("library: no RoPE layer from posemb_model_layer_rope")
    else:
        err = max(err, _plan_error(library, node, inv_freq, mscale, problems, "library: "))
    status = "pass" if not problems and err <= INV_FREQ_RTOL else "fail"
    detail = "; ".join(problems) or f"mode {MODES[node['mode']]}, n_dims {node['n_dims']}, " \
        f"freq_scale {node['freq_scale']:.6g}, ext_factor {node['ext_factor']:.3g}, " \
        f"attn {mscale:.6g}, freq_factors {'yes' if node['freq_factors'] is not None else 'no'}" \
        f"; tool and library"
    return Row(label, "params", status, max_error=err, tolerance=INV_FREQ_RTOL, detail=detail)


def is_indexer(node: dict) -> bool:
    """A lightning indexer's ROPE node: the graph builders name it "indexer_q" / "indexer_k"
    (src/models/deepseek32.cpp, glm-dsa.cpp, hy-v4.cpp build_indexer_top_k)."""
    return node["name"].startswith("indexer_")


def _indexer_problems(node: dict, indexer: dict | None, problems: list) -> None:
    """An indexer node against the plan's "indexer" of its layer (layer_plan.hpp): the layer owns
    one; its pairing is the node's mode, its rotated slice starts at the node's n_offs
    (ggml_rope_set_offset) and is n_dims wide. The frequencies are the layer's (_plan_error)."""
    if indexer is None:
        problems.append("indexer node on a layer posemb plans no indexer for")
        return
    if indexer["pairing"] != PAIRING.get(node["mode"]):
        problems.append(f"indexer pairing {indexer['pairing']} vs mode {node['mode']}")
    if indexer["rotary_offset"] != node.get("n_offs", 0):
        problems.append(f"indexer rotary_offset {indexer['rotary_offset']} vs n_offs "
                        f"{node.get('n_offs', 0)}")
    if indexer["rotary_dim"] != node["n_dims"]:
        problems.append(f"indexer rotary_dim {indexer['rotary_dim']} vs n_dims {node['n_dims']}")


def _plan_error(plan: dict, node: dict, inv_freq, mscale: float, problems: list, who: str):
    """Largest relative error of a plan's inv_freq and attention_scale; size mismatches to
    problems (prefixed by who)."""
    if plan.get("rotary_dim") != node["n_dims"]:
        problems.append(f"{who}rotary_dim {plan.get('rotary_dim')} vs n_dims {node['n_dims']}")
    if len(plan.get("inv_freq") or []) != inv_freq.size:
        problems.append(f"{who}{len(plan.get('inv_freq') or [])} inv_freq vs {inv_freq.size} pairs")
        return 0.0
    ours = np.asarray(plan["inv_freq"], dtype=np.float64)
    err = float(np.max(np.abs(ours - inv_freq) / inv_freq))
    return max(err, abs(plan["attention_scale"] - mscale) / mscale)


def _posemb_rotate(node: dict, x: np.ndarray, plan: dict) -> np.ndarray:
    """posemb (exact angles) applying the plan's inv_freq / scale in the node's pairing."""
    spec = posemb.RopeSpec(np.asarray(plan["inv_freq"]), x.shape[-1], plan["attention_scale"],
                           PAIRING.get(node["mode"], "rotate_half"))
    n = x.shape[0]
    if node["mode"] in (8, 40):
        layout = "interleaved" if node["mode"] == 40 else "chunked"
        mspec = posemb.MropeSpec(spec, node["sections"][:3], layout)
        pos = node["positions"].reshape(4, -1)[:3, :n].astype(np.int64)
        return posemb.apply_mrope(x[None], pos[:, None, :], mspec, layout="bshd")[0]
    return posemb.apply_rope(x[None], node["positions"][None, :n].astype(np.int64), spec,
                             layout="bshd")[0]


def rotation_rows(case: str, node: dict, plan: dict) -> list[Row]:
    """(b) posemb(x) vs ggml's y within ggml's float32 bound; posemb exact closer to float64."""
    label = f"{case} {node_label(node)}"
    x, y = node["x"], node["y"]
    try:
        inv_freq, mscale = effective_inv_freq(node)
        reference = rotate(node, x, inv_freq, mscale)
    except ValueError as error:  # a mode the reference does not know: a failing row
        return [Row(label, "rotation", "fail", detail=f"reference: {error}")]
    try:
        ours32 = _posemb_rotate(node, x, plan)
        ours64 = _posemb_rotate(node, x.astype(np.float64), plan)
    except Exception as error:
        return [Row(label, "rotation", "error", detail=f"posemb: {error}")]
    bound = float32_angle_bound(node, x, inv_freq, mscale)
    err = float(np.max(np.abs(ours32.astype(np.float64) - y)))
    ggml_err = float(np.max(np.abs(y - reference)))
    exact_err = float(np.max(np.abs(ours64 - reference)))
    closer = exact_err <= ggml_err or exact_err <= 1e-12 * float(np.max(np.abs(x)))
    return [
        Row(label, "rotation", "pass" if err <= bound else "fail", err, bound,
            f"ggml vs float64 {ggml_err:.3g}"),
        Row(label, "exact_closer", "pass" if closer else "fail", exact_err, ggml_err,
            "posemb exact (float64) vs float64 reference; tolerance = ggml's own error"),
    ]
