"""posemb's tensor ops as PyTorch custom ops (namespace ``posemb::``), for training.

Each op is registered once with ``torch.library.custom_op`` with a fake (meta) implementation
and an autograd formula, so ``torch.compile`` keeps it as one leaf, ``torch.library.opcheck``
can audit it, and the same op serves inference and training:

    posemb::rotate(x, positions, offset, source, layout, direction, threads) -> Tensor
    posemb::rotate_(x!, ...) -> ()                      in place, tensors that need no gradient
    posemb::fope(x, positions, offset, sin_coef, cos_coef, config, layout, direction, threads)
    posemb::add_positions(x, positions, offset, table) -> Tensor
    posemb::t5_bias(table, q_positions, k_positions, buckets) -> Tensor

The backward of a rotation is the same op in the transpose direction (the rotation by the
negated angles, rotary/backward.hpp): the same exact angles, and itself differentiable (the
transpose's backward is the forward), so gradgradcheck holds. FoPE's coefficient gradients, the
learned table's and T5's table gradient are posemb's deterministic reductions in double.

A source (RopeSpec, RopeTable, MropeSpec, VisionRope, XposSpec with a role, FopeConfig,
T5Buckets) is not a tensor: it enters an op as an int key of _SOURCES, which keeps it alive.

Devices: CPU tensors run posemb's kernels. Tensors on another device take the composite path
(below): cos/sin from posemb's exact tables (built on the CPU, cached per source, device and
dtype), the rotation, FoPE's mixtures, the gathers and scatter-adds in plain PyTorch ops on the
tensor's device (PyTorch's arithmetic). Every source has one.
"""
from typing import Dict, Optional, Tuple

import numpy as np
import torch
from torch import Tensor

from . import _posemb
from ._posemb import Error

FORWARD, INVERSE, TRANSPOSE = 0, 1, 2

# ---- sources

_SOURCES: Dict[int, object] = {}


def source_key(source: object) -> int:
    """The int key under which an op finds `source` (kept alive for the process)."""
    key = id(source)
    _SOURCES[key] = source
    return key


class _Rotation:
    """A rotation source and the extension function that applies it (a row of _KINDS)."""

    def __init__(self, kind: str, source: object, role: Optional[str] = None) -> None:
        self.kind, self.source, self.role = kind, source, role

    def apply(self, x, positions, layout: str, direction: int, threads: int, in_place: bool):
        name = _KINDS[self.kind] + ("_" if in_place else "")
        extra = (self.role,) if self.role is not None else ()
        return getattr(_posemb, name)(
            x, positions, self.source, *extra, layout=layout, inverse=direction == INVERSE,
            threads=threads, transpose=direction == TRANSPOSE)

    def inverse_scale(self) -> Optional[float]:
        """m of M = m R for a scaled rotation (the inverse's backward is M / m^2), else None."""
        spec = {"rope": lambda s: getattr(s, "spec", s), "mrope": lambda s: s.rope,
                "vision": lambda s: s.spec.rope}.get(self.kind)
        return None if spec is None else spec(self.source).attention_scale


# kind -> the extension's function (name_ for in place)
_KINDS = {"rope": "apply_rope", "mrope": "apply_mrope", "vision": "apply_vision_rope",
          "xpos": "apply_xpos", "fope": "apply_fope"}

_ROTATIONS: Dict[Tuple[str, int, Optional[str]], int] = {}


def rotation_key(kind: str, source: object, role: Optional[str] = None) -> int:
    """The key of (kind, source, role), one per distinct triple."""
    triple = (kind, id(source), role)
    if triple not in _ROTATIONS:
        _ROTATIONS[triple] = source_key(_Rotation(kind, source, role))
        source_key(source)
    return _ROTATIONS[triple]


# ---- checks shared by the ops


def positions_arg(positions, x: Tensor) -> Tuple[Optional[Tensor], int]:
    """(positions tensor or None, offset) of a positions argument, after the checks."""
    if isinstance(positions, Tensor):
        if positions.requires_grad:
            raise Error("positions.requires_grad = True: expected positions without autograd "
                        "history (positions are not differentiable; pass positions.detach())")
        if positions.device != x.device:
            raise Error(f"positions.device = {positions.device}: expected x.device = {x.device}")
        return positions, 0
    if isinstance(positions, (int, np.integer)):
        return None, int(positions)
    return torch.as_tensor(np.asarray(positions), device=x.device), 0


def _host(t: Optional[Tensor], offset: int):
    return offset if t is None else t


def _same_device(name: str, t: Tensor, x: Tensor) -> None:
    if t.device != x.device:
        raise Error(f"{name}.device = {t.device}: expected x.device = {x.device}")


