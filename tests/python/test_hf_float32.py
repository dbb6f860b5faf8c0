"""The angle mode 'hf-float32' in Python: HfFloat32Rope, hf_float32_rope, angles= on rope_spec and
the spec builders.

Two references:
  - the CLI, `posemb apply --angles hf-float32 --dtype D` on the same config, input and positions:
    bit for bit, for float32, bfloat16 and float16 (numpy and torch);
  - the PyTorch transcription of transformers' rope initialisation and forward in
    tests/hf32/test_hf_float32_torch.py (modeling_rope_utils.py `_compute_*_parameters`,
    modeling_llama.py `LlamaRotaryEmbedding.forward` / `apply_rotary_pos_emb`, cohere's
    interleaved form), imported from there: bit for bit on every pair whose PyTorch power
    `base ** exponent` is the correctly rounded float32 power (the rest: PyTorch's powf is
    within 1 ulp, rotary/hf_float32.hpp), with cos/sin the correctly rounded float32 values of
    the float32 angle; and on every pair when the rope is built from the transcription's own
    inv_freq buffer (HfFloat32Rope(inv_freq, ...)).
"""
import json
import os
import sys

import numpy as np
import pytest
import torch

import posemb
from conftest import SOURCE_DIR, bits_equal

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "hf32"))
import test_hf_float32_torch as hf  # noqa: E402  (the transcription of transformers)

POSITIONS = np.array([0, 1, 2, 3, 5, 8, 100, 1000, 4095, 8191, 8192, 16384, 32767, 65535, 100000,
                      131071], dtype=np.int64)
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CASES = {name: (config, hf_inv) for name, config, hf_inv in hf.cases()}


def write_config(tmp_path, name):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(CASES[name][0]))
    return path


def seeded_input(shape, dtype, seed=3):
    """float32 values exact in `dtype` (the CLI reads them as float32 and checks that)."""
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return x.to(TORCH_DTYPES[dtype])


def seq_len():
    return int(POSITIONS.max()) + 1  # HF's max position + 1, as the CLI forms it


