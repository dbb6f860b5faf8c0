"""posemb's hf-float32 angle mode against a PyTorch transcription of HuggingFace transformers.

Usage (ctest runs it with Debian's python3-torch and python3-numpy):
    python3 test_hf_float32_torch.py POSEMB_TOOL SCHEMA_JSON WORK_DIR

For each rope type (default, linear, dynamic, yarn, llama3, longrope; rotate-half and
interleaved pairing; a rotary width 24 whose exponents 2i/d are inexact in float32) and storage
type (float32, bfloat16), `posemb vectors --angles hf-float32` writes q/k and their rotations at
positions up to 131071. The transcription below forms the same values with PyTorch's own ops,
written from transformers' src/transformers/modeling_rope_utils.py (`_compute_default_rope_parameters`,
`_compute_linear_scaling_rope_parameters`, `_compute_dynamic_ntk_parameters` with the tensor
seq_len of `dynamic_rope_update`, `_compute_yarn_parameters`, `_compute_llama3_parameters`,
`_compute_longrope_parameters` with `longrope_frequency_update`'s choice) and
models/llama/modeling_llama.py (`LlamaRotaryEmbedding.forward`, `rotate_half`,
`apply_rotary_pos_emb`; cohere's `rotate_half` and repeat_interleave'd cos/sin for
interleaved pairing). Checks:
  1. inv_freq: bit-equal on every pair whose PyTorch power `base ** exponent` is the correctly
     rounded float32 power; the other pairs (PyTorch's powf is within 1 ulp) are counted.
  2. q_out, k_out: bit-equal to the transcription with cos/sin correctly rounded (float32 of the
     double cos of the float32 angle) on every pair whose power is correctly rounded; with
     PyTorch's own float32 cos/sin, within the manifest's tolerance.
  3. `posemb apply --layer L --input q_in --positions positions.npy` reproduces q_out bit for bit
     (hf-float32 and exact).
  4. manifest.json validates against tests/data/vectors/manifest.schema.json.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch

TOOL = SCHEMA = WORK = None  # set from the command line (main); the helpers are importable
POSITIONS = "0-31,100,1000,4095,8191,8192,16384,32767,65535,100000,131071"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


# ---- HF's inverse frequencies, transcribed (float32 tensors; python floats where HF has them)

def hf_exponents(dim):
    return torch.arange(0, dim, 2, dtype=torch.int64).float() / dim


def hf_default(base, dim):
    pos_freqs = base ** hf_exponents(dim)
    return 1.0 / pos_freqs, pos_freqs, 1.0, base


def hf_linear(base, dim, factor):
    inv_freq, pos_freqs, _, _ = hf_default(base, dim)
    inv_freq /= factor
    return inv_freq, pos_freqs, 1.0, base


def hf_dynamic(base, dim, factor, max_position_embeddings, position_ids):
    seq_len = torch.max(position_ids) + 1  # dynamic_rope_update
    seq_len = torch.maximum(seq_len, torch.tensor(max_position_embeddings, dtype=seq_len.dtype))
    base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    pos_freqs = base ** hf_exponents(dim)
    return 1.0 / pos_freqs, pos_freqs, 1.0, float(base)  # the grown base, a float32 tensor


def hf_yarn(base, dim, factor, original_max, beta_fast=32, beta_slow=1):
    attention_factor = 0.1 * math.log(factor) + 1.0

    def find_correction_dim(num_rotations):
        return (dim * math.log(original_max / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    inv_freq = (inv_freq_interpolation * (1 - extrapolation_factor)
                + inv_freq_extrapolation * extrapolation_factor)
    return inv_freq, pos_freqs, attention_factor, base


def hf_llama3(base, dim, factor, low_freq_factor, high_freq_factor, old_context_len):
    inv_freq, pos_freqs, _, _ = hf_default(base, dim)
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama), pos_freqs, 1.0, base


def hf_longrope(base, dim, short_factor, long_factor, original_max, max_pos, position_ids):
    factor = max_pos / original_max
    attention_factor = math.sqrt(1 + math.log(factor) / math.log(original_max))
    seq_len = torch.max(position_ids) + 1  # longrope_frequency_update
    ext = long_factor if seq_len > original_max else short_factor
    ext_factors = torch.tensor(ext, dtype=torch.float32)
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)
    return 1.0 / (ext_factors * pos_freqs), pos_freqs, attention_factor, base


# ---- HF's forward and rotation, transcribed

def hf_cos_sin(inv_freq, attention_scaling, position_ids, interleaved, exact_cos):
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    if interleaved:  # cohere: repeat_interleave(freqs, 2)
        emb = torch.repeat_interleave(freqs, 2, dim=-1)
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
    if exact_cos:  # the correctly rounded float32 cos/sin of the float32 angle
        cos, sin = emb.double().cos().float(), emb.double().sin().float()
    else:
        cos, sin = emb.cos(), emb.sin()
    return cos * attention_scaling, sin * attention_scaling


def rotate_half(x, interleaved):
    if interleaved:  # cohere's rotate_half
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack([-x2, x1], dim=-1).flatten(-2)
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_rotate(x, cos, sin, rotary_dim, interleaved, dtype):
    # x: [batch, seq, heads, head_dim] (BSHD); cos, sin: [batch, seq, rotary_dim]
    x = x.to(dtype)
    cos, sin = cos.to(dtype)[:, :, None, :], sin.to(dtype)[:, :, None, :]
    x_rot, x_pass = x[..., :rotary_dim], x[..., rotary_dim:]
    x_embed = (x_rot * cos) + (rotate_half(x_rot, interleaved) * sin)
    return torch.cat((x_embed, x_pass), dim=-1)


# ---- the cases: config.json, and HF's inv_freq for the vectors' positions

def longrope_factors(dim):
    return [1.0 + 0.013 * i for i in range(dim // 2)], [1.0 + 0.61 * i for i in range(dim // 2)]


def cases():
    llama = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 4,
             "num_key_value_heads": 2, "num_hidden_layers": 1, "max_position_embeddings": 131072}
    short, long = longrope_factors(128)
    yield "default", dict(llama, rope_theta=500000.0), lambda p: hf_default(500000.0, 128)
    yield "linear", dict(llama, rope_theta=10000.0, rope_scaling={"rope_type": "linear", "factor": 4.0}), \
        lambda p: hf_linear(10000.0, 128, 4.0)
    yield "dynamic", dict(llama, rope_theta=10000.0, max_position_embeddings=4096,
                          rope_scaling={"rope_type": "dynamic", "factor": 2.0}), \
        lambda p: hf_dynamic(10000.0, 128, 2.0, 4096, p)
    yield "yarn", dict(llama, model_type="qwen2", rope_theta=1000000.0,
                       rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                     "original_max_position_embeddings": 32768}), \
        lambda p: hf_yarn(1000000.0, 128, 4.0, 32768)
    yield "llama3", dict(llama, rope_theta=500000.0, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}), lambda p: hf_llama3(500000.0, 128, 8.0, 1.0, 4.0, 8192)
    yield "longrope", dict(llama, model_type="phi3", rope_theta=10000.0, original_max_position_embeddings=4096,
                           rope_scaling={"type": "longrope", "short_factor": short, "long_factor": long}), \
        lambda p: hf_longrope(10000.0, 128, short, long, 4096, 131072, p)
    yield "neox24", {"model_type": "gpt_neox", "hidden_size": 384, "num_attention_heads": 4,
                     "num_hidden_layers": 1, "max_position_embeddings": 2048, "rotary_emb_base": 25000,
                     "rotary_pct": 0.25}, lambda p: hf_default(25000.0, 24)
    yield "cohere", {"model_type": "cohere", "hidden_size": 512, "num_attention_heads": 4,
                     "num_hidden_layers": 1, "max_position_embeddings": 8192, "rope_theta": 10000.0}, \
        lambda p: hf_default(10000.0, 128)


# ---- a validator for the JSON-schema subset the manifest's schema uses

def validate(value, schema, path="$"):
    errors = []
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    types = {"object": dict, "array": list, "string": str, "number": (int, float), "integer": int,
             "boolean": bool, "null": type(None)}

    def is_kind(kind):
        if kind in ("number", "integer") and isinstance(value, bool):
            return False
        return isinstance(value, types[kind])

    if kinds and not any(is_kind(kind) for kind in kinds):
        return [f"{path}: expected {' or '.join(kinds)}"]
    if value is None:
        return []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: {value} < {schema['minimum']}")
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{path}: missing {key}")
    for key, needed in schema.get("dependentRequired", {}).items():
        if isinstance(value, dict) and key in value:
            errors += [f"{path}: {key} without {other}" for other in needed if other not in value]
    for key, sub in schema.get("properties", {}).items():
        if isinstance(value, dict) and key in value:
            errors += validate(value[key], sub, f"{path}.{key}")
    if schema.get("additionalProperties") is False and isinstance(value, dict):
        errors += [f"{path}: unexpected {k}" for k in value if k not in schema.get("properties", {})]
    if "items" in schema and isinstance(value, list):
        for i, item in enumerate(value):
            errors += validate(item, schema["items"], f"{path}[{i}]")
    if "minItems" in schema and isinstance(value, list) and len(value) < schema["minItems"]:
        errors.append(f"{path}: fewer than {schema['minItems']} items")
    return errors


def run(*args):
    result = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(" ".join(args) + ": " + result.stderr)


def torch_dtype(name):
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[name]


def compare_case(name, config, hf_inv, dtype, schema):
    directory = os.path.join(WORK, f"{name}_{dtype}")
    os.makedirs(directory, exist_ok=True)
    config_path = os.path.join(directory, "config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    run("vectors", config_path, "--positions", POSITIONS, "--output", directory,
        "--angles", "hf-float32", "--dtype", dtype, "--heads", "3", "--kv-heads", "2", "--seed", "7")
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    for error in validate(manifest, schema):
        failures.append(f"{name} {dtype}: manifest: {error}")
    scheme = manifest["schemes"][0]
    positions = np.load(os.path.join(directory, manifest["positions"]))
    position_ids = torch.from_numpy(positions)[None, :]
    inv_freq, pos_freqs, attention, base = hf_inv(position_ids)
    rotary_dim = scheme["rotary_dim"]
    # Pairs whose PyTorch power is the correctly rounded float32 power of HF's float32 base and
    # exponent (double pow, rounded).
    exact_pow = np.power(np.float64(np.float32(base)),
                         hf_exponents(rotary_dim).numpy().astype(np.float64)).astype(np.float32)
    good = pos_freqs.numpy().view(np.uint32) == exact_pow.view(np.uint32)
    manifest_inv = np.array(scheme["inv_freq"], dtype=np.float32)
    same_inv = manifest_inv.view(np.uint32) == inv_freq.numpy().view(np.uint32)
    check(bool(np.all(same_inv[good])),
          f"{name} {dtype}: inv_freq differs on correctly rounded pairs {np.nonzero(~same_inv & good)[0]}")
    check(abs(scheme["attention_scale"] - attention) == 0.0, f"{name}: attention_scale")
    check((~good).sum() <= max(8, rotary_dim // 8), f"{name}: {(~good).sum()} powers not correctly rounded")
    interleaved = scheme["pairing"] == "interleaved"
    pairs_ok = np.repeat(good, 2) if interleaved else np.concatenate([good, good])
    for role in ("q", "k"):
        x = torch.from_numpy(np.load(os.path.join(directory, scheme[f"{role}_in"])))
        out = np.load(os.path.join(directory, scheme[f"{role}_out"]))
        atol = np.load(os.path.join(directory, scheme["tolerance"][f"{role}_atol"]))
        cos, sin = hf_cos_sin(inv_freq, attention, position_ids, interleaved, exact_cos=True)
        ref = hf_rotate(x, cos, sin, rotary_dim, interleaved, torch_dtype(dtype)).float().numpy()
        same = out.view(np.uint32) == ref.view(np.uint32)
        mask = np.concatenate([pairs_ok, np.ones(out.shape[-1] - rotary_dim, dtype=bool)])
        check(bool(np.all(same[..., mask])),
              f"{name} {dtype} {role}: {np.sum(~same[..., mask])} values differ from the transcription")
        cos, sin = hf_cos_sin(inv_freq, attention, position_ids, interleaved, exact_cos=False)
        torch_ref = hf_rotate(x, cos, sin, rotary_dim, interleaved, torch_dtype(dtype)).float().numpy()
        within = np.abs(out - torch_ref) <= atol[None, :, None, None]
        check(bool(np.all(within)), f"{name} {dtype} {role}: PyTorch's cos outside the tolerance")
        print(f"{name:9s} {dtype:8s} {role}: {np.sum(same[..., mask])}/{same[..., mask].size} equal on "
              f"{good.sum()}/{good.size} correctly rounded powers; with torch.cos "
              f"{np.sum(out != torch_ref)} differ, max |d|/atol "
              f"{np.max(np.abs(out - torch_ref) / atol[None, :, None, None]):.3g}")
    for angles in ("hf-float32", "exact"):
        layer_out = os.path.join(directory, f"apply_{angles}.npy")
        run("apply", config_path, "--layer", "0", "--input", os.path.join(directory, scheme["q_in"]),
            "--positions", os.path.join(directory, manifest["positions"]), "--angles", angles,
            "--dtype", dtype, "--output", layer_out)
        if angles == "hf-float32":
            applied = np.load(layer_out)
            check(applied.tobytes() == np.load(os.path.join(directory, scheme["q_out"])).tobytes(),
                  f"{name} {dtype}: apply does not reproduce q_out")


def main():
    with open(SCHEMA) as f:
        schema = json.load(f)
    for name, config, hf_inv in cases():
        for dtype in ("float32", "bfloat16"):
            compare_case(name, config, hf_inv, dtype, schema)
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    TOOL, SCHEMA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
    main()