# ---- composite path (tensors off the CPU): posemb's exact cos/sin, PyTorch's arithmetic
#
# Every op has one: the rotations (rotate: RoPE, M-RoPE, vision RoPE, xPos, HfFloat32Rope), FoPE
# (fope and its coefficient gradients), the absolute tables (add_positions, position_table_grad)
# and T5's bias (t5_bias, t5_table_grad); ALiBi's bias (posemb.nn.Alibi) too. What is posemb's:
# cos/sin rows over the positions' range, cached per source, range, device and dtype (RopeTable
# in double, gathered per axis for M-RoPE and vision RoPE; xpos_cos_sin in double with the
# role's decay; hf_float32_cos_sin, transformers' float32 values in x's dtype), T5's buckets,
# ALiBi's slopes; what is PyTorch's: the multiply-adds, the einsums of FoPE's mixtures, the
# gathers and the scatter-adds (index_add_, in float64; on CUDA its order is not fixed).

# (kind, id(owner), ...), first, last, device, dtype -> (owner, cos, sin); holding the owner
# keeps its id from naming another object (a spec read from a field is a new Python object).
_TABLES: Dict[Tuple[tuple, int, int, str, torch.dtype], Tuple[object, Tensor, Tensor]] = {}
_FORCE_COMPOSITE = [False]


def use_composite(x: Tensor) -> bool:
    """Whether x takes the composite path: off the CPU, or inside composite_path()."""
    return x.device.type != "cpu" or _FORCE_COMPOSITE[0]


class composite_path:
    """Within `with composite_path():` CPU tensors take the composite path too (the path a GPU
    runs, tested on the CPU against the kernels)."""

    def __enter__(self):
        self.before, _FORCE_COMPOSITE[0] = _FORCE_COMPOSITE[0], True

    def __exit__(self, *exc):
        _FORCE_COMPOSITE[0] = self.before


def _whole(positions: Tensor) -> Tensor:
    if positions.is_floating_point() and bool((positions != positions.round()).any()):
        raise Error("positions: fractional positions on the composite path: expected whole "
                    "positions (it reads posemb's tables)")
    return positions.long()


def _cached_rows(owner, source: tuple, rows, positions: Tensor, device,
                 dtype) -> Tuple[Tensor, Tensor]:
    """cos, sin [*positions.shape, pairs] gathered from rows(first, count) -> (cos, sin) numpy
    [count, pairs] over the positions' range (built on the CPU once per owner, `source` key
    (its settings), range, device and dtype)."""
    p = _whole(positions)
    first, last = int(p.min()), int(p.max())
    key = ((id(owner),) + source, first, last, str(device), dtype)
    if key not in _TABLES:
        cos, sin = rows(first, last - first + 1)
        _TABLES[key] = (owner, torch.from_numpy(np.array(cos)).to(device=device, dtype=dtype),
                        torch.from_numpy(np.array(sin)).to(device=device, dtype=dtype))
    _, cos, sin = _TABLES[key]
    return cos[p - first], sin[p - first]


def _composite_cos_sin(spec, positions: Tensor, device, dtype) -> Tuple[Tensor, Tensor]:
    """cos, sin [*positions.shape, pairs] of a RopeSpec from a RopeTable in double."""
    def rows(first: int, count: int):
        table = _posemb.RopeTable(spec, first, count, dtype="float64")
        return table.cos, table.sin

    return _cached_rows(spec, ("rope",), rows, positions, device, dtype)


def _position_grid(x: Tensor, positions: Optional[Tensor], offset: int, seq: int) -> Tensor:
    """The positions as [batch or 1, seq] on x's device."""
    if positions is None:
        positions = torch.arange(offset, offset + seq, device=x.device)
    return positions.reshape(-1, seq)


def _per_token(t: Tensor, bshd: bool) -> Tensor:
    """[b, seq, n] -> [b, seq, 1, n] (bshd) or [b, 1, seq, n] (bhsd), to broadcast over heads."""
    return t[:, :, None, :] if bshd else t[:, None, :, :]


def _rotate_pairs(a: Tensor, b: Tensor, cos: Tensor, sin: Tensor) -> Tuple[Tensor, Tensor]:
    """(a cos - b sin, a sin + b cos): one pair rotation, PyTorch's arithmetic."""
    return a * cos - b * sin, a * sin + b * cos


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).split(".")[-1]  # torch.bfloat16 -> "bfloat16"


