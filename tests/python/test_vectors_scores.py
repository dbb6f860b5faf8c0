"""`posemb vectors --scores`: each entry's attention probabilities against a numpy softmax of the
vectors' own q_out and k_out.

The reference below is written from the definitions (Vaswani et al. 2017 eq. 1, and
transformers' eager_attention_forward of the families whose settings the configs carry):
logits = scale * t(qpos) * q . k (GQA: query head h reads kv head h // (heads / kv_heads),
repeat_kv), capped c * tanh(logits / c) (Gemma 2), masked causally by position, by the sliding
window (0 <= qpos - kpos < W) and by the chunk (same floor(pos / C)), softmax over keys with
the sink logit in the denominator (gpt-oss). The layer's settings come from posemb.load_model
(the config reader, tested on its own); the manifest must state the same ones.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import posemb
from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "hf32"))
import test_hf_float32_torch as hf  # noqa: E402  (the manifest schema validator)

SCHEMA = os.path.join(SOURCE_DIR, "tests", "data", "vectors", "manifest.schema.json")
POSITIONS = "0-23,40-47,100"  # a gap, so that windows and chunks see positions, not indices
BASE = {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "max_position_embeddings": 8192, "rope_theta": 10000.0}
CONFIGS = {
    "llama": dict(BASE, model_type="llama"),
    "mistral_window": dict(BASE, model_type="mistral", sliding_window=8),
    "gemma2_softcap": dict(BASE, model_type="gemma2", head_dim=32, sliding_window=8,
                           query_pre_attn_scalar=64, attn_logit_softcapping=50.0,
                           final_logit_softcapping=30.0),
    "llama4_chunk": dict(BASE, model_type="llama4_text", head_dim=64, attention_chunk_size=16,
                         no_rope_layers=[1, 0], attn_temperature_tuning=True),
    "gpt_oss_sinks": dict(BASE, model_type="gpt_oss", head_dim=64, sliding_window=8,
                          layer_types=["sliding_attention", "full_attention"],
                          rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                        "beta_slow": 1.0, "truncate": False,
                                        "original_max_position_embeddings": 4096}),
}


def attention_of(layer):
    """The manifest's "attention" object, from the settings posemb.load_model reads."""
    a = layer.attention
    t = a.query_temperature
    return {"causal": True,
            "softmax_scale": a.softmax_scale if a.softmax_scale is not None else layer.head_dim ** -0.5,
            "sliding_window": a.sliding_window, "attention_chunk_size": a.attention_chunk_size,
            "query_temperature": None if t is None else {"floor_scale": t.floor_scale, "attn_scale": t.attn_scale,
                                                         "position_offset": t.position_offset},
            "logit_softcap": a.logit_softcap, "attention_sinks": a.attention_sinks}


def reference_probabilities(q, k, positions, attention, sinks):
    """q [B, S, H, D], k [B, S, K, D] at positions [S] -> probabilities [B, H, S, S] (float64)."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    pos = positions.astype(np.float64)
    t = attention["query_temperature"]
    if t is not None:
        factor = 1.0 + t["attn_scale"] * np.log1p(np.floor((pos + t["position_offset"]) / t["floor_scale"]))
        q = q * factor[None, :, None, None]
    k = np.repeat(k, q.shape[2] // k.shape[2], axis=2)
    logits = np.einsum("bqhd,bkhd->bhqk", q, k) * attention["softmax_scale"]
    if attention["logit_softcap"] is not None:
        c = attention["logit_softcap"]
        logits = c * np.tanh(logits / c)
    diff = positions[:, None] - positions[None, :]
    visible = diff >= 0
    if attention["sliding_window"] is not None:
        visible &= diff < attention["sliding_window"]
    if attention["attention_chunk_size"] is not None:
        chunk = attention["attention_chunk_size"]
        visible &= positions[:, None] // chunk == positions[None, :] // chunk
    logits = np.where(visible, logits, -np.inf)
    top = logits.max(axis=-1, keepdims=True)
    if sinks is not None:
        top = np.maximum(top, sinks.astype(np.float64)[None, :, None, None])
    e = np.exp(logits - top)
    denominator = e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        denominator = denominator + np.exp(sinks.astype(np.float64)[None, :, None, None] - top)
    return e / denominator


def run_vectors(tool, tmp_path, name, *extra):
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps(CONFIGS[name]))
    out = tmp_path / "vectors"
    tool("vectors", config, "--positions", POSITIONS, "--output", out, "--batch", 2, "--heads", 4,
         "--kv-heads", 2, "--seed", 5, *extra)
    with open(out / "manifest.json") as f:
        return config, out, json.load(f)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_scores_equal_a_numpy_softmax(tool, tmp_path, name, dtype):
    config, out, manifest = run_vectors(tool, tmp_path, name, "--scores", "--dtype", dtype,
                                        "--angles", "hf-float32" if dtype == "bfloat16" else "exact")
    with open(SCHEMA) as f:
        assert hf.validate(manifest, json.load(f)) == []
    model = posemb.load_model(config)
    positions = np.load(out / manifest["positions"])
    rope_layers = [layer for layer in model.layers if layer.kind == "rope"]
    assert sorted(i for entry in manifest["schemes"] for i in entry["layers"]) == [l.index for l in rope_layers]
    for entry in manifest["schemes"]:
        layer = model.layers[entry["layers"][0]]
        attention = attention_of(layer)
        assert entry["attention"] == attention
        assert all(attention_of(model.layers[i]) == attention for i in entry["layers"])
        sinks = np.load(out / entry["sinks"]) if "sinks" in entry else None
        assert (sinks is not None) == attention["attention_sinks"]
        q, k = np.load(out / entry["q_out"]), np.load(out / entry["k_out"])
        p = np.load(out / entry["scores"])
        assert p.dtype == np.float32 and p.shape == (2, 4, positions.size, positions.size)
        expected = reference_probabilities(q, k, positions, attention, sinks)
        assert np.array_equal(p == 0, expected == 0), "masked entries"
        np.testing.assert_allclose(p, expected, rtol=1e-4, atol=2e-6)


def test_layers_split_by_attention_only_with_scores(tool, tmp_path):
    # Gemma 2: one RoPE scheme, sliding and global layers: one entry without --scores, two with.
    _, _, plain = run_vectors(tool, tmp_path, "gemma2_softcap")
    assert [entry["layers"] for entry in plain["schemes"]] == [[0, 1]]
    assert not any(key in plain["schemes"][0] for key in ("scores", "attention", "sinks"))
    _, _, split = run_vectors(tool, tmp_path, "gemma2_softcap", "--scores")
    assert [entry["layers"] for entry in split["schemes"]] == [[0], [1]]
    assert [entry["attention"]["sliding_window"] for entry in split["schemes"]] == [8, None]


@pytest.mark.parametrize("args, message", [
    (["--heads", "3", "--kv-heads", "2"], "--scores: --heads 3 and --kv-heads 2: expected kv-heads to divide heads"),
    (["--positions", "0-20000"], "--scores: 20001 positions: expected batch * heads * seq * seq <= 2^28"),
])
def test_scores_errors(tool, tmp_path, args, message):
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIGS["llama"]))
    positions = [] if "--positions" in args else ["--positions", "0-7"]
    result = subprocess.run([tool.path, "vectors", str(config), "--output", str(tmp_path / "out"),
                             "--scores", *positions, *args], capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr.strip() == f"posemb: error: {message}"
    assert not (tmp_path / "out").exists()
