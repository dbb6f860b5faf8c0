"""Config rules found by the transformers conformance harness, each checked against transformers
5.24.0 run here: the factor >= 1 warning of linear / dynamic / yarn / llama3 blocks
(modeling_rope_utils.py, RotaryEmbeddingConfigMixin._validate_*_rope_parameters), Llama's default
rope over the whole head (modeling_llama.py, LlamaRotaryEmbedding.compute_default_rope_parameters)
the Qwen2-MoE / Qwen3-MoE layer types and sliding windows (configuration_qwen2_moe.py,
modeling_qwen3_moe.py), Hunyuan's static alpha (modeling_hunyuan_v1_dense.py), Falcon's
bfloat16-rounded ALiBi slopes (modeling_falcon.py, build_alibi_tensor), the lightning
indexers of DeepSeek-V3.2 and HY V4 (modeling_deepseek_v32.py, modeling_hy_v4.py) and Beam's
NoPE layers and their query scale (modeling_beam.py, BeamModel.forward,
compute_attention_scaling)."""
import inspect
import json
import logging

import numpy as np
import pytest

import posemb

transformers = pytest.importorskip("transformers")

LLAMA = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
         "num_hidden_layers": 1, "max_position_embeddings": 4096}


def _load(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return posemb.load_model(str(path))


def _transformers_warnings(config_class, **kwargs):
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    logger = logging.getLogger("transformers.modeling_rope_utils")
    handler = Collect(logging.WARNING)
    logger.addHandler(handler)
    try:
        config_class(**kwargs)
    finally:
        logger.removeHandler(handler)
    return messages


@pytest.mark.parametrize("rope", [
    {"rope_type": "linear", "factor": 0.5},
    {"rope_type": "dynamic", "factor": 0.5},
    {"rope_type": "yarn", "factor": 0.5},
    {"rope_type": "llama3", "factor": 0.5, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 1024},
])
def test_factor_below_one_is_reported_as_transformers_warns(tmp_path, rope):
    rope = dict(rope, rope_theta=10000.0)
    fields = {k: v for k, v in LLAMA.items() if k != "model_type"}
    hf = _transformers_warnings(transformers.LlamaConfig, rope_parameters=dict(rope), **fields)
    assert any("factor field must be a float or int >= 1, got 0.5" in m for m in hf)
    model = _load(tmp_path, dict(LLAMA, rope_parameters=rope))
    assert model.warnings == ["rope_parameters.factor = 0.5 is below 1: transformers expects a "
                              "factor >= 1 (it shortens wavelengths)"]


def test_factor_of_one_or_more_is_not_reported(tmp_path):
    model = _load(tmp_path, dict(LLAMA, rope_parameters={"rope_type": "linear", "factor": 1.0,
                                                          "rope_theta": 10000.0}))
    assert model.warnings == []


def _hf_llama_inv_freq(rope):
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    fields = {k: v for k, v in LLAMA.items() if k != "model_type"}
    config = transformers.LlamaConfig(rope_parameters=dict(rope), **fields)
    with torch.no_grad():
        return LlamaRotaryEmbedding(config).inv_freq.double().numpy()


@pytest.mark.parametrize("rope_type", ["default", "linear"])
def test_llama_partial_rotary_factor_as_transformers_v5(tmp_path, rope_type):
    # Default: the whole head (64 features, 32 frequencies); linear: ROPE_INIT_FUNCTIONS takes
    # the factor (16 frequencies).
    rope = {"rope_type": rope_type, "rope_theta": 500000.0, "partial_rotary_factor": 0.5}
    if rope_type == "linear":
        rope["factor"] = 2.0
    expected = _hf_llama_inv_freq(rope)
    model = _load(tmp_path, dict(LLAMA, rope_parameters=rope))
    spec = model.layers[0].rope_spec()
    inv = np.asarray(spec.inv_freq)
    assert inv.shape == expected.shape == ((32,) if rope_type == "default" else (16,))
    np.testing.assert_allclose(inv, expected, rtol=16 * np.finfo(np.float32).eps)


MOE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
       "num_hidden_layers": 6, "sliding_window": 512, "max_window_layers": 4}


@pytest.mark.parametrize("use_sliding_window", [True, False])
def test_qwen2_moe_layer_types_and_windows(tmp_path, use_sliding_window):
    fields = dict(MOE, use_sliding_window=use_sliding_window)
    hf = transformers.Qwen2MoeConfig(**fields)
    model = _load(tmp_path, dict(fields, model_type="qwen2_moe"))
    assert [layer.layer_type for layer in model.layers] == hf.layer_types
    expected = [512 if t == "sliding_attention" else None for t in hf.layer_types]
    assert [layer.attention.sliding_window for layer in model.layers] == expected


