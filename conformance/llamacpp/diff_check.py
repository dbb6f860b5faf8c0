"""(c) `posemb diff MODEL.gguf config.json` against what the two engines really do.

The truth: per ROPE node of llama.cpp (positions inside the context it was started with), its
angles pos * inv_freq and magnitude (ggml_reference.effective_inv_freq) against transformers'
own rope at the same positions and layer (hf_rope.hf_angles). They differ when an angle is off by
more than both engines' float32 error (1e-4 + 1e-6 p rad) or the magnitude by more than 1e-5
relative, or when the rotated pair counts differ. posemb diff must report a rope field (ROPE_FIELDS)
exactly then, none otherwise.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np

from compare import node_layer
from ggml_reference import effective_inv_freq, pair_positions
from hf_rope import hf_angles
from report import Row

SCALE_RTOL = 1e-5
# The fields of `posemb diff --json` that describe the rotation (include/posemb/model/diff.hpp's
# plan_fields); softmax_scale, sliding_window, attention_chunk_size, query_temperature are the
# attention's.
ROPE_FIELDS = {"positions", "head_dim", "rotary_dim", "inv_freq", "attention_scale", "pairing",
               "mrope_section", "mrope_layout"}


def engines_differ(node: dict, model, layer: int, seq_len: int) -> tuple[bool, str]:
    """Whether llama.cpp's node and transformers' rope really differ, and where."""
    inv_freq, mscale = effective_inv_freq(node)
    n = node["x"].shape[0]
    pos = pair_positions(node, n)
    angle, scale = hf_angles(model, layer, pos[:, 0].astype(np.int64), inv_freq.size, seq_len)
    if angle.shape[1] != inv_freq.size:
        return True, f"layer {layer}: {inv_freq.size} pairs vs transformers {angle.shape[1]}"
    delta = np.angle(np.exp(1j * (pos * inv_freq - angle)))
    worst = np.max(np.abs(delta) / (1e-4 + 1e-6 * pos))
    if worst > 1:
        i = int(np.argmax(np.max(np.abs(delta), axis=0)))
        return True, f"layer {layer}: angle of pair {i} off by {np.max(np.abs(delta)):.3g} rad"
    if abs(mscale - scale) > SCALE_RTOL * scale:
        return True, f"layer {layer}: magnitude {mscale:.6g} vs transformers {scale:.6g}"
    return False, ""


def diff_row(case: str, tool: str, gguf: str, config: str, n_ctx: int, nodes, model) -> Row:
    """One row: posemb diff's verdict on the rope fields vs the engines' (nodes: ROPE nodes
    inside n_ctx). The attention fields' lines are listed in the detail, not judged here."""
    truth, where = False, ""
    for node in nodes:
        differ, why = engines_differ(node, model, node_layer(node), n_ctx)
        if differ:
            truth, where = True, why
            break
    run = subprocess.run([tool, "diff", gguf, config, "--seq-len", str(n_ctx), "--json"],
                         capture_output=True, text=True)
    if run.returncode not in (0, 3):
        return Row(case, "diff", "fail", detail=f"posemb diff: {run.stderr.strip()}")
    lines = json.loads(run.stdout)
    rope = [d for d in lines if d["field"] in ROPE_FIELDS]
    other = sorted({d["field"] for d in lines if d["field"] not in ROPE_FIELDS})
    said = bool(rope)
    first = f" layer {rope[0]['layer']} {rope[0]['field']} {rope[0].get('note', '')}" if rope else ""
    detail = f"posemb: {'differ' + first if said else 'agree'}".strip()
    detail += f"; engines: {'differ ' + where if truth else 'agree'}"
    if other:
        detail += f"; attention fields posemb reports (not judged here): {', '.join(other)}"
    return Row(case, "diff", "pass" if said == truth else "fail", detail=detail)
