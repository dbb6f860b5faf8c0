"""The composite path of every op (posemb/_ops.py: what tensors off the CPU run, plain PyTorch
ops fed by posemb's tables), run on CPU tensors inside _ops.composite_path() against posemb's
kernels: forward in every direction, and the gradients autograd forms through the op (the x
gradient, FoPE's coefficient gradients, the learned table's and T5's table gradients)."""
import math

import numpy as np
import pytest
import torch

import posemb
import posemb.nn
from posemb import _ops

TIGHT = {"rtol": 1e-12, "atol": 1e-12}


def grads(f, inputs, upstream, composite):
    """(output, gradients of <upstream, f(*inputs)>) on the kernels or the composite path."""
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    if composite:
        with _ops.composite_path():
            y = f(*inputs)
            return y.detach(), torch.autograd.grad(y, inputs, upstream)
    y = f(*inputs)
    return y.detach(), torch.autograd.grad(y, inputs, upstream)


def assert_same(f, inputs, upstream, **tol):
    y_kernel, g_kernel = grads(f, inputs, upstream, composite=False)
    y_comp, g_comp = grads(f, inputs, upstream, composite=True)
    torch.testing.assert_close(y_comp, y_kernel, **tol)
    for got, expected in zip(g_comp, g_kernel):
        torch.testing.assert_close(got, expected, **tol)


def test_rope_through_the_op():
    spec = posemb.yarn_rope_spec(16, 10000.0, 4.0, 64)
    x = torch.randn(2, 5, 3, 16, dtype=torch.float64)
    p = torch.tensor([[0, 7, 3, 900, 4], [1, 1, 2, 3, 5]])
    f = lambda t: posemb.apply_rope(t, p, spec)  # noqa: E731
    assert_same(f, (x,), torch.randn_like(x), **TIGHT)
    with _ops.composite_path():
        assert torch.autograd.gradcheck(f, (x.requires_grad_(),))


FOPE_CONFIGS = {
    "gqa": posemb.FopeConfig(head_dim=16, n_heads=4, n_kv_heads=2, train_length=64, seed=3),
    "kept_clipped": posemb.FopeConfig(head_dim=16, n_heads=2, train_length=40, seed=4,
                                      drop_clipped=False, padding_sin=0.5),
    "num_inv_freq": posemb.FopeConfig(head_dim=16, n_heads=4, n_kv_heads=2, train_length=64,
                                      seed=5, num_inv_freq=3),  # Intern-S1-Pro's setting
}


def fope_tensors(config):
    f = posemb.make_fope(config)
    return (torch.from_numpy(np.array(f.sin_coef)), torch.from_numpy(np.array(f.cos_coef)))


@pytest.mark.parametrize("name", list(FOPE_CONFIGS))
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("heads", ["queries", "keys"])
def test_fope_forward_and_gradients(name, layout, heads):
    config = FOPE_CONFIGS[name]
    sin_coef, cos_coef = fope_tensors(config)
    n = config.n_heads if heads == "queries" else (config.n_kv_heads or config.n_heads)
    shape = (2, 6, n, 16) if layout == "bshd" else (2, n, 6, 16)
    x = torch.randn(*shape, dtype=torch.float64)
    p = torch.tensor([[3, 4, 5, 6, 7, 8], [100, 0, 1, 2, 50, 9]])
    f = lambda t, s, c: _ops.apply_fope_tensor(t, p, config, s, c, layout)  # noqa: E731
    # float64 x, float32 coefficients: both paths mix in double, the gradients' sums in double.
    upstream = torch.randn_like(x)
    y_kernel, g_kernel = grads(f, (x, sin_coef, cos_coef), upstream, composite=False)
    y_comp, g_comp = grads(f, (x, sin_coef, cos_coef), upstream, composite=True)
    torch.testing.assert_close(y_comp, y_kernel, **TIGHT)
    torch.testing.assert_close(g_comp[0], g_kernel[0], **TIGHT)
    for got, expected in zip(g_comp[1:], g_kernel[1:]):  # rounded once to float32
        torch.testing.assert_close(got, expected, rtol=2 ** -23, atol=1e-12)
    for direction in (_ops.INVERSE, _ops.TRANSPOSE):
        key = _ops.source_key(config)
        kernel = _ops.fope(x, p, 0, sin_coef, cos_coef, key, layout, direction, 1)
        with _ops.composite_path():
            composite = _ops.fope(x, p, 0, sin_coef, cos_coef, key, layout, direction, 1)
        torch.testing.assert_close(composite, kernel, **TIGHT)


