"""Property tests (hypothesis) of the rotary part of the Python API: the spec builders and every
rotation, over random shapes, strides, dtypes, layouts, positions and options. Each call either
returns what the float64 reference (reference.py) gives or raises posemb.Error; in-place calls
write the caller's buffer."""
import math

import numpy as np
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

import posemb  # noqa: E402
import reference as ref  # noqa: E402

TOLERANCE = {np.float32: 4e-6, np.float64: 1e-12, np.float16: 2e-3, "bfloat16": 1.6e-2}
INT64_MAX = 2**63 - 1


def outcome(call, *args, **kwargs):
    """call's result, or None when it raises posemb.Error (any other exception fails the test)."""
    try:
        return call(*args, **kwargs)
    except posemb.Error as error:
        assert str(error).startswith("posemb: ")
        return None


pairings = st.sampled_from(["rotate_half", "interleaved"])
bases = st.one_of(st.floats(2.0, 1e7), st.sampled_from([10000.0, 500000.0, 1e6]))


@st.composite
def dims(draw):
    head_dim = 2 * draw(st.integers(1, 40))
    rotary_dim = 2 * draw(st.integers(1, head_dim // 2))
    return head_dim, rotary_dim


# ---- spec builders against HF's formulas

@given(dims(), bases, pairings)
def test_default_spec(hd, base, pairing):
    head_dim, rotary_dim = hd
    spec = posemb.default_rope_spec(head_dim, base, pairing, rotary_dim)
    np.testing.assert_allclose(spec.inv_freq, ref.default_inv_freq(rotary_dim, base), rtol=1e-13)
    assert (spec.head_dim, spec.rotary_dim, spec.pairing, spec.attention_scale) == (head_dim, rotary_dim, pairing, 1.0)


@given(dims(), bases, st.floats(0.1, 64.0))
def test_linear_and_ntk_specs(hd, base, factor):
    head_dim, d = hd
    linear = posemb.linear_rope_spec(head_dim, base, factor, rotary_dim=d)
    np.testing.assert_allclose(linear.inv_freq, ref.default_inv_freq(d, base) / factor, rtol=1e-13)
    ntk = outcome(posemb.ntk_rope_spec, head_dim, base, factor, rotary_dim=d)
    if d < 4:
        assert ntk is None
    else:
        np.testing.assert_allclose(ntk.inv_freq, ref.ntk_inv_freq(d, base, factor), rtol=1e-12)


@given(dims(), bases, st.floats(1.0, 64.0), st.integers(1, 1 << 20), st.integers(0, 1 << 24))
def test_dynamic_ntk_spec(hd, base, factor, max_pos, seq_len):
    head_dim, d = hd
    spec = outcome(posemb.dynamic_ntk_rope_spec, head_dim, base, factor, max_pos, seq_len, rotary_dim=d)
    if d < 4:
        assert spec is None
        return
    np.testing.assert_allclose(spec.inv_freq, ref.dynamic_ntk_inv_freq(d, base, factor, max_pos, seq_len), rtol=1e-12)


@given(dims(), bases, st.floats(1.0, 64.0), st.integers(16, 1 << 20), st.floats(1.0, 64.0), st.floats(0.5, 4.0),
       st.booleans(), st.one_of(st.none(), st.floats(0.5, 2.0)),
       st.one_of(st.none(), st.tuples(st.floats(0.1, 2.0), st.floats(0.1, 2.0))))
def test_yarn_spec(hd, base, factor, original, beta_fast, beta_slow, truncate, attention_factor, mscales):
    head_dim, d = hd
    mscale, mscale_all_dim = mscales or (None, None)
    spec = outcome(posemb.yarn_rope_spec, head_dim, base, factor, original, beta_fast, beta_slow, truncate,
                   attention_factor, mscale, mscale_all_dim, rotary_dim=d)
    if beta_fast < beta_slow:
        assert spec is None
        return
    inv, scale = ref.yarn(d, base, factor, original, beta_fast, beta_slow, truncate, attention_factor,
                          mscale, mscale_all_dim)
    np.testing.assert_allclose(spec.inv_freq, inv, rtol=1e-12)
    assert spec.attention_scale == pytest.approx(scale, rel=1e-13)


@given(dims(), bases, st.floats(1.0, 64.0), st.floats(0.5, 4.0), st.floats(0.5, 8.0), st.integers(1, 1 << 17))
def test_llama3_spec(hd, base, factor, low, high, original):
    head_dim, d = hd
    spec = outcome(posemb.llama3_rope_spec, head_dim, base, factor, low, high, original, rotary_dim=d)
    if low > high:  # low == high runs (HF warns and runs it: Llama-4-Scout has both 1)
        assert spec is None or (factor == 1.0 and spec == posemb.default_rope_spec(head_dim, base, rotary_dim=d))
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(spec.inv_freq, ref.llama3_inv_freq(d, base, factor, low, high, original), rtol=1e-12)


@given(dims(), bases, st.data(), st.integers(2, 1 << 17), st.floats(1.0, 64.0),
       st.one_of(st.none(), st.integers(0, 1 << 18)))
def test_longrope_spec(hd, base, data, original, factor, seq_len):
    head_dim, d = hd
    factors = st.lists(st.floats(0.5, 64.0), min_size=d // 2, max_size=d // 2)
    short, long = data.draw(factors), data.draw(factors)
    spec = posemb.longrope_rope_spec(head_dim, base, short, long, original, factor, seq_len=seq_len, rotary_dim=d)
    inv, scale = ref.longrope(d, base, short, long, original, factor, seq_len=seq_len)
    np.testing.assert_allclose(spec.inv_freq, inv, rtol=1e-12)
    assert spec.attention_scale == pytest.approx(scale, rel=1e-13)


@given(st.integers(1, 64).map(lambda n: 2 * n), bases, st.floats(0.0, 1.0), st.floats(0.1, 8.0))
def test_proportional_spec(head_dim, base, p, factor):
    spec = outcome(posemb.proportional_rope_spec, head_dim, base, p, factor)
    if int(p * head_dim // 2) < 1:
        assert spec is None
        return
    np.testing.assert_allclose(spec.inv_freq, ref.proportional_inv_freq(head_dim, base, p, factor), rtol=1e-13)


@given(st.integers(-8, 200), st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(-1.0)),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True)))
def test_builders_refuse_bad_numbers(head_dim, base, factor):
    # Any head_dim, base and factor: a spec whose frequencies are finite and positive, or posemb.Error.
    for build in (lambda: posemb.default_rope_spec(head_dim, base),
                  lambda: posemb.linear_rope_spec(head_dim, base, factor),
                  lambda: posemb.ntk_rope_spec(head_dim, base, factor),
                  lambda: posemb.yarn_rope_spec(head_dim, base, factor, 4096),
                  lambda: posemb.llama3_rope_spec(head_dim, base, factor)):
        spec = outcome(build)
        if spec is not None:
            assert head_dim >= 2 and head_dim % 2 == 0
            # finite; an extreme base may underflow the lowest frequencies to 0 (no rotation)
            assert np.all(np.isfinite(spec.inv_freq)) and np.all(spec.inv_freq >= 0)
            assert math.isfinite(spec.attention_scale) and spec.attention_scale > 0


# ---- rotations against the float64 reference

@st.composite
def rope_cases(draw):
    head_dim, rotary_dim = draw(dims())
    pairing = draw(pairings)
    spec = posemb.default_rope_spec(head_dim, draw(bases), pairing, rotary_dim)
    if draw(st.booleans()):
        spec = posemb.yarn_rope_spec(head_dim, 10000.0, draw(st.floats(1.0, 16.0)), 4096, pairing=pairing,
                                     rotary_dim=rotary_dim)
    batch, seq, heads = draw(st.integers(0, 3)), draw(st.integers(0, 9)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16, "bfloat16"]))
    form = draw(st.sampled_from(["offset", "vector", "matrix", "fractional", "torch"]))
    start = draw(st.integers(-(10**7), 10**7))
    if form == "offset":
        positions, table = start, np.arange(start, start + seq, dtype=np.float64)[None]
    else:
        rows = batch if form == "matrix" else 1
        values = draw(st.lists(st.integers(-(10**7), 10**7), min_size=rows * seq, max_size=rows * seq))
        table = np.array(values, np.float64).reshape(rows, seq)
        if form == "fractional":
            table = table + 0.25
        positions = table.astype(np.float64 if form == "fractional" else np.int64)
        positions = positions[0] if form in ("vector", "torch") else positions
        positions = torch.from_numpy(positions) if form == "torch" else positions
    layout = draw(st.sampled_from(["bshd", "bhsd"]))
    return spec, (batch, seq, heads, head_dim), dtype, positions, table, layout, draw(st.booleans())


