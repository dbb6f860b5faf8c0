"""numpy arrays and torch tensors in place without a copy, out of place of the caller's kind, every
storage type, positions in every form, and the rotations' mathematical properties through Python.
"""
import numpy as np
import pytest
import torch

import posemb

SPEC = posemb.default_rope_spec(64, 10000.0)
RNG = np.random.default_rng(3)


def x32(shape=(2, 5, 3, 64)):
    return RNG.standard_normal(shape).astype(np.float32)


NUMPY_DTYPES = [np.float32, np.float64, np.float16]
TORCH_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_in_place_zero_copy(dtype):
    x = x32().astype(dtype)
    before = x.copy()
    pointer = x.ctypes.data
    returned = posemb.apply_rope_(x, 7, SPEC)
    assert returned is x and x.ctypes.data == pointer and x.dtype == dtype
    assert not np.array_equal(x, before)
    # The same rotation in float32, rounded to the storage type once (half: within its rounding).
    reference = posemb.apply_rope(before.astype(np.float64), 7, SPEC)
    tolerance = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 4e-3}[dtype]
    assert np.max(np.abs(x.astype(np.float64) - reference)) <= tolerance * 4


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_in_place_zero_copy(dtype):
    t = torch.from_numpy(x32()).to(dtype)
    before = t.clone()
    pointer = t.data_ptr()
    returned = posemb.apply_rope_(t, torch.arange(5), SPEC)
    assert returned is t and t.data_ptr() == pointer and t.dtype == dtype
    assert not torch.equal(t, before)
    reference = posemb.apply_rope(before.double(), 0, SPEC)
    tolerance = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 4e-3, torch.bfloat16: 3e-2}[dtype]
    assert (t.double() - reference).abs().max().item() <= tolerance * 4


def test_torch_view_shares_numpy_memory():
    # A tensor made by torch.from_numpy is the array's memory: rotating it changes the array.
    x = x32()
    before = x.copy()
    posemb.apply_rope_(torch.from_numpy(x), 0, SPEC)
    assert np.array_equal(x, posemb.apply_rope(before, 0, SPEC))


@pytest.mark.parametrize("make", [lambda a: a, torch.from_numpy])
def test_out_of_place_kind_and_input_unchanged(make):
    x = make(x32())
    before = x.copy() if isinstance(x, np.ndarray) else x.clone()
    y = posemb.apply_rope(x, 3, SPEC)
    assert type(y) is type(x) and y.shape == x.shape and y.dtype == x.dtype
    assert (x == before).all()
    posemb.apply_rope_(x, 3, SPEC)
    assert (x == y).all()


def test_out_of_place_non_contiguous_input():
    x = x32((2, 10, 3, 64))[:, ::2]
    assert not x.flags.c_contiguous
    assert np.array_equal(posemb.apply_rope(x, 0, SPEC), posemb.apply_rope(np.ascontiguousarray(x), 0, SPEC))