def test_fope_float32_and_gradcheck():
    config = FOPE_CONFIGS["gqa"]
    sin_coef, cos_coef = fope_tensors(config)
    x = torch.randn(1, 7, 4, 16)
    f = lambda t, s, c: _ops.apply_fope_tensor(t, 11, config, s, c)  # noqa: E731
    assert_same(f, (x, sin_coef, cos_coef), torch.randn_like(x), rtol=1e-5, atol=1e-5)
    with _ops.composite_path():
        inputs = (x.double().requires_grad_(), sin_coef.double().requires_grad_(),
                  cos_coef.double().requires_grad_())
        assert torch.autograd.gradcheck(f, inputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_position_table_forward_and_gradients(dtype):
    h = torch.randn(2, 5, 8).to(dtype)
    table = torch.randn(16, 8).to(dtype)
    p = torch.tensor([[0, 3, 3, 7, 1], [7, 7, 2, 0, 15]])
    f = lambda x, t: posemb.add_position_embeddings(x, p, t)  # noqa: E731
    upstream = torch.randn(2, 5, 8).to(dtype)
    y_kernel, g_kernel = grads(f, (h, table), upstream, composite=False)
    y_comp, g_comp = grads(f, (h, table), upstream, composite=True)
    assert torch.equal(y_comp, y_kernel)  # one addition in x's dtype either way
    assert torch.equal(g_comp[0], g_kernel[0])
    torch.testing.assert_close(g_comp[1], g_kernel[1], rtol=0, atol=0)  # float64 sums, one rounding
    offset = lambda x, t: posemb.add_position_embeddings(x, 11, t)  # noqa: E731
    assert_same(offset, (h, table), upstream, rtol=0, atol=0)
    with _ops.composite_path(), pytest.raises(posemb.Error, match=r"position = 16: outside the "
                                              r"position table's range \[0, 16\)"):
        posemb.add_position_embeddings(h.requires_grad_(), 12, table)


def test_sinusoidal_module_on_the_composite_path():
    module = posemb.nn.Sinusoidal(32, 8)
    h = torch.randn(2, 4, 8, requires_grad=True)
    kernel = module(h, 5)
    with _ops.composite_path():
        assert torch.equal(module(h, 5), kernel)


def test_t5_bias_and_table_gradient():
    buckets = posemb.T5Buckets(8, 20, True)
    table = torch.randn(8, 3)
    q, k = np.arange(10, 16), np.arange(0, 16)
    f = lambda t: _ops.t5_bias_tensor(t, buckets, q, k)  # noqa: E731
    upstream = torch.randn(3, 6, 16)
    y_kernel, g_kernel = grads(f, (table,), upstream, composite=False)
    y_comp, g_comp = grads(f, (table,), upstream, composite=True)
    assert torch.equal(y_comp, y_kernel)  # a gather of float32 values either way
    torch.testing.assert_close(g_comp[0], g_kernel[0], rtol=2 ** -23, atol=1e-12)
    module = posemb.nn.T5RelativeBias(3, 8, 20)
    with _ops.composite_path():
        bias = module(q, k)
    assert torch.equal(bias, module(q, k))


@pytest.mark.parametrize("form", ["causal", "symmetric"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_alibi_bias(form, dtype):
    module = posemb.nn.Alibi(6, form=form)
    q, k = torch.arange(90, 96), torch.arange(0, 100)
    kernel = module(q.numpy(), k.numpy(), dtype)
    with _ops.composite_path():
        composite = module(q, k, dtype)
    assert composite.dtype == dtype
    assert torch.equal(composite, kernel)
    assert bool(torch.isinf(composite).any()) == (form == "causal")


def test_fractional_positions_say_so():
    x = torch.randn(1, 3, 2, 16, requires_grad=True)
    with _ops.composite_path(), pytest.raises(posemb.Error, match="fractional positions"):
        posemb.apply_rope(x, torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64),
                          posemb.default_rope_spec(16, 10000.0))


# ---- M-RoPE, vision RoPE, xPos and HfFloat32Rope: posemb's cos/sin rows (double; HF's float32
# values for HfFloat32Rope), PyTorch's multiply-adds

LONG = 1_000_000
LOW_PRECISION = [torch.float32, torch.bfloat16]
UNIT_ROUNDOFF = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8}


def assert_rounding_close(f, x, positions_note=""):
    """Kernel and composite agree, forward and x gradient, within the roundings that differ: the
    kernel rounds a pair's a c - b s once from float32, the composite rounds cos, sin, both
    products and the sum to x's dtype; 4 unit roundoffs of the largest |x| (|upstream|) times
    the largest |cos|, |sin| (the magnitude m, at most 2 here) bound the gap."""
    upstream = torch.randn_like(x)
    y_kernel, (g_kernel,) = grads(f, (x,), upstream, composite=False)
    y_comp, (g_comp,) = grads(f, (x,), upstream, composite=True)
    u = UNIT_ROUNDOFF[x.dtype]
    for got, expected, size in ((y_comp, y_kernel, x), (g_comp, g_kernel, upstream)):
        bound = 4 * u * 2 * float(size.abs().max())
        assert float((got.float() - expected.float()).abs().max()) <= bound, positions_note


def mrope_specs():
    return {f"{layout}-{pairing}": posemb.MropeSpec(
                posemb.default_rope_spec(16, 1e6, pairing), (4, 2, 2), layout)
            for layout in ("chunked", "interleaved") for pairing in ("rotate_half", "interleaved")}


def mrope_axes():
    """[3, 2, 5] (t, h, w) positions past 1e6: t runs on, h and w repeat as an image's do."""
    t = LONG + torch.tensor([[0, 1, 2, 3, 4], [7, 7, 7, 8, 9]])
    return torch.stack((t, t + torch.tensor([0, 0, 1, 1, 0]), t + torch.tensor([0, 1, 0, 1, 2])))


@pytest.mark.parametrize("name", list(mrope_specs()))
@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_mrope_forward_and_gradients(name, dtype):
    spec = mrope_specs()[name]
    x = torch.randn(2, 5, 3, 16).to(dtype)
    # [3, b, seq], [3, 1, seq] and text positions (an offset, on every axis)
    for positions in (mrope_axes(), mrope_axes()[:, :1], LONG + 3):
        f = lambda t: posemb.apply_mrope(t, positions, spec)  # noqa: E731
        assert_rounding_close(f, x, str(positions))


@pytest.mark.parametrize("name", list(mrope_specs()))
def test_mrope_float64_every_direction(name):
    spec = mrope_specs()[name]
    key = _ops.rotation_key("mrope", spec)
    for layout, x in (("bshd", torch.randn(2, 5, 3, 16, dtype=torch.float64)),
                      ("bhsd", torch.randn(2, 3, 5, 16, dtype=torch.float64))):
        for direction in (_ops.FORWARD, _ops.INVERSE, _ops.TRANSPOSE):
            kernel = _ops.rotate(x, mrope_axes(), 0, key, layout, direction, 1)
            with _ops.composite_path():
                composite = _ops.rotate(x, mrope_axes(), 0, key, layout, direction, 1)
            torch.testing.assert_close(composite, kernel, **TIGHT)


def test_mrope_axes_are_the_sections():
    """rotary/mrope.hpp's example, sections (4, 2, 2): chunked [tttthhww], interleaved
    [thwthwtt] (Qwen3-VL's apply_interleaved_mrope)."""
    rope = posemb.default_rope_spec(16, 1e6)
    assert posemb.MropeSpec(rope, (4, 2, 2), "chunked").axes == [0, 0, 0, 0, 1, 1, 2, 2]
    assert posemb.MropeSpec(rope, (4, 2, 2), "interleaved").axes == [0, 1, 2, 0, 1, 2, 0, 0]


def test_tables_follow_the_spec_not_a_reused_id():
    """A spec read from a field (VisionRope.spec, MropeSpec.rope) is a new Python object each
    time: a table cached under a dead one's id must not serve the next (each its own theta)."""
    x = torch.randn(1, 4, 2, 16, dtype=torch.float64, requires_grad=True)
    for theta in [1e4, 3e4, 1e5, 3e5, 1e6] * 4:
        rope = posemb.qwen2_vl_vision_rope(16, theta=theta)
        p = torch.from_numpy(np.asarray(posemb.vision_patch_positions(rope, 1, 2, 2))) + LONG
        f = lambda t: posemb.apply_vision_rope(t, p, rope)  # noqa: E731
        assert_same(f, (x,), torch.ones_like(x), **TIGHT)


def test_rotations_gradcheck_on_the_composite_path():
    x = torch.randn(1, 5, 2, 16, dtype=torch.float64, requires_grad=True)
    vision = VISION["pixtral"]
    grid = torch.from_numpy(np.asarray(posemb.vision_patch_positions(vision, 1, 1, 5))) + LONG
    calls = [lambda t: posemb.apply_mrope(t, mrope_axes()[:, :1], mrope_specs()["chunked-interleaved"]),
             lambda t: posemb.apply_vision_rope(t, grid, vision),
             lambda t: posemb.apply_xpos(t, XPOS_POSITIONS[:1], xpos_specs()["rotate_half"], "key")]
    with _ops.composite_path():
        for f in calls:
            assert torch.autograd.gradcheck(f, (x,))


def test_mrope_text_positions_are_rope_on_the_composite_path():
    """t = h = w turns every pair by p inv_freq[j]: M-RoPE is 1-D RoPE bit for bit."""
    spec = mrope_specs()["interleaved-rotate_half"]
    x = torch.randn(2, 5, 3, 16)
    p = LONG + torch.tensor([[0, 1, 2, 3, 4], [9, 8, 7, 6, 5]])
    with _ops.composite_path():
        mrope = _ops.rotate(x, p, 0, _ops.rotation_key("mrope", spec), "bshd", _ops.FORWARD, 1)
        rope = _ops.rotate(x, p, 0, _ops.rotation_key("rope", spec.rope), "bshd", _ops.FORWARD, 1)
    assert torch.equal(mrope, rope)


VISION = {"qwen2_vl": posemb.qwen2_vl_vision_rope(16), "pixtral": posemb.pixtral_vision_rope(16)}


@pytest.mark.parametrize("name", list(VISION))
@pytest.mark.parametrize("dtype", LOW_PRECISION + [torch.float64])
def test_vision_rope_forward_and_gradients(name, dtype):
    rope = VISION[name]
    grid = torch.from_numpy(np.asarray(posemb.vision_patch_positions(rope, 1, 4, 6)))  # [3, 24]
    for positions in (grid, grid + LONG):
        for x in (torch.randn(24, 2, 16).to(dtype), torch.randn(2, 24, 2, 16).to(dtype)):
            f = lambda t: posemb.apply_vision_rope(t, positions, rope)  # noqa: E731
            if dtype == torch.float64:
                assert_same(f, (x,), torch.randn_like(x), **TIGHT)
            else:
                assert_rounding_close(f, x, f"{x.shape} {positions.max()}")


def xpos_specs():
    """Centred at 1e6 (the decay's exponent stays small at long positions)."""
    return {pairing: posemb.XposSpec(posemb.default_rope_spec(16, 10000.0, pairing),
                                     scale_base=512.0, centre=LONG)
            for pairing in ("rotate_half", "interleaved")}


XPOS_POSITIONS = LONG + torch.tensor([[-40, -3, 0, 5, 90], [200, 1, 2, 3, -200]])


@pytest.mark.parametrize("pairing", ["rotate_half", "interleaved"])
@pytest.mark.parametrize("role", ["query", "key"])
@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_xpos_forward_and_gradients(pairing, role, dtype):
    spec = xpos_specs()[pairing]
    x = torch.randn(2, 5, 3, 16).to(dtype)
    f = lambda t: posemb.apply_xpos(t, XPOS_POSITIONS, spec, role)  # noqa: E731
    assert_rounding_close(f, x)


def papers_xpos_rows(spec, role, first, count):
    """Sun et al. 2022 sec. 3.1 with posemb's angle (docs/schemes.md: remainder(p w_i, 2 pi) in
    double, 2 pi the double nearest it), in Python's math (libm): cos, sin of it times
    zeta_i^(+-(p - c) / scale_base), zeta_i = (2i/d + gamma) / (1 + gamma)."""
    d, sign = spec.rope.rotary_dim, 1 if role == "query" else -1
    cos, sin = np.empty((count, d // 2)), np.empty((count, d // 2))
    for s in range(count):
        p = first + s
        for i, w in enumerate(np.asarray(spec.rope.inv_freq).tolist()):
            zeta = (2.0 * i / d + spec.gamma) / (1.0 + spec.gamma)
            m = zeta ** (sign * (p - spec.centre) / spec.scale_base)
            angle = math.remainder(p * w, 2 * math.pi)
            cos[s, i], sin[s, i] = math.cos(angle) * m, math.sin(angle) * m
    return cos, sin


def test_xpos_rows_are_the_papers():
    """posemb.xpos_cos_sin (the composite path's rows) past 1e6 against the paper's formula; a
    query's and a key's magnitudes multiply to 1 at every position, and the inverse row is the
    forward's over its magnitude squared, sin negated."""
    spec = xpos_specs()["interleaved"]
    first, count = LONG - 300, 601
    rows = {}
    for role in ("query", "key"):
        cos, sin = posemb.xpos_cos_sin(spec, role, first, count)
        expected = papers_xpos_rows(spec, role, first, count)
        np.testing.assert_allclose(cos, expected[0], rtol=0, atol=1e-15)
        np.testing.assert_allclose(sin, expected[1], rtol=0, atol=1e-15)
        m = np.hypot(*expected)
        inv_cos, inv_sin = posemb.xpos_cos_sin(spec, role, first, count, inverse=True)
        np.testing.assert_allclose(inv_cos, cos / m ** 2, rtol=1e-14)
        np.testing.assert_allclose(inv_sin, -sin / m ** 2, rtol=1e-14)
        rows[role] = cos, sin
    (qc, qs), (kc, ks) = rows["query"], rows["key"]
    np.testing.assert_allclose(qc * kc + qs * ks, 1.0, rtol=1e-14)
    with pytest.raises(posemb.Error, match="dtype = 'int8': expected 'float32'"):
        posemb.xpos_cos_sin(spec, "query", first, count, "int8")


@pytest.mark.parametrize("role", ["query", "key"])
def test_xpos_float64_every_direction_and_its_range(role):
    spec = xpos_specs()["rotate_half"]
    key = _ops.rotation_key("xpos", spec, role)
    x = torch.randn(2, 5, 3, 16, dtype=torch.float64)
    for direction in (_ops.FORWARD, _ops.INVERSE, _ops.TRANSPOSE):
        kernel = _ops.rotate(x, XPOS_POSITIONS, 0, key, "bshd", direction, 1)
        with _ops.composite_path():
            composite = _ops.rotate(x, XPOS_POSITIONS, 0, key, "bshd", direction, 1)
            back = _ops.rotate(composite, XPOS_POSITIONS, 0, key, "bshd", _ops.INVERSE, 1)
        torch.testing.assert_close(composite, kernel, **TIGHT)
        if direction == _ops.FORWARD:  # the inverse undoes rotation and decay
            torch.testing.assert_close(back, x, **TIGHT)
    far = torch.randn(1, 2, 1, 16, requires_grad=True)  # zeta_0^(1e5 / 512) underflows float32
    with pytest.raises(posemb.Error, match="xPos scale"):
        posemb.apply_xpos(far, LONG + 100_000, spec, role)
    with _ops.composite_path(), pytest.raises(posemb.Error, match="xPos scale"):
        posemb.apply_xpos(far, LONG + 100_000, spec, role)


def hf_ropes():
    return {"rotate_half": posemb.default_rope_spec(16, 10000.0, angles="hf-float32"),
            "interleaved": posemb.default_rope_spec(16, 10000.0, "interleaved",
                                                    angles="hf-float32"),
            "partial": posemb.default_rope_spec(16, 10000.0, rotary_dim=8, angles="hf-float32")}


@pytest.mark.parametrize("name", list(hf_ropes()))
@pytest.mark.parametrize("dtype", LOW_PRECISION)
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_hf_float32_bit_for_bit(name, dtype, layout):
    """transformers' float32 cos/sin cast to x's dtype, then x * cos + rotate_half(x) * sin in
    x's dtype: the kernel rounds as PyTorch does, so forward and gradient are the same bits."""
    rope = hf_ropes()[name]
    x = torch.randn(2, 5, 3, 16).to(dtype)
    if layout == "bhsd":
        x = x.transpose(1, 2).contiguous()
    for positions in (torch.tensor([[0, 1, 2, 3, 4], [LONG, LONG + 1, 7, 131071, 2 * LONG]]), LONG):
        f = lambda t: posemb.apply_rope(t, positions, rope, layout)  # noqa: E731
        upstream = torch.randn_like(x)
        y_kernel, (g_kernel,) = grads(f, (x,), upstream, composite=False)
        y_comp, (g_comp,) = grads(f, (x,), upstream, composite=True)
        assert torch.equal(y_comp, y_kernel)
        assert torch.equal(g_comp, g_kernel)


def test_hf_float32_refusals_match_the_kernel():
    rope = hf_ropes()["rotate_half"]
    with _ops.composite_path():
        with pytest.raises(posemb.Error, match="expected False for an HfFloat32Rope"):
            posemb.apply_rope(torch.randn(1, 3, 2, 16, requires_grad=True), 0, rope, inverse=True)
        with pytest.raises(posemb.Error, match="HfFloat32Rope"):
            posemb.apply_rope(torch.randn(1, 3, 2, 16, dtype=torch.float64, requires_grad=True),
                              0, rope)