def make_x(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    if dtype == "bfloat16":
        return torch.from_numpy(x).to(torch.bfloat16)
    return x.astype(dtype)


def as_float64(x):
    return x.double().numpy() if isinstance(x, torch.Tensor) else x.astype(np.float64)


def pointer(x):
    return x.data_ptr() if isinstance(x, torch.Tensor) else x.ctypes.data


@given(rope_cases(), st.booleans(), st.booleans())
def test_apply_rope_matches_reference(case, in_place, use_table):
    spec, bshd, dtype, positions, table, layout, inverse = case
    shape = bshd if layout == "bshd" else (bshd[0], bshd[2], bshd[1], bshd[3])
    x = make_x(shape, dtype)
    x0 = as_float64(x)
    source = spec
    if use_table:
        # A table over the positions drawn (to +-10^7) and a few beyond, not the whole range:
        # [count, head_dim / 2] cos and sin, so 2 * 10^7 rows would be gigabytes per example.
        first = int(np.floor(table.min(initial=0))) - 3
        count = int(np.floor(table.max(initial=0))) + 4 - first
        source = outcome(posemb.RopeTable, spec, first, count, "float64" if dtype == np.float64 else "float32")
    call = posemb.apply_rope_ if in_place else posemb.apply_rope
    before = pointer(x)
    y = outcome(call, x, positions, source, layout=layout, inverse=inverse)
    rows_ok = table.shape[0] in (1, bshd[0])
    fractional_table = use_table and table.size and np.any(table != np.floor(table))
    if y is None:
        # Refused only for a positions row count that is not 1 or batch, or fractional positions
        # of a table (it holds whole positions).
        assert not rows_ok or fractional_table, (shape, table.shape)
        return
    if in_place:
        assert y is x and pointer(x) == before
    assert y.shape == x.shape and type(y) is type(x)
    expected = ref.rope(x0, table, spec.inv_freq, spec.attention_scale, spec.pairing, layout=layout, inverse=inverse)
    scale = max(spec.attention_scale, 1.0 / spec.attention_scale)
    np.testing.assert_allclose(as_float64(y), expected, atol=TOLERANCE[dtype] * 8 * scale * max(1.0, np.abs(x0).max(initial=0)))


@given(st.integers(1, 3), st.integers(1, 6), st.integers(2, 4), st.data())
def test_strided_out_of_place_and_in_place(batch, seq, step, data):
    spec = posemb.default_rope_spec(16, 10000.0)
    big = make_x((batch, seq * step, 2, 16), np.float32)
    view = big[:, ::step]
    y = posemb.apply_rope(view, 3, spec)
    np.testing.assert_allclose(y, ref.rope(view.astype(np.float64), np.arange(3, 3 + seq, dtype=np.float64)[None],
                                           spec.inv_freq, 1.0, "rotate_half"), atol=3e-5)
    if seq > 1:
        with pytest.raises(posemb.Error, match="non-contiguous"):
            posemb.apply_rope_(view, 3, spec)


@given(st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
                 st.sampled_from([INT64_MAX, INT64_MAX - 2, -INT64_MAX - 1, 2**63, -(2**63) - 1])),
       st.booleans())
