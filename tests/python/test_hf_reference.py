"""posemb against a PyTorch transcription of HuggingFace's rotary embedding.

The transcription follows transformers' LlamaRotaryEmbedding.forward + apply_rotary_pos_emb
(models/llama/modeling_llama.py: freqs = inv_freq x position_ids, emb = cat(freqs, freqs),
cos = emb.cos() * attention_scaling cast to x's dtype, q * cos + rotate_half(q) * sin), the
partial-rotary split of Phi / GLM (q[..., :rotary_dim] rotated, the rest passed through) and
GPT-J's interleaved form (models/gptj/modeling_gptj.py: rotate_every_two, sin/cos
repeat_interleave(2)). HuggingFace forms the angles in float32; with float64 angles instead, its
float32 cos and sin equal posemb's but for a few values one float32 ulp apart (posemb's cos/sin
are within 1 ulp of the correctly rounded value, detail/cos_sin.hpp; PyTorch's double cos is
within 1 double ulp, and either may round a near-tie the other way), and the rotations agree to
one rounding of each product (posemb fuses a * cos - b * sin into one FMA where the CPU has it,
detail/rotate.hpp; PyTorch rounds both products). With float32 angles HuggingFace's angles
drift by far more as positions grow.
"""
import pytest
import torch

import posemb

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def hf_cos_sin(spec, position_ids, dtype, angle_dtype):
    """LlamaRotaryEmbedding.forward: cos, sin [batch, seq, rotary_dim / 2] before the cat."""
    inv_freq = torch.from_numpy(spec.inv_freq).to(angle_dtype)
    inv_freq_expanded = inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].to(angle_dtype)
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    return freqs, spec.attention_scale


def hf_apply(q, spec, position_ids, angle_dtype):
    """q [batch, heads, seq, head_dim] rotated as HuggingFace does (rotary part first)."""
    freqs, scale = hf_cos_sin(spec, position_ids, q.dtype, angle_dtype)
    rot, rest = q[..., : spec.rotary_dim], q[..., spec.rotary_dim:]
    if spec.pairing == "rotate_half":
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * scale).to(q.dtype).unsqueeze(1)
        sin = (emb.sin() * scale).to(q.dtype).unsqueeze(1)
        rotated = (rot * cos) + (rotate_half(rot) * sin)
    else:  # GPT-J
        cos = torch.repeat_interleave((freqs.cos() * scale).to(q.dtype), 2, dim=-1).unsqueeze(1)
        sin = torch.repeat_interleave((freqs.sin() * scale).to(q.dtype), 2, dim=-1).unsqueeze(1)
        rotated = (rot * cos) + (rotate_every_two(rot) * sin)
    return torch.cat((rotated, rest), dim=-1)


SPECS = {
    "llama3": lambda: posemb.llama3_rope_spec(64, 500000.0),
    "yarn": lambda: posemb.yarn_rope_spec(64, 10000.0, 4.0, 4096),
    "partial": lambda: posemb.default_rope_spec(80, 10000.0, rotary_dim=32),
    "gptj": lambda: posemb.default_rope_spec(64, 10000.0, "interleaved"),
}


def within_one_rounding(got, expected, q, spec):
    """|got - expected| <= 2^-23 * (|a cos| + |b sin|) per feature: each side rounds each product
    (or their fused sum) once in float32, with the same cos and sin."""
    bound = 2.0 ** -23 * 2 * q.abs().double().amax(dim=-1, keepdim=True) * spec.attention_scale * 1.5
    return bool(((got.double() - expected.double()).abs() <= bound).all())


def hf_table(spec, first, count, angle_dtype=torch.float64):
    freqs, scale = hf_cos_sin(spec, torch.arange(first, first + count)[None], torch.float32, angle_dtype)
    return (freqs.cos() * scale).to(torch.float32)[0], (freqs.sin() * scale).to(torch.float32)[0]


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("first", [0, 4096, 100000])
def test_float64_angles_cos_sin(name, first):
    spec = SPECS[name]()
    table = posemb.RopeTable(spec, first, 256)
    for ours, theirs in zip((table.cos, table.sin), hf_table(spec, first, 256)):
        ours = torch.from_numpy(ours)
        ulp = torch.finfo(torch.float32).eps * theirs.abs().clamp(min=2.0 ** -126)
        assert bool(((ours - theirs).abs() <= ulp).all())
        assert (ours != theirs).float().mean().item() < 0.01


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("first", [0, 4096, 100000])
def test_float64_angles_rotation(name, first):
    spec = SPECS[name]()
    generator = torch.Generator().manual_seed(first + len(name))
    q = torch.randn(2, 4, 64, spec.head_dim, generator=generator)
    position_ids = torch.arange(first, first + 64).expand(2, -1)
    expected = hf_apply(q, spec, position_ids, torch.float64)
    got = posemb.apply_rope(q, position_ids, spec, layout="bhsd")
    assert within_one_rounding(got, expected, q, spec)
    # The pass-through features of partial rotary are the input's bits.
    assert torch.equal(got[..., spec.rotary_dim:], q[..., spec.rotary_dim:])


def test_float32_angles_drift():
    # HuggingFace's own float32 angles differ at long positions (posemb forms them in double).
    spec = SPECS["llama3"]()
    q = torch.randn(1, 2, 32, 64, generator=torch.Generator().manual_seed(1))
    position_ids = torch.arange(100000, 100032)[None]
    float32 = hf_apply(q, spec, position_ids, torch.float32)
    float64 = hf_apply(q, spec, position_ids, torch.float64)
    ours = posemb.apply_rope(q, position_ids, spec, layout="bhsd")
    assert within_one_rounding(ours, float64, q, spec)
    assert (ours - float32).abs().max().item() > 1e-4
    cos32, _ = hf_table(spec, 100000, 32, torch.float32)
    assert not torch.equal(torch.from_numpy(posemb.RopeTable(spec, 100000, 32).cos), cos32)


def test_float64_tensor_close():
    # float64 x: HuggingFace's cos(p * inv_freq) and posemb's cos of the angle reduced mod 2 pi
    # agree to the last few bits.
    spec = SPECS["yarn"]()
    q = torch.randn(1, 4, 16, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    position_ids = torch.arange(3000, 3016)[None]
    expected = hf_apply(q, spec, position_ids, torch.float64)
    got = posemb.apply_rope(q, position_ids, spec, layout="bhsd")
    assert (got - expected).abs().max().item() < 1e-12
