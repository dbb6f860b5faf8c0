"""Bad input raises posemb.Error (a ValueError) naming the parameter and what was expected: never
a silent copy, never a crash, and the caller's array is left as it was.
"""
import os

import numpy as np
import pytest
import torch

import posemb
from conftest import SOURCE_DIR

SPEC = posemb.default_rope_spec(64, 10000.0)


def x32(shape=(1, 4, 2, 64)):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def raises(match, call, *args, **kwargs):
    with pytest.raises(posemb.Error, match=match) as info:
        call(*args, **kwargs)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("posemb: ")
    return info.value


def test_error_is_value_error():
    assert issubclass(posemb.Error, ValueError)


@pytest.mark.parametrize("make", [lambda a: a, torch.from_numpy])
def test_non_contiguous_in_place(make):
    x = make(x32((1, 8, 2, 64)))[:, ::2]
    before = x.copy() if isinstance(x, np.ndarray) else x.clone()
    raises(r"^posemb: x = a non-contiguous .*expected a C-contiguous one for an in-place call",
           posemb.apply_rope_, x, 0, SPEC)
    assert (x == before).all()
    raises("non-contiguous", posemb.apply_rope_, make(x32((1, 2, 4, 64))).swapaxes(1, 2), 0, SPEC)


def test_int32_positions():
    raises(r"positions\.dtype = int32: expected int64 or float64", posemb.apply_rope_, x32(), np.arange(4, dtype=np.int32), SPEC)
    raises(r"positions\.dtype = torch\.int32: expected int64 or float64", posemb.apply_rope_, x32(),
           torch.arange(4, dtype=torch.int32), SPEC)


def test_3d_positions():
    raises(r"positions\.shape = \[1, 1, 4\]: expected \[seq\] or \[batch, seq\]",
           posemb.apply_rope_, x32(), np.zeros((1, 1, 4), np.int64), SPEC)


def test_positions_shape_mismatch():
    raises(r"positions shape = \[1, 5\]: expected \[batch, seq\] = \[1, 4\]", posemb.apply_rope_, x32(), np.arange(5), SPEC)


@pytest.mark.parametrize("x, text", [
    (np.zeros((1, 4, 2, 64), np.int32), r"x\.dtype = int32: expected float32, float64 or float16"),
    (np.zeros((1, 4, 2, 64), np.complex64), r"x\.dtype = complex64"),
    (np.zeros((1, 4, 2, 64), ">f4"), r"x\.dtype = >f4"),
    (torch.zeros(1, 4, 2, 64, dtype=torch.int64), r"x\.dtype = torch\.int64: expected torch\.float32"),
    ("not an array", r"x = str: expected a numpy array, a torch tensor or a DLPack producer"),
])
def test_unsupported_dtype(x, text):
    raises(text, posemb.apply_rope_, x, 0, SPEC)


def test_device_tensor():
    # Off the CPU the custom ops run (docs/training.md): a meta tensor gets its shape from the ops'
    # fake implementations, for every scheme; a CUDA tensor takes the composite path.
    meta = torch.empty(1, 4, 2, 64, device="meta")
    assert posemb.apply_rope(meta, 0, SPEC).shape == meta.shape
    assert posemb.apply_xpos_(meta, 0, posemb.XposSpec(SPEC), "query") is meta
    if torch.cuda.is_available():
        x = torch.randn(1, 4, 2, 64)
        torch.testing.assert_close(posemb.apply_rope(x.cuda(), 0, SPEC).cpu(), posemb.apply_rope(x, 0, SPEC))
        xpos = posemb.XposSpec(SPEC)
        torch.testing.assert_close(posemb.apply_xpos(x.cuda(), 0, xpos, "query").cpu(),
                                   posemb.apply_xpos(x, 0, xpos, "query"))


def test_head_dim_not_the_specs():
    raises(r"head_dim = 32: expected 64, the head_dim this RopeSpec was made for", posemb.apply_rope_,
           np.zeros((1, 4, 2, 32), np.float32), 0, SPEC)
    raises(r"head_dim = 128: expected 64.*RotaryDims\{128, 64\}", posemb.apply_rope,
           np.zeros((1, 4, 2, 128), np.float32), 0, SPEC)


