"""posemb: positional embeddings for transformer models, on numpy arrays and PyTorch tensors.

Every scheme real checkpoints use (RoPE and its scaled variants, M-RoPE, vision RoPE, xPos,
FoPE, ALiBi, T5 relative bias, sinusoidal and learned tables), read from a model's config.json,
computed exactly (angles in double) by posemb's C++ library. Rotations work in place on the
caller's memory (name_) or return a new array or tensor of x's kind (name).

Tensors that require grad, tensors under torch.compile and tensors off the CPU go through
posemb's PyTorch custom ops (posemb/_ops.py, namespace posemb::), which carry the backward;
posemb.nn holds modules for training (docs/training.md).

Example:
    >>> import posemb, torch
    >>> model = posemb.load_model("config.json")
    >>> q = torch.randn(1, 16, model.n_heads, model.layers[0].head_dim)
    >>> posemb.apply_rope_(q, 0, model.layers[0].rope_spec())
"""
from . import _cpu

_cpu.check_baseline()  # before the extension loads: an ImportError naming the instruction set, not SIGILL

from ._posemb import *  # noqa: F401,F403,E402
from ._posemb import Error, __version__  # noqa: F401,E402
from . import _posemb  # noqa: E402

try:  # torch is optional: numpy users never import it
    import torch as _torch
except ImportError:  # pragma: no cover - the test venv has torch
    _torch = None
else:
    from . import _ops  # noqa: E402


def _needs_op(x) -> bool:
    """Whether a call takes posemb's custom ops: a tensor that records a gradient, is being
    compiled, or lives off the CPU. Other calls go straight to the extension."""
    if _torch is None or not isinstance(x, _torch.Tensor):
        return False
    return x.requires_grad or x.device.type != "cpu" or _torch.compiler.is_compiling()


def _rotation(kind: str, name: str, in_place: bool, with_role: bool = False):
    native = getattr(_posemb, name)

    if with_role:
        def call(x, positions, source, role, layout="bshd", inverse=False, threads=1,
                 transpose=False):
            if _needs_op(x):
                return _ops.apply_rotation(kind, x, positions, source, layout, inverse, threads,
                                           in_place, role, transpose)
            return native(x, positions, source, role, layout, inverse, threads, transpose)
    else:
        def call(x, positions, source, layout="bshd", inverse=False, threads=1, transpose=False):
            if _needs_op(x):
                return _ops.apply_rotation(kind, x, positions, source, layout, inverse, threads,
                                           in_place, None, transpose)
            return native(x, positions, source, layout, inverse, threads, transpose)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = native.__doc__
    return call


apply_rope_ = _rotation("rope", "apply_rope_", True)
apply_rope = _rotation("rope", "apply_rope", False)
apply_mrope_ = _rotation("mrope", "apply_mrope_", True)
apply_mrope = _rotation("mrope", "apply_mrope", False)
apply_vision_rope_ = _rotation("vision", "apply_vision_rope_", True)
apply_vision_rope = _rotation("vision", "apply_vision_rope", False)
apply_xpos_ = _rotation("xpos", "apply_xpos_", True, with_role=True)
apply_xpos = _rotation("xpos", "apply_xpos", False, with_role=True)
apply_fope_ = _rotation("fope", "apply_fope_", True)
apply_fope = _rotation("fope", "apply_fope", False)


def _adding(name: str, in_place: bool):
    native = getattr(_posemb, name)

    def call(x, positions, table):
        if _needs_op(x) or (_torch is not None and isinstance(table, _torch.Tensor)
                            and table.requires_grad and _torch.is_grad_enabled()):
            return _ops.add_positions_tensor(x, positions, table, in_place)
        return native(x, positions, table)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = native.__doc__
    return call


add_position_embeddings_ = _adding("add_position_embeddings_", True)
add_position_embeddings = _adding("add_position_embeddings", False)

if _torch is not None:
    from . import nn  # noqa: E402,F401

__all__ = [name for name in dir(_posemb) if not name.startswith("_")] + ["__version__"]
