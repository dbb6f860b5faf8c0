"""posemb.append_rotated against a numpy reference: the keys rotated by posemb's own out-of-place
call, converted by the references' own code (PyTorch's casts, after vLLM's clamp for fp8;
gguf-py's Q8_0 quantizer, which reimplements ggml's quantize_row_q8_0_ref bit for bit) and placed
by numpy indexing into each layout, compared byte for byte; plus a float64 RoPE in numpy for the
rotation itself, and bad input (posemb.Error, nothing written)."""

import numpy as np
import pytest

import posemb

torch = pytest.importorskip("torch")
gguf_quants = pytest.importorskip("gguf.quants")
from gguf import GGMLQuantizationType  # noqa: E402

RNG = np.random.default_rng(38)


def q8_0(rows):
    """gguf-py's Q8_0 blocks of float32 rows [..., head_dim] -> uint8 [..., head_dim / 32 * 34]."""
    return gguf_quants.quantize(np.ascontiguousarray(rows, np.float32), GGMLQuantizationType.Q8_0)


def convert(rows, dtype, scale):
    """The reference conversion of float32 rows [..., d], as the cache's raw bytes (uint8)."""
    t = torch.from_numpy(np.ascontiguousarray(rows))
    if dtype == "float32":
        out = t
    elif dtype == "float16":
        out = t.to(torch.float16)
    elif dtype == "bfloat16":
        out = t.to(torch.bfloat16)
    elif dtype == "fp8":
        out = (t / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    else:
        return q8_0(rows)
    return out.view(torch.uint8).numpy() if out.dtype != torch.float32 else out.numpy().view(np.uint8)


def row_bytes(dtype, d):
    return {"float32": 4 * d, "float16": 2 * d, "bfloat16": 2 * d, "fp8": d, "q8_0": d // 32 * 34}[dtype]


def new_cache(dtype, shape_bytes, d):
    """A cache of the given shape (last axis in values; q8_0 in bytes) filled with a pattern."""
    *lead, _ = shape_bytes
    if dtype == "float32":
        return torch.full((*lead, d), 7.0, dtype=torch.float32).numpy()
    if dtype == "float16":
        return np.full((*lead, d), 7.0, np.float16)
    if dtype == "bfloat16":
        return torch.full((*lead, d), 7.0, dtype=torch.bfloat16)
    if dtype == "fp8":
        return torch.full((*lead, d), 7.0, dtype=torch.float8_e4m3fn)
    return np.full((*lead, d // 32 * 34), 0x5A, np.uint8)


def raw(cache):
    """The cache's bytes as uint8 [..., row bytes]."""
    if isinstance(cache, torch.Tensor):
        return cache.view(torch.uint8).numpy().copy()
    return cache.view(np.uint8).reshape(*cache.shape[:-1], -1).copy()


def expected(cache, layout, rotated_bytes, slots):
    """Rows [batch, seq, heads, row bytes] placed into a copy of the cache's bytes by slot."""
    out = raw(cache)
    batch, seq = slots.shape
    for b in range(batch):
        for s in range(seq):
            slot = slots[b, s]
            if slot < 0:
                continue
            if layout == "bhsd":
                out[b, :, slot] = rotated_bytes[b, s]
            elif layout == "bshd":
                out[b, slot] = rotated_bytes[b, s]
            elif out.ndim == 3:  # paged [num_slots, heads, bytes]
                out[slot] = rotated_bytes[b, s]
            else:
                out[slot // out.shape[1], slot % out.shape[1]] = rotated_bytes[b, s]
    return out


def slot_mapping(layout, batch, seq, space):
    if layout != "paged":
        slots = np.empty((batch, seq), np.int64)
        for b in range(batch):
            start = RNG.integers(0, space - seq + 1)
            slots[b] = start + np.arange(seq)
        slots[RNG.random((batch, seq)) < 0.2] = -1
        return slots
    slots = RNG.permutation(space)[: batch * seq].reshape(batch, seq).astype(np.int64)
    slots[RNG.random((batch, seq)) < 0.2] = -1
    return slots


LAYOUTS = ["bhsd", "bshd", "paged", "paged3"]
DTYPES = ["float32", "float16", "bfloat16", "fp8", "q8_0"]


def cache_shape(layout, batch, heads, d, space, block_size):
    if layout == "bhsd":
        return (batch, heads, space, d)
    if layout == "bshd":
        return (batch, space, heads, d)
    if layout == "paged":
        return (space // block_size, block_size, heads, d)
    return (space, heads, d)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_rotate_convert_store(layout, dtype, threads):
    batch, seq, heads, d, dv = 2, 37, 4, 64, 32
    space, block_size = 96, 16
    keys = RNG.normal(0, 4, (batch, seq, heads, d)).astype(np.float32)
    values = RNG.normal(0, 4, (batch, seq, heads, dv)).astype(np.float32)
    values[0, 0, 0, :2] = [500.0, -1e6]  # beyond fp8's range: clamped
    if dtype != "q8_0":  # (ggml's q8_0 of an infinity casts NaN to int8)
        values[0, 0, 0, 2:4] = [np.inf, -np.inf]
    positions = RNG.integers(0, 1 << 20, (batch, seq)).astype(np.int64)
    spec = posemb.yarn_rope_spec(d, 10000.0, 4.0, 4096)
    slots = slot_mapping("paged" if layout.startswith("paged") else layout, batch, seq, space)
    k_cache = new_cache(dtype, cache_shape(layout, batch, heads, d, space, block_size), d)
    v_cache = new_cache(dtype, cache_shape(layout, batch, heads, dv, space, block_size), dv)
    k_scale, v_scale = 0.5, 3.0
    want_k = expected(k_cache, layout, convert(posemb.apply_rope(keys, positions, spec), dtype, k_scale), slots)
    want_v = expected(v_cache, layout, convert(values, dtype, v_scale), slots)
    posemb.append_rotated(keys, values, positions, spec, slots, k_cache, v_cache,
                          layout="paged" if layout.startswith("paged") else layout,
                          block_size=block_size if layout == "paged3" else None,
                          cache_dtype="q8_0" if dtype == "q8_0" else None,
                          k_scale=k_scale, v_scale=v_scale, threads=threads)
    np.testing.assert_array_equal(raw(k_cache), want_k)
    np.testing.assert_array_equal(raw(v_cache), want_v)


def test_rotation_against_numpy_rope():
    """The float32 cache holds RoPE of the keys (rotate-half, angles in float64) to 2e-6."""
    seq, heads, d = 50, 2, 32
    keys = RNG.normal(0, 1, (seq, heads, d)).astype(np.float32)
    positions = np.arange(seq, dtype=np.int64) * 997 + 123456
    slots = np.arange(seq, dtype=np.int64)[::-1].copy()
    k_cache = np.zeros((seq, heads, d), np.float32)
    v_cache = np.zeros((seq, heads, d), np.float32)
    posemb.append_rotated(keys, keys.copy(), positions, posemb.default_rope_spec(d), slots,
                          k_cache, v_cache, layout="paged", block_size=10)
    inv = 10000.0 ** (-np.arange(0, d, 2) / d)
    angle = positions[:, None].astype(np.float64) * inv[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    x = keys.astype(np.float64)
    a, b = x[..., : d // 2], x[..., d // 2:]
    want = np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    np.testing.assert_allclose(k_cache[slots], want, atol=2e-6, rtol=0)
    np.testing.assert_array_equal(v_cache[slots], keys)


def test_fp8_clamp_and_torch_plain_cast():
    """posemb clamps to +-448 as vLLM does; PyTorch 2.13's plain CPU cast saturates the same way
    (480, 1e4, +-inf -> +-448), and NaN stays NaN in both."""
    x = np.array([[[1.0, 460.0, 479.0, 480.0, 1e4, -1e30, np.inf, -np.inf] + [0.0] * 24]],
                 np.float32)
    k_cache = torch.zeros(1, 1, 32, dtype=torch.float8_e4m3fn)
    v_cache = torch.zeros(1, 1, 32, dtype=torch.float8_e4m3fn)
    posemb.append_rotated(x, x, 0, posemb.default_rope_spec(32), np.zeros(1, np.int64), k_cache,
                          v_cache, layout="paged", block_size=1)
    got = v_cache.float().numpy()[0, 0, :8]
    np.testing.assert_array_equal(got, [1.0, 448.0, 448.0, 448.0, 448.0, -448.0, 448.0, -448.0])
    plain = torch.from_numpy(x[0, 0, :8]).to(torch.float8_e4m3fn).float().numpy()
    np.testing.assert_array_equal(got, plain)
    nan = np.full((1, 1, 32), np.nan, np.float32)
    posemb.append_rotated(x, nan, 0, posemb.default_rope_spec(32), np.zeros(1, np.int64), k_cache,
                          v_cache, layout="paged", block_size=1)
    assert (v_cache.view(torch.uint8) == 0x7F).all()
    assert (torch.from_numpy(nan).to(torch.float8_e4m3fn).view(torch.uint8) == 0x7F).all()


def test_q8_0_rows_are_gguf_blocks():
    rows = RNG.normal(0, 1, (1, 64, 1, 128)).astype(np.float32)
    rows[0, 3] = 0.0
    rows[0, 4, 0, :32] = np.arange(32) * 0.5 - 8  # ties of roundf
    k_cache = np.zeros((1, 64, 1, 136), np.uint8)
    v_cache = np.zeros((1, 64, 1, 136), np.uint8)
    posemb.append_rotated(rows, rows, 0, posemb.default_rope_spec(128),
                          np.arange(64, dtype=np.int64)[None], k_cache, v_cache, layout="bshd",
                          cache_dtype="q8_0")
    np.testing.assert_array_equal(v_cache, q8_0(rows))


def test_torch_caches_are_written_in_place():
    keys = torch.randn(3, 2, 64)
    k_cache = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
    v_cache = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
    pointer = k_cache.data_ptr()
    posemb.append_rotated(keys, keys, 5, posemb.default_rope_spec(64),
                          torch.tensor([5, 6, 7]), k_cache, v_cache)
    assert k_cache.data_ptr() == pointer
    torch.testing.assert_close(v_cache[0, :, 5:8], keys.transpose(0, 1).to(torch.bfloat16),
                               rtol=0, atol=0)
    assert (k_cache[0, :, :5] == 0).all()


@pytest.mark.parametrize("case", ["slot", "twice", "block_size", "dtype", "scale0", "scale_nan",
                                  "overlap", "keys_in_cache", "shape", "q8_head_dim"])
def test_bad_input_writes_nothing(case):
    keys = RNG.normal(0, 1, (4, 2, 32)).astype(np.float32)
    slots = np.arange(4, dtype=np.int64)
    k_cache = np.full((8, 2, 32), 3.0, np.float16)
    v_cache = np.full((8, 2, 32), 3.0, np.float16)
    kwargs = dict(layout="paged", block_size=4)
    spec = posemb.default_rope_spec(32)
    args = [keys, keys.copy(), 0, spec, slots, k_cache, v_cache]
    text = {"slot": "slots[0, 2] = 8", "twice": "expected every slot once",
            "block_size": "num_slots = 8", "dtype": "k_cache.dtype", "scale0": "cache.keys.scale",
            "scale_nan": "cache.keys.scale", "overlap": "overlaps", "keys_in_cache": "overlaps keys",
            "shape": "v_cache.shape", "q8_head_dim": "expected a multiple of 32"}[case]
    if case == "slot":
        args[4] = np.array([0, 1, 8, 3], np.int64)
    elif case == "twice":
        args[4] = np.array([0, 1, 1, 3], np.int64)
    elif case == "block_size":
        kwargs["block_size"] = 3
    elif case == "dtype":
        args[5] = np.full((8, 2, 32), 3.0, np.float64)
    elif case in ("scale0", "scale_nan"):
        args[5] = torch.zeros(8, 2, 32, dtype=torch.float8_e4m3fn)
        args[6] = torch.zeros(8, 2, 32, dtype=torch.float8_e4m3fn)
        kwargs["k_scale"] = 0.0 if case == "scale0" else float("nan")
    elif case == "overlap":
        args[6] = k_cache
    elif case == "keys_in_cache":
        f32 = np.zeros((8, 2, 32), np.float32)
        args[0] = f32[:4]
        args[5] = f32
        args[6] = np.zeros((8, 2, 32), np.float32)
    elif case == "shape":
        args[6] = np.full((8, 3, 32), 3.0, np.float16)
    elif case == "q8_head_dim":
        args[1] = RNG.normal(0, 1, (4, 2, 16)).astype(np.float32)
        args[6] = np.zeros((8, 2, 17), np.uint8)
        args[5] = np.zeros((8, 2, 34), np.uint8)
        kwargs["cache_dtype"] = "q8_0"
    before = [raw(a) for a in (args[5], args[6])]
    with pytest.raises(posemb.Error, match=text.replace("[", r"\[").replace("]", r"\]")):
        posemb.append_rotated(*args, **kwargs)
    for a, b in zip((args[5], args[6]), before):
        np.testing.assert_array_equal(raw(a), b)
