"""posemb's custom ops (posemb/_ops.py) in training: opcheck, gradcheck and gradgradcheck in
float64, gradients equal to autograd through transformers' own apply_rotary_pos_emb, the
composite path against the kernels, torch.compile without graph breaks, bad input."""
import numpy as np
import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

import posemb
from posemb import _ops

torch.manual_seed(0)


def rope_specs():
    yarn = posemb.yarn_rope_spec(16, 10000.0, 4.0, 64)
    assert yarn.attention_scale != 1.0
    return {
        "rotate_half": posemb.default_rope_spec(16, 10000.0),
        "interleaved": posemb.default_rope_spec(16, 10000.0, pairing="interleaved"),
        "partial": posemb.default_rope_spec(20, 500.0, rotary_dim=8),
        "offset": posemb.RopeSpec(posemb.default_rope_spec(8, 500.0).inv_freq, 20, rotary_offset=12),
        "yarn": yarn,
    }


def x64(*shape):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("name", list(rope_specs()))
@pytest.mark.parametrize("positions", ["offset", "per_token", "fractional"])
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_rope_gradcheck(name, positions, layout):
    spec = rope_specs()[name]
    p = {"offset": 7, "per_token": torch.tensor([[3, 0, 9], [1, 40, 2]]),
         "fractional": torch.tensor([[0.5, 2.25, 7.75]], dtype=torch.float64)}[positions]
    batch = 1 if positions == "fractional" else 2
    x = x64(batch, 3, 2, spec.head_dim) if layout == "bshd" else x64(batch, 2, 3, spec.head_dim)
    f = lambda t: posemb.apply_rope(t, p, spec, layout)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x,))
    assert torch.autograd.gradgradcheck(f, (x,))


def test_inverse_gradcheck_scaled():
    spec = rope_specs()["yarn"]
    f = lambda t: posemb.apply_rope(t, 3, spec, inverse=True)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x64(1, 4, 2, 16),))


def test_other_sources_gradcheck():
    xpos = posemb.XposSpec(posemb.default_rope_spec(16, 10000.0), scale_base=64.0)
    fope = posemb.make_fope(posemb.FopeConfig(head_dim=16, n_heads=4, n_kv_heads=2,
                                              train_length=64, seed=1))
    mrope = posemb.MropeSpec(posemb.default_rope_spec(16, 1e4), (4, 2, 2))
    thw = torch.tensor([[0, 1, 2, 3], [0, 0, 1, 1], [0, 1, 0, 1]])
    vision = posemb.qwen2_vl_vision_rope(16, 2)
    patches = torch.from_numpy(posemb.vision_patch_positions(vision, 1, 2, 4))
    cases = [
        (lambda t: posemb.apply_xpos(t, 3, xpos, "query"), (1, 5, 2, 16)),
        (lambda t: posemb.apply_xpos(t, 3, xpos, "key"), (1, 5, 2, 16)),
        (lambda t: posemb.apply_fope(t, 5, fope), (2, 3, 4, 16)),
        (lambda t: posemb.apply_mrope(t, thw, mrope), (1, 4, 2, 16)),
        (lambda t: posemb.apply_vision_rope(t, patches, vision), (1, 8, 2, 16)),
    ]
    for f, shape in cases:
        x = x64(*shape)
        assert torch.autograd.gradcheck(f, (x,))
        assert torch.autograd.gradgradcheck(f, (x,))