@pytest.mark.parametrize("use_sliding_window", [True, False])
def test_qwen3_moe_window_on_every_layer_when_enabled(tmp_path, use_sliding_window):
    fields = dict(MOE, use_sliding_window=use_sliding_window)
    hf = transformers.Qwen3MoeConfig(**fields)
    model = _load(tmp_path, dict(fields, model_type="qwen3_moe"))
    assert len(model.layers) == 6
    assert [layer.attention.sliding_window for layer in model.layers] == [hf.sliding_window] * 6


@pytest.mark.parametrize("seq_len", [None, 32, 2048, 2049, 100_000])
def test_hunyuan_alpha_is_static_at_every_length(tmp_path, seq_len):
    # HunYuanDenseV1RotaryEmbedding (modeling_hunyuan_v1_dense.py): a dynamic block with alpha is
    # rope_type "ntk_alpha", which dynamic_rope_update does not regrow past
    # max_position_embeddings; its inv_freq after a forward at seq_len - 1 is the reference.
    import torch
    from transformers.models.hunyuan_v1_dense import modeling_hunyuan_v1_dense as hunyuan

    config = {"model_type": "hunyuan_v1_dense", "hidden_size": 256, "num_attention_heads": 2,
              "head_dim": 128, "num_hidden_layers": 1, "max_position_embeddings": 2048,
              "rope_parameters": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 1.0,
                                  "alpha": 1000.0}}
    hf_config = transformers.AutoConfig.for_model(**config)
    rotary = hunyuan.HunYuanDenseV1RotaryEmbedding(hf_config)
    last = (seq_len or 1) - 1
    rotary(torch.zeros(1), torch.tensor([[0, last]]))
    ours = _load(tmp_path, config).layers[0].rope_spec(seq_len).inv_freq
    # float32 buffer (torch pow) against posemb's float64: 2 float32 ulps relative
    np.testing.assert_allclose(ours, rotary.inv_freq.double().numpy(), rtol=2.0**-22, atol=0)


@pytest.mark.parametrize("heads", [1, 5, 12, 32, 64, 71, 128])
def test_alibi_slopes_rounded_to_bfloat16_as_falcon(heads):
    # build_alibi_tensor (modeling_falcon.py): slopes[..., None].bfloat16() * arange_tensor; at
    # key 1 the bias is the rounded slope itself; torch promotes the int64 positions to bfloat16,
    # so at key k it is bfloat16(slope * bfloat16(k)).
    import torch
    from transformers.models.falcon import modeling_falcon

    seq = 4096
    alibi = modeling_falcon.build_alibi_tensor(torch.ones(1, seq, dtype=torch.int64), heads,
                                               torch.float32)[:, 0, :].double().numpy()
    slopes = posemb.alibi_slopes(heads, round_to="bfloat16")
    np.testing.assert_array_equal(slopes, alibi[:, 1])
    exact = posemb.alibi_slopes(heads)
    powers_of_two = bool(np.all(np.log2(exact) == np.round(np.log2(exact))))
    assert np.array_equal(exact, alibi[:, 1]) == powers_of_two  # 1, 5 heads: 2^-k, unrounded
    def bfloat16(x):
        bits = np.asarray(x, dtype=np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)

    np.testing.assert_array_equal(bfloat16(slopes[:, None] * bfloat16(np.arange(seq))), alibi)
    with pytest.raises(posemb.Error, match="round_to = 'float16'"):
        posemb.alibi_slopes(heads, round_to="float16")


@pytest.mark.parametrize("last", [31, 4095])
def test_phimoe_short_mscale_scales_cos_sin(tmp_path, last):
    # PhimoeRotaryEmbedding.forward (modeling_phimoe.py): cos = emb.cos() * mscale, mscale =
    # short_mscale while max(position_ids) + 1 <= original_max_position_embeddings.
    import torch
    from transformers.models.phimoe import modeling_phimoe

    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0 + i / 8 for i in range(16)],
            "long_factor": [2.0 + i for i in range(16)], "short_mscale": 1.25, "long_mscale": 1.5,
            "original_max_position_embeddings": 4096}
    config = {"model_type": "phimoe", "hidden_size": 64, "num_attention_heads": 2,
              "num_key_value_heads": 1, "num_hidden_layers": 1, "max_position_embeddings": 131072,
              "rope_parameters": rope}
    rotary = modeling_phimoe.PhimoeRotaryEmbedding(transformers.AutoConfig.for_model(**config))
    positions = torch.tensor([[0, 1, last]])
    cos, _ = rotary(torch.zeros(1, dtype=torch.float32), positions)
    spec = _load(tmp_path, config).layers[0].rope_spec(last + 1)
    assert spec.attention_scale == 1.25
    angles = positions[0, :, None].double().numpy() * spec.inv_freq[None, :]
    expected = np.concatenate([np.cos(angles), np.cos(angles)], axis=-1) * spec.attention_scale
    np.testing.assert_allclose(cos[0].double().numpy(), expected, rtol=0, atol=2e-6 * last + 1e-6)


