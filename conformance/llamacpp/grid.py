"""llama.cpp's own rope test grid as a peer suite: the installed libggml vs posemb.

The F32 forward cases of test_rope in the sdist's tests/test-backend-ops.cpp (make_test_cases_eval:
modes normal, NeoX, M-RoPE, interleaved M-RoPE, vision; freq_scale {1, 1.4245}, ext_factor
{0, 0.7465}, attn_factor {1, 1.4245}, freq factors off/on in [0.9, 1.1], contiguous, a strided
view of a [2 ne0, 4 ne1, 3 ne2] tensor or (build_rope_2d-style, [36, 16, 2457]) the second half
along dim 0; the rotated window at offset 32 (ggml_rope_set_offset); in place, batches of 3;
base 10000, n_ctx_orig 0, betas 1/1, positions rand() % 512; plus the 512-token "real model"
cases) and realistic YaRN cases the grid lacks (n_ctx_orig 4096, beta 32/1, freq_scale 1/4 and
1/40). Each runs through ggml_rope_ext / ggml_rope_multi (or their _inplace) of libggml
(ggml_graph_compute_with_ctx, one thread) and through posemb (apply_rope / apply_mrope with the
node's inv_freq and magnitude, ggml_reference.effective_inv_freq); NMSE = sum (a - b)^2 / sum b^2
<= 1e-7 (test-backend-ops' own bound for rope). Vision mode (24) is posemb's chunked M-RoPE
over the whole head (rotate_half, n_dims pairs) with ggml's per-section frequencies
(ggml_reference.effective_inv_freq).

    rows = grid_rows(LIB_DIR)    # LIB_DIR holds libggml-base.so and libggml-cpu.so
"""

from __future__ import annotations

import ctypes
import itertools
import pathlib

import numpy as np

import posemb
from ggml_ctypes import GgmlTensor, read_tensor
from ggml_reference import effective_inv_freq, pair_sections, rotate
from report import Row

NMSE_MAX = 1e-7
NORMAL, NEOX, MROPE, VISION, IMROPE = 0, 2, 8, 24, 40
TensorP = ctypes.POINTER(GgmlTensor)


class _InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p),
                ("no_alloc", ctypes.c_bool)]


def _libggml(lib_dir: str):
    """libggml-base (graph building) and libggml-cpu (compute) with the prototypes used here."""
    d = pathlib.Path(lib_dir)
    base = ctypes.CDLL(str(next(d.glob("libggml-base.so*"))), mode=ctypes.RTLD_GLOBAL)
    cpu = ctypes.CDLL(str(next(d.glob("libggml-cpu.so*"))))
    f, i, p = ctypes.c_float, ctypes.c_int, ctypes.c_void_p
    base.ggml_init.restype, base.ggml_init.argtypes = p, [_InitParams]
    base.ggml_free.argtypes = [p]
    base.ggml_new_tensor.restype = TensorP
    base.ggml_new_tensor.argtypes = [p, i, i, ctypes.POINTER(ctypes.c_int64)]
    base.ggml_view_4d.restype = TensorP
    base.ggml_view_4d.argtypes = [p, TensorP] + [ctypes.c_int64] * 4 + [ctypes.c_size_t] * 4
    base.ggml_rope_ext.restype = TensorP
    base.ggml_rope_ext.argtypes = [p, TensorP, TensorP, TensorP, i, i, i] + [f] * 6
    for name in ("ggml_rope_multi", "ggml_rope_multi_inplace"):
        getattr(base, name).restype = TensorP
        getattr(base, name).argtypes = [p, TensorP, TensorP, TensorP, i, i * 4, i, i] + [f] * 6
    base.ggml_rope_ext_inplace.restype = TensorP
    base.ggml_rope_ext_inplace.argtypes = base.ggml_rope_ext.argtypes
    base.ggml_rope_set_offset.restype = TensorP
    base.ggml_rope_set_offset.argtypes = [TensorP, i]
    base.ggml_new_graph.restype, base.ggml_new_graph.argtypes = p, [p]
    base.ggml_build_forward_expand.argtypes = [p, TensorP]
    cpu.ggml_graph_compute_with_ctx.argtypes = [p, p, i]
    return base, cpu


def _fill(t: GgmlTensor, values: np.ndarray) -> None:
    """Writes a contiguous array into a contiguous host tensor."""
    ctypes.memmove(t.data, np.ascontiguousarray(values).ctypes.data, values.nbytes)


