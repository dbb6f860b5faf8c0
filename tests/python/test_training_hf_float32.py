"""Training in the angle mode 'hf-float32' (HfFloat32Rope): its backward is what autograd gives
through transformers' own code, and a short training run through posemb.nn.Rotary follows the
same run through transformers' rotary code.

The reference is transformers itself (the test venv's pinned version), run: LlamaRotaryEmbedding
for cos/sin and apply_rotary_pos_emb for the rotation, differentiated by autograd. Two roundings
separate posemb from it, both in rotary/hf_float32.hpp: PyTorch's vectorized float32 cos/sin (and
pow, for inv_freq) may be an ulp off the correctly rounded values posemb takes. So:
  - bit for bit: apply_rotary_pos_emb fed HF's float32 angles with correctly rounded cos/sin (in
    double, rounded once), against posemb's rope built from HF's own inv_freq buffer: the forward,
    the gradients of q and k, and a 20-step training run;
  - to float32 rounding: LlamaRotaryEmbedding's own cos/sin, and posemb's rope built from the
    config (hf_float32_rope); the same run with exact angles must be farther off (the check can
    fail).
"""
import json

import numpy as np
import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

import posemb
import posemb.nn
from posemb import _ops

HEADS, KV_HEADS, HEAD_DIM = 4, 2, 16
DIM = HEADS * HEAD_DIM

ROPE_PARAMETERS = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "linear": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    "llama3": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 1024},
    "yarn": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
             "original_max_position_embeddings": 2048},
}
TORCH_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def hf_config(name):
    return LlamaConfig(vocab_size=64, hidden_size=DIM, intermediate_size=2 * DIM,
                       num_hidden_layers=2, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                       head_dim=HEAD_DIM, max_position_embeddings=131072,
                       rope_parameters=dict(ROPE_PARAMETERS[name]))


def ropes(name, tmp_path, seq_len):
    """(HF's rotary module, posemb's rope from HF's buffer, posemb's rope from config.json)."""
    config = hf_config(name)
    rotary = LlamaRotaryEmbedding(config)
    from_buffer = posemb.HfFloat32Rope(rotary.inv_freq.numpy(), HEAD_DIM,
                                       attention_scale=rotary.attention_scaling)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config.to_dict()))
    model = posemb.load_model(path)
    from_config = model.layers[0].rope_spec(seq_len, angles="hf-float32")
    assert posemb.nn.Rotary.from_model(model, 0, seq_len, angles="hf-float32").source == from_config
    assert posemb.nn.ModelRotary(model, seq_len, angles="hf-float32").layers[1].source == from_config
    assert from_config.attention_scale == pytest.approx(rotary.attention_scaling, rel=1e-15)
    return rotary, from_buffer, from_config


def position_ids():
    """Two rows, one at the start and one far out (where float32 angles have drifted)."""
    return torch.stack((torch.arange(0, 12), torch.arange(100000, 100012)))


def correctly_rounded(rotary, x, ids):
    """LlamaRotaryEmbedding.forward with cos and sin of its float32 angles correctly rounded."""
    freqs = ids[..., None].float() * rotary.inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.double().cos().float() * rotary.attention_scaling
    sin = emb.double().sin().float() * rotary.attention_scaling
    return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def posemb_rotate(rope, ids):
    module = posemb.nn.Rotary(rope, "bhsd")
    return lambda q, k: module(q, k, ids)


def rotated_with_grads(rotate, q, k, gq, gk):
    hq, hk = rotate(q, k)
    return (hq, hk), torch.autograd.grad((hq, hk), (q, k), (gq, gk))