def test_opcheck_every_op():
    spec = posemb.default_rope_spec(16, 10000.0)
    key = _ops.rotation_key("rope", spec)
    x = torch.randn(2, 3, 2, 16, requires_grad=True)
    p = torch.tensor([[0, 1, 2], [5, 6, 7]])
    torch.library.opcheck(_ops.rotate, (x, p, 0, key, "bshd", _ops.FORWARD, 1))
    torch.library.opcheck(_ops.rotate, (x, None, 4, key, "bshd", _ops.TRANSPOSE, 1))
    torch.library.opcheck(_ops.rotate_, (x.detach().clone(), p, 0, key, "bshd", _ops.FORWARD, 1))
    config = posemb.FopeConfig(head_dim=16, n_heads=2, train_length=64, seed=2)
    f = posemb.make_fope(config)
    sin_coef = torch.from_numpy(np.array(f.sin_coef)).requires_grad_()
    cos_coef = torch.from_numpy(np.array(f.cos_coef)).requires_grad_()
    ckey = _ops.source_key(config)
    torch.library.opcheck(_ops.fope, (x, p, 0, sin_coef, cos_coef, ckey, "bshd", _ops.FORWARD, 1))
    torch.library.opcheck(_ops.fope_coefficient_grads,
                          (x.detach(), torch.randn(2, 3, 2, 16), p, 0, sin_coef.detach(),
                           cos_coef.detach(), ckey, "bshd"))
    h = torch.randn(2, 3, 8, requires_grad=True)
    table = torch.randn(16, 8, requires_grad=True)
    torch.library.opcheck(_ops.add_positions, (h, p, 0, table))
    torch.library.opcheck(_ops.position_table_grad, (torch.randn(2, 3, 8), p, 0, table.detach()))
    buckets = posemb.T5Buckets(8, 20, True)
    t5 = torch.randn(8, 3, requires_grad=True)
    q, k = torch.arange(10, 14), torch.arange(0, 14)
    torch.library.opcheck(_ops.t5_bias, (t5, q, k, _ops.source_key(buckets)))
    torch.library.opcheck(_ops.t5_table_grad,
                          (torch.randn(3, 4, 14), q, k, _ops.source_key(buckets), t5.detach()))


def test_gradients_equal_transformers_apply_rotary_pos_emb():
    """q and k gradients through posemb equal autograd through transformers' own
    apply_rotary_pos_emb fed posemb's exact float64 cos/sin (BHSD, as HF's attention has it)."""
    spec = posemb.default_rope_spec(32, 10000.0)
    position_ids = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7], [100, 101, 102, 103, 4, 5, 6, 7]])
    table = posemb.RopeTable(spec, 0, 104, dtype="float64")
    c = torch.from_numpy(np.array(table.cos))[position_ids]
    s = torch.from_numpy(np.array(table.sin))[position_ids]
    cos, sin = torch.cat((c, c), -1), torch.cat((s, s), -1)
    q, k = x64(2, 4, 8, 32), x64(2, 2, 8, 32)
    wq, wk = torch.randn(2, 4, 8, 32, dtype=torch.float64), torch.randn(2, 2, 8, 32, dtype=torch.float64)
    hq, hk = apply_rotary_pos_emb(q, k, cos, sin)
    hf_grads = torch.autograd.grad((hq * wq).sum() + (hk * wk).sum(), (q, k))
    pq = posemb.apply_rope(q, position_ids, spec, "bhsd")
    pk = posemb.apply_rope(k, position_ids, spec, "bhsd")
    torch.testing.assert_close(pq, hq, rtol=1e-12, atol=1e-12)
    ours = torch.autograd.grad((pq * wq).sum() + (pk * wk).sum(), (q, k))
    for got, expected in zip(ours, hf_grads):
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-12)


def fope_reference(x, positions, fope, sin_coef, cos_coef):
    """FoPE from the formulas in torch float64 (rotary/fope.hpp): C = sum_k A_cos cos(w_k t),
    S = sum_k A_sin sin(w_k t), rotate-half pairs, padded slots C = 1, S = padding_sin = 1."""
    w = torch.from_numpy(np.array(fope.inv_freq))
    t = positions.double()[..., None] * w  # [seq, D_in]
    C = torch.einsum("sk,hkj->shj", torch.cos(t), cos_coef)  # [seq, n_kv, D_out]
    S = torch.einsum("sk,hkj->shj", torch.sin(t), sin_coef)
    half = fope.head_dim // 2
    pad = half - fope.d_out
    ones = torch.ones(*C.shape[:2], pad, dtype=C.dtype)
    C, S = torch.cat((C, ones), -1), torch.cat((S, ones), -1)
    group = x.shape[2] // C.shape[1]
    C, S = C.repeat_interleave(group, 1), S.repeat_interleave(group, 1)  # [seq, heads, half]
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * C - b * S, b * C + a * S), -1)


