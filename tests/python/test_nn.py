"""posemb.nn: the modules' outputs equal the functions', gradients reach their parameters, and
state_dict keys are the checkpoints' (GPT-2's wpe.weight, T5's relative_attention_bias.weight,
FoPE's sin_coef / cos_coef)."""
import numpy as np
import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

import posemb
import posemb.nn
from conftest import data_path


def test_rotary_from_a_model_equals_transformers():
    """The two-line swap: posemb.nn.Rotary in BHSD against apply_rotary_pos_emb fed exact
    float64 cos/sin, outputs and gradients."""
    model = posemb.load_model(data_path("models", "mistral-7b-v0.1.json"))
    layers = posemb.nn.ModelRotary(model, layout="bhsd").layers
    assert len(layers) == len(model.layers) and all(r is not None for r in layers)
    rotary = layers[3]
    spec = model.layers[3].rope_spec()
    position_ids = torch.arange(5, 13)[None]
    table = posemb.RopeTable(spec, 0, 16, dtype="float64")
    c = torch.from_numpy(np.array(table.cos))[position_ids]
    s = torch.from_numpy(np.array(table.sin))[position_ids]
    q = torch.randn(1, 4, 8, spec.head_dim, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 2, 8, spec.head_dim, dtype=torch.float64, requires_grad=True)
    hq, hk = apply_rotary_pos_emb(q, k, torch.cat((c, c), -1), torch.cat((s, s), -1))
    pq, pk = rotary(q, k, position_ids)
    torch.testing.assert_close(pq, hq, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(pk, hk, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(hq)
    expected = torch.autograd.grad((hq * w).sum() + hk.sum(), (q, k))
    got = torch.autograd.grad((pq * w).sum() + pk.sum(), (q, k))
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-12)


def test_rotary_refuses_a_layer_without_rope_and_an_unknown_source():
    model = posemb.load_model(data_path("models", "gpt2.json"))
    with pytest.raises(posemb.Error, match="layer = 0: expected a layer with rotary positions"):
        posemb.nn.Rotary.from_model(model, 0)
    with pytest.raises(posemb.Error, match="source = int"):
        posemb.nn.Rotary(3)


def test_xpos_module_gives_queries_and_keys_their_own_magnitude():
    spec = posemb.XposSpec(posemb.default_rope_spec(16, 10000.0), scale_base=64.0)
    q = torch.randn(1, 5, 2, 16)
    q_rot, k_rot = posemb.nn.Rotary(spec)(q, q, 3)
    torch.testing.assert_close(q_rot, posemb.apply_xpos(q, 3, spec, "query"))
    torch.testing.assert_close(k_rot, posemb.apply_xpos(q, 3, spec, "key"))


@pytest.mark.parametrize("init", ["eye_xavier_norm", "xavier_norm"])
def test_fope_module(init):
    config = posemb.FopeConfig(head_dim=16, n_heads=4, n_kv_heads=2, train_length=64, seed=5)
    fope = posemb.nn.Fope(config, init=init)
    assert set(fope.state_dict()) == {"sin_coef", "cos_coef"}
    assert fope.sin_coef.shape == (2, fope.sin_coef.shape[1], fope.sin_coef.shape[2])
    reference = posemb.make_fope(config)
    same = torch.equal(fope.sin_coef.detach(), torch.from_numpy(np.array(reference.sin_coef)))
    assert same == (init == "eye_xavier_norm")
    q, k = torch.randn(1, 6, 4, 16), torch.randn(1, 6, 2, 16)
    q_rot, k_rot = fope(q, k, 0)
    if init == "eye_xavier_norm":
        torch.testing.assert_close(q_rot, posemb.apply_fope(q, 0, reference))
    (q_rot.square().sum() + k_rot.square().sum()).backward()
    assert fope.sin_coef.grad.abs().sum() > 0 and fope.cos_coef.grad.abs().sum() > 0
    with pytest.raises(posemb.Error, match="init = 'random'"):
        posemb.nn.Fope(config, init="random")


def test_learned_positions_load_gpt2_keys():
    model = torch.nn.Module()
    model.wpe = posemb.nn.LearnedPositions(16, 8)
    assert list(model.state_dict()) == ["wpe.weight"]
    weights = torch.randn(16, 8)
    model.load_state_dict({"wpe.weight": weights})
    h = torch.randn(2, 4, 8, requires_grad=True)
    y = model.wpe(h, 3)
    torch.testing.assert_close(y, h + weights[3:7])
    y.sum().backward()
    expected = torch.zeros(16, 8)
    expected[3:7] = 2.0
    torch.testing.assert_close(model.wpe.weight.grad, expected)


def test_sinusoidal_and_alibi():
    sinusoidal = posemb.nn.Sinusoidal(32, 8)
    assert list(sinusoidal.state_dict()) == []
    h = torch.zeros(1, 3, 8)
    torch.testing.assert_close(sinusoidal(h, 2)[0], torch.from_numpy(
        np.array(posemb.sinusoidal_table(32, 8, dtype="float64")))[2:5].float())
    alibi = posemb.nn.Alibi(4)
    bias = alibi(np.arange(3), np.arange(3))
    assert bias.shape == (4, 3, 3)


def test_t5_relative_bias_keys_and_gradient():
    module = posemb.nn.T5RelativeBias(3, num_buckets=8, max_distance=20, bidirectional=True)
    assert list(module.state_dict()) == ["relative_attention_bias.weight"]
    q, k = np.arange(6), np.arange(6)
    bias = module(q, k)
    ids = torch.from_numpy(posemb.t5_bucket_matrix(module.buckets, q, k))
    expected = module.relative_attention_bias(ids).permute(2, 0, 1)
    torch.testing.assert_close(bias, expected)
    bias.sum().backward()
    counts = torch.bincount(ids.flatten(), minlength=8).float()
    torch.testing.assert_close(module.relative_attention_bias.weight.grad, counts[:, None].expand(8, 3))
