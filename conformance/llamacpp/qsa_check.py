"""QSA's rotations in llama.cpp against posemb: the converted qwen4_exp file with QSA switched on.

    python qsa_check.py WORK TOOL LIBPOSEMB_C [OUT]   # after run.py --work WORK ... qwen4_exp

The pinned converter writes attention.compress_ratios 0 on every layer of a transformers 5.25
Qwen4-Exp (build_models.NEW_CASES), so llama.cpp runs it dense. This copies WORK/gguf/
qwen4_exp.gguf with the attention layer's ratio set to 4 (gguf-py's GGUFReader in place, as the
real checkpoint's "full_attention" layer_types would have it), decodes positions 0..31 and checks
every ROPE node (Qcur, Kcur, indexer_q and the pooled keys, which llama.cpp leaves unnamed) as
run.py does against posemb's plan of that layer (compare.params_row, rotation_rows), and the
pooled keys' positions against posemb's rule: block b of key_block = 4 tokens at b * 4 on every
M-RoPE section (IndexerRope::key_block; llama_memory_hybrid_idx::set_input_qsa). The report
(report.py's format) goes to OUT (default build/conformance/llamacpp-qsa); exit status 0 when
every row passes.
"""

from __future__ import annotations

import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from report import Row, exit_status, write  # noqa: E402

KEY_BLOCK = 4
LAYER = 1  # the tiny model's attention layer (linear_attention, full_attention)


def with_qsa(converted: str, out: str) -> str:
    """A copy of the converted file whose attention layer has compress ratio KEY_BLOCK."""
    import gguf

    shutil.copyfile(converted, out)
    reader = gguf.GGUFReader(out, "r+")
    field = reader.fields["qwen4exp.attention.compress_ratios"]
    field.parts[field.data[LAYER]][0] = KEY_BLOCK
    return out


def pooled_key_row(node: dict) -> Row:
    """The pooled keys' positions: the complete blocks of the decoded range at b * KEY_BLOCK."""
    start, count = node["range"]
    complete = (start + count) // KEY_BLOCK
    pos = node["positions"].reshape(4, -1)[:3, :complete]
    want = np.arange(complete) * KEY_BLOCK
    ok = start == 0 and bool((pos == want).all())
    return Row("qwen4_exp-qsa pooled keys", "positions", "pass" if ok else "fail",
               detail=f"{complete} complete blocks at {pos[0].tolist()}; expected b * {KEY_BLOCK}, "
                      "posemb's key_block rule")


def main() -> None:
    from c_plan import c_plans
    from compare import params_row, rotation_rows
    from run import _capture, _summary_line, _versions, posemb_layers

    work, tool, c_lib, *out = sys.argv[1:]
    gguf = with_qsa(os.path.join(work, "gguf", "qwen4_exp.gguf"),
                    os.path.join(work, "gguf", "qwen4_exp-qsa.gguf"))
    plan = {p["layer"]: p for p in posemb_layers(tool, gguf, 256)}[LAYER]
    library = c_plans(c_lib, gguf, 256).get(LAYER)
    nodes = _capture(gguf, 256, [(0, 32)])
    rows = []
    for node in nodes:
        rows.append(params_row("qwen4_exp-qsa", node, plan, library))
        rows += rotation_rows("qwen4_exp-qsa", node, plan)
    pooled = [n for n in nodes if n["x"].shape[0] != 32]  # one row per block, not per token
    rows += [pooled_key_row(n) for n in pooled] or [
        Row("qwen4_exp-qsa pooled keys", "positions", "fail", detail="no pooled-key ROPE node")]
    write(rows, out[0] if out else "build/conformance/llamacpp-qsa", title="llama.cpp QSA",
          versions=_versions())
    print(_summary_line(rows))
    raise SystemExit(exit_status(rows))


if __name__ == "__main__":
    main()
