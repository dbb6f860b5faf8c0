"""The llama.cpp harness: tiny models -> the real converter -> the real loader's ROPE nodes vs posemb.

    python conformance/llamacpp/run.py --llama-cpp SDIST/vendor/llama.cpp --posemb TOOL \
        --posemb-c LIBPOSEMB_C [--work build/llamacpp] [--out build/conformance/llamacpp] [CASE ...]

Needs llama_cpp (conformance/llamacpp/setup.sh), posemb and transformers importable. Per case:
  convert   the converter's verdict (its own message on failure)
  read      `posemb layers MODEL.gguf --seq-len N --json` and the C API's posemb_model_load_gguf
            read it (the message on failure)
  load      llama.cpp loads and decodes it (positions 0..31, around n_ctx_orig, 100000..)
  params    per ROPE node: the tool's and the C API's plan == the node's op_params
            (compare.params_row)
  rotation, exact_closer   per ROPE node (compare.rotation_rows)
Exit status: a full run (no CASE, no --no-grid / --no-models) adds the row `pinned`: 0 only when
the rows that do not pass are exactly EXPECTED_NOT_PASS and the grid's YaRN cases; a partial run:
non-zero on any row that is not a pass (report.exit_status).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

# build_models puts the transformers harness on sys.path.
from build_models import all_cases, draft_target  # noqa: E402
from report import Row, exit_status, write  # noqa: E402

# The rows of a full run that do not pass, each a departure of the other side, with its evidence
# (docs/conformance-llamacpp.md): the run exits 0 only when exactly these do not pass.
EXPECTED_NOT_PASS = {
    # The converter's (`convert` rows, its own message). conversion/gptneox.py
    # (GPTNeoXModel.set_gguf_parameters) and conversion/command_r.py (Cohere2Model) read
    # hparams["rotary_pct"], which transformers 5 configs no longer carry.
    ("gpt_neox", "convert"),
    ("cohere2", "convert"),
    # conversion/falcon.py (FalconModel) takes num_kv_heads (2, saved beside multi_query: true)
    # and reshapes the fused QKV for 2 K/V heads; the model has one. falcon-alibi: no tensor map
    # for its post_attention_layernorm (the ALiBi Falcon layout).
    ("falcon", "convert"),
    ("falcon-alibi", "convert"),
    # No class in convert_hf_to_gguf.py for the model's architecture.
    *((case, "convert") for case in (
        "gptj", "helium", "persimmon", "codegen", "minimax", "mllama_text_model", "phimoe",
        "mpt", "mpt-12heads", "mistral3", "opt", "zaya", "dory",
        # transformers 5.25 saves the tiny Qwen2.5-VL, Qwen3-VL and Qwen3.5 cases as their
        # *Model classes (Qwen2_5_VLModel, Qwen3VLModel, Qwen3VLMoeModel, Qwen3_5Model,
        # Qwen3_5MoeModel), which the converter registers no class for
        "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")),
    # The converter's own errors on these configs: conversion/gemma.py (Gemma3NModel: "only
    # supports 4 altup inputs"), conversion/hunyuan.py (HunYuanMoEModel: `'int' object is not
    # iterable` on moe_topk), conversion/qwen.py (Qwen3NextModel: an AssertionError),
    # conversion/t5.py (KeyError: 'decoder_start_token_id'), conversion/gpt2.py (KeyError: 'n_ctx').
    *((case, "convert") for case in ("gemma3n_text", "hunyuan_v1_moe", "qwen3_next", "t5", "gpt2")),
    # llama.cpp's loader refuses the tiny model (`load` errors, its message): the graph builders
    # size q by n_embd = n_head * head_dim (src/models/olmo2.cpp, chatglm.cpp; olmo3-wide and
    # glm-wide are their loadable twins), phi2 assumes n_head_kv = n_head (phi-mha), deepseek2
    # needs attention.q_lora_rank (q_lora_rank None), ernie4_5-moe's shared-expert width,
    # cohere2moe's ffn_gate shape (the dense prefix layers), granitehybrid's
    # GGML_ASSERT(2 * n_embd == d_inner) (src/models/granite-hybrid.cpp), deepseek32's
    # expert_gating_func, exaone4's attn_output shape.
    *((f"{case} n_ctx 256", "load") for case in (
        "olmo3", "glm", "phi", "deepseek_v2", "ernie4_5_moe", "cohere2_moe",
        "cohere2_moe-prefix2", "granitemoehybrid", "deepseek_v32", "exaone4")),
    # transformers 5.25's save_pretrained writes HY V4's iHC tensors as model.hc_pre.hc_head.* and
    # layers.N.hc_pre.hc_attn_layer.* (conversion_mapping.py's "hy_v4" renaming
    # `\.hc_pre\.hc_` -> `.hc_` reversed onto every `.hc_`); conversion/hy_v4.py and gguf-py's
    # tensor map know the released names (model.hc_head.hc_head_*,
    # layers.N.hc_attn_layer.hc_pre.hc_*): "Can not map tensor
    # 'model.hc_pre.hc_head.hc_head_base.weight'".
    ("hy_v4", "convert"),
    # posemb has no row and llama.cpp refuses the file too (`read` errors, both messages): t5
    # (the capture decodes without llama_encode), bert (no token type count on the no-vocab path).
    *((f"{case} n_ctx 256", "read") for case in ("mt5", "umt5", "bert", "roberta")),
    # posemb's config.json side: its plan of the granite_swa / granitemoe_swa configs
    # (model/families.hpp) has NoPE layers and frequencies transformers' rotary module does not,
    # while the GGUF's plan matches every ROPE node and the engines agree ("posemb: differ ...;
    # engines: agree").
    *((f"{case} n_ctx 256", "diff") for case in ("granite_swa", "granitemoe_swa")),
}
# The grid's realistic YaRN cases (grid.yarn_cases): ggml's float32 angles (ggml_rope_cache_init:
# theta *= theta_scale per pair, ggml/src/ggml-cpu/ops.cpp) at positions to 131071 give NMSE ~1e-5
# against ggml's own rule in float64, growing as p^2; posemb's is ~1e-24 there (their
# exact_closer rows pass).
N_CTX = 256  # the context llama.cpp is started with (LongRoPE: short factors)
# Second contexts: above Phi-3's 4096 (LongRoPE: long factors); below phi3-orig4000's 4000 but
# padded by llama.cpp to 4096 above it (long factors; transformers at 3900 tokens: short).
CONTEXTS = {"phi3": (N_CTX, 8192), "phi3-orig4000": (N_CTX, 3900)}


def ranges_for(n_ctx_orig: int) -> list[tuple[int, int]]:
    """Positions 0..31, 16 around the original context, 16 from 100000 (memory cleared between)."""
    ranges = [(0, 32), (100000, 16)]
    if n_ctx_orig > 16:
        ranges.insert(1, (n_ctx_orig - 8, 16))
    return ranges


def posemb_layers(tool: str, gguf: str, seq_len: int) -> list[dict]:
    """The plan of `posemb layers MODEL.gguf --seq-len N --json` (RuntimeError: its message)."""
    run = subprocess.run([tool, "layers", gguf, "--seq-len", str(seq_len), "--json"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip() or f"exit {run.returncode}")
    return json.loads(run.stdout)


def node_rows(case: str, gguf: str, tool: str, c_lib: str, n_ctx: int) -> list[Row]:
    """Rows of every ROPE node of one context size."""
    from c_plan import c_plans
    from compare import is_indexer, node_layer, params_row, rotation_rows

    tag = f"{case} n_ctx {n_ctx}"
    try:
        plans = {p["layer"]: p for p in posemb_layers(tool, gguf, n_ctx)}
        library = c_plans(c_lib, gguf, n_ctx)
    except (RuntimeError, OSError) as error:
        return [refused_row(tag, gguf, n_ctx, str(error), _target_gguf(case, gguf))]
    rows = [Row(tag, "read", "pass", detail=f"{len(plans)} layers (tool), "
                                            f"{len(library)} RoPE layers (C API)")]
    try:
        nodes = _capture(gguf, n_ctx, ranges_for(_n_ctx_orig(gguf)), _target_gguf(case, gguf))
    except RuntimeError as error:
        return rows + [Row(tag, "load", "error", detail=f"llama.cpp: {error}")]
    rope_layers = sorted(l for l, p in plans.items() if p.get("positions") == "rope")
    if not nodes:
        # ALiBi (bloom) or no positions: llama.cpp builds no ROPE node; posemb must plan none.
        status = "pass" if not rope_layers else "fail"
        return rows + [Row(tag, "load", status,
                           detail=f"no GGML_OP_ROPE node; posemb's RoPE layers: "
                                  f"{rope_layers or 'none'} (kinds: "
                                  f"{sorted({p.get('positions') for p in plans.values()})})")]
    rows.append(Row(tag, "load", "pass", detail=f"{len(nodes)} ROPE nodes"))
    for node in nodes:
        layer = node_layer(node)
        if layer not in plans:
            rows.append(Row(tag, "params", "fail", detail=f"node {node['name']}: no layer"))
            continue
        rows.append(params_row(tag, node, plans[layer], library.get(layer)))
        rows += rotation_rows(tag, node, plans[layer])
    unrotated = sorted(set(rope_layers) - {node_layer(n) for n in nodes})
    # The layers owning a lightning indexer: posemb's plan ("indexer") and llama.cpp's nodes.
    planned = sorted(l for l, p in plans.items() if p.get("indexer"))
    indexed = sorted({node_layer(n) for n in nodes if is_indexer(n)})
    rows.append(Row(tag, "layers", "fail" if unrotated or planned != indexed else "pass",
                    detail=f"posemb's RoPE layers without a ROPE node: {unrotated or 'none'}; "
                           f"indexer layers: posemb {planned or 'none'}, llama.cpp "
                           f"{indexed or 'none'}"))
    inside = [n for n in nodes if sum(n["range"]) <= n_ctx]
    config = os.path.join(os.path.dirname(gguf), "..", "tiny", case, "config.json")
    try:
        import tiny_models
        from build_models import register_extra_cases
        from diff_check import diff_row

        register_extra_cases(tiny_models)

        rows.append(diff_row(tag, tool, gguf, config, n_ctx, inside, tiny_models.model_for(case)))
    except Exception as error:
        rows.append(Row(tag, "diff", "error", detail=f"transformers: {type(error).__name__}: {error}"))
    return rows


def refused_row(tag: str, gguf: str, n_ctx: int, refusal: str, target: str | None = None) -> Row:
    """posemb refused the file: a failure when llama.cpp loads and runs it (posemb's gap); an
    error when llama.cpp refuses it too (nothing to compare; both messages in the row)."""
    try:
        nodes = _capture(gguf, n_ctx, ranges_for(_n_ctx_orig(gguf)), target)
    except RuntimeError as error:
        return Row(tag, "read", "error", detail=f"both refuse: posemb: {refusal}; llama.cpp: {error}")
    return Row(tag, "read", "fail", detail=f"llama.cpp runs it ({len(nodes)} ROPE nodes); "
                                           f"posemb: {refusal}")


def _target_gguf(case: str, gguf: str) -> str | None:
    """A draft case's target GGUF (build_models.DRAFT_CASES), beside its own; None otherwise."""
    target = draft_target(case)
    return os.path.join(os.path.dirname(gguf), f"{target}.gguf") if target else None


def _capture(gguf: str, n_ctx: int, ranges: list[tuple[int, int]],
             target: str | None = None) -> list[dict]:
    """capture.py in a child process (llama_cpp: setup.sh), a draft beside its target's context;
    RuntimeError: its last stderr line (llama.cpp's GGML_ABORT / GGML_ASSERT message, a Python
    exception)."""
    out = gguf + f".{n_ctx}.nodes.pickle"
    run = subprocess.run([sys.executable, os.path.join(HERE, "capture.py"), gguf, str(n_ctx),
                          json.dumps(ranges), out, *([target] if target else [])],
                         capture_output=True, text=True)
    if run.returncode != 0:
        lines = [l for l in run.stderr.splitlines() if l.strip() and not l.startswith(("#", " "))]
        why = next((l for l in lines if "error loading model" in l or "GGML_" in l or ".cpp:" in l),
                   lines[-1] if lines else "")
        raise RuntimeError(f"exit {run.returncode}: {why.strip()}")
    with open(out, "rb") as f:
        return pickle.load(f)


def _n_ctx_orig(gguf: str) -> int:
    """The GGUF's rope.scaling.original_context_length, else its context_length (gguf-py)."""
    import gguf as gguf_py

    reader = gguf_py.GGUFReader(gguf)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    for key in (f"{arch}.rope.scaling.original_context_length", f"{arch}.context_length"):
        if key in reader.fields:
            return int(reader.fields[key].parts[-1][0])
    return 0


def _versions() -> dict[str, str]:
    """The pinned packages the report ran with (absent ones as "not installed")."""
    from importlib import metadata

    versions = {}
    for name in ("llama-cpp-python", "transformers", "torch", "gguf"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-cpp", required=True, help="the sdist's vendor/llama.cpp")
    parser.add_argument("--posemb", required=True, help="the posemb command-line tool")
    parser.add_argument("--posemb-c", required=True, help="posemb's C API, libposemb_c.so")
    parser.add_argument("--work", default="build/llamacpp")
    parser.add_argument("--out", default="build/conformance/llamacpp")
    parser.add_argument("--ggml-lib", help="folder of libggml-base/-cpu (default: the wheel's)")
    parser.add_argument("--no-models", action="store_true", help="only the rope grid")
    parser.add_argument("--no-grid", action="store_true", help="only the models")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the models and GGUFs already in --work (built/converted.json)")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    rows = [] if args.no_grid else grid(args.ggml_lib)
    cases = [] if args.no_models else args.cases or all_cases()
    rows += model_rows(cases, args)
    full = not (args.no_grid or args.no_models or args.cases)
    if full:
        rows.append(pinned_row(rows))
    write(rows, args.out, title="llama.cpp conformance", versions=_versions())
    print(_summary_line(rows))
    raise SystemExit((rows[-1].status != "pass") if full else exit_status(rows))


def pinned_row(rows: list[Row]) -> Row:
    """One row comparing the non-pass (case, check) set of a full run with the pinned one."""
    from grid import case_name, yarn_cases

    pinned = EXPECTED_NOT_PASS | {(case_name(c), "grid") for c in yarn_cases()}
    seen = {(r.case, r.check) for r in rows if r.status != "pass"}
    new, gone = sorted(seen - pinned), sorted(pinned - seen)
    return Row("pinned", "expected_not_pass", "fail" if new or gone else "pass",
               detail=f"{len(seen)} non-pass rows; pinned {len(pinned)}; not pinned: "
                      f"{new or 'none'}; pinned but passing: {gone or 'none'}")


def _summary_line(rows: list[Row]) -> str:
    from report import summary

    counts = summary(rows)
    return (f"{counts['cases']} cases, {counts['checks']} checks: {counts['pass']} pass, "
            f"{counts['fail']} fail, {counts['error']} error")


def grid(lib_dir: str | None) -> list[Row]:
    """The test-backend-ops rope grid (grid.py) on the given or the installed libggml."""
    try:
        if lib_dir is None:
            import llama_cpp

            lib_dir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        from grid import grid_rows

        return grid_rows(lib_dir)
    except Exception as error:
        return [Row("rope grid", "grid", "error", detail=f"libggml: {type(error).__name__}: {error}")]


def model_rows(cases: list[str], args) -> list[Row]:
    """Build, convert, read, load and compare every case."""
    if not cases:
        return []
    tiny, gguf_dir = os.path.join(args.work, "tiny"), os.path.join(args.work, "gguf")
    os.makedirs(gguf_dir, exist_ok=True)
    py = sys.executable
    if not args.reuse:
        # A draft's target is built and converted with it (it lends token_embd and output).
        targets = [t for c in cases if (t := draft_target(c)) and t not in cases]
        subprocess.run([py, os.path.join(HERE, "build_models.py"), tiny,
                        os.path.join(args.work, "built.json"), *cases, *targets], check=True)
        pairs = [f"{tiny}/{c}={gguf_dir}/{c}.gguf" for c in (*cases, *targets)]
        subprocess.run([py, os.path.join(HERE, "convert.py"), args.llama_cpp,
                        os.path.join(args.work, "converted.json"), *pairs], check=True)
    built = json.load(open(os.path.join(args.work, "built.json")))
    converted = json.load(open(os.path.join(args.work, "converted.json")))
    rows: list[Row] = []
    for case in cases:
        if built.get(case) != "ok":
            rows.append(Row(case, "build", "error", detail=built.get(case, "not built")))
            continue
        verdict = converted.get(case, "not converted")
        if verdict != "ok":
            rows.append(Row(case, "convert", "fail", detail=f"converter: {verdict}"))
            continue
        rows.append(Row(case, "convert", "pass"))
        gguf = f"{gguf_dir}/{case}.gguf"
        for n_ctx in CONTEXTS.get(case, (N_CTX,)):
            rows += node_rows(case, gguf, args.posemb, args.posemb_c, n_ctx)
    return rows


if __name__ == "__main__":
    main()