def test_fope_coefficient_gradients_equal_the_formula_by_autograd():
    config = posemb.FopeConfig(head_dim=16, n_heads=4, n_kv_heads=2, train_length=64, seed=3)
    fope = posemb.make_fope(config)
    sin32 = torch.from_numpy(np.array(fope.sin_coef))
    cos32 = torch.from_numpy(np.array(fope.cos_coef))
    x = x64(1, 6, 4, 16)
    positions = torch.arange(5, 11)
    w = torch.randn(1, 6, 4, 16, dtype=torch.float64)
    sin_r, cos_r = sin32.double().requires_grad_(), cos32.double().requires_grad_()
    ref = fope_reference(x, positions, fope, sin_r, cos_r)
    expected = torch.autograd.grad((ref * w).sum(), (x, sin_r, cos_r))
    sin_p, cos_p = sin32.clone().requires_grad_(), cos32.clone().requires_grad_()
    y = _ops.apply_fope_tensor(x, positions, config, sin_p, cos_p)
    torch.testing.assert_close(y, ref, rtol=1e-9, atol=1e-12)
    got = torch.autograd.grad((y * w).sum(), (x, sin_p, cos_p))
    torch.testing.assert_close(got[0], expected[0], rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(got[1].double(), expected[1], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got[2].double(), expected[2], rtol=1e-6, atol=1e-6)


def test_table_gradients_equal_torch_embedding():
    h = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    table = torch.randn(16, 8, dtype=torch.float64, requires_grad=True)
    p = torch.tensor([[0, 3, 3, 7, 1], [7, 7, 2, 0, 15]])
    y = posemb.add_position_embeddings(h, p, table)
    w = torch.randn_like(y)
    got = torch.autograd.grad((y * w).sum(), (h, table))
    ref = h + torch.nn.functional.embedding(p, table)
    expected = torch.autograd.grad((ref * w).sum(), (h, table))
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    buckets = posemb.T5Buckets(8, 20, False)
    t5 = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
    q, k = np.arange(10, 16), np.arange(16)
    bias = _ops.t5_bias_tensor(t5, buckets, q, k)
    ids = torch.from_numpy(posemb.t5_bucket_matrix(buckets, q, k))
    ref_bias = torch.nn.functional.embedding(ids, t5).permute(2, 0, 1)
    torch.testing.assert_close(bias, ref_bias.float().double())
    wb = torch.randn_like(bias)
    torch.testing.assert_close(torch.autograd.grad((bias * wb).sum(), t5)[0],
                               torch.autograd.grad((ref_bias * wb).sum(), t5)[0])


@pytest.mark.parametrize("name", ["rotate_half", "interleaved", "partial", "offset", "yarn"])
def test_composite_path_matches_the_kernels(name):
    """The path a GPU takes (posemb's tables, PyTorch's arithmetic), run on CPU tensors."""
    spec = rope_specs()[name]
    p = torch.tensor([[3, 0, 9, 100], [1, 40, 2, 5]])
    for layout, shape in (("bshd", (2, 4, 3, spec.head_dim)), ("bhsd", (2, 3, 4, spec.head_dim))):
        x = torch.randn(*shape, dtype=torch.float64)
        for direction in (_ops.FORWARD, _ops.INVERSE, _ops.TRANSPOSE):
            key = _ops.rotation_key("rope", spec)
            kernel = _ops.rotate(x, p, 0, key, layout, direction, 1)
            with _ops.composite_path():
                composite = _ops.rotate(x, p, 0, key, layout, direction, 1)
            torch.testing.assert_close(composite, kernel, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_half_precision_gradients(dtype):
    spec = posemb.default_rope_spec(64, 10000.0)
    x = torch.randn(1, 32, 4, 64, dtype=torch.float64)
    g = torch.randn_like(x)
    xd = x.to(dtype).requires_grad_()
    posemb.apply_rope(xd, 1000, spec).backward(g.to(dtype))
    assert xd.grad.dtype == dtype
    expected = posemb.apply_rope(g.to(dtype).double(), 1000, spec, inverse=True)
    tol = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(xd.grad.double(), expected, rtol=tol, atol=tol * 4)


def test_in_place_follows_pytorch_rules():
    spec = posemb.default_rope_spec(16, 10000.0)
    leaf = torch.randn(1, 3, 2, 16, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        posemb.apply_rope_(leaf, 0, spec)
    base = torch.randn(1, 3, 2, 16, dtype=torch.float64, requires_grad=True)
    y = base * 2
    assert posemb.apply_rope_(y, 0, spec) is y
    w = torch.randn_like(y)
    (y * w).sum().backward()
    expected = 2 * posemb.apply_rope(w, 0, spec, inverse=True)
    torch.testing.assert_close(base.grad, expected)
    plain = torch.randn(1, 3, 2, 16)
    before = plain.clone()
    posemb.apply_rope_(plain, 0, spec)  # no grad: rotated in place, nothing recorded
    torch.testing.assert_close(plain, posemb.apply_rope(before, 0, spec))


def test_bad_input():
    spec = posemb.default_rope_spec(16, 10000.0)
    x = torch.randn(1, 3, 2, 16, requires_grad=True)
    fractional = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)
    with pytest.raises(posemb.Error, match="positions are not differentiable"):
        posemb.apply_rope(x, fractional, spec)
    with pytest.raises(posemb.Error, match=r"positions.device = meta: expected x.device = cpu"):
        posemb.apply_rope(x, torch.arange(3, device="meta"), spec)
    h = torch.randn(1, 3, 8, requires_grad=True)
    with pytest.raises(posemb.Error, match=r"table.dtype = torch.float64: expected x.dtype = torch.float32"):
        posemb.add_position_embeddings(h, 0, torch.randn(8, 8, dtype=torch.float64))
    y = x.detach() * 1.0
    y.requires_grad_()
    z = y * 1.0
    before = z.detach().clone()
    with pytest.raises(posemb.Error):
        posemb.apply_rope_(z, torch.tensor([0, 1]), spec)  # two positions for three tokens
    assert torch.equal(z.detach(), before)


class Attention(torch.nn.Module):
    """A Llama-style attention block: projections, posemb's RoPE on q and k, GQA, SDPA."""

    def __init__(self, dim=64, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(heads * self.head_dim, dim, bias=False)
        self.spec = posemb.default_rope_spec(self.head_dim, 10000.0)

    def forward(self, h, positions):
        b, s, _ = h.shape
        q = posemb.apply_rope(self.q(h).view(b, s, self.heads, self.head_dim), positions, self.spec)
        k = posemb.apply_rope(self.k(h).view(b, s, self.kv_heads, self.head_dim), positions, self.spec)
        v = self.v(h).view(b, s, self.kv_heads, self.head_dim)
        out = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
            enable_gqa=True)
        return self.o(out.transpose(1, 2).reshape(b, s, -1))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_attention_block(backend):
    """aot_eager: the graph PyTorch traces; inductor (the default backend): the code it generates
    around posemb's ops (kept as opaque calls), forward and backward."""
    torch._dynamo.reset()
    block = Attention()
    h = torch.randn(2, 8, 64)
    positions = torch.arange(8).expand(2, 8)
    eager = block(h, positions)
    compiled = torch.compile(block, fullgraph=True, backend=backend)
    out = compiled(h, positions)
    torch.testing.assert_close(out, eager)
    out.sum().backward()
    grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    eager.sum().backward()
    for got, expected in zip(grads, [p.grad for p in block.parameters()]):
        torch.testing.assert_close(got, expected)
    explanation = torch._dynamo.explain(block)(h, positions)
    assert explanation.graph_break_count == 0
