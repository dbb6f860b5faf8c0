"""Property tests (hypothesis) of the additive schemes, the position helpers and the score helper
of the Python API, against the float64 references of reference.py (or posemb.Error)."""
import numpy as np
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

import posemb  # noqa: E402
import reference as ref  # noqa: E402
from test_properties_rotary import outcome, pointer  # noqa: E402

positions_1d = st.lists(st.integers(-(10**7), 10**7), min_size=0, max_size=12).map(lambda v: np.array(v, np.int64))


@given(st.integers(-3, 80), st.floats(0.5, 16.0))
def test_alibi_slopes(n, max_bias):
    slopes = outcome(posemb.alibi_slopes, n, max_bias)
    if n < 1:
        assert slopes is None
        return
    np.testing.assert_allclose(slopes, ref.alibi_slopes(n, max_bias), rtol=1e-12)
    begin = n // 3
    np.testing.assert_array_equal(posemb.alibi_slopes(n, max_bias, begin, n), slopes[begin:])


@given(st.integers(1, 6), positions_1d, positions_1d, st.sampled_from(["causal", "symmetric"]),
       st.sampled_from(["float32", "float64"]))
def test_alibi_bias_and_row(n, q, k, form, dtype):
    slopes = posemb.alibi_slopes(n)
    bias = posemb.alibi_bias(slopes, q, k, form, dtype)
    distance = q[:, None].astype(np.float64) - k[None, :]
    expected = -slopes[:, None, None] * (np.abs(distance) if form == "symmetric" else distance)
    if form == "causal":
        expected = np.where(distance[None] < 0, -np.inf, expected)
    assert bias.shape == (n, len(q), len(k)) and bias.dtype == np.dtype(dtype)
    np.testing.assert_allclose(bias, expected.astype(dtype), rtol=1e-6 if dtype == "float32" else 1e-13)
    if len(q):
        np.testing.assert_array_equal(posemb.alibi_bias_row(slopes, int(q[0]), k, form, dtype), bias[:, 0])