def test_wild_positions_error_or_finite(position, as_array):
    # Positions past int64, NaN, inf, or near the int64 ends: posemb.Error or a finite rotation.
    spec = posemb.default_rope_spec(8, 10000.0)
    x = make_x((1, 3, 1, 8), np.float32)
    if as_array:
        dtype = np.float64 if isinstance(position, float) else np.int64
        try:
            positions = np.full(3, position, dtype)
        except OverflowError:
            return
    else:
        positions = position
    y = outcome(posemb.apply_rope, x, positions, spec)
    if y is not None:
        assert np.all(np.isfinite(y)), position
        if isinstance(position, int) and not as_array:  # offset + 2 must not wrap
            assert -(2**63) <= position <= INT64_MAX - 2, position


@given(st.integers(0, 2), st.integers(0, 6), st.sampled_from([(4, 2, 2), (2, 3, 3), (8, 0, 0), (1, 1, 6)]),
       st.sampled_from(["chunked", "interleaved"]), pairings, st.data())
def test_apply_mrope_matches_reference(batch, seq, sections, layout, pairing, data):
    spec = outcome(posemb.MropeSpec, posemb.default_rope_spec(16, 1e6, pairing), sections, layout)
    if spec is None:  # interleaved sections must fit 3 s1, 3 s2 below the pairs
        assert layout == "interleaved"
        return
    x = make_x((batch, seq, 2, 16), np.float64)
    values = data.draw(st.lists(st.integers(-(10**6), 10**6), min_size=3 * seq, max_size=3 * seq))
    positions = np.array(values, np.int64).reshape(3, seq)
    y = posemb.apply_mrope(x, positions, spec)
    expected = ref.mrope(x, positions[:, None, :].astype(np.float64), spec.rope.inv_freq, 1.0, pairing, sections, layout)
    np.testing.assert_allclose(y, expected, atol=1e-9)
    before = pointer(x)
    assert posemb.apply_mrope_(x, positions, spec) is x and pointer(x) == before
    np.testing.assert_allclose(x, expected, atol=1e-9)