def _tokens_major(t: np.ndarray) -> np.ndarray:
    """[ne3, ne2, ne1, ne0] -> [ne2 tokens, ne3 * ne1 heads, ne0]: the batches (which share the
    positions) side by side as heads."""
    return t.transpose(1, 0, 2, 3).reshape(t.shape[1], -1, t.shape[3])


def run_ggml(lib, case: dict, rng) -> dict:
    """One case through libggml: the node dict of ggml_reference plus x, y [ne2, ne3 ne1, ne0]
    (x read before the compute: an in-place ROPE overwrites it)."""
    base, cpu = lib
    ne = case["ne"]
    ctx = base.ggml_init(_InitParams(512 * 1024 * 1024, None, False))
    try:
        grow = {0: [1, 1, 1, 1], 1: [2, 4, 3, 1], 2: [2, 1, 1, 1]}[case["view"]]
        full = (ctypes.c_int64 * 4)(*[n * g for n, g in zip(ne, grow)])
        a = base.ggml_new_tensor(ctx, 0, 4, full)
        _fill(a.contents, rng.uniform(-1, 1, size=[n * g for n, g in zip(ne, grow)][::-1])
              .astype(np.float32))
        if case["view"]:
            nb = a.contents.nb
            offset = ne[0] * 4 if case["view"] == 2 else 0  # the second half along dim 0
            a = base.ggml_view_4d(ctx, a, *ne, nb[1], nb[2], nb[3], offset)
        multi = case["mode"] in (MROPE, IMROPE, VISION)
        n_dims, sections = _op_dims(case)
        n_pos = ne[2] * (4 if multi else 1)
        pos = base.ggml_new_tensor(ctx, 26, 1, (ctypes.c_int64 * 1)(n_pos))
        _fill(pos.contents, rng.integers(0, case["n_ctx"], n_pos).astype(np.int32))
        freq = None
        if case["ff"]:
            freq = base.ggml_new_tensor(ctx, 0, 1, (ctypes.c_int64 * 1)(case["n_dims"] // 2))
            _fill(freq.contents, rng.uniform(0.9, 1.1, case["n_dims"] // 2).astype(np.float32))
        scalars = (case["n_ctx_orig"], 10000.0, case["fs"], case["ef"], case["af"],
                   case["beta_fast"], case["beta_slow"])
        suffix = "_inplace" if case["inplace"] else ""
        if multi:
            out = getattr(base, "ggml_rope_multi" + suffix)(
                ctx, a, pos, freq, n_dims, (ctypes.c_int * 4)(*sections), case["mode"], *scalars)
        else:
            out = getattr(base, "ggml_rope_ext" + suffix)(ctx, a, pos, freq, n_dims,
                                                          case["mode"], *scalars)
        if case["n_offs"]:
            out = base.ggml_rope_set_offset(out, case["n_offs"])
        x = _tokens_major(read_tensor(a.contents))
        graph = base.ggml_new_graph(ctx)
        base.ggml_build_forward_expand(graph, out)
        cpu.ggml_graph_compute_with_ctx(ctx, graph, 1)
        o = out.contents
        return dict(
            n_dims=n_dims, mode=case["mode"], n_ctx_orig=case["n_ctx_orig"],
            freq_base=10000.0, freq_scale=case["fs"], ext_factor=case["ef"],
            attn_factor=case["af"], beta_fast=case["beta_fast"], beta_slow=case["beta_slow"],
            sections=sections, n_offs=case["n_offs"],
            positions=read_tensor(pos.contents).reshape(-1),
            freq_factors=read_tensor(freq.contents).reshape(-1) if freq else None,
            x=x, y=_tokens_major(read_tensor(o)))
    finally:
        base.ggml_free(ctx)


def _op_dims(case: dict) -> tuple[int, list[int]]:
    """The op's n_dims and sections as test_rope::build_graph passes them: M-RoPE n_dims and
    thirds; vision n_dims / 2 and quarters {n_dims/4, n_dims/4, 0, 0}; otherwise n_dims."""
    d = case["n_dims"]
    if case["mode"] == VISION:
        return d // 2, [d // 4, d // 4, 0, 0]
    if case["mode"] in (MROPE, IMROPE):
        return d, [d // 3] * 3 + [0]
    return d, [0] * 4


def posemb_rotation(node: dict) -> np.ndarray:
    """posemb's rotation of the node's input with the node's inv_freq and magnitude; a window
    at n_offs (ggml_rope_set_offset) is posemb rotating those 2 n pairs' features, the rest
    passing through.

    x [ne2 = tokens, ne1 = heads, ne0 = head_dim] is posemb's bshd layout with batch 1.
    """
    offs = node.get("n_offs", 0)
    if offs:
        out = node["x"].copy()
        width = node["n_dims"]
        window = dict(node, x=node["x"][..., offs : offs + width], n_offs=0)
        out[..., offs : offs + width] = posemb_rotation(window)
        return out
    inv_freq, mscale = effective_inv_freq(node)
    x = node["x"]
    pairing = "interleaved" if node["mode"] == NORMAL else "rotate_half"
    spec = posemb.RopeSpec(inv_freq, x.shape[-1], mscale, pairing)
    n = x.shape[0]
    if node["mode"] in (MROPE, IMROPE, VISION):
        layout = "interleaved" if node["mode"] == IMROPE else "chunked"
        axes = pair_sections(node)
        if np.any(axes == 3):
            raise ValueError(f"sections {node['sections']}: pairs on ggml's 4th axis")
        mspec = posemb.MropeSpec(spec, [int(np.sum(axes == a)) for a in range(3)], layout)
        pos = node["positions"].reshape(4, n)[:3].astype(np.int64)
        return posemb.apply_mrope(x[None], pos[:, None, :], mspec, layout="bshd")[0]
    return posemb.apply_rope(x[None], node["positions"][None, :n].astype(np.int64), spec,
                             layout="bshd")[0]


def _case(ne, n_dims, mode, fs=1.0, ef=0.0, af=1.0, ff=False, view=0, n_ctx=512,
          n_ctx_orig=0, beta_fast=1.0, beta_slow=1.0, n_offs=0, inplace=False) -> dict:
    """view: 0 contiguous, 1 a strided view of a [2 ne0, 4 ne1, 3 ne2] tensor, 2 the second half
    along dim 0 of a [2 ne0, ne1, ne2] tensor (test_rope's v)."""
    return dict(ne=list(ne), n_dims=n_dims, mode=mode, fs=fs, ef=ef, af=af, ff=ff, view=view,
                n_ctx=n_ctx, n_ctx_orig=n_ctx_orig, beta_fast=beta_fast, beta_slow=beta_slow,
                n_offs=n_offs, inplace=inplace)


def cases() -> list[dict]:
    """test-backend-ops' F32 forward rope cases (with `all`), then the YaRN additions."""
    shapes = [  # (ne_a, n_dims, mode) of make_test_cases_eval's inner loop
        ((128, 32, 2, 1), 128, NORMAL), ((128, 40, 2, 1), 128, NORMAL), ((128, 52, 2, 1), 128, NORMAL),
        ((128, 64, 2, 1), 128, NORMAL), ((16, 16, 8192, 1), 16, NORMAL),
        ((64, 1, 2, 1), 64, NEOX), ((64, 71, 2, 1), 64, NEOX), ((64, 8, 2, 1), 64, NEOX),
        ((80, 32, 2, 1), 20, NORMAL), ((80, 32, 2, 1), 32, NORMAL), ((80, 32, 4, 1), 32, NORMAL),
        ((80, 32, 2, 1), 20, NEOX), ((80, 32, 2, 1), 32, NEOX), ((80, 32, 4, 1), 32, NEOX),
        ((16, 16, 8192, 1), 16, NEOX),
        ((128, 12, 2, 1), 128, MROPE), ((128, 28, 2, 1), 128, MROPE), ((128, 12, 2, 1), 20, MROPE),
        ((128, 28, 2, 1), 32, MROPE), ((128, 12, 2, 1), 128, IMROPE), ((128, 28, 2, 1), 128, IMROPE),
        ((128, 12, 2, 1), 20, IMROPE), ((128, 28, 2, 1), 32, IMROPE), ((80, 16, 2, 1), 80, VISION),
        ((128, 16, 2, 1), 128, IMROPE), ((16, 16, 8192, 1), 16, IMROPE), ((64, 128, 2, 1), 64, NEOX),
    ]
    out = []
    for fs, ef, af, ff in itertools.product((1.0, 1.4245), (0.0, 0.7465), (1.0, 1.4245),
                                            (False, True)):
        for view in (0, 1):
            out += [_case(ne, d, m, fs, ef, af, ff, view) for ne, d, m in shapes]
        # build_rope_2d-style: a non-contiguous view starting at a non-zero offset along dim 0
        out += [_case((36, 16, 2457, 1), 36, m, fs, ef, af, ff, 2)
                for m in (NORMAL, NEOX, MROPE, IMROPE, VISION)]
    for ff in (False, True):  # the rotated window at an offset (ggml_rope_set_offset)
        out += [_case(ne, d, m, 1.4245, 0.7465, 1.4245, ff, n_offs=32) for ne, d, m in [
            ((128, 32, 2, 1), 32, NORMAL), ((128, 32, 2, 1), 32, NEOX),
            ((128, 12, 2, 1), 24, MROPE), ((128, 12, 2, 1), 24, IMROPE)]]
    out.append(_case((128, 32, 2, 1), 32, NEOX, 1.4245, 0.7465, 1.4245, n_offs=32, inplace=True))
    for mode, ff in itertools.product((NORMAL, NEOX, MROPE, IMROPE, VISION), (False, True)):
        out += [_case(ne, 128, mode, 1.4245, 0.7465, 1.4245, ff, view, inplace=True)  # in place
                for ne, view in (((128, 32, 2, 1), 0), ((128, 32, 2, 1), 1), ((128, 32, 2, 3), 1))]
    for ff, view in itertools.product((False, True), (0, 1)):  # 512-token prefill cases
        out += [_case(ne, d, m, ff=ff, view=view) for ne, d, m in [
            ((128, 32, 512, 1), 128, NORMAL), ((128, 64, 512, 1), 128, NORMAL),
            ((80, 32, 512, 1), 20, NEOX), ((64, 8, 512, 1), 64, NEOX),
            ((128, 12, 512, 1), 128, MROPE), ((128, 12, 512, 1), 128, IMROPE),
            ((80, 16, 2, 1), 80, VISION)]]
    out += [_case(ne, d, m) for ne, d, m in [((256, 8, 512, 1), 64, IMROPE),
                                             ((256, 16, 512, 1), 64, IMROPE),
                                             ((256, 8, 512, 1), 256, NEOX)]]
    out.append(_case((512, 8, 512, 1), 128, NEOX, ff=True))
    return out + yarn_cases()


def yarn_cases() -> list[dict]:
    """Realistic YaRN the grid lacks: original context 4096, betas 32/1, scale 1/4 and 1/40,
    positions up to 131071."""
    return [_case((128, 8, 64, 1), 128, mode, fs=fs, ef=1.0, n_ctx=131072, n_ctx_orig=4096,
                  beta_fast=32.0, beta_slow=1.0)
            for fs, mode in itertools.product((0.25, 1 / 40), (NORMAL, NEOX))]


def case_name(case: dict) -> str:
    keys = ("ne", "n_dims", "mode", "fs", "ef", "af", "ff", "view", "n_ctx_orig", "n_offs",
            "inplace")
    return "rope " + ",".join(f"{k}={case[k]}" for k in keys)


def grid_rows(lib_dir: str, seed: int = 0) -> list[Row]:
    """One row per case: NMSE of posemb against the installed libggml."""
    lib = _libggml(lib_dir)
    rng = np.random.default_rng(seed)
    rows = []
    for case in cases():
        name = case_name(case)
        node = run_ggml(lib, case, rng)
        try:
            ours = posemb_rotation(node).astype(np.float64)
        except Exception as error:  # posemb refusing ggml's parameters is a finding, not a skip
            rows.append(Row(name, "grid", "fail", detail=f"posemb: {error}"))
            continue
        ggml = node["y"].astype(np.float64)
        nmse = _nmse(ours, ggml)
        rows.append(Row(name, "grid", "pass" if nmse <= NMSE_MAX else "fail", nmse, NMSE_MAX))
        if case["n_ctx_orig"]:
            rows.append(_closer_row(name, node))
    return rows


def _nmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sum((a - b) ** 2) / np.sum(b**2))


def _closer_row(name: str, node: dict) -> Row:
    """The realistic YaRN cases: posemb (float64 input) and ggml each against ggml's rule in
    float64 (ggml_reference.rotate); posemb must be the closer one."""
    inv_freq, mscale = effective_inv_freq(node)
    reference = rotate(node, node["x"], inv_freq, mscale)
    exact = posemb_rotation(dict(node, x=node["x"].astype(np.float64)))
    ours, ggml = _nmse(exact, reference), _nmse(node["y"].astype(np.float64), reference)
    return Row(name, "exact_closer", "pass" if ours <= ggml else "fail", ours, ggml,
               "NMSE vs the float64 reference: posemb exact; tolerance = ggml's")
