"""posemb's plan of a GGUF through the library call: the C API (include/posemb/c/posemb.h).

    plans = c_plans("libposemb_c.so", "model.gguf", n_ctx)   # {layer: {rotary_dim, ...}}

posemb_model_load_gguf(path, seq_len = n_ctx) and, per RoPE layer, posemb_model_layer_rope,
posemb_rope_get_info and posemb_rope_inv_freq: the same keys as a `posemb layers --json` layer
object (rotary_dim, inv_freq, attention_scale, pairing), for compare.params_row to hold against
the ROPE node as it holds the tool's. RuntimeError: posemb_last_error().
"""

from __future__ import annotations

import ctypes
import functools

ROPE = 0  # POSEMB_KIND_ROPE
PAIRINGS = {0: "interleaved", 1: "rotate_half"}


class _RopeInfo(ctypes.Structure):
    _fields_ = [("head_dim", ctypes.c_int32), ("rotary_dim", ctypes.c_int32),
                ("rotary_offset", ctypes.c_int32), ("pairing", ctypes.c_int32),
                ("attention_scale", ctypes.c_double)]


@functools.lru_cache(None)
def _lib(path: str):
    lib = ctypes.CDLL(path)
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.posemb_last_error.restype = ctypes.c_char_p
    lib.posemb_model_load_gguf.argtypes = [ctypes.c_char_p, i64, ctypes.c_int32,
                                           ctypes.POINTER(p)]
    lib.posemb_model_free.argtypes = [p]
    lib.posemb_model_layer_count.argtypes = [p, ctypes.POINTER(i64)]
    lib.posemb_model_layer_kind.argtypes = [p, i64, ctypes.POINTER(ctypes.c_int32)]
    lib.posemb_model_layer_rope.argtypes = [p, i64, ctypes.POINTER(p)]
    lib.posemb_rope_free.argtypes = [p]
    lib.posemb_rope_get_info.argtypes = [p, ctypes.POINTER(_RopeInfo)]
    lib.posemb_rope_inv_freq.argtypes = [p, ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                         ctypes.POINTER(ctypes.c_size_t)]
    return lib


def _check(lib, status: int) -> None:
    if status != 0:
        raise RuntimeError(lib.posemb_last_error().decode())


def _layer(lib, model, layer: int) -> dict:
    rope = ctypes.c_void_p()
    _check(lib, lib.posemb_model_layer_rope(model, layer, ctypes.byref(rope)))
    try:
        info = _RopeInfo()
        _check(lib, lib.posemb_rope_get_info(rope, ctypes.byref(info)))
        freq = (ctypes.c_double * (info.rotary_dim // 2))()
        count = ctypes.c_size_t()
        _check(lib, lib.posemb_rope_inv_freq(rope, freq, len(freq), ctypes.byref(count)))
        return dict(rotary_dim=info.rotary_dim, inv_freq=list(freq)[: count.value],
                    attention_scale=info.attention_scale, pairing=PAIRINGS[info.pairing])
    finally:
        lib.posemb_rope_free(rope)


def c_plans(lib_path: str, gguf: str, n_ctx: int) -> dict[int, dict]:
    """Every RoPE layer's plan from the C API, by layer index."""
    lib = _lib(lib_path)
    model = ctypes.c_void_p()
    _check(lib, lib.posemb_model_load_gguf(gguf.encode(), n_ctx, 0, ctypes.byref(model)))
    try:
        count = ctypes.c_int64()
        _check(lib, lib.posemb_model_layer_count(model, ctypes.byref(count)))
        plans = {}
        for layer in range(count.value):
            kind = ctypes.c_int32()
            _check(lib, lib.posemb_model_layer_kind(model, layer, ctypes.byref(kind)))
            if kind.value == ROPE:
                plans[layer] = _layer(lib, model, layer)
        return plans
    finally:
        lib.posemb_model_free(model)
