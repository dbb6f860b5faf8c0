"""ggml's C structures and host tensors through ctypes (ggml/include/ggml.h of the pinned sdist).

    t = ctypes.cast(ptr, ctypes.POINTER(GgmlTensor)).contents
    array = read_tensor(t)   # a copy, shape [ne3, ne2, ne1, ne0], read with t's byte strides nb
"""

from __future__ import annotations

import ctypes

import numpy as np

GGML_MAX_DIMS, GGML_MAX_SRC, GGML_MAX_OP_PARAMS, GGML_MAX_NAME = 4, 10, 64, 64
GGML_TYPE_F32 = 0


class GgmlTensor(ctypes.Structure):
    """struct ggml_tensor of the sdist's ggml/include/ggml.h (same field order and sizes)."""


GgmlTensor._fields_ = [
    ("type", ctypes.c_int),
    ("buffer", ctypes.c_void_p),
    ("ne", ctypes.c_int64 * GGML_MAX_DIMS),
    ("nb", ctypes.c_size_t * GGML_MAX_DIMS),
    ("op", ctypes.c_int),
    ("op_params", ctypes.c_int32 * (GGML_MAX_OP_PARAMS // 4)),
    ("flags", ctypes.c_int32),
    ("src", ctypes.POINTER(GgmlTensor) * GGML_MAX_SRC),
    ("view_src", ctypes.POINTER(GgmlTensor)),
    ("view_offs", ctypes.c_size_t),
    ("data", ctypes.c_void_p),
    ("name", ctypes.c_char * GGML_MAX_NAME),
    ("extra", ctypes.c_void_p),
    ("padding", ctypes.c_char * 8),
]


_NUMPY_TYPES = {GGML_TYPE_F32: np.float32, 26: np.int32}  # GGML_TYPE_I32 = 26


def read_tensor(t: GgmlTensor) -> np.ndarray:
    """A copy of a host tensor's data, shape ne reversed ([ne3, ne2, ne1, ne0]), by its strides."""
    dtype = _NUMPY_TYPES.get(t.type)
    if dtype is None:
        raise ValueError(f"tensor {t.name.decode()}: ggml type {t.type} is not f32/i32")
    ne = [int(n) for n in t.ne]
    nb = [int(n) for n in t.nb]
    extent = sum((n - 1) * s for n, s in zip(ne, nb)) + np.dtype(dtype).itemsize
    raw = (ctypes.c_char * extent).from_address(t.data)
    typed = np.ndarray(shape=ne[::-1], dtype=dtype, buffer=raw, strides=nb[::-1])
    return typed.copy()