def test_rank_layout_pairing_threads_role():
    raises(r"x\.shape = \[4, 2, 64\]: expected 4 dimensions", posemb.apply_rope_, np.zeros((4, 2, 64), np.float32), 0, SPEC)
    raises(r"layout = 'bsdh': expected 'bshd'", posemb.apply_rope_, x32(), 0, SPEC, layout="bsdh")
    raises(r"pairing = 'neox': expected 'rotate_half' or 'interleaved'", posemb.default_rope_spec, 64, 10000.0, "neox")
    raises(r"threads = 0: expected 1 \.\. 1024", posemb.apply_rope_, x32(), 0, SPEC, threads=0)
    xpos = posemb.XposSpec(SPEC)
    raises(r"role = 'value': expected 'query' or 'key'", posemb.apply_xpos_, x32(), 0, xpos, "value")


def test_read_only_and_requires_grad():
    x = x32()
    x.flags.writeable = False
    raises(r"x = a read-only array: expected a writable array", posemb.apply_rope_, x, 0, SPEC)
    # A leaf that requires grad: in place is refused as PyTorch refuses it (docs/training.md).
    t = torch.zeros(1, 4, 2, 64, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        posemb.apply_rope_(t, 0, SPEC)


def test_source_and_table_dtype():
    raises(r"source = str: expected a RopeSpec, a RopeTable or an HfFloat32Rope", posemb.apply_rope_, x32(), 0, "spec")
    table = posemb.RopeTable(SPEC, 0, 16, dtype="float64")
    raises(r"source = a RopeTable of dtype float64: expected dtype='float32'", posemb.apply_rope_, x32(), 0, table)
    raises(r"position = 20: outside the RoPE table's range \[0, 16\)", posemb.apply_rope_, x32(), 20,
           posemb.RopeTable(SPEC, 0, 16))
    raises(r"dtype = 'float16': expected 'float32' or 'float64'", posemb.RopeTable, SPEC, 0, 16, "float16")


def test_builder_errors():
    raises(r"rotary_dim = 7: expected an even number >= 2", posemb.default_rope_spec, 64, 10000.0, rotary_dim=7)
    raises(r"factor = -1: expected a finite number > 0", posemb.linear_rope_spec, 64, 10000.0, -1.0)
    raises(r"beta_fast = 0.5: expected >= beta_slow", posemb.yarn_rope_spec, 64, 10000.0, 4.0, 4096, beta_fast=0.5)
    raises(r"mrope_section .*expected a sum of rotary_dim / 2 = 32", posemb.MropeSpec, SPEC, (1, 2, 3))


def test_model_errors(tmp_path):
    raises(r"no_such\.json: cannot open config file", posemb.load_model, str(tmp_path / "no_such.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"rope_scaling": {"rope_type": "banana"}, "hidden_size": 64, "num_attention_heads": 1}')
    raises(r"bad\.json: rope_scaling\.rope_type = \"banana\"", posemb.load_model, bad)
    model = posemb.load_model(os.path.join(SOURCE_DIR, "tests", "cli", "data", "bloom_alibi.json"))
    raises(r"kind = alibi: expected rope for a RoPE spec", model.layers[0].rope_spec)
    raises(r"model\.model_type = 'bloom': expected a model with M-RoPE position rules", posemb.mrope_index, model, "text:3")


def test_mrope_positions_errors():
    spec = posemb.MropeSpec(SPEC, (8, 12, 12))
    raises(r"positions shape = \[3, 1, 5\]: expected \[3, batch, seq\]", posemb.apply_mrope_, x32(),
           np.zeros((3, 1, 5), np.int64), spec)
    raises(r"positions\.dtype = int32", posemb.apply_mrope_, x32(), np.zeros((3, 4), np.int32), spec)


def test_other_errors():
    raises(r"n_heads = 0: expected a number > 0", posemb.alibi_slopes, 0)
    raises(r"form = 'both': expected 'causal' or 'symmetric'", posemb.alibi_bias, [0.5], np.arange(2), np.arange(2), "both")
    raises(r"q_positions\.dtype = float64: expected int64", posemb.alibi_bias, [0.5], np.arange(2.0), np.arange(2))
    raises(r"cu_seqlens\[0\] = 1: expected 0", posemb.packed_positions, [1, 3])
    raises(r"table\.dtype = float64: expected x's dtype float32", posemb.add_position_embeddings_,
           np.zeros((1, 2, 8), np.float32), 0, posemb.sinusoidal_table(4, 8, dtype="float64"))
    t5 = posemb.T5BiasTable(posemb.T5Buckets(32, 128, True), np.zeros((32, 2), np.float32))
    raises(r"alibi_slopes, relative_bias = both given: expected at most one bias",
           posemb.attention_scores, x32(), 0, x32(), 0, alibi_slopes=[0.5, 0.25], relative_bias=t5)