@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.sampled_from(["qwen2_vl", "pixtral"]))
def test_vision_rope_is_mrope_of_patch_positions(t, h, w, tower):
    rope = posemb.qwen2_vl_vision_rope(16, 1) if tower == "qwen2_vl" else posemb.pixtral_vision_rope(16)
    positions = outcome(posemb.vision_patch_positions, rope, t, h, w)
    if positions is None:
        assert tower == "pixtral" and t != 1  # one image per grid
        return
    assert positions.shape == (3, t * h * w) and positions.dtype == np.int64
    x = make_x((t * h * w, 2, 16), np.float64)
    y = posemb.apply_vision_rope(x, positions, rope)
    spec = rope.spec
    expected = ref.mrope(x[None], positions[:, None, :].astype(np.float64), spec.rope.inv_freq,
                         spec.rope.attention_scale, spec.rope.pairing, spec.sections, spec.layout)[0]
    np.testing.assert_allclose(y, expected, atol=1e-9)


@given(st.integers(1, 16).map(lambda n: 2 * n), st.floats(0.0, 2.0), st.floats(16.0, 4096.0),
       st.integers(-1000, 1000), st.integers(-2000, 2000), st.sampled_from(["query", "key"]))
def test_xpos_matches_reference(head_dim, gamma, scale_base, centre, start, role):
    rope = posemb.default_rope_spec(head_dim, 10000.0)
    spec = outcome(posemb.XposSpec, rope, gamma, scale_base, centre)
    if spec is None:
        return
    x = make_x((1, 3, 2, head_dim), np.float64)
    y = outcome(posemb.apply_xpos, x, start, spec, role)
    if y is None:  # a decay outside float64's normal range: refused, naming centre
        return
    p = np.arange(start, start + 3, dtype=np.float64)
    zeta = (np.arange(0, head_dim, 2) / head_dim + gamma) / (1 + gamma)
    power = ((p - centre) / scale_base)[:, None] * (1 if role == "query" else -1)
    magnitude = zeta[None, :] ** power  # [seq, pairs]
    rotated = ref.rope(x, p[None], rope.inv_freq, 1.0, "rotate_half")
    first, second = ref.pair_indices(head_dim, "rotate_half")
    expected = rotated.copy()
    expected[..., first] *= magnitude[None, :, None, :]
    expected[..., second] *= magnitude[None, :, None, :]
    np.testing.assert_allclose(y, expected, rtol=1e-9, atol=1e-9)