@pytest.mark.parametrize("name", ["default", "dynamic", "yarn", "llama3", "longrope", "neox24", "cohere"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_equals_cli_apply(tool, tmp_path, name, dtype):
    config = write_config(tmp_path, name)
    model = posemb.load_model(config)
    rope = model.layers[0].rope_spec(seq_len(), angles="hf-float32")
    x = seeded_input((2, POSITIONS.size, 3, model.layers[0].head_dim), dtype)
    np.save(tmp_path / "x.npy", x.float().numpy())
    np.save(tmp_path / "p.npy", POSITIONS)
    tool("apply", config, "--layer", 0, "--input", tmp_path / "x.npy", "--positions", tmp_path / "p.npy",
         "--angles", "hf-float32", "--dtype", dtype, "--output", tmp_path / "y.npy")
    cli = np.load(tmp_path / "y.npy")
    y = posemb.apply_rope(x, POSITIONS, rope)
    assert y.dtype == x.dtype
    assert bits_equal(y.float().numpy(), cli)
    if dtype != "bfloat16":  # numpy has no bfloat16
        x_np = x.numpy()
        assert bits_equal(posemb.apply_rope(x_np, POSITIONS, rope).astype(np.float32), cli)
    # In place, zero copy, torch positions.
    ptr = x.data_ptr()
    assert posemb.apply_rope_(x, torch.from_numpy(POSITIONS), rope) is x
    assert x.data_ptr() == ptr and bits_equal(x.float().numpy(), cli)


# DeepSeek-V3's MLA in small: q/k heads [nope 16 | rope 8], the rope slice last (rotary_offset 16).
MLA_CONFIG = {"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 2,
              "num_key_value_heads": 2, "num_hidden_layers": 1, "qk_nope_head_dim": 16,
              "qk_rope_head_dim": 8, "v_head_dim": 16, "kv_lora_rank": 16, "q_lora_rank": None,
              "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_whole_head_as_the_exact_plan(tool, tmp_path, dtype):
    """hf-float32 takes the whole head as the exact plan does: the rope slice at rotary_offset
    rotated as the slice's own HfFloat32Rope rotates it, the rest passed, and the CLI's
    `apply --layer 0 --angles hf-float32` on the whole head gives the same bits."""
    config = tmp_path / "mla.json"
    config.write_text(json.dumps(MLA_CONFIG))
    layer = posemb.load_model(config).layers[0]
    exact, rope = layer.rope_spec(seq_len()), layer.rope_spec(seq_len(), angles="hf-float32")
    assert (rope.head_dim, rope.rotary_offset, rope.rotary_dim) == (24, 16, 8)
    assert (rope.head_dim, rope.rotary_offset) == (exact.head_dim, exact.rotary_offset)
    assert rope == posemb.hf_float32_rope(layer, seq_len())
    x = seeded_input((1, POSITIONS.size, 2, 24), dtype)
    y = posemb.apply_rope(x, POSITIONS, rope)
    assert bits_equal(y[..., :16].float().numpy(), x[..., :16].float().numpy())
    part = posemb.apply_rope(x[..., 16:].contiguous(), POSITIONS,
                             layer.rope.spec(seq_len(), angles="hf-float32"))
    assert bits_equal(y[..., 16:].float().numpy(), part.float().numpy())
    assert not bits_equal(y[..., 16:].float().numpy(), x[..., 16:].float().numpy())
    np.save(tmp_path / "x.npy", x.float().numpy())
    np.save(tmp_path / "p.npy", POSITIONS)
    tool("apply", config, "--layer", 0, "--input", tmp_path / "x.npy", "--positions", tmp_path / "p.npy",
         "--angles", "hf-float32", "--dtype", dtype, "--output", tmp_path / "y.npy")
    assert bits_equal(y.float().numpy(), np.load(tmp_path / "y.npy"))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_equals_transformers_transcription(tmp_path, name, dtype):
    model = posemb.load_model(write_config(tmp_path, name))
    rope = model.layers[0].rope_spec(seq_len(), angles="hf-float32")
    position_ids = torch.from_numpy(POSITIONS)[None, :]
    inv_freq, pos_freqs, attention, base = CASES[name][1](position_ids)
    rotary_dim, interleaved = rope.rotary_dim, rope.pairing == "interleaved"
    # The pairs whose PyTorch power is the correctly rounded float32 power (hf32's own rule).
    exact_pow = np.power(np.float64(np.float32(base)),
                         hf.hf_exponents(rotary_dim).numpy().astype(np.float64)).astype(np.float32)
    good = pos_freqs.numpy().view(np.uint32) == exact_pow.view(np.uint32)
    assert good.sum() >= rotary_dim // 2 - max(8, rotary_dim // 8)
    assert np.array_equal(rope.inv_freq[good].view(np.uint32), inv_freq.numpy()[good].view(np.uint32))
    assert rope.attention_scale == attention
    x = seeded_input((1, POSITIONS.size, 4, rope.head_dim), dtype)
    cos, sin = hf.hf_cos_sin(inv_freq, attention, position_ids, interleaved, exact_cos=True)
    expected = hf.hf_rotate(x, cos, sin, rotary_dim, interleaved, TORCH_DTYPES[dtype])
    got = posemb.apply_rope(x, POSITIONS, rope)
    pair_ok = np.repeat(good, 2) if interleaved else np.concatenate([good, good])
    mask = np.concatenate([pair_ok, np.ones(rope.head_dim - rotary_dim, dtype=bool)])
    same = got.float().numpy().view(np.uint32) == expected.float().numpy().view(np.uint32)
    assert np.all(same[..., mask]), f"{np.sum(~same[..., mask])} values differ"
    # HF's own inv_freq buffer: every pair equal.
    own = posemb.HfFloat32Rope(inv_freq.numpy(), head_dim=rope.head_dim, attention_scale=attention,
                               pairing=rope.pairing)
    assert bits_equal(posemb.apply_rope(x, POSITIONS, own).float(), expected.float())


def test_builders_equal_the_model_scheme(tmp_path):
    short, long = hf.longrope_factors(128)
    built = {
        "default": posemb.default_rope_spec(128, 500000.0, angles="hf-float32"),
        "linear": posemb.linear_rope_spec(128, 10000.0, 4.0, angles="hf-float32"),
        "dynamic": posemb.dynamic_ntk_rope_spec(128, 10000.0, 2.0, 4096, seq_len(), angles="hf-float32"),
        "yarn": posemb.yarn_rope_spec(128, 1000000.0, 4.0, 32768, angles="hf-float32"),
        "llama3": posemb.llama3_rope_spec(128, 500000.0, 8.0, 1.0, 4.0, 8192, angles="hf-float32"),
        "longrope": posemb.longrope_rope_spec(128, 10000.0, short, long, 4096, factor=32.0,
                                              seq_len=seq_len(), angles="hf-float32"),
        "neox24": posemb.default_rope_spec(96, 25000.0, rotary_dim=24, angles="hf-float32"),
        "cohere": posemb.default_rope_spec(128, 10000.0, "interleaved", angles="hf-float32"),
    }
    for name, rope in built.items():
        model = posemb.load_model(write_config(tmp_path, name))
        from_model = posemb.hf_float32_rope(model.layers[0], seq_len())
        assert isinstance(rope, posemb.HfFloat32Rope) and rope == from_model, name
        assert from_model == model.layers[0].rope.spec(seq_len(), angles="hf-float32") == \
            posemb.hf_float32_rope(model, seq_len()), name
        # The exact spec is the default; the float32 buffer is its float32 neighbourhood.
        exact = model.layers[0].rope_spec(seq_len())
        assert isinstance(exact, posemb.RopeSpec)
        assert np.allclose(rope.inv_freq, exact.inv_freq, rtol=1e-5, atol=0), name
        assert rope.inv_freq.dtype == np.float32


def test_long_positions_differ_from_exact_angles(tmp_path):
    # At long positions float32 angles drift away from the exact ones; near 0 they agree closely.
    model = posemb.load_model(write_config(tmp_path, "llama3"))
    x = seeded_input((1, 2, 2, 128), "float32")
    hf32 = posemb.apply_rope(x, [3, 131071], model.layers[0].rope_spec(angles="hf-float32"))
    exact = posemb.apply_rope(x, [3, 131071], model.layers[0].rope_spec())
    err = (hf32 - exact).abs().amax(dim=(0, 2, 3))
    assert err[0] < 1e-5 and err[1] > 1e-4


def test_hf_float32_errors(tmp_path):
    rope = posemb.default_rope_spec(64, angles="hf-float32")
    x = torch.zeros(1, 4, 2, 64)
    with pytest.raises(posemb.Error, match="x.dtype = float64"):
        posemb.apply_rope(x.double(), 0, rope)
    with pytest.raises(posemb.Error, match="inverse"):
        posemb.apply_rope_(x, 0, rope, inverse=True)
    with pytest.raises(posemb.Error, match="head_dim"):
        posemb.apply_rope_(torch.zeros(1, 4, 2, 32), 0, rope)
    with pytest.raises(posemb.Error, match="angles"):
        posemb.default_rope_spec(64, angles="float32")
    with pytest.raises(posemb.Error, match="inv_freq.dtype"):
        posemb.HfFloat32Rope(np.ones(4), head_dim=8)
    with pytest.raises(posemb.Error, match="rotary_dim"):
        posemb.HfFloat32Rope(np.ones(4, dtype=np.float32), head_dim=6)
    with pytest.raises(posemb.Error, match="scheme"):
        posemb.hf_float32_rope(posemb.default_rope_spec(64))
    # Rope types transformers' float32 steps are not transcribed for (Gemma 4's proportional).
    gemma4 = posemb.load_model(os.path.join(SOURCE_DIR, "tests", "data", "models", "syn-proportional.json"))
    proportional = [layer for layer in gemma4.layers if layer.rope and layer.rope.rope_type == "proportional"]
    assert proportional
    with pytest.raises(posemb.Error, match="rope_type"):
        proportional[0].rope_spec(angles="hf-float32")
    nope = posemb.load_model(os.path.join(SOURCE_DIR, "tests", "data", "models", "gpt2.json"))
    with pytest.raises(posemb.Error, match="kind"):
        nope.layers[0].rope_spec(angles="hf-float32")


def test_repr_and_fields():
    rope = posemb.yarn_rope_spec(64, 10000.0, 4.0, 4096, angles="hf-float32")
    assert repr(rope).startswith("HfFloat32Rope(head_dim=64, rotary_dim=64, pairing='rotate_half'")
    assert rope.inv_freq.shape == (32,) and rope.attention_scale > 1.0


def test_layouts_and_positions_forms(tmp_path):
    model = posemb.load_model(write_config(tmp_path, "yarn"))
    rope = posemb.hf_float32_rope(model, seq_len())
    x = seeded_input((2, POSITIONS.size, 3, 128), "bfloat16")
    bshd = posemb.apply_rope(x, POSITIONS, rope)
    bhsd = posemb.apply_rope(x.transpose(1, 2).contiguous(), POSITIONS, rope, layout="bhsd")
    assert bits_equal(bhsd.transpose(1, 2).float(), bshd.float())
    # Per-row positions [batch, seq] and an int offset.
    rows = np.stack([POSITIONS, POSITIONS])
    assert bits_equal(posemb.apply_rope(x, rows, rope).float(), bshd.float())
    first = posemb.apply_rope(x[:, :4], 0, rope)
    assert bits_equal(first.float(), bshd[:, :4].float())
    # A non-contiguous x out of place reads through a copy; the result is the same.
    wide = torch.zeros(2, POSITIONS.size, 3, 256, dtype=torch.bfloat16)
    wide[..., :128] = x
    assert bits_equal(posemb.apply_rope(wide[..., :128], POSITIONS, rope).float(), bshd.float())
