"""`per_layer_config` (transformers >= 5.24, integrations/heterogeneity/configuration_utils.py):
configs saved by transformers itself, read by posemb layer by layer and compared with the modules
transformers builds from them (head widths, rotary inv_freq buffers, windows); the inputs
transformers refuses (_validate_layer_indices, _validate_sliding_window_and_attention_chunk_size,
_PerLayerConfigView.__getitem__) refused by posemb too, naming the key."""
import json

import numpy as np
import pytest

import posemb

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

GEMMA4 = dict(num_hidden_layers=6, hidden_size=64, num_attention_heads=2, num_key_value_heads=1,
              head_dim=32, vocab_size=256, vocab_size_per_layer_input=256,
              hidden_size_per_layer_input=8, intermediate_size=32)


def _saved(tmp_path, config):
    """config.save_pretrained's config.json, as a dict, and posemb's model of it."""
    config.save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    return json.loads(path.read_text()), posemb.load_model(str(path))


def _gemma4_model(config):
    from transformers import Gemma4ForCausalLM

    torch.manual_seed(0)
    return Gemma4ForCausalLM(config).eval()


@pytest.mark.parametrize("global_head_dim,layers", [(96, 6), (512, 6), (128, 12)])
def test_gemma4_global_head_dim_saved_per_layer(tmp_path, global_head_dim, layers):
    # 12 layers: transformers zero-pads the keys ("05", "11")
    fields = dict(GEMMA4, num_hidden_layers=layers)
    config = transformers.Gemma4TextConfig(global_head_dim=global_head_dim, **fields)
    saved, model = _saved(tmp_path, config)
    assert "global_head_dim" not in saved  # the width is in per_layer_config alone
    assert all(v == {"head_dim": global_head_dim} for v in saved["per_layer_config"].values())
    hf = _gemma4_model(config)
    rotary = hf.model.rotary_emb
    for layer, module in zip(model.layers, hf.model.layers):
        attention = module.self_attn
        assert layer.head_dim == attention.head_dim, layer.index
        inv_freq = getattr(rotary, f"{attention.layer_type}_inv_freq").double().numpy()
        got = np.asarray(layer.rope.spec().inv_freq)
        # proportional: the zero tail of HF's buffer is posemb's too (rotary_dim = head_dim)
        np.testing.assert_allclose(got, inv_freq, rtol=3e-7, atol=1e-30)
    assert model.unused_keys == []


def _probe(config_kwargs, model_type):
    """The error transformers raises building the config and model, or None."""
    try:
        config = transformers.AutoConfig.for_model(model_type, **config_kwargs)
        transformers.AutoModelForCausalLM.from_config(config)
    except Exception as error:  # noqa: BLE001 - the reference's own exception, compared below
        return error
    return None


LLAMA = dict(num_hidden_layers=4, hidden_size=64, num_attention_heads=2, num_key_value_heads=1,
             intermediate_size=32, vocab_size=128)


@pytest.mark.parametrize("model_type,fields,per_layer,key,hf_says", [
    ("llama", LLAMA, {"4": {"rope_theta": 1.0}}, "per_layer_config.4",
     "keys must be integer layer indices in the range [0, 4)"),
    ("llama", LLAMA, {"-1": {"rope_theta": 1.0}}, "per_layer_config.-1",
     "keys must be integer layer indices in the range [0, 4)"),
    ("llama", LLAMA, {"x": {"rope_theta": 1.0}}, "per_layer_config.x",
     "invalid literal for int()"),
    ("llama4_text", LLAMA, {"1": {"sliding_window": 8}}, "per_layer_config.1.sliding_window",
     "mutually exclusive `sliding_window` and `attention_chunk_size`"),
    ("gemma4_text", GEMMA4, {"5": {"head_dim": 96}, "1": {"head_dim": 64}},
     "per_layer_config.1.head_dim", "Layer type 'sliding_attention' is not homogeneous"),
    ("gemma4_text", GEMMA4, {"5": {"head_dim": 96}, "1": {"layer_types": ["full_attention"] * 6}},
     "per_layer_config.1.layer_types", "'layer_types' is a per-layer attribute"),
    ("gemma4_text", GEMMA4, {"5": {"head_dim": 96}, "1": {"skip": "attention"}},
     "per_layer_config.1.skip", "`skip` must be an iterable of strings"),
])
def test_bad_per_layer_config_refused_as_transformers(tmp_path, model_type, fields, per_layer,
                                                      key, hf_says):
    error = _probe(dict(fields, per_layer_config=per_layer), model_type)
    assert error is not None and hf_says in str(error)
    config = {"model_type": model_type, "per_layer_config": per_layer}
    config.update(fields)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(posemb.Error, match=key.replace(".", r"\.") + r"\b"):
        posemb.load_model(str(path))


def test_per_layer_key_posemb_does_not_read_is_reported(tmp_path):
    # Llama's softmax scale is 1 / sqrt(head_dim): query_pre_attn_scalar is Gemma's key
    config = dict(LLAMA, model_type="llama",
                  per_layer_config={"0": {"query_pre_attn_scalar": 5.0, "intermediate_size": 8}})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.warns(UserWarning, match=r"not used by posemb: per_layer_config\.0\.query_pre"):
        model = posemb.load_model(str(path))
    assert model.unused_keys == ["per_layer_config.0.query_pre_attn_scalar"]
    with pytest.raises(posemb.Error, match=r"per_layer_config\.0\.query_pre_attn_scalar: not used"):
        posemb.load_model(str(path), strict=True)


def test_per_layer_window_overrides_that_layer(tmp_path):
    config = dict(LLAMA, model_type="gemma3_text", sliding_window=16,
                  layer_types=["sliding_attention", "sliding_attention", "sliding_attention",
                               "full_attention"],
                  per_layer_config={"1": {"sliding_window": 4}})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    model = posemb.load_model(str(path))
    assert [layer.attention.sliding_window for layer in model.layers] == [16, 4, 16, None]
    assert model.unused_keys == []


def test_sliding_layer_with_null_window_contradicts_layer_types(tmp_path):
    config = dict(LLAMA, model_type="gemma3_text", sliding_window=16,
                  layer_types=["sliding_attention"] * 3 + ["full_attention"],
                  per_layer_config={"1": {"sliding_window": None}})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(posemb.Error, match=r"per_layer_config\.1\.sliding_window"):
        posemb.load_model(str(path))