@pytest.mark.parametrize("name", list(ROPE_PARAMETERS))
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_gradients_equal_autograd_through_transformers(name, dtype, tmp_path):
    ids = position_ids()
    rotary, from_buffer, from_config = ropes(name, tmp_path, int(ids.max()) + 1)
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(2, HEADS, 12, HEAD_DIM, generator=gen).to(dtype).requires_grad_()
    k = torch.randn(2, KV_HEADS, 12, HEAD_DIM, generator=gen).to(dtype).requires_grad_()
    gq = torch.randn(q.shape, generator=gen).to(dtype)
    gk = torch.randn(k.shape, generator=gen).to(dtype)
    ours = rotated_with_grads(posemb_rotate(from_buffer, ids), q, k, gq, gk)
    with _ops.composite_path():  # what a GPU runs: HF's cos/sin from posemb, PyTorch's arithmetic
        composite = rotated_with_grads(posemb_rotate(from_buffer, ids), q, k, gq, gk)
    exact_cos_sin = rotated_with_grads(
        lambda a, b: apply_rotary_pos_emb(a, b, *correctly_rounded(rotary, a, ids)), q, k, gq, gk)
    for got, expected in zip(ours[0] + ours[1] + composite[0] + composite[1],
                             2 * (exact_cos_sin[0] + exact_cos_sin[1])):
        assert got.dtype == dtype
        assert torch.equal(got, expected), (got - expected).abs().max()

    hf = rotated_with_grads(lambda a, b: apply_rotary_pos_emb(a, b, *rotary(a, ids)), q, k, gq, gk)
    config = rotated_with_grads(posemb_rotate(from_config, ids), q, k, gq, gk)
    for got, expected, g in zip(ours[0] + ours[1] + config[0] + config[1], 2 * (hf[0] + hf[1]),
                                2 * (q, k, gq, gk)):
        # cos/sin an ulp apart: the outputs a few ulps of the pair's values apart
        bound = 4 * torch.finfo(dtype).eps * g.abs().max().float()
        assert (got.float() - expected.float()).abs().max() <= bound


