"""The transformers v4 comparison: each rope case's config.json, written in the v4 format
(rope_theta / rope_scaling / partial_rotary_factor at the top level, as transformers 4.x saves
it), run through the modeling code of whichever transformers runs this file, with the same rope
checks as the main harness (rope_case.py) against posemb.load_model of that same file.

run.py --v4-python PY runs it twice: in-process (the pinned transformers, 5.25.0) and under PY (a venv with
transformers 4.57.6, requirements-v4.txt); a (case, check) whose status differs is a place where
v4 and v5 disagree on the same config.json (posemb follows v5).

    python v4.py --posemb-build build/test --models DIR --out FILE.json [--cases ...]
    # DIR/<case>/config.json: the v5-saved config of each case (run.py writes it);
    # writes DIR-v4/<case>/config.json (the v4 format) and FILE.json: the rows
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

# gpt_neox's v4 keys (configuration_gpt_neox.py, 4.57.6): rotary_pct, rotary_emb_base.
V4_KEYS = {"gpt_neox": ("rotary_emb_base", "rotary_pct")}
# v5's layer type names that v4 configs spell otherwise (configuration_utils.py,
# _LEGACY_LAYER_TYPE_REMAP maps them forward).
V4_LAYER_TYPES = {"granitemoehybrid": {"linear_attention": "mamba", "full_attention": "attention"}}


def to_v4(config: dict) -> dict | None:
    """The v4 format of a v5-saved config (None: its rope block has no v4 form here). Nested
    per-layer-type blocks become Gemma 3's v4 keys: rope_theta + rope_scaling of the full
    layers, rope_local_base_freq of the sliding ones."""
    out = {k: v for k, v in config.items() if k != "rope_parameters"}
    names = V4_LAYER_TYPES.get(config.get("model_type"))
    if names and "layer_types" in out:
        out["layer_types"] = [names.get(t, t) for t in out["layer_types"]]
    block = config.get("rope_parameters")
    if not block:
        return out
    if all(isinstance(v, dict) for v in block.values()):
        if set(block) != {"full_attention", "sliding_attention"} or \
                block["sliding_attention"].get("rope_type", "default") != "default":
            return None
        out["rope_local_base_freq"] = block["sliding_attention"]["rope_theta"]
        block = block["full_attention"]
    block = dict(block)
    theta_key, partial_key = V4_KEYS.get(config.get("model_type"), ("rope_theta",
                                                                    "partial_rotary_factor"))
    out[theta_key] = block.pop("rope_theta")
    if "partial_rotary_factor" in block:
        out[partial_key] = block.pop("partial_rotary_factor")
    if block.get("rope_type") == "longrope" and config.get("model_type") == "phi3":
        # v4's Phi3Config._rope_scaling_validation: exactly type, short_factor, long_factor;
        # original_max_position_embeddings at the top level
        out.setdefault("original_max_position_embeddings",
                       block.pop("original_max_position_embeddings", None))
        block = {"type": "longrope", "short_factor": block["short_factor"],
                 "long_factor": block["long_factor"]}
    if block.get("rope_type", block.get("type", "default")) != "default":
        out["rope_scaling"] = block
    out["transformers_version"] = "4.57.6"
    return out


def _model(folder):
    """The tiny model of the config.json in folder (random weights, eager, float32, eval)."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    kwargs = {"attn_implementation": "eager"}
    kwargs["dtype" if transformers.__version__.startswith("5") else "torch_dtype"] = torch.float32
    return transformers.AutoModelForCausalLM.from_config(config, **kwargs).eval()


def run(models_dir: str, cases: list[str]) -> list[dict]:
    """Rows (as dicts) of every case whose config has a v4 form."""
    import report
    from rope_case import rope_case

    rows = []
    for name in cases:
        source = os.path.join(models_dir, name, "config.json")
        v4 = to_v4(json.load(open(source))) if os.path.exists(source) else None
        if v4 is None:
            rows.append(report.Row(f"v4/{name}", "convert", "error",
                                   detail="no config.json or no v4 form of its rope block"))
            continue
        folder = os.path.join(models_dir + "-v4", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(v4, f, indent=2)
        try:
            case_rows, _ = rope_case(f"v4/{name}", None, _model(folder), folder)
            rows += case_rows
        except Exception as error:  # the type is absent from this version, or does not build
            rows.append(report.Row(f"v4/{name}", "build", "error",
                                   detail=f"{type(error).__name__}: {str(error)[:200]}"))
            traceback.print_exc()
    return [dataclasses.asdict(r) for r in rows]


def compare(v5_rows: list[dict], v4_rows: list[dict], versions: tuple[str, str]):
    """One row per (case, check): pass when both versions give the same status against posemb,
    fail where they disagree; error (with the reason) where one version could not run the case
    or the check (a type v4 does not have, a forward v4 cannot run at these positions, an
    attention v4 computes inline, without eager_attention_forward)."""
    import report

    def by_case(rows):
        out = {}
        for r in rows:
            out.setdefault(r["case"], {})[r["check"]] = r
        return out

    v5, v4 = by_case(v5_rows), by_case(v4_rows)
    out = []
    for case in sorted(set(v5) | set(v4)):
        a, b = v5.get(case, {}), v4.get(case, {})
        broken = [(versions[i], side["build"]) for i, side in enumerate((a, b)) if "build" in side]
        broken += [(versions[i], side["convert"]) for i, side in enumerate((a, b)) if "convert" in side]
        if broken:
            out.append(report.Row(case, "run", "error", detail="; ".join(
                f"{version} could not run it: {r['detail'][:160]}" for version, r in broken)))
            continue
        for check in sorted(set(a) | set(b)):
            ra, rb = a.get(check), b.get(check)
            sa, sb = (r["status"] if r else "absent" for r in (ra, rb))
            detail = f"{versions[0]} {sa}, {versions[1]} {sb}"
            if "error" in (sa, sb) or "absent" in (sa, sb):
                worse = ra if sa != "pass" else rb
                out.append(report.Row(case, check, "error",
                                      detail=f"{detail}: {(worse or {}).get('detail', '')[:160]}"))
            elif sa != sb:
                worse = rb if sb != "pass" else ra
                out.append(report.Row(case, check, "fail", detail=f"{detail}: {worse['detail'][:200]}"))
            else:
                out.append(report.Row(case, check, "pass", detail=detail))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posemb-build", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cases", nargs="+", required=True)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(args.posemb_build), "python"))
    import torch
    import transformers

    torch.set_num_threads(1)
    rows = run(args.models, args.cases)
    with open(args.out, "w") as f:
        json.dump({"transformers": transformers.__version__, "rows": rows}, f)


if __name__ == "__main__":
    main()