def _inverse_of_scaled(cos: Tensor, sin: Tensor, scale: float) -> Tuple[Tensor, Tensor]:
    """(M^-1 = R^T / m for M = m R): cos / m^2, -sin / m^2 of cos, sin that hold m."""
    return cos / scale ** 2, -sin / scale ** 2


# Each source's cos, sin [b, seq, pairs] in x's dtype for x's positions (token positions
# [b or 1, seq], or axes [3, b or 1, seq] for M-RoPE and vision RoPE), FORWARD or INVERSE
# (TRANSPOSE is FORWARD with sin negated), and the RopeSpec-like geometry (rotary_offset,
# rotary_dim, pairing) of the features they turn.


def _rope_rows(source, role, grid: Tensor, x: Tensor, direction: int):
    """RopeSpec and RopeTable: RopeTable rows in double."""
    spec = getattr(source, "spec", source)  # a RopeTable's spec
    cos, sin = _composite_cos_sin(spec, grid, x.device, x.dtype)
    if direction == INVERSE:
        cos, sin = _inverse_of_scaled(cos, sin, spec.attention_scale)
    return spec, cos, sin


def _axis_rows(spec, grid: Tensor, x: Tensor, direction: int):
    """M-RoPE (an MropeSpec): RopeTable rows in double at each axis's positions, pair j taking
    axis spec.axes[j] (rotary/mrope.hpp)."""
    cos, sin = _composite_cos_sin(spec.rope, grid, x.device, x.dtype)  # [3, b, seq, pairs]
    axes = torch.tensor(spec.axes, device=x.device).expand(1, *cos.shape[1:])
    cos, sin = cos.gather(0, axes)[0], sin.gather(0, axes)[0]
    if direction == INVERSE:
        cos, sin = _inverse_of_scaled(cos, sin, spec.rope.attention_scale)
    return spec.rope, cos, sin


def _mrope_rows(source, role, grid, x, direction):
    return _axis_rows(source, grid, x, direction)


def _vision_rows(source, role, grid, x, direction):
    return _axis_rows(source.spec, grid, x, direction)


def _xpos_rows(source, role, grid: Tensor, x: Tensor, direction: int):
    """xPos: xpos_cos_sin rows in double (the role's decay; the inverse divides it out), the
    scales checked against x's dtype as the kernel checks them."""
    inverse, dtype = direction == INVERSE, _dtype_name(x.dtype)

    def rows(first: int, count: int):
        return _posemb.xpos_cos_sin(source, role, first, count, dtype, inverse)

    cos, sin = _cached_rows(source, ("xpos", role, inverse, dtype), rows, grid, x.device,
                            x.dtype)
    return source.rope, cos, sin


def _hf_rows(source, role, grid: Tensor, x: Tensor, direction: int):
    """HfFloat32Rope: transformers' float32 cos/sin cast to x's dtype (hf_float32_cos_sin)."""
    if direction == INVERSE:
        raise Error("inverse = True: expected False for an HfFloat32Rope (transformers' "
                    "rotation has no inverse; transpose=True is its backward)")
    dtype = _dtype_name(x.dtype)

    def rows(first: int, count: int):
        return _posemb.hf_float32_cos_sin(source, first, count, dtype)

    cos, sin = _cached_rows(source, ("hf", dtype), rows, grid, x.device, x.dtype)
    return source, cos, sin


def _axis_grid(x: Tensor, positions: Optional[Tensor], offset: int, seq: int) -> Tensor:
    """M-RoPE's positions as axes [3, b or 1, seq]: [3, seq] and [3, b, seq] as given, text
    positions (an offset, [seq], [b, seq] with b != 3) on all three axes."""
    if positions is not None and (positions.dim() == 3 or
                                  (positions.dim() == 2 and positions.shape[0] == 3)):
        return positions.reshape(3, -1, seq)
    return _position_grid(x, positions, offset, seq).expand(3, -1, -1)


class _Composite:
    """A source's composite row: how its positions become a grid, its cos/sin rows, and whether
    it takes an unbatched x [seq, heads, head_dim] (vision towers)."""

    def __init__(self, grid, rows, unbatched: bool = False) -> None:
        self.grid, self.rows, self.unbatched = grid, rows, unbatched


# a rotation's kind ("hf" for an HfFloat32Rope source) -> its composite row
_COMPOSITES = {"rope": _Composite(_position_grid, _rope_rows),
               "hf": _Composite(_position_grid, _hf_rows),
               "xpos": _Composite(_position_grid, _xpos_rows),
               "mrope": _Composite(_axis_grid, _mrope_rows),
               "vision": _Composite(_axis_grid, _vision_rows, unbatched=True)}