def test_bf16_rounds_once_from_float32_rotation():
    t = torch.randn(1, 4, 2, 64, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    float32 = posemb.apply_rope(t.float(), 11, SPEC)
    assert torch.equal(posemb.apply_rope(t, 11, SPEC), float32.to(torch.bfloat16))


def test_positions_forms_agree():
    x = x32()
    by_offset = posemb.apply_rope(x, 4, SPEC)
    for positions in (np.arange(4, 9), np.arange(4, 9).astype(np.float64), np.tile(np.arange(4, 9), (2, 1)),
                      torch.arange(4, 9), torch.arange(4, 9, dtype=torch.float64)[None], list(range(4, 9)),
                      np.arange(4, 14)[::2] - np.arange(0, 5)):
        assert np.array_equal(posemb.apply_rope(x, positions, SPEC), by_offset)


def test_fractional_positions_and_per_row():
    x = x32((2, 3, 1, 64))
    positions = np.array([[0.5, 1.5, 2.5], [10.0, 11.0, 12.0]])
    y = posemb.apply_rope(x, positions, SPEC)
    assert np.array_equal(y[1:], posemb.apply_rope(x[1:], 10, SPEC))
    assert not np.array_equal(y[:1], posemb.apply_rope(x[:1], 0, SPEC))


def test_inverse_and_layouts_and_threads():
    spec = posemb.yarn_rope_spec(64, 10000.0, 4.0, 4096)
    x = x32((2, 300, 4, 64))
    y = posemb.apply_rope(x, 100, spec)
    np.testing.assert_allclose(posemb.apply_rope(y, 100, spec, inverse=True), x, atol=1e-5)
    bhsd = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    assert np.array_equal(posemb.apply_rope(bhsd, 100, spec, layout="bhsd").transpose(0, 2, 1, 3), y)
    assert np.array_equal(posemb.apply_rope(x, 100, spec, threads=2), y)


def test_table_equals_spec():
    spec = posemb.llama3_rope_spec(64, 500000.0)
    table = posemb.RopeTable(spec, 0, 512)
    x = x32((1, 40, 2, 64))
    assert np.array_equal(posemb.apply_rope(x, 400, table), posemb.apply_rope(x, 400, spec))
    table64 = posemb.RopeTable(spec, 0, 512, dtype="float64")
    x64 = x.astype(np.float64)
    assert np.array_equal(posemb.apply_rope(x64, 400, table64), posemb.apply_rope(x64, 400, spec))
    assert table.cos.shape == (512, 32) and table.cos.dtype == np.float32


def test_relative_property_long_positions():
    # <R(m) q, R(n) k> depends on m - n only, also past 1e5 (angles in double).
    q, k = x32((1, 1, 1, 64)), x32((1, 1, 1, 64))
    spec = posemb.default_rope_spec(64, 500000.0)

    def score(m, n):
        return float(np.sum(posemb.apply_rope(q, m, spec).astype(np.float64) * posemb.apply_rope(k, n, spec)))

    near = score(12, 5)
    for m in (1007, 100007, 1000007):
        assert abs(score(m, m - 7) - near) < 2e-5 * max(1.0, abs(near))


def test_scaled_spec_properties():
    default = posemb.default_rope_spec(64, 10000.0)
    assert np.array_equal(posemb.linear_rope_spec(64, 10000.0, 4.0).inv_freq, default.inv_freq / 4.0)
    assert posemb.yarn_rope_spec(64, 10000.0, 1.0, 4096) == default
    assert posemb.dynamic_ntk_rope_spec(64, 10000.0, 2.0, 4096, seq_len=4096) == default
    grown = posemb.dynamic_ntk_rope_spec(64, 10000.0, 2.0, 4096, seq_len=8192)
    assert np.all(grown.inv_freq[1:] < default.inv_freq[1:])
    yarn = posemb.yarn_rope_spec(64, 10000.0, 4.0, 4096)
    assert np.all(yarn.inv_freq <= default.inv_freq) and np.all(yarn.inv_freq >= default.inv_freq / 4.0)
    assert yarn.attention_scale == pytest.approx(0.1 * np.log(4.0) + 1.0, rel=1e-15)


def test_mrope_text_equals_rope_and_vision():
    spec = posemb.MropeSpec(posemb.default_rope_spec(32, 1e6), (4, 6, 6), "chunked")
    x = x32((1, 12, 2, 32))
    positions = np.arange(2000, 2012)
    three = np.stack([positions] * 3)
    assert np.array_equal(posemb.apply_mrope(x, three, spec), posemb.apply_rope(x, positions, spec.rope))
    assert np.array_equal(posemb.apply_mrope(x, 2000, spec), posemb.apply_rope(x, 2000, spec.rope))
    rope = posemb.qwen2_vl_vision_rope(16)
    patches = posemb.vision_patch_positions(rope, 1, 4, 6)
    q = x32((24, 3, 16))
    y = posemb.apply_vision_rope(q, patches, rope)
    assert y.shape == q.shape
    assert np.array_equal(y, posemb.apply_vision_rope(q[None], patches, rope)[0])
    posemb.apply_vision_rope_(q, patches, rope)
    assert np.array_equal(q, y)


def test_xpos_relative_and_fope_inverse():
    spec = posemb.XposSpec(posemb.default_rope_spec(64), scale_base=512.0)
    q, k = x32((1, 1, 1, 64)), x32((1, 1, 1, 64))

    def score(m, n):
        return float(np.sum(posemb.apply_xpos(q, m, spec, "query").astype(np.float64) *
                            posemb.apply_xpos(k, n, spec, "key")))

    assert abs(score(300, 290) - score(20, 10)) < 1e-4 * abs(score(20, 10))
    fope = posemb.make_fope(posemb.FopeConfig(head_dim=64, n_heads=4, train_length=512))
    x = x32((1, 8, 4, 64))
    y = posemb.apply_fope(x, 3, fope)
    np.testing.assert_allclose(posemb.apply_fope(y, 3, fope, inverse=True), x, atol=1e-4)


def test_bias_and_tables():
    assert np.array_equal(posemb.alibi_slopes(4), [0.25, 0.0625, 0.015625, 0.00390625])
    bias = posemb.alibi_bias(posemb.alibi_slopes(2), np.arange(3), np.arange(3))
    assert bias[0, 2, 0] == -0.125 and bias[1, 2, 1] == -2.0 ** -8 and np.isneginf(bias[0, 0, 1])
    row = posemb.alibi_bias_row(posemb.alibi_slopes(2), 2, np.arange(3))
    assert np.array_equal(row, bias[:, 2])
    assert posemb.t5_relative_position_bucket(-64, 32, 128, True) == 14
    assert posemb.t5_relative_position_bucket(-64, 32, 128, False) == 26
    assert np.array_equal(posemb.packed_positions([0, 3, 5, 9]), [[0, 1, 2, 0, 1, 0, 1, 2, 3]])
    assert np.array_equal(posemb.context_parallel_positions(8, 0, 2), [[0, 1, 6, 7]])
    table = posemb.sinusoidal_table(16, 8)
    assert np.array_equal(table[3], posemb.sinusoidal_embedding(3, 8).astype(np.float32))
    h = np.zeros((1, 4, 8), np.float32)
    posemb.add_position_embeddings_(h, 2, table)
    assert np.array_equal(h[0], table[2:6])
    learned = posemb.learned_position_table(16, 8, seed=1)
    assert learned.shape == (16, 8) and 0.005 < learned.std() < 0.05


def test_permute_round_trip():
    w = RNG.standard_normal((4 * 16, 5)).astype(np.float32)
    hf = posemb.permute_pairing(w, 4, "interleaved", "rotate_half")
    assert np.array_equal(hf[:8], w[:16:2])  # head 0: even rows first
    assert np.array_equal(posemb.permute_pairing(hf, 4, "rotate_half", "interleaved"), w)
    t = torch.from_numpy(w.copy())
    posemb.permute_pairing_(t, 4, "interleaved", "rotate_half")
    assert np.array_equal(t.numpy(), hf)


def test_attention_scores_against_numpy():
    q, k = x32((1, 3, 4, 64)), x32((1, 6, 2, 64))
    p = posemb.attention_scores(q, 3, k, 0, rope=SPEC, causal=True, softmax=True)
    qr = posemb.apply_rope(q.astype(np.float64), 3, SPEC)
    kr = posemb.apply_rope(k.astype(np.float64), 0, SPEC)
    logits = np.einsum("bqhd,bkhd->bhqk", qr, np.repeat(kr, 2, axis=2)) / 8.0
    logits[..., np.arange(6)[None, :] > (3 + np.arange(3))[:, None]] = -np.inf
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    assert p.shape == (1, 4, 3, 6) and p.dtype == np.float32
    np.testing.assert_allclose(p, expected, atol=1e-5)
    scores = posemb.attention_scores(torch.from_numpy(q), 3, torch.from_numpy(k), 0, rope=SPEC)
    assert isinstance(scores, torch.Tensor) and scores.dtype == torch.float32
    window = posemb.LayerAttention(sliding_window=2)
    masked = posemb.attention_scores(q, 3, k, 0, rope=SPEC, attention=window, causal=True)
    assert np.isneginf(masked[0, 0, 0, 0]) and np.isfinite(masked[0, 0, 0, 3])