@pytest.mark.parametrize("name", list(ROPE_PARAMETERS))
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_cos_sin_rows_are_transformers(name, dtype, tmp_path):
    """posemb.hf_float32_cos_sin (the composite path's rows) at positions past 1e6: transformers'
    cos/sin with correctly rounded float32 cos and sin, bit for bit, and within one ulp of
    LlamaRotaryEmbedding's own; cos^2 + sin^2 is attention_scale^2 to the dtype's rounding."""
    first, count = 1_000_000, 16
    ids = torch.arange(first, first + count)[None]
    rotary, from_buffer, _ = ropes(name, tmp_path, first + count)
    like = torch.empty(0, dtype=dtype)
    cos, sin = (torch.from_numpy(np.asarray(t)) for t in
                posemb.hf_float32_cos_sin(from_buffer, first, count, str(dtype).split(".")[1]))
    assert cos.dtype == torch.float32 and cos.shape == (count, HEAD_DIM // 2)
    for got, expected in zip((cos, sin), correctly_rounded(rotary, like, ids)):
        assert torch.equal(got.to(dtype).float(), got)  # values of x's dtype, held in float32
        assert torch.equal(got.to(dtype), expected[0, :, : HEAD_DIM // 2])
    for got, expected in zip((cos, sin), rotary(like, ids)):
        ulp = torch.finfo(dtype).eps * rotary.attention_scaling
        assert (got - expected[0, :, : HEAD_DIM // 2].float()).abs().max() <= ulp
    norm = cos.double() ** 2 + sin.double() ** 2
    assert (norm - rotary.attention_scaling ** 2).abs().max() <= 4 * torch.finfo(dtype).eps


def test_backward_is_the_transpose_call():
    """posemb.apply_rope(..., transpose=True) on an HfFloat32Rope is the backward; inverse is refused."""
    rope = posemb.default_rope_spec(HEAD_DIM, 10000.0, angles="hf-float32")
    x = torch.randn(1, 5, 2, HEAD_DIM, requires_grad=True)
    g = torch.randn(1, 5, 2, HEAD_DIM)
    posemb.apply_rope(x, 300, rope).backward(g)
    assert torch.equal(x.grad, posemb.apply_rope(g, 300, rope, transpose=True))
    with pytest.raises(posemb.Error, match="inverse = True: expected False for an HfFloat32Rope"):
        posemb.apply_rope(g, 300, rope, inverse=True)


class Block(torch.nn.Module):
    """A Llama block: RMSNorm, q/k/v/o projections, RoPE on q and k (by `rotate`), GQA through
    SDPA, a SwiGLU MLP."""

    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.RMSNorm(DIM), torch.nn.RMSNorm(DIM)
        self.q = torch.nn.Linear(DIM, HEADS * HEAD_DIM, bias=False)
        self.k = torch.nn.Linear(DIM, KV_HEADS * HEAD_DIM, bias=False)
        self.v = torch.nn.Linear(DIM, KV_HEADS * HEAD_DIM, bias=False)
        self.o = torch.nn.Linear(HEADS * HEAD_DIM, DIM, bias=False)
        self.gate = torch.nn.Linear(DIM, 2 * DIM, bias=False)
        self.up = torch.nn.Linear(DIM, 2 * DIM, bias=False)
        self.down = torch.nn.Linear(2 * DIM, DIM, bias=False)

    def forward(self, h, ids, rotate):
        b, s, _ = h.shape
        x = self.norm1(h)
        q = self.q(x).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)  # [b, heads, s, d]
        k = self.k(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q, k = rotate(q, k, ids)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                             enable_gqa=True)
        h = h + self.o(a.transpose(1, 2).reshape(b, s, DIM))
        x = self.norm2(h)
        return h + self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def train(rotate, steps=20):
    """The losses of `steps` AdamW steps of a two-layer model (same seed, same data every call)."""
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"embed": torch.nn.Embedding(64, DIM),
                                 "blocks": torch.nn.ModuleList([Block(), Block()]),
                                 "head": torch.nn.Linear(DIM, 64, bias=False)})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 64, (2, 13), generator=torch.Generator().manual_seed(1))
    ids = position_ids()
    losses = []
    for _ in range(steps):
        h = model["embed"](data[:, :-1])
        for block in model["blocks"]:
            h = block(h, ids, rotate)
        loss = torch.nn.functional.cross_entropy(model["head"](h).reshape(-1, 64),
                                                 data[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses, dtype=np.float32)


@pytest.mark.parametrize("name", ["default", "llama3"])
def test_training_run_equals_transformers_rotary(name, tmp_path):
    """20 steps, same seed: posemb.nn.Rotary in hf-float32 mode against apply_rotary_pos_emb with
    LlamaRotaryEmbedding's cos/sin: the same losses to float32 rounding (PyTorch's cos/sin an ulp
    off on some angles); against the correctly rounded cos/sin, bit for bit; exact angles (a row
    at positions 100000 and on) farther off."""
    ids = position_ids()
    rotary, from_buffer, from_config = ropes(name, tmp_path, int(ids.max()) + 1)

    def hf(q, k, positions):
        return apply_rotary_pos_emb(q, k, *rotary(q, positions))

    def hf_correctly_rounded(q, k, positions):
        return apply_rotary_pos_emb(q, k, *correctly_rounded(rotary, q, positions))

    reference = train(hf)
    assert reference[-1] < 0.7 * reference[0]  # it trains
    ours = train(posemb.nn.Rotary(from_buffer, "bhsd"))
    assert np.array_equal(ours, train(hf_correctly_rounded))
    from_config_losses = train(posemb.nn.Rotary(from_config, "bhsd"))
    # float32 rounding: 8 ulps of the loss (1e-6 relative); seen 4.8e-7 (default), 2.4e-7 (llama3)
    worst = max(np.abs(ours / reference - 1).max(), np.abs(from_config_losses / reference - 1).max())
    assert worst <= 1e-6, worst
    exact = posemb.load_model(tmp_path / "config.json").layers[0].rope_spec(int(ids.max()) + 1)
    exact_losses = train(posemb.nn.Rotary(exact, "bhsd"))
    assert np.abs(exact_losses / reference - 1).max() > 1e-6  # seen 4.2e-6, 2.1e-6