def composite_rotation(x: Tensor, positions: Optional[Tensor], offset: int, rotation,
                       layout: str, direction: int) -> Tensor:
    """A rotation by PyTorch ops on x's device with posemb's cos/sin (see the module notes).
    x: [b, seq, heads, head_dim] (bshd) or [b, heads, seq, head_dim]; vision RoPE's
    [patches, heads, head_dim] too."""
    hf = isinstance(rotation.source, _posemb.HfFloat32Rope)
    composite = _COMPOSITES["hf" if hf else rotation.kind]
    if composite.unbatched and x.dim() == 3:
        return composite_rotation(x[None], positions, offset, rotation, layout, direction)[0]
    bshd = layout == "bshd"
    grid = composite.grid(x, positions, offset, x.shape[1] if bshd else x.shape[2])
    spec, cos, sin = composite.rows(rotation.source, rotation.role, grid, x,
                                    INVERSE if direction == INVERSE else FORWARD)
    cos, sin = _per_token(cos, bshd), _per_token(sin, bshd)
    if direction == TRANSPOSE:
        sin = -sin
    lo, r = spec.rotary_offset, spec.rotary_dim
    part = x[..., lo:lo + r]
    if spec.pairing == "interleaved":
        rotated = torch.stack(_rotate_pairs(part[..., 0::2], part[..., 1::2], cos, sin),
                              dim=-1).flatten(-2)
    else:
        rotated = torch.cat(_rotate_pairs(part[..., : r // 2], part[..., r // 2:], cos, sin), -1)
    return torch.cat((x[..., :lo], rotated, x[..., lo + r:]), dim=-1)


# FoPE: C = sum_k A_cos[g, k, j] cos(w_k t), S likewise with sin (rotary/fope.hpp), cos(w_k t)
# and sin(w_k t) from a RopeTable over FoPE's retained frequencies.

_FOPE_BASES: Dict[tuple, object] = {}


def _fope_basis(config, positions: Tensor, device, dtype) -> Tuple[Tensor, Tensor]:
    """cos(w_k t), sin(w_k t) [*positions.shape, D_in] of the config's retained frequencies
    (cached per setting the frequencies depend on: a FopeConfig's fields can be changed)."""
    key = (config.head_dim, config.theta, config.train_length, config.floor_ratio,
           config.drop_clipped, config.num_inv_freq)
    if key not in _FOPE_BASES:
        w = np.array(_posemb.make_fope(config).inv_freq)
        _FOPE_BASES[key] = _posemb.RopeSpec(w, 2 * w.size)
    return _composite_cos_sin(_FOPE_BASES[key], positions, device, dtype)


def _fope_mixtures(config, grid: Tensor, sin_coef: Tensor, cos_coef: Tensor,
                   dtype) -> Tuple[Tensor, Tensor]:
    """C, S [b, seq, n_kv_heads, head_dim / 2] in `dtype`, padded slots C = 1, S = padding_sin."""
    cos_w, sin_w = _fope_basis(config, grid, grid.device, dtype)
    C = torch.einsum("bsk,gkj->bsgj", cos_w, cos_coef.to(dtype))
    S = torch.einsum("bsk,gkj->bsgj", sin_w, sin_coef.to(dtype))
    pad = config.head_dim // 2 - C.shape[-1]
    pad_c = C.new_ones(*C.shape[:3], pad)
    return (torch.cat((C, pad_c), -1), torch.cat((S, pad_c * config.padding_sin), -1))


def _fope_heads(t: Tensor, heads: int, bshd: bool) -> Tensor:
    """[b, seq, n_kv_heads, n] -> x's head axis (query head h: coefficient head h / group)."""
    t = t.repeat_interleave(heads // t.shape[2], dim=2)
    return t if bshd else t.transpose(1, 2)


def _fope_split(x: Tensor, compute) -> Tuple[Tensor, Tensor]:
    half = x.shape[-1] // 2
    x = x.to(compute)
    return x[..., :half], x[..., half:]


def _compute_dtype(x: Tensor) -> torch.dtype:
    """The kernels' arithmetic type: float64 for float64 tensors, float32 otherwise."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def composite_fope(x: Tensor, positions: Optional[Tensor], offset: int, sin_coef: Tensor,
                   cos_coef: Tensor, config, layout: str, direction: int) -> Tensor:
    """FoPE by PyTorch ops on x's device, in float32 (float64 for float64 x), rounded once."""
    bshd = layout == "bshd"
    heads = x.shape[2] if bshd else x.shape[1]
    grid = _position_grid(x, positions, offset, x.shape[1] if bshd else x.shape[2])
    compute = _compute_dtype(x)
    C, S = _fope_mixtures(config, grid, sin_coef, cos_coef, compute)
    if direction == INVERSE:
        norm = C * C + S * S
        C, S = C / norm, -S / norm
    elif direction == TRANSPOSE:
        S = -S
    C, S = _fope_heads(C, heads, bshd), _fope_heads(S, heads, bshd)
    a, b = _fope_split(x, compute)
    return torch.cat(_rotate_pairs(a, b, C, S), -1).to(x.dtype)


def composite_fope_coefficient_grads(x: Tensor, grad: Tensor, positions: Optional[Tensor],
                                     offset: int, sin_coef: Tensor, cos_coef: Tensor, config,
                                     layout: str) -> Tuple[Tensor, Tensor]:
    """dL/dA_sin[g, k, j] = sum over tokens and the group's heads of sin(w_k t) (g_b x_a - g_a
    x_b)_j, dL/dA_cos likewise with cos(w_k t) (g_a x_a + g_b x_b)_j; in float64."""
    bshd = layout == "bshd"
    grid = _position_grid(x, positions, offset, x.shape[1] if bshd else x.shape[2])
    cos_w, sin_w = _fope_basis(config, grid, x.device, torch.float64)
    xa, xb = _fope_split(x, torch.float64)
    ga, gb = _fope_split(grad, torch.float64)
    d_out, groups = sin_coef.shape[2], sin_coef.shape[0]

    def per_group(t: Tensor) -> Tensor:  # [b, s, h, half] or [b, h, s, half] -> [b, s, g, D_out]
        t = (t if bshd else t.transpose(1, 2))[..., :d_out]
        b, s, h, _ = t.shape
        return t.reshape(b, s, groups, h // groups, d_out).sum(3)

    d_cos = torch.einsum("bsk,bsgj->gkj", cos_w, per_group(ga * xa + gb * xb))
    d_sin = torch.einsum("bsk,bsgj->gkj", sin_w, per_group(gb * xa - ga * xb))
    return d_sin.to(sin_coef.dtype), d_cos.to(cos_coef.dtype)


def composite_add_positions(x: Tensor, positions: Optional[Tensor], offset: int,
                            table: Tensor) -> Tensor:
    """x [b, s, d] + table[positions]: a gather on x's device."""
    rows = _table_rows(x, positions, offset, table.shape[0])
    return x + table[rows]


def _table_rows(x: Tensor, positions: Optional[Tensor], offset: int, max_len: int) -> Tensor:
    """The table row of every token, [b or 1, seq], after the kernels' range check."""
    rows = _whole(_position_grid(x, positions, offset, x.shape[1]))
    low, high = int(rows.min()), int(rows.max())
    for p in (low, high):
        if p < 0 or p >= max_len:
            raise Error(f"position = {p}: outside the position table's range [0, {max_len})")
    return rows


def composite_position_table_grad(grad: Tensor, positions: Optional[Tensor], offset: int,
                                  table: Tensor) -> Tensor:
    """dL/dtable: grad's rows scatter-added by position (index_add_ in float64)."""
    rows = _table_rows(grad, positions, offset, table.shape[0]).expand(grad.shape[:2])
    total = torch.zeros(table.shape, dtype=torch.float64, device=grad.device)
    total.index_add_(0, rows.reshape(-1), grad.reshape(-1, grad.shape[-1]).double())
    return total.to(table.dtype)


def _t5_ids(buckets, q_positions: Tensor, k_positions: Tensor, device) -> Tensor:
    """posemb's bucket of every (query, key) pair, [q_len, k_len] int64 on `device`."""
    ids = _posemb.t5_bucket_matrix(buckets, q_positions.cpu().numpy(), k_positions.cpu().numpy())
    return torch.from_numpy(np.asarray(ids)).to(device)


def composite_t5_bias(table: Tensor, q_positions: Tensor, k_positions: Tensor, buckets) -> Tensor:
    """table[bucket(k - q)] as [heads, q_len, k_len]: a gather on the table's device."""
    return table[_t5_ids(buckets, q_positions, k_positions, table.device)].permute(2, 0, 1)


def composite_t5_table_grad(grad: Tensor, q_positions: Tensor, k_positions: Tensor, buckets,
                            table: Tensor) -> Tensor:
    """dL/dtable [num_buckets, heads]: grad [heads, q, k] scatter-added by bucket (float64)."""
    ids = _t5_ids(buckets, q_positions, k_positions, grad.device)
    total = torch.zeros(table.shape, dtype=torch.float64, device=grad.device)
    total.index_add_(0, ids.reshape(-1), grad.permute(1, 2, 0).reshape(-1, table.shape[1]).double())
    return total.to(table.dtype)


def composite_alibi(slopes, q_positions: Tensor, k_positions: Tensor, form: str,
                    dtype: torch.dtype) -> Tensor:
    """ALiBi's bias [heads, q_len, k_len] on the positions' device: -slope_h (q_i - k_j) in
    float64 (causal: -inf where k_j > q_i; symmetric: -slope_h |q_i - k_j|), then cast."""
    if form not in ("causal", "symmetric"):
        raise Error(f"form = {form!r}: expected 'causal' or 'symmetric'")
    device = q_positions.device
    s = torch.as_tensor(np.asarray(slopes), dtype=torch.float64, device=device)[:, None, None]
    distance = (q_positions.double()[:, None] - k_positions.to(device).double()[None, :])
    if form == "symmetric":
        return (-s * distance.abs()).to(dtype)
    bias = -s * distance
    return bias.masked_fill(distance < 0, float("-inf")).to(dtype)


# ---- posemb::rotate


@torch.library.custom_op("posemb::rotate", mutates_args=())
def rotate(x: Tensor, positions: Optional[Tensor], offset: int, source: int, layout: str,
           direction: int, threads: int) -> Tensor:
    """x rotated by the source under key `source` (rotation_key) in `direction`."""
    rotation = _SOURCES[source]
    if use_composite(x):
        return composite_rotation(x, positions, offset, rotation, layout, direction)
    return rotation.apply(x.detach(), _host(positions, offset), layout, direction, threads, False)


@rotate.register_fake
def _(x, positions, offset, source, layout, direction, threads):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _rotate_setup(ctx, inputs, output):
    x, positions, offset, source, layout, direction, threads = inputs
    ctx.save_for_backward(positions)
    ctx.args = (offset, source, layout, direction, threads)


def _rotate_backward(ctx, grad):
    (positions,) = ctx.saved_tensors
    offset, source, layout, direction, threads = ctx.args
    if direction == INVERSE:  # (M^-1)^T = M / m^2 for M = m R
        scale = _SOURCES[source].inverse_scale()
        grad_x = rotate(grad, positions, offset, source, layout, FORWARD, threads) / scale ** 2
    else:
        back = TRANSPOSE if direction == FORWARD else FORWARD
        grad_x = rotate(grad, positions, offset, source, layout, back, threads)
    return grad_x, None, None, None, None, None, None


torch.library.register_autograd("posemb::rotate", _rotate_backward, setup_context=_rotate_setup)


@torch.library.custom_op("posemb::rotate_", mutates_args=("x",))
def rotate_(x: Tensor, positions: Optional[Tensor], offset: int, source: int, layout: str,
            direction: int, threads: int) -> None:
    """x rotated in place (tensors that need no gradient; see apply_rotation)."""
    if use_composite(x) or not x.is_contiguous():
        x.copy_(rotate(x, positions, offset, source, layout, direction, threads))
        return
    _SOURCES[source].apply(x.detach(), _host(positions, offset), layout, direction, threads, True)


@rotate_.register_fake
def _(x, positions, offset, source, layout, direction, threads):
    return None


def apply_rotation(kind: str, x: Tensor, positions, source, layout: str, inverse: bool,
                   threads: int, in_place: bool, role: Optional[str] = None,
                   transpose: bool = False) -> Tensor:
    """The torch path of posemb.apply_rope and friends: in place follows PyTorch's rules (an
    in-place call on a leaf that requires grad raises as PyTorch does; on a non-leaf it records
    the backward)."""
    p, offset = positions_arg(positions, x)
    if inverse and transpose:
        raise Error("transpose = True: expected False with inverse=True (one direction per call)")
    direction = INVERSE if inverse else TRANSPOSE if transpose else FORWARD
    key = rotation_key(kind, source, role)
    if inverse and torch.is_grad_enabled() and x.requires_grad and \
            _SOURCES[key].inverse_scale() is None:
        raise Error(f"inverse = True: expected False for an {kind} tensor that requires grad "
                    "(the inverse of a scaled rotation has no backward here)")
    needs_graph = torch.is_grad_enabled() and x.requires_grad
    if not in_place:
        return rotate(x, p, offset, key, layout, direction, threads)
    if needs_graph:
        return x.copy_(rotate(x, p, offset, key, layout, direction, threads))
    rotate_(x, p, offset, key, layout, direction, threads)
    return x


# ---- posemb::fope


def _fope(config, sin_coef: Tensor, cos_coef: Tensor):
    return _posemb.fope_with_coefficients(
        config, sin_coef.detach().cpu().float().numpy(), cos_coef.detach().cpu().float().numpy())


@torch.library.custom_op("posemb::fope", mutates_args=())
def fope(x: Tensor, positions: Optional[Tensor], offset: int, sin_coef: Tensor,
         cos_coef: Tensor, config: int, layout: str, direction: int, threads: int) -> Tensor:
    """x rotated by FoPE with the coefficient tensors sin_coef, cos_coef [n_kv_heads, D_in,
    D_out] and the FopeConfig under key `config`."""
    if use_composite(x):
        return composite_fope(x, positions, offset, sin_coef, cos_coef, _SOURCES[config], layout,
                              direction)
    f = _fope(_SOURCES[config], sin_coef, cos_coef)
    return _posemb.apply_fope(x.detach(), _host(positions, offset), f, layout=layout,
                              inverse=direction == INVERSE, threads=threads,
                              transpose=direction == TRANSPOSE)


@fope.register_fake
def _(x, positions, offset, sin_coef, cos_coef, config, layout, direction, threads):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("posemb::fope_coefficient_grads", mutates_args=())
def fope_coefficient_grads(x: Tensor, grad: Tensor, positions: Optional[Tensor], offset: int,
                           sin_coef: Tensor, cos_coef: Tensor, config: int,
                           layout: str) -> Tuple[Tensor, Tensor]:
    """(dL/dA_sin, dL/dA_cos) in the coefficients' dtype (accumulated in double)."""
    if use_composite(x):
        return composite_fope_coefficient_grads(x, grad, positions, offset, sin_coef, cos_coef,
                                                _SOURCES[config], layout)
    f = _fope(_SOURCES[config], sin_coef, cos_coef)
    d_sin, d_cos = _posemb.fope_coefficient_gradients(
        x.detach().contiguous(), grad.detach().contiguous(), _host(positions, offset), f, layout)
    return (torch.from_numpy(d_sin).to(sin_coef.dtype), torch.from_numpy(d_cos).to(cos_coef.dtype))


@fope_coefficient_grads.register_fake
def _(x, grad, positions, offset, sin_coef, cos_coef, config, layout):
    return torch.empty_like(sin_coef), torch.empty_like(cos_coef)


def _fope_setup(ctx, inputs, output):
    x, positions, offset, sin_coef, cos_coef, config, layout, direction, threads = inputs
    ctx.save_for_backward(x, positions, sin_coef, cos_coef)
    ctx.args = (offset, config, layout, direction, threads)


def _fope_backward(ctx, grad):
    x, positions, sin_coef, cos_coef = ctx.saved_tensors
    offset, config, layout, direction, threads = ctx.args
    if direction != FORWARD:
        raise Error("direction: expected the forward FoPE rotation (its inverse has no backward)")
    grad_x = fope(grad, positions, offset, sin_coef, cos_coef, config, layout, TRANSPOSE, threads)
    d_sin = d_cos = None
    if ctx.needs_input_grad[3] or ctx.needs_input_grad[4]:
        d_sin, d_cos = fope_coefficient_grads(x, grad, positions, offset, sin_coef, cos_coef,
                                              config, layout)
    return grad_x, None, None, d_sin, d_cos, None, None, None, None


torch.library.register_autograd("posemb::fope", _fope_backward, setup_context=_fope_setup)


def apply_fope_tensor(x: Tensor, positions, config, sin_coef: Tensor, cos_coef: Tensor,
                      layout: str = "bshd", inverse: bool = False, threads: int = 1) -> Tensor:
    """FoPE of x with coefficient tensors (learnable: gradients reach sin_coef and cos_coef)."""
    p, offset = positions_arg(positions, x)
    _same_device("sin_coef", sin_coef, x)
    _same_device("cos_coef", cos_coef, x)
    if sin_coef.dtype != cos_coef.dtype:
        raise Error(f"cos_coef.dtype = {cos_coef.dtype}: expected sin_coef.dtype = {sin_coef.dtype}")
    if inverse and torch.is_grad_enabled() and (x.requires_grad or sin_coef.requires_grad):
        raise Error("inverse = True: expected False for FoPE tensors that require grad")
    return fope(x, p, offset, sin_coef, cos_coef, source_key(config), layout,
                INVERSE if inverse else FORWARD, threads)


# ---- posemb::add_positions (learned or sinusoidal absolute tables)


@torch.library.custom_op("posemb::add_positions", mutates_args=())
def add_positions(x: Tensor, positions: Optional[Tensor], offset: int, table: Tensor) -> Tensor:
    """x [batch, seq, d] + table[positions] (table [max_len, d] of x's dtype)."""
    if use_composite(x):
        return composite_add_positions(x, positions, offset, table)
    return _posemb.add_position_embeddings(x.detach(), _host(positions, offset), table.detach())


@add_positions.register_fake
def _(x, positions, offset, table):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("posemb::position_table_grad", mutates_args=())
def position_table_grad(grad: Tensor, positions: Optional[Tensor], offset: int,
                        table: Tensor) -> Tensor:
    """dL/dtable [max_len, d] in the table's dtype (a scatter-add in double, in token order)."""
    if use_composite(grad):
        return composite_position_table_grad(grad, positions, offset, table)
    d = _posemb.position_table_gradient(grad.detach().contiguous(), _host(positions, offset),
                                        table.shape[0])
    return torch.from_numpy(d).to(table.dtype)


@position_table_grad.register_fake
def _(grad, positions, offset, table):
    return torch.empty_like(table)


def _add_setup(ctx, inputs, output):
    x, positions, offset, table = inputs
    ctx.save_for_backward(positions, table)
    ctx.offset = offset


def _add_backward(ctx, grad):
    positions, table = ctx.saved_tensors
    d_table = None
    if ctx.needs_input_grad[3]:
        d_table = position_table_grad(grad, positions, ctx.offset, table)
    return grad, None, None, d_table


torch.library.register_autograd("posemb::add_positions", _add_backward, setup_context=_add_setup)


def add_positions_tensor(x: Tensor, positions, table: Tensor, in_place: bool) -> Tensor:
    """The torch path of posemb.add_position_embeddings(_)."""
    p, offset = positions_arg(positions, x)
    _same_device("table", table, x)
    if table.dtype != x.dtype:
        raise Error(f"table.dtype = {table.dtype}: expected x.dtype = {x.dtype}")
    y = add_positions(x, p, offset, table)
    return x.copy_(y) if in_place else y


# ---- posemb::t5_bias


@torch.library.custom_op("posemb::t5_bias", mutates_args=())
def t5_bias(table: Tensor, q_positions: Tensor, k_positions: Tensor, buckets: int) -> Tensor:
    """T5's bias [heads, q_len, k_len] from table [num_buckets, heads] (the kernel forms float32
    values, cast to the table's dtype)."""
    if use_composite(table):
        return composite_t5_bias(table, q_positions, k_positions, _SOURCES[buckets])
    t = _posemb.T5BiasTable(_SOURCES[buckets], table.detach().cpu().float().numpy())
    return torch.from_numpy(_posemb.t5_bias(t, q_positions.cpu(), k_positions.cpu())).to(
        device=table.device, dtype=table.dtype)


@t5_bias.register_fake
def _(table, q_positions, k_positions, buckets):
    return table.new_empty((table.shape[1], q_positions.shape[0], k_positions.shape[0]))


@torch.library.custom_op("posemb::t5_table_grad", mutates_args=())
def t5_table_grad(grad: Tensor, q_positions: Tensor, k_positions: Tensor, buckets: int,
                  table: Tensor) -> Tensor:
    """dL/dtable [num_buckets, heads] in the table's dtype (a scatter-add in double)."""
    if use_composite(grad):
        return composite_t5_table_grad(grad, q_positions, k_positions, _SOURCES[buckets], table)
    d = _posemb.t5_table_gradient(grad.detach().cpu().contiguous(), _SOURCES[buckets],
                                  q_positions.cpu(), k_positions.cpu())
    return torch.from_numpy(d).to(device=table.device, dtype=table.dtype)


@t5_table_grad.register_fake
def _(grad, q_positions, k_positions, buckets, table):
    return torch.empty_like(table)


def _t5_setup(ctx, inputs, output):
    table, q_positions, k_positions, buckets = inputs
    ctx.save_for_backward(table, q_positions, k_positions)
    ctx.buckets = buckets


def _t5_backward(ctx, grad):
    table, q_positions, k_positions = ctx.saved_tensors
    return t5_table_grad(grad, q_positions, k_positions, ctx.buckets, table), None, None, None


torch.library.register_autograd("posemb::t5_bias", _t5_backward, setup_context=_t5_setup)


def t5_bias_tensor(table: Tensor, buckets, q_positions, k_positions) -> Tensor:
    """T5's bias from a learnable table tensor [num_buckets, heads] (gradients reach it)."""
    q = torch.as_tensor(q_positions, dtype=torch.int64)
    k = torch.as_tensor(k_positions, dtype=torch.int64)
    for name, p in (("q_positions", q), ("k_positions", k)):
        if p.requires_grad:
            raise Error(f"{name}.requires_grad = True: expected positions without autograd history")
    return t5_bias(table, q.cpu(), k.cpu(), source_key(buckets))