@given(st.integers(1, 8).map(lambda n: 8 * n), st.integers(1, 4), st.integers(-(10**6), 10**6))
def test_fope_inverse_and_in_place(head_dim, heads, start):
    fope = posemb.make_fope(posemb.FopeConfig(head_dim=head_dim, n_heads=heads, train_length=512))
    x = make_x((1, 3, heads, head_dim), np.float64)
    y = posemb.apply_fope(x, start, fope)
    assert y.shape == x.shape
    np.testing.assert_allclose(posemb.apply_fope(y, start, fope, inverse=True), x, atol=1e-8)
    before = pointer(x)
    assert posemb.apply_fope_(x, start, fope) is x and pointer(x) == before
    np.testing.assert_array_equal(x, y)


@given(dims(), pairings, st.integers(-(10**7), 10**7))
def test_rope_cos_sin_and_hf_float32(hd, pairing, position):
    head_dim, d = hd
    spec = posemb.default_rope_spec(head_dim, 10000.0, pairing, d)
    cos, sin = posemb.rope_cos_sin(spec, position)
    np.testing.assert_allclose(cos, np.cos(position * spec.inv_freq), atol=1e-9)
    np.testing.assert_allclose(sin, np.sin(position * spec.inv_freq), atol=1e-9)
    hf = posemb.default_rope_spec(head_dim, 10000.0, pairing, d, angles="hf-float32")
    assert hf.inv_freq.dtype == np.float32 and hf.rotary_dim == d
    # HF forms base ** (2i / d) in float32: the exponent's rounding, times ln(base), moves it ~1e-7.
    np.testing.assert_allclose(hf.inv_freq, spec.inv_freq, rtol=2e-6)


# ---- regressions of what the property tests found

def test_regression_empty_arrays_rotate_in_place():
    # numpy gives an empty array strides of 0: it was refused as non-contiguous.
    x = np.zeros((0, 0, 1, 2), np.float32)
    assert posemb.apply_rope_(x, 0, posemb.default_rope_spec(2)) is x


def test_regression_offset_near_int64_max():
    # offset + s wrapped past int64 (undefined behaviour) instead of raising.
    with pytest.raises(posemb.Error, match=r"positions offset = 9223372036854775806: expected offset \+ seq - 1"):
        posemb.apply_rope(np.zeros((1, 3, 1, 8), np.float32), INT64_MAX - 1, posemb.default_rope_spec(8))


def test_regression_huge_fractional_positions():
    # 8e36 rotated to inf and 1e24 values: now refused like whole positions past int64.
    with pytest.raises(posemb.Error, match=r"positions\[0\] = 8\.1\d*e\+36: expected \|position\| < 2\^63"):
        posemb.apply_rope(np.ones((1, 3, 1, 8), np.float32), np.full(3, 8.1e36), posemb.default_rope_spec(8))


def test_regression_default_spec_validates_frequencies():
    # base 5e-324 gave inv_freq inf (default_rope_spec skipped RopeSpec::validate).
    with pytest.raises(posemb.Error, match=r"inv_freq\[\d+\] = inf"):
        posemb.default_rope_spec(44, 5e-324)