@given(st.integers(-(2**40), 2**40), st.integers(-2, 64), st.integers(-2, 1000), st.booleans())
def test_t5_bucket(rel, num_buckets, max_distance, bidirectional):
    bucket = outcome(posemb.t5_relative_position_bucket, rel, num_buckets, max_distance, bidirectional)
    valid = num_buckets >= (4 if bidirectional else 2) and max_distance > (num_buckets // (2 if bidirectional else 1)) // 2
    if bucket is None:
        assert not valid, (num_buckets, max_distance)
        return
    assert 0 <= bucket < num_buckets
    if valid:
        assert bucket == ref.t5_bucket([rel], num_buckets, max_distance, bidirectional)[0]


@given(st.sampled_from([(32, 128, True), (32, 128, False), (16, 64, True), (8, 20, False)]), positions_1d,
       positions_1d, st.integers(1, 4))
def test_t5_matrix_and_bias(config, q, k, heads):
    buckets = posemb.T5Buckets(*config)
    ids = posemb.t5_bucket_matrix(buckets, q, k)
    expected = ref.t5_bucket(k[None, :] - q[:, None], *config).reshape(len(q), len(k))
    np.testing.assert_array_equal(ids, expected)
    weights = np.random.default_rng(0).standard_normal((config[0], heads)).astype(np.float32)
    table = posemb.T5BiasTable(buckets, weights)
    bias = posemb.t5_bias(table, q, k)
    np.testing.assert_array_equal(bias, np.moveaxis(weights[expected], -1, 0))
    if len(q):
        np.testing.assert_array_equal(posemb.t5_bias_row(table, int(q[0]), k), bias[:, 0])


@given(st.integers(0, 40), st.integers(-2, 40), st.floats(2.0, 1e5), st.sampled_from(["interleaved", "concat"]))
def test_sinusoidal(max_len, d, base, layout):
    table = outcome(posemb.sinusoidal_table, max_len, d, base, layout, "float64")
    if d < 2 or d % 2:
        assert table is None
        return
    np.testing.assert_allclose(table, ref.sinusoidal(np.arange(max_len), d, base, layout), atol=1e-12)
    for p in (0, 7, -3, 10**7):
        np.testing.assert_allclose(posemb.sinusoidal_embedding(p, d, base, layout),
                                   ref.sinusoidal([p], d, base, layout)[0], atol=1e-8)


@given(st.integers(0, 3), st.integers(0, 6), st.integers(1, 4).map(lambda n: 2 * n), st.integers(-3, 12),
       st.sampled_from([np.float32, np.float64]), st.booleans())
def test_add_position_embeddings(batch, seq, d, offset, dtype, in_place):
    table = posemb.sinusoidal_table(16, d, dtype="float64" if dtype == np.float64 else "float32")
    x = np.random.default_rng(1).standard_normal((batch, seq, d)).astype(dtype)
    x0 = x.copy()
    before = pointer(x)
    call = posemb.add_position_embeddings_ if in_place else posemb.add_position_embeddings
    y = outcome(call, x, offset, table)
    if y is None:  # a position outside the table
        assert seq and (offset < 0 or offset + seq > 16) and batch
        return
    assert y.shape == x.shape and (not in_place or (y is x and pointer(x) == before))
    if batch and seq:
        np.testing.assert_array_equal(y, x0 + table[offset:offset + seq][None])


@given(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.data())
def test_packed_and_context_parallel(lengths, data):
    cu = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    offsets = data.draw(st.lists(st.integers(0, 10**6), min_size=len(lengths), max_size=len(lengths)))
    packed = posemb.packed_positions(cu, offsets)
    expected = np.concatenate([o + np.arange(n) for o, n in zip(offsets, lengths)]).astype(np.int64)
    np.testing.assert_array_equal(packed, expected[None])
    ranks = data.draw(st.integers(1, 4))
    seq = 2 * ranks * data.draw(st.integers(0, 4))
    rank = data.draw(st.integers(0, ranks - 1))
    chunk = seq // (2 * ranks)
    mine = np.concatenate([np.arange(rank * chunk, (rank + 1) * chunk),
                           np.arange((2 * ranks - 1 - rank) * chunk, (2 * ranks - rank) * chunk)])
    got = outcome(posemb.context_parallel_positions, seq, rank, ranks)
    if got is not None:
        np.testing.assert_array_equal(got, mine[None])
    else:
        assert seq == 0


@given(st.integers(1, 4), st.integers(1, 8).map(lambda n: 2 * n), st.integers(1, 3), st.booleans())
def test_permute_pairing_is_the_pair_reordering(heads, head_dim, cols, torch_kind):
    w = np.random.default_rng(2).standard_normal((heads * head_dim, cols)).astype(np.float32)
    out = posemb.permute_pairing(torch.from_numpy(w) if torch_kind else w, heads, "interleaved", "rotate_half")
    first, second = ref.pair_indices(head_dim, "interleaved")
    order = np.concatenate([first, second])  # rotate_half position j holds interleaved row order[j]
    expected = w.reshape(heads, head_dim, cols)[:, order].reshape(heads * head_dim, cols)
    np.testing.assert_array_equal(np.asarray(out), expected)
    v = w.copy()
    before = pointer(v)
    assert posemb.permute_pairing_(v, heads, "interleaved", "rotate_half") is v and pointer(v) == before
    np.testing.assert_array_equal(v, expected)


@given(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5), st.sampled_from([(2, 1), (2, 2), (4, 2)]),
       st.integers(0, 1000), st.booleans())
def test_attention_scores_against_numpy(batch, sq, sk, heads, q_start, causal):
    h, kvh = heads
    rng = np.random.default_rng(3)
    q = rng.standard_normal((batch, sq, h, 16))
    k = rng.standard_normal((batch, sk, kvh, 16))
    spec = posemb.default_rope_spec(16, 10000.0)
    k_start = max(0, q_start - 2)
    scores = posemb.attention_scores(q, q_start, k, k_start, rope=spec, causal=causal)
    qp = np.arange(q_start, q_start + sq, dtype=np.float64)
    kp = np.arange(k_start, k_start + sk, dtype=np.float64)
    qr = ref.rope(q, qp[None], spec.inv_freq, 1.0, "rotate_half")
    kr = np.repeat(ref.rope(k, kp[None], spec.inv_freq, 1.0, "rotate_half"), h // kvh, axis=2)
    expected = np.einsum("bqhd,bkhd->bhqk", qr, kr) / 4.0
    if causal:
        expected = np.where(kp[None, :] > qp[:, None], -np.inf, expected)
    assert scores.shape == (batch, h, sq, sk) and scores.dtype == np.float64
    np.testing.assert_allclose(scores, expected, atol=1e-10)
