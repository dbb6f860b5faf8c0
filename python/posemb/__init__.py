"""posemb: positional embeddings for transformer models, on numpy arrays and PyTorch tensors.

Every scheme real checkpoints use (RoPE and its scaled variants, M-RoPE, vision RoPE, xPos,
FoPE, ALiBi, T5 relative bias, sinusoidal and learned tables), read from a model's config.json,
computed exactly (angles in double) by posemb's C++ library. Rotations work in place on the
caller's memory (name_) or return a new array or tensor of x's kind (name).

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

__all__ = [name for name in dir(_posemb) if not name.startswith("_")] + ["__version__"]