# GLM-5: GlmMoeDsaConfig.__post_init__ derives indexer_types from index_topk_freq and
# index_skip_topk_offset (saved beside it); GlmMoeDsaIndexer rotates interleaved.
@pytest.mark.parametrize("model_type, layers, first, schedule", [
    ("deepseek_v32", 3, True, {}),
    ("hy_v4", 6, False, {}),
    ("glm_moe_dsa", 6, True, {"index_topk_freq": 3, "index_skip_topk_offset": 1})])
def test_indexers_are_where_transformers_builds_them(tmp_path, model_type, layers, first, schedule):
    config = transformers.AutoConfig.for_model(model_type, num_hidden_layers=layers,
                                               num_attention_heads=2, num_key_value_heads=2,
                                               hidden_size=64, first_k_dense_replace=1,
                                               n_routed_experts=2, num_experts_per_tok=1,
                                               **schedule)
    config.save_pretrained(tmp_path)
    model = posemb.load_model(str(tmp_path / "config.json"))
    hf = transformers.AutoModel.from_config(config)
    # The attention modules that own an indexer (HYV4Attention.indexer is None on "shared" layers).
    owners = [i for i, layer in enumerate(hf.layers) if layer.self_attn.indexer is not None]
    assert [layer.index for layer in model.layers if layer.indexer is not None] == owners
    assert [layer.layer_type for layer in model.layers] == config.layer_types
    indexer = model.layers[0].indexer
    assert indexer.head_dim == config.index_head_dim
    # The pairing the indexer's forward rotates with (HY V4: apply_rotary_pos_emb_interleave in
    # 5.25.0, apply_rotary_pos_emb in 5.24.0; DeepSeek-V3.2: apply_rotary_pos_emb).
    forward = inspect.getsource(type(hf.layers[0].self_attn.indexer).forward)
    interleaved = "apply_rotary_pos_emb_interleave(" in forward
    assert indexer.rope.pairing == ("interleaved" if interleaved else "rotate_half")
    attention = inspect.getsource(type(hf.layers[0].self_attn).forward)
    mla = "interleaved" if "apply_rotary_pos_emb_interleave(" in attention else "rotate_half"
    assert model.layers[0].rope_spec().pairing == mla
    assert indexer.rope.head_dim == config.qk_rope_head_dim
    assert indexer.rotary_offset == (0 if first else config.index_head_dim - config.qk_rope_head_dim)
    np.testing.assert_array_equal(indexer.spec().inv_freq, model.layers[0].rope_spec().inv_freq)


def test_indexer_types_are_checked(tmp_path):
    config = json.loads(transformers.AutoConfig.for_model(
        "hy_v4", num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        hidden_size=64).to_json_string())
    with pytest.raises(posemb.Error, match=r'indexer_types\[1\] = "sparse"'):
        _load(tmp_path, dict(config, indexer_types=["full", "sparse"]))


def test_beam_nope_layers_and_their_query_scale(tmp_path):
    from transformers.models.beam.modeling_beam import compute_attention_scaling
    import torch

    config = transformers.AutoConfig.for_model("beam", num_hidden_layers=13, hidden_size=64,
                                               num_attention_heads=2, num_key_value_heads=2)
    config.save_pretrained(tmp_path)
    model = posemb.load_model(str(tmp_path / "config.json"))
    assert [layer.layer_type for layer in model.layers] == config.layer_types
    nope = [i for i, t in enumerate(config.layer_types) if config.rope_parameters[t] is None]
    assert nope == [5, 11, 12]  # every sixth layer and the last
    assert [layer.index for layer in model.layers if layer.rope is None] == nope
    positions = torch.tensor([[0, 1, 2046, 2047, 8191, 131071, 1048575, 4000000]])
    hf = compute_attention_scaling(positions).flatten().double().numpy()
    for layer in model.layers:
        t = layer.attention.query_temperature
        if layer.index not in nope:
            assert t is None
            continue
        assert t.form == "power"
        ours = np.array([t.factor(int(p)) for p in positions[0]])
        np.testing.assert_allclose(ours, hf, rtol=1e-6)  # torch's float32 exp and log1p
