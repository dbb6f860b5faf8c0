"""Intern-S1-Pro's FoPE through Python: posemb.load_model of its config.json (the fope keys of a
default rope block) and posemb.fope_checkpoint_coefficients of a safetensors file with the
checkpoint's names (tests/data/interns1_pro/tiny, written by the safetensors package), rotating
as vLLM 0.33.0's FourierRotaryEmbedding.forward_native did (make_tiny.py wrote y_vllm.npy)."""
import numpy as np
import pytest
from safetensors.numpy import load_file

import posemb
from conftest import data_path


def test_config_reads_the_fope_keys():
    model = posemb.load_model(data_path("interns1_pro", "config.json"))
    assert model.layers[0].kind == "fope"
    f = model.fope
    assert (f.head_dim, f.n_heads, f.n_kv_heads, f.theta) == (128, 64, 4, 5e6)
    assert (f.train_length, f.sigma, f.num_inv_freq) == (262144, 0.5, 0)
    # 5e6^(-2k/128) > 2 pi / 262144 for k = 0 .. 44 (vLLM's _compute_inv_freq mask)
    k = np.arange(64)
    assert f.d_out == int((5e6 ** (-2.0 * k / 128) > 2 * np.pi / 262144).sum()) == 45


def test_checkpoint_coefficients_rotate_as_vllm():
    tiny = data_path("interns1_pro", "tiny")
    model = posemb.load_model(f"{tiny}/config.json")
    sin, cos = posemb.fope_checkpoint_coefficients(f"{tiny}/coefficients.safetensors")
    written = load_file(f"{tiny}/coefficients.safetensors")
    assert np.array_equal(sin, written["model.language_model.rotary_emb.sin_coef"])
    assert np.array_equal(cos, written["model.language_model.rotary_emb.cos_coef"])
    fope = posemb.fope_with_coefficients(model.fope, sin, cos)
    x = np.load(f"{tiny}/x.npy")
    y = posemb.apply_fope(x, 0, fope)
    want = np.load(f"{tiny}/y_vllm.npy")
    # vLLM's float32 angles: |x pair| A (8 u + 8 u p w_0), A the mixture's gain (conformance/vllm)
    gain = float((np.abs(sin) + np.abs(cos)).sum(axis=1).max())
    pair = np.hypot(x[..., :8], x[..., 8:]).astype(np.float64)
    p = np.arange(32, dtype=np.float64)[None, :, None, None]
    bound = np.concatenate([pair, pair], axis=-1) * gain * 8 * 2.0**-24 * (1 + p)
    assert (np.abs(y.astype(np.float64) - want) <= bound).all()


def test_missing_coefficients_name_every_tensor_tried(tmp_path):
    from safetensors.numpy import save_file

    path = str(tmp_path / "none.safetensors")
    save_file({"other": np.zeros(2, np.float32)}, path)
    with pytest.raises(posemb.Error, match="model.language_model.rotary_emb.sin_coef"):
        posemb.fope_checkpoint_coefficients(path)
