"""Where M-RoPE positions resume after a video (MropeIndexRules.resume): 'past_largest' (Qwen's
own get_rope_index_25 and transformers <= 4.57, the default) and 'spatial_extent' (transformers
5.x, run here: Qwen2_5_VLModel.get_rope_index, current_pos += max(h, w) // merge)."""
import pytest
import numpy as np

import posemb

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TEXT = dict(num_hidden_layers=1, hidden_size=256, intermediate_size=64, num_attention_heads=2,
            num_key_value_heads=1, vocab_size=256,
            rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]})
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=256,
              spatial_merge_size=2, tokens_per_second=2, fullatt_block_indexes=[0])


def _hf(seconds):
    config = transformers.AutoConfig.for_model("qwen2_5_vl", text_config=TEXT, vision_config=VISION)
    model = transformers.AutoModel.from_config(config).eval()
    types = [0] * 2 + [2] * 24 + [0] * 3  # text:2, video 6x4x4 (24 merged tokens), text:3
    with torch.no_grad():
        ids, delta = model.get_rope_index(torch.arange(29)[None] + 3, torch.tensor([types]), None,
                                          torch.tensor([[6, 4, 4]]),
                                          second_per_grid_ts=torch.tensor([seconds]))
    return ids[:, 0].numpy(), int(delta.reshape(-1)[0])


@pytest.mark.parametrize("seconds", [0.5, 1.0, 2.0])
def test_spatial_extent_is_transformers_5(seconds):
    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip("transformers 4.x resumes past the largest id")
    rules = posemb.MropeIndexRules("qwen2_5_vl", 2, 2.0, resume="spatial_extent")
    ids, delta = posemb.mrope_index(rules, f"text:2,video:6x4x4@{seconds},text:3")
    hf_ids, hf_delta = _hf(seconds)
    np.testing.assert_array_equal(ids, hf_ids)
    assert delta == hf_delta


@pytest.mark.parametrize("seconds", [0.5, 1.0, 2.0])
def test_past_largest_text_starts_after_every_axis(seconds):
    ids, delta = posemb.mrope_index(posemb.MropeIndexRules("qwen2_5_vl", 2, 2.0),
                                    f"text:2,video:6x4x4@{seconds},text:3")
    video, text = ids[:, 2:26], ids[:, 26:]
    assert (text[:, 0] == video.max() + 1).all()  # every axis, one past the largest id
    assert delta == ids.max() + 1 - ids.shape[1]


def test_the_rules_agree_on_images_and_text():
    prompt = "text:3,image:1x4x6,text:5,image:1x8x4,text:1"
    for family in ("qwen2_vl", "qwen2_5_vl"):
        a = posemb.mrope_index(posemb.MropeIndexRules(family), prompt)
        b = posemb.mrope_index(posemb.MropeIndexRules(family, resume="spatial_extent"), prompt)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]


def test_unknown_resume_is_refused():
    with pytest.raises(posemb.Error, match="resume = 'x': expected 'past_largest' or"):
        posemb.MropeIndexRules("qwen2_vl", resume="x")
