"""The vLLM conformance harness: every rope case of the transformers harness (its tiny models,
conformance/transformers/tiny_models.py) rotated by vLLM's own rotary layer, built as vLLM's model
code builds it from the same config (worker.py, in the vLLM venv), next to posemb and transformers.
Writes build/conformance/vllm/report.{json,md}; exits 0 only when the rows that do not pass are
exactly EXPECTED_NOT_PASS (vLLM's departures, docs/conformance-vllm.md).

    build/venv/bin/python conformance/vllm/run.py --posemb-build build/test \
        [--vllm-python /var/cache/posemb/venv-vllm/bin/python] [--cases llama phi3 ...]

Without a vLLM python (--vllm-python, else conformance/vllm/setup.sh's venv) it says how to make
one and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HF = os.path.join(ROOT, "conformance", "transformers")
sys.path[:0] = [HF, os.path.dirname(HERE)]
DEFAULT_VLLM = os.path.join(os.environ.get("POSEMB_CACHE", "/var/cache/posemb"), "venv-vllm",
                            "bin", "python")

# (case, check) rows that do not pass because vLLM 0.33.0 departs from transformers and posemb
# (docs/conformance-vllm.md, "Departures"); `posemb diff --engine vllm` reports each.
EXPECTED_NOT_PASS = {
    # DynamicNTKScalingRotaryEmbedding (dynamic_ntk_scaling_rope.py) caches max_position_embeddings
    # rows of a constant base while vLLM's default max_model_len is max_position_embeddings *
    # factor (config/model.py _get_and_verify_max_len): positions 4096..8191 raise IndexError
    # (vllm-project/vllm#41236).
    ("llama-dynamic", "vllm_model"),
    # Phi3LongRoPEScaledRotaryEmbedding (phi3_long_rope_scaled_rope.py) takes long_factor for every
    # position when max_model_len (here max_position_embeddings) > original_max_position_embeddings;
    # transformers and posemb take short_factor for a sequence within the original context
    # (vllm-project/vllm#27431).
    ("phi3", "vllm_vs_transformers"),
    ("phi3", "vllm_vs_posemb"),
    ("phimoe", "vllm_vs_transformers"),
    ("phimoe", "vllm_vs_posemb"),
    # Qwen2VLModel / Qwen2_5_VLModel.get_rope_index (transformers 5.x) resume the text after a
    # video at max(h, w) / merge past its start; vLLM's get_mrope_input_positions (qwen2_vl.py,
    # qwen2_5_vl.py: st_idx = llm_pos_ids_list[-1].max() + 1) past its largest id, as Qwen's own
    # code, transformers 4.57 and posemb (the transformers harness pins the same rows).
    ("qwen2_vl", "vllm_mrope_ids_transformers"),
    ("qwen2_5_vl", "vllm_mrope_ids_transformers"),
    # Qwen2_5_VLForConditionalGeneration.iter_mm_grid_thw (qwen2_5_vl.py): t_factor =
    # second_per_grid_ts.item() * tokens_per_second in double from the float32 field, then
    # (g * t_factor).astype(int64): at 0.7 s (float32 0.699999988) g = 5 gives 6.99999988 -> 6,
    # where transformers' float32 (g * S) * tokens_per_second and posemb give 7.
    ("qwen2_5_vl", "vllm_mrope_ids"),
    # Glm4Attention.__init__ (glm4.py, GLM-4V's text through glm4_1v.py) setdefault()s
    # partial_rotary_factor 0.5 and vLLM has no M-RoPE without mrope_section (uses_mrope):
    # 32 of 64 features rotated where transformers rotates 64 (reading.py).
    ("glm4v-no-partial", "vllm_vs_transformers"),
    ("glm4v-no-partial", "vllm_vs_posemb"),
    # DeepseekV32Attention.__init__ (vllm/models/deepseek_v32/attention.py): the indexer rotates
    # half unless indexer_rope_interleave; transformers' GlmMoeDsaIndexer interleaves.
    ("glm_moe_dsa-no-interleave", "vllm_indexer_vs_transformers"),
    ("glm_moe_dsa-no-interleave", "vllm_indexer_vs_posemb"),
}


def _args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "conformance", "vllm"))
    parser.add_argument("--posemb-build", help="a build folder whose python/ holds posemb")
    parser.add_argument("--vllm-python", default=DEFAULT_VLLM,
                        help="a python with vllm 0.33.0 (conformance/vllm/setup.sh prints it)")
    parser.add_argument("--cases", nargs="*", help="tiny_models case names (default: all)")
    return parser.parse_args()


def vllm_version(python: str) -> str | None:
    """vllm's version in that python, None where it has none."""
    if not os.path.exists(python):
        return None
    found = subprocess.run([python, "-c", "import importlib.metadata as m; "
                            "print(m.version('vllm'))"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def rope_parameters(config, layer_type):
    """The config's rope block for a layer type (nested per layer type or one)."""
    block = dict(getattr(config, "rope_parameters", None) or {})
    if layer_type in block and isinstance(block[layer_type], dict):
        return dict(block[layer_type])
    return block


def max_model_len(config) -> int:
    """The max_model_len the case is run at: vLLM's default where it has no LongRoPE layer
    (vllm/config/model.py _get_and_verify_max_len: max_position_embeddings, times `factor` for
    rope types other than longrope / llama3 / yarn / deepseek_yarn, except Gemma 3), else
    max_position_embeddings (vLLM's default there is the original length: short factors only)."""
    length = getattr(config, "max_position_embeddings", None) or config.n_positions
    types = getattr(config, "layer_types", None) or [None]
    blocks = [rope_parameters(config, t) for t in set(types)]
    if "gemma3" in config.model_type:
        return length
    factor = 1.0
    for block in blocks:
        if block.get("rope_type") not in ("longrope", "llama3", "yarn", "deepseek_yarn"):
            factor = block.get("factor", factor) or 1.0
    return int(length * factor)


def position_sets(config, limit: int) -> dict:
    """label -> positions [32] below vLLM's max_model_len: the start, around the original
    context, past max_position_embeddings (where max_model_len allows), the last 32."""
    import rope_checks

    original = rope_checks.original_length(config)
    length = getattr(config, "max_position_embeddings", None) or config.n_positions
    sets = {"0-31": np.arange(32)}
    if 16 <= original <= limit - 16:
        sets[f"around {original}"] = np.arange(original - 16, original + 16)
    if length + 32 <= limit - 32:
        sets[f"past {length}"] = np.arange(length, length + 32)
    sets[f"last 32 below {limit}"] = np.arange(limit - 32, limit)
    return sets


def _tokens_heads(x: np.ndarray, layout: str) -> np.ndarray:
    """[1, heads, seq, d] or [1, seq, heads, d] -> [seq, heads, d] float32."""
    x = x[0] if layout == "bshd" else x[0].transpose(1, 0, 2)
    return np.ascontiguousarray(x, dtype=np.float32)


def _config_dict(config) -> dict:
    """The config as vLLM's model code reads it: to_dict(), plus transformers' per_layer_config
    (per-layer attributes, Gemma 4's head_dim), which to_dict() leaves out."""
    out = config.to_dict()
    names = sorted(getattr(config, "per_layer_attributes", None) or ())
    if names:
        out["per_layer_config"] = [{n: getattr(p, n) for n in names}
                                   for p in config.per_layer_config]
    return out


def capture_case(name: str, work: str):
    """Builds the case's tiny model, runs transformers' forward at each position set and writes
    the worker's job: WORK/name/{config.json, inputs.npz, job.json}; returns (model, config,
    posemb model, calls), calls [(key, label, positions, RopeCall)]. An M-RoPE model (mrope.py)
    runs at the [3, seq] positions of multimodal prompts, and its job carries the prompts for
    vLLM's own position computation."""
    import capture
    import mrope
    import rope_case
    import tiny_models
    import torch

    import posemb

    folder = os.path.join(work, name)
    model = tiny_models.model_for(name)
    model.save_pretrained(os.path.join(folder, "model"))
    config = model.config
    text = mrope.text_config(config)
    pmodel = posemb.load_model(os.path.join(folder, "model", "config.json"))
    limit = max_model_len(text)
    state = rope_case.HfState(text.max_position_embeddings) if hasattr(
        text, "max_position_embeddings") else None
    is_mrope = mrope.uses_mrope(config)
    sets = (mrope.position_sets(config, pmodel, limit) if is_mrope else
            {label: p[None] for label, p in position_sets(text, limit).items()})
    calls, inputs, job_calls = [], {}, []
    for label, positions in sets.items():  # positions [axes, seq]: 3 for M-RoPE, else 1
        ids = torch.from_numpy(positions)[:, None] if is_mrope else torch.from_numpy(positions)
        recorded = capture.forward(model, config.model_type, ids)
        positions = positions if is_mrope else positions[0]
        seq_len = int(positions.max()) + 1
        kinds = {l.rope.rope_type for l in pmodel.layers if l.rope is not None}
        seq_len = rope_case.posemb_seq_len("dynamic" if "dynamic" in kinds else None, state,
                                           seq_len)
        for call in recorded.rope:
            key = f"c{len(calls)}"
            calls.append((key, label, positions, seq_len, call))
            inputs[f"{key}.x"] = _tokens_heads(call.x_in.float().numpy(), call.layout)
            inputs[f"{key}.positions"] = positions.astype(np.int64)
            types = getattr(text, "layer_types", None)
            job_calls.append({"key": key, "layer": call.layer, "indexer": call.indexer,
                              "layer_type": types[call.layer] if types else None})
    np.savez(os.path.join(folder, "inputs.npz"), **inputs)
    json.dump(_config_dict(config), open(os.path.join(folder, "config.json"), "w"), default=str)
    job = {"architectures": config.architectures, "max_model_len": limit, "calls": job_calls}
    if is_mrope:
        job["mrope_prompts"] = [mrope.prompt_job(p, config)
                                for p in mrope.model_of(config.model_type).prompts]
    json.dump(job, open(os.path.join(folder, "job.json"), "w"))
    return model, config, pmodel, calls


def compare_case(name, model, config, pmodel, calls, folder, plan) -> list:
    """vLLM's outputs against transformers' and posemb's rotation of the same input; where
    `posemb diff --engine vllm` reports departures (plan: reading.vllm_plan), also against
    posemb's rotation at the values it reports for vLLM."""
    import mrope
    import reading
    import rope_checks
    import rotation
    from report import Row

    import posemb

    meta = json.load(open(os.path.join(folder, "vllm.json")))
    module = meta.get("module")
    arch = meta.get("architecture")
    if module is None or module == "transformers":
        why = ("absent from vLLM's registry" if module is None else
               "run by vLLM's transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS): "
               "transformers' own rope, checked by the transformers harness")
        return [Row(name, "vllm_model", "pass", detail=f"{arch}: {why}")]
    if "build" in meta["errors"]:
        return [Row(name, "vllm_model", "error", detail=meta["errors"]["build"])]
    outputs = np.load(os.path.join(folder, "vllm.npz"))
    # (indexer call?) -> (against transformers, against posemb)
    stats = {False: (rope_checks.RopeStats(), rope_checks.RopeStats()),
             True: (rope_checks.RopeStats(), rope_checks.RopeStats())}
    at_plan = {False: rope_checks.RopeStats(), True: rope_checks.RopeStats()}
    errors = []
    for key, label, positions, seq_len, call in calls:
        where = f"{label} layer {call.layer} {'indexer ' if call.indexer else ''}{call.name}"
        hf, mine = stats[bool(call.indexer)]
        if key in meta["errors"]:
            errors.append(f"{where}: {meta['errors'][key]}")
            continue
        layer = pmodel.layers[call.layer]
        spec_of = rope_checks._call_spec(layer, call)
        if spec_of is None:
            errors.append(f"{where}: transformers' indexer rotates, posemb's layer has none")
            continue
        spec = spec_of(seq_len)
        x = _tokens_heads(call.x_in.float().numpy(), call.layout)[None]  # [1, seq, heads, w]
        y_vllm = outputs[key][None].astype(np.float64)
        order = rope_checks.hf_order(call.function)
        y_hf = _tokens_heads(call.x_out.float().numpy(), call.layout)[None]
        x_full, part = rotation.embed(x, spec)
        bound_at = positions.max(axis=0) if positions.ndim == 2 else positions  # M-RoPE: [3, seq]
        hf_type = rope_checks._hf_layer_type(config, call.layer, layer)
        k = rotation.angle_coefficient(spec, layer, seq_len,
                                       rope_checks.rope_block(mrope.text_config(config), hf_type))
        tol = rotation.bound(x_full, bound_at, "bshd", spec, k)[..., part]
        hf.add(np.abs(order(y_vllm) - y_hf), 2 * order(tol), where)
        if positions.ndim == 2 and layer.rope.mrope_section is None:
            mine.failures.append(f"{where}: posemb reads no mrope_section for this layer")
        elif positions.ndim == 2:
            y_posemb = posemb.apply_mrope(x_full, positions, layer.mrope_spec(seq_len))[..., part]
            mine.add(np.abs(y_vllm - y_posemb), tol, where)
        else:
            y_posemb = rotation.rotate(x_full, positions, spec, "bshd", part)
            mine.add(np.abs(y_vllm - y_posemb), tol, where)
        if plan and positions.ndim == 2:
            at_plan[bool(call.indexer)].failures.append(f"{where}: M-RoPE positions")
        elif plan:
            vspec = reading.vllm_spec(spec, plan.get(call.layer, {}), bool(call.indexer))
            y_plan = rotation.rotate(x_full, positions, vspec, "bshd", part)
            at_plan[bool(call.indexer)].add(np.abs(y_vllm - y_plan), tol, where)
    layers = meta["layers"]
    first = layers[min(layers, key=int)] if layers else {}
    source = (module.replace(".", "/") if module.startswith("vllm.")
              else f"vllm/model_executor/models/{module}.py")
    built = (f"{source}: {first.get('class')} head_size "
             f"{first.get('head_size')} rotary_dim {first.get('rotary_dim')} neox "
             f"{first.get('is_neox_style')} max_position {first.get('max_position')}"
             + (f" cos_sin_cache {first['cache']} rows" if first.get("cache") else ""))
    rows = [Row(name, "vllm_model", "error" if errors else "pass",
                detail="; ".join(errors[:3]) if errors else built)]
    hf, mine = stats[False]
    rows += [hf.row(name, "vllm_vs_transformers"), mine.row(name, "vllm_vs_posemb")]
    fields = sorted({f for layer in plan.values() for f in layer})
    if plan:
        rows.append(at_plan[False].row(name, "vllm_vs_posemb_vllm_plan",
                                       f"posemb diff --engine vllm: {', '.join(fields)};"))
    indexers = meta.get("indexer_layers") or {}
    if indexers:  # DeepSeek Sparse Attention's lightning indexer: its own rotary layer
        first = indexers[min(indexers, key=int)]
        hf, mine = stats[True]
        detail = (f"indexer_rope_emb {first.get('class')} rotary_dim {first.get('rotary_dim')} "
                  f"neox {first.get('is_neox_style')}, layers {sorted(indexers, key=int)}")
        rows += [hf.row(name, "vllm_indexer_vs_transformers", detail + ";"),
                 mine.row(name, "vllm_indexer_vs_posemb")]
        if plan:
            rows.append(at_plan[True].row(name, "vllm_indexer_vs_posemb_vllm_plan",
                                          f"posemb diff --engine vllm: {', '.join(fields)};"))
    if mrope.uses_mrope(config):
        rows += mrope.position_rows(name, model, pmodel, meta, outputs)
    return rows


# FoPE (Hua et al. 2024) as vLLM's FourierRotaryEmbedding runs it with fope_sep_head and no
# num_inv_freq: per kv head, D_in retained frequencies (inv_freq > 2 pi / max_position) mixed into
# D_in slots, the rest of the head_dim / 2 slots padded with cos 1, sin 1.
FOPE = dict(head_dim=64, n_heads=4, n_kv_heads=2, theta=10000.0, max_position=512)


def fope_job(work: str):
    """Seeded q, k and coefficients for the FoPE comparison: WORK/fope/{fope.json, fope.npz};
    returns posemb's FoPE layer with the same coefficients and the inputs."""
    import posemb

    folder = os.path.join(work, "fope")
    os.makedirs(folder, exist_ok=True)
    f = FOPE
    config = posemb.FopeConfig(head_dim=f["head_dim"], n_heads=f["n_heads"],
                               n_kv_heads=f["n_kv_heads"], theta=f["theta"],
                               train_length=f["max_position"])
    d_in = posemb.make_fope(config).d_in
    config.d_out = d_in  # vLLM mixes D_in frequencies into D_in slots (output_dim = input_dim)
    rng = np.random.default_rng(0)
    shape = (f["n_kv_heads"], d_in, d_in)
    sin_coef = (np.eye(d_in) + 0.3 * rng.standard_normal(shape)).astype(np.float32)
    cos_coef = (np.eye(d_in) + 0.3 * rng.standard_normal(shape)).astype(np.float32)
    positions = np.concatenate([np.arange(32), np.arange(f["max_position"] - 32,
                                                          f["max_position"])]).astype(np.int64)
    q = rng.standard_normal((len(positions), f["n_heads"], f["head_dim"])).astype(np.float32)
    k = rng.standard_normal((len(positions), f["n_kv_heads"], f["head_dim"])).astype(np.float32)
    g_q = rng.standard_normal(q.shape).astype(np.float32)  # upstream gradients of the outputs
    g_k = rng.standard_normal(k.shape).astype(np.float32)
    np.savez(os.path.join(folder, "fope.npz"), sin_coef=sin_coef, cos_coef=cos_coef,
             positions=positions, q=q, k=k, g_q=g_q, g_k=g_k)
    json.dump(f, open(os.path.join(folder, "fope.json"), "w"))
    return posemb.fope_with_coefficients(config, sin_coef, cos_coef), positions, q, k


def fope_rows(fope, positions, q, k, folder) -> list:
    """The forward rows (fope_forward_rows), then the gradients against autograd through vLLM."""
    return (fope_forward_rows("fope", fope, positions, q, k, folder)
            + fope_grad_rows(fope, positions, folder))


# Intern-S1-Pro (tests/data/interns1_pro/config.json: its config.json, the quantization block
# left out): posemb.load_model of the config and posemb.fope_checkpoint_coefficients of a
# safetensors file with the checkpoint's tensor names (seeded coefficients, written by the
# safetensors package) against the FourierRotaryEmbedding vLLM's interns1_pro.py builds from the
# same config and loads the same file into (worker.py run_interns1_pro).
INTERNS1_PRO = os.path.join(ROOT, "tests", "data", "interns1_pro", "config.json")


def interns1_pro_job(work: str):
    """WORK/interns1_pro/{config.json, coefficients.safetensors, inputs.npz}; returns posemb's
    FoPE (loaded through the model and the file), the positions, q and k."""
    import shutil

    import posemb
    from safetensors.numpy import save_file

    folder = os.path.join(work, "interns1_pro")
    os.makedirs(folder, exist_ok=True)
    shutil.copy(INTERNS1_PRO, os.path.join(folder, "config.json"))
    model = posemb.load_model(INTERNS1_PRO)
    config = model.fope
    rng = np.random.default_rng(1)
    shape = (config.n_kv_heads, config.d_out, config.d_out)  # D_out = D_in (vLLM's FoPE)
    coef = {f"model.language_model.rotary_emb.{name}":
            (np.eye(config.d_out) + 0.1 * rng.standard_normal(shape)).astype(np.float32)
            for name in ("sin_coef", "cos_coef")}
    path = os.path.join(folder, "coefficients.safetensors")
    save_file(coef, path)
    length = config.train_length
    positions = np.concatenate([np.arange(32), np.arange(length - 32, length)]).astype(np.int64)
    q = rng.standard_normal((len(positions), config.n_heads, config.head_dim)).astype(np.float32)
    k = rng.standard_normal((len(positions), config.n_kv_heads, config.head_dim))
    k = k.astype(np.float32)
    np.savez(os.path.join(folder, "inputs.npz"), positions=positions, q=q, k=k)
    sin_coef, cos_coef = posemb.fope_checkpoint_coefficients(path)
    return posemb.fope_with_coefficients(config, sin_coef, cos_coef), positions, q, k


def fope_forward_rows(case, fope, positions, q, k, folder) -> list:
    """vLLM's FoPE rotation against posemb's (exact angles, the same coefficients): per
    feature |delta| <= |x pair| * A * (8 u + u p w K), A the largest sum over D_in of |cos_coef|
    + |sin_coef| of a slot (the mixture's gain), K = 8 (float32 angles, cos/sin, two einsums)."""
    import posemb
    from report import Row

    meta = json.load(open(os.path.join(folder, "vllm.json")))
    if meta["errors"]:
        return [Row(case, "vllm_fope", "error", detail=str(meta["errors"])[:300])]
    out = np.load(os.path.join(folder, "vllm.npz"))
    gain = float((np.abs(fope.cos_coef) + np.abs(fope.sin_coef)).sum(axis=1).max())
    u = 2.0**-24
    rows = []
    for name, x in (("q", q), ("k", k)):
        mine = posemb.apply_fope(x[None], positions, fope)[0].astype(np.float64)
        half = x.shape[-1] // 2
        pair = np.sqrt(x[..., :half].astype(np.float64) ** 2 + x[..., half:] ** 2)
        pair = np.concatenate([pair, pair], axis=-1)
        p = positions.astype(np.float64)[:, None, None]
        tol = pair * gain * (8 * u + u * p * float(np.max(fope.inv_freq)) * 8)
        err = np.abs(out[name] - mine)
        bad = int((err > tol).sum())
        rows.append(Row(case, f"vllm_fope_{name}", "fail" if bad else "pass",
                        float(err.max()), float(tol.max()),
                        f"{meta['class']} D_in {meta['d_in']} (posemb {fope.d_in}), "
                        f"{bad} of {err.size} beyond the bound" if bad else
                        f"{meta['class']} D_in {meta['d_in']} (posemb {fope.d_in}), "
                        f"{err.size} values"))
    same = np.allclose(out["inv_freq"], fope.inv_freq, rtol=1e-6)
    rows.append(Row(case, "vllm_fope_inv_freq", "pass" if same else "fail",
                    detail=f"vLLM {len(out['inv_freq'])} retained frequencies, posemb "
                           f"{len(fope.inv_freq)}"))
    return rows


# Float32 error terms of a FoPE rotation as vLLM computes it: K roundings per product chain (float32
# angles, cos/sin, the mixture einsum, the rotation), the angle error u p w of a float32 t * inv_freq.
FOPE_K, U32 = 8, 2.0**-24


def _fope_module(fope, sin_coef, cos_coef, dtype):
    """posemb.nn.Fope with the job's coefficients (as `dtype` parameters)."""
    import posemb
    import posemb.nn
    import torch

    f = FOPE
    config = posemb.FopeConfig(head_dim=f["head_dim"], n_heads=f["n_heads"],
                               n_kv_heads=f["n_kv_heads"], theta=f["theta"],
                               train_length=f["max_position"])
    config.d_out = fope.d_in
    module = posemb.nn.Fope(config).to(dtype)
    with torch.no_grad():
        module.sin_coef.copy_(torch.from_numpy(sin_coef))
        module.cos_coef.copy_(torch.from_numpy(cos_coef))
    return module


def _fope_loss(module, positions, q, k, g_q, g_k):
    """L = sum(g_q * q_out) + sum(g_k * k_out) through posemb's op, x [1, tokens, heads, d]."""
    q_out, k_out = module(q[None], k[None], positions)
    return (g_q[None] * q_out).sum() + (g_k[None] * k_out).sum()


def _pair(x: np.ndarray) -> np.ndarray:
    """|(x_i, x_{i + d/2})| per slot i of the neox halves: [..., d] -> [..., d / 2]."""
    half = x.shape[-1] // 2
    return np.sqrt(x[..., :half].astype(np.float64) ** 2 + x[..., half:] ** 2)


def _coef_bound(positions, inv_freq, terms) -> np.ndarray:
    """Per coefficient [n_kv_heads, D_in, D_out]: sum over tokens and the heads of a group of
    |g pair| |x pair| (u K + u p w_D K + u N), N the number of summed terms (float32 sums)."""
    f = FOPE
    d_in = len(inv_freq)
    count = sum(x.shape[0] * x.shape[1] // f["n_kv_heads"] for _, x in terms)  # g, x: [T, heads, d]
    p = positions.astype(np.float64)[:, None]
    weight = U32 * (FOPE_K + count + FOPE_K * p * np.asarray(inv_freq)[None, :])  # [T, D_in]
    bound = 0.0
    for g, x in terms:
        prod = (_pair(g) * _pair(x))[..., :d_in]  # [T, heads, D_out]
        grouped = prod.reshape(prod.shape[0], f["n_kv_heads"], -1, d_in).sum(axis=2)
        bound = bound + np.einsum("tD,thd->hDd", weight, grouped)
    return bound


def fope_grad_rows(fope, positions, folder) -> list:
    """Gradients w.r.t. q, k, sin_coef and cos_coef: autograd through vLLM's forward_native
    (float32: its cache is built from `torch.float` angles and `.float()` coefficients) against
    posemb's op (posemb.nn.Fope, float32 parameters). dL/dx is a FoPE rotation of g (its
    transpose), held to the forward's bound with g for x; a coefficient's gradient to
    _coef_bound. Then a property of posemb's own gradient: L is affine in the coefficients
    (the padded slots are constant), so sum(A * dL/dA) = L(2A) - L(A), in float64 to 1e-10."""
    import torch
    from report import Row

    job = np.load(os.path.join(folder, "fope.npz"))
    out = np.load(os.path.join(folder, "vllm.npz"))
    if "grad_q" not in out:
        return [Row("fope", "vllm_fope_grad", "error", detail="vLLM's worker wrote no gradients")]
    tensors = {name: torch.from_numpy(job[name]) for name in ("q", "k", "g_q", "g_k")}
    pos = torch.from_numpy(positions)
    module = _fope_module(fope, job["sin_coef"], job["cos_coef"], torch.float32)
    q, k = tensors["q"].clone().requires_grad_(True), tensors["k"].clone().requires_grad_(True)
    _fope_loss(module, pos, q, k, tensors["g_q"], tensors["g_k"]).backward()
    gain = float((np.abs(fope.cos_coef) + np.abs(fope.sin_coef)).sum(axis=1).max())
    p = positions.astype(np.float64)[:, None, None]
    rows = []
    for name, mine in (("q", q.grad), ("k", k.grad)):
        pair = np.concatenate([_pair(job[f"g_{name}"])] * 2, axis=-1)
        tol = pair * gain * (FOPE_K * U32 + U32 * p * float(np.max(fope.inv_freq)) * FOPE_K)
        rows.append(_bounded_row(f"vllm_fope_grad_{name}", mine.numpy(), out[f"grad_{name}"], tol))
    coef_tol = _coef_bound(positions, fope.inv_freq, [(job["g_q"], job["q"]), (job["g_k"], job["k"])])
    for name in ("sin_coef", "cos_coef"):
        mine = getattr(module, name).grad.numpy()
        rows.append(_bounded_row(f"vllm_fope_grad_{name}", mine, out[f"grad_{name}"], coef_tol))
    rows.append(_fope_affine_row(fope, positions, job))
    return rows


def _bounded_row(check, mine, theirs, tol):
    from report import Row

    err = np.abs(mine.astype(np.float64) - theirs)
    bad = int((err > tol).sum())
    return Row("fope", check, "fail" if bad else "pass", float(err.max()), float(tol.max()),
               f"{bad} of {err.size} beyond the per-value bound" if bad else f"{err.size} values, "
               f"each within its bound (largest |delta| / bound {float((err / tol).max()):.2g})")


def _fope_affine_row(fope, positions, job):
    import torch
    from report import Row

    t = {name: torch.from_numpy(job[name].astype(np.float64)) for name in ("q", "k", "g_q", "g_k")}
    pos = torch.from_numpy(positions)
    module = _fope_module(fope, job["sin_coef"], job["cos_coef"], torch.float64)
    loss = _fope_loss(module, pos, t["q"], t["k"], t["g_q"], t["g_k"])
    loss.backward()
    doubled = _fope_module(fope, 2 * job["sin_coef"], 2 * job["cos_coef"], torch.float64)
    with torch.no_grad():
        euler = float((module.sin_coef * module.sin_coef.grad).sum()
                      + (module.cos_coef * module.cos_coef.grad).sum())
        change = float(_fope_loss(doubled, pos, t["q"], t["k"], t["g_q"], t["g_k"])) - float(loss)
    relative = abs(euler - change) / abs(change)
    return Row("fope", "posemb_fope_grad_affine", "pass" if relative <= 1e-10 else "fail",
               relative, 1e-10, f"sum(A * dL/dA) {euler:.10g}, L(2A) - L(A) {change:.10g}")


def _pinned_row(rows):
    from report import Row

    seen = {(r.case, r.check) for r in rows if r.status != "pass"}
    new, gone = sorted(seen - EXPECTED_NOT_PASS), sorted(EXPECTED_NOT_PASS - seen)
    return Row("pinned", "expected_not_pass", "fail" if new or gone else "pass",
               detail=f"{len(seen)} non-pass rows; pinned {len(EXPECTED_NOT_PASS)}; "
                      f"not pinned: {new or 'none'}; pinned but passing: {gone or 'none'}")


def rope_cases(names):
    """The cases the transformers harness runs as a rope forward (hf_run._runner; M-RoPE ones with
    their positions, mrope.py), and the rest with the check they get there."""
    import hf_run
    import mrope
    import tiny_models

    rope, other = [], {}
    for name in names:
        model_type = tiny_models.CASES[name].model_type
        runner = hf_run._runner(name, model_type, "posemb")
        if runner is hf_run.rope_case or mrope.model_of(model_type) is not None:
            rope.append(name)
        else:
            other[name] = getattr(runner, "__name__", "rope_case + mrope_case")
    return rope, other


def main():
    args = _args()
    version = vllm_version(args.vllm_python)
    if version != "0.33.0":
        print(f"conformance/vllm: no vllm 0.33.0 at {args.vllm_python} (found: {version}). Make "
              "the venv with conformance/vllm/setup.sh (torch 2.13.0, then requirements.txt "
              "--no-deps; conformance/vllm/README.md) or pass --vllm-python.", file=sys.stderr)
        raise SystemExit(2)
    if args.posemb_build:
        sys.path.insert(0, os.path.join(os.path.abspath(args.posemb_build), "python"))
    import importlib.util

    spec = importlib.util.spec_from_file_location("hf_run", os.path.join(HF, "run.py"))
    hf_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hf_run)
    sys.modules["hf_run"] = hf_run
    import torch
    import transformers

    import mrope
    import reading
    import report
    import tiny_models

    mrope.register_cases()
    reading.register_cases()
    torch.set_num_threads(1)
    start = time.time()
    work = os.path.join(args.out, "work")
    rope, other = rope_cases(args.cases or list(tiny_models.CASES))
    rows, captured = [], {}
    for name in rope:
        try:
            captured[name] = capture_case(name, work)
        except Exception as error:
            rows.append(report.Row(name, "capture", "error",
                                   detail=f"{type(error).__name__}: {str(error)[:200]}"))
    print(f"transformers: {len(captured)} cases captured, {time.time() - start:.0f} s", flush=True)
    fope, intern = fope_job(work), interns1_pro_job(work)
    subprocess.run([args.vllm_python, os.path.join(HERE, "worker.py"), work, *captured, "fope",
                    "interns1_pro"], check=True)
    rows += fope_rows(*fope, os.path.join(work, "fope"))
    rows += fope_forward_rows("interns1_pro", *intern, os.path.join(work, "interns1_pro"))
    build = os.path.abspath(args.posemb_build or os.path.join(ROOT, "build", "test"))
    for name, (model, config, pmodel, calls) in captured.items():
        folder = os.path.join(work, name)
        job = json.load(open(os.path.join(folder, "job.json")))
        plan = reading.vllm_plan(build, os.path.join(folder, "model", "config.json"),
                                 job["max_model_len"])
        rows += compare_case(name, model, config, pmodel, calls, folder, plan)
    for name, check in other.items():
        rows.append(report.Row(name, "vllm_model", "pass",
                               detail=f"not a get_rope case: the transformers harness checks it "
                                      f"with {check}"))
    if not args.cases:
        rows.append(_pinned_row(rows))
    versions = {"vllm": version, "transformers": transformers.__version__,
                "torch": torch.__version__}
    report.write(rows, args.out, "vLLM's rotary layers against posemb and transformers",
                 versions)
    counts = report.summary(rows)
    print(f"vllm harness: {counts['cases']} cases, {counts['checks']} checks: {counts['pass']} "
          f"pass, {counts['fail']} fail, {counts['error']} error; {time.time() - start:.0f} s")
    if args.cases:
        raise SystemExit(report.exit_status(rows))
    raise SystemExit(0 if rows[-1].status == "pass" else 1)


if __name__ == "__main__":
    main()
