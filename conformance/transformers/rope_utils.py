"""transformers' rope parameterisations (the kinds tests/utils/test_modeling_rope_utils.py
exercises) pointed at posemb: expected inv_freq and attention factor come from calling
transformers' ROPE_INIT_FUNCTIONS / compute_default_rope_parameters here, never copied; what
transformers' validation refuses or warns about, posemb must refuse (posemb.Error) or report
(ModelPositions.warnings / unused_keys)."""

from __future__ import annotations

import json
import logging
import os

import numpy as np

import posemb
from report import Row

HEAD = 64  # hidden_size 256, 4 heads
BASE = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
        "num_hidden_layers": 1, "max_position_embeddings": 4096}
_SHORT = [1.0 + 0.01 * i for i in range(HEAD // 2)]
_LONG = [1.0 + 0.25 * i for i in range(HEAD // 2)]

# name -> (rope_parameters, seq_lens to call at (None: the init call without one))
PARAMETERISATIONS = {
    "default": ({"rope_type": "default", "rope_theta": 10000.0}, [None]),
    "default-partial": ({"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": 0.5}, [None]),
    "linear-2": ({"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}, [None]),
    "linear-10": ({"rope_type": "linear", "rope_theta": 10000.0, "factor": 10.0}, [None]),
    "dynamic-2": ({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, [None, 4096, 8192, 100000]),
    "yarn-8": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "original_max_position_embeddings": 512}, [None]),
    "yarn-betas": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "beta_fast": 16.0, "beta_slow": 2.0, "original_max_position_embeddings": 1024}, [None]),
    "yarn-attention-factor": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "attention_factor": 0.5, "original_max_position_embeddings": 1024}, [None]),
    "yarn-mscale": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 1024}, [None]),
    "yarn-no-truncate": ({"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "truncate": False, "original_max_position_embeddings": 128}, [None]),
    "yarn-implicit-factor": ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0}, [None]),
    "longrope": ({"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": _SHORT, "long_factor": _LONG, "original_max_position_embeddings": 1024}, [1024, 1025, 4096]),
    "longrope-attention-factor": ({"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": _SHORT, "long_factor": _LONG, "attention_factor": 1.25, "original_max_position_embeddings": 1024}, [1024, 4096]),
    "llama3": ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, [None]),
    "llama3-32": ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, [None]),
}

# name -> rope_parameters that transformers' validation warns about or refuses
INVALID = {
    "linear-factor-below-1": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 0.5},
    "dynamic-factor-below-1": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 0.5},
    "yarn-factor-below-1": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 0.5},
    "yarn-beta-fast-below-slow": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "beta_fast": 1.0, "beta_slow": 32.0},
    "linear-missing-factor": {"rope_type": "linear", "rope_theta": 10000.0},
    "longrope-short-length": {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": _SHORT[:5], "long_factor": _LONG, "original_max_position_embeddings": 1024},
    "llama3-low-above-high": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
    "unknown-key": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0, "not_a_rope_key": 1},
    "unknown-type": {"rope_type": "not_a_rope_type", "rope_theta": 10000.0},
}


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _transformers(rope_parameters):
    """(config or None, warnings, error) of LlamaConfig(rope_parameters=...)."""
    from transformers import LlamaConfig
    from transformers.utils import logging as hf_logging

    handler = _Collect()
    logger = hf_logging.get_logger("transformers")
    logger.addHandler(handler)
    try:
        fields = {k: v for k, v in BASE.items() if k != "model_type"}
        config = LlamaConfig(rope_parameters=dict(rope_parameters), **fields)
        error = None
    except Exception as e:  # transformers refuses the config
        config, error = None, f"{type(e).__name__}: {e}"
    finally:
        logger.removeHandler(handler)
    return config, handler.messages, error


def _posemb(rope_parameters, folder, name):
    path = os.path.join(folder, f"{name}.json")
    with open(path, "w") as f:
        json.dump(BASE | {"rope_parameters": rope_parameters}, f)
    return posemb.load_model(path)


def rows(out_dir):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    folder = os.path.join(out_dir, "rope_utils")
    os.makedirs(folder, exist_ok=True)
    result = []
    for name, (params, seq_lens) in PARAMETERISATIONS.items():
        case = f"rope_utils/{name}"
        config, _, error = _transformers(params)
        if config is None:
            result.append(Row(case, "inv_freq", "error", detail=f"transformers: {error}"))
            continue
        init = ROPE_INIT_FUNCTIONS.get(params["rope_type"])
        if params["rope_type"] == "default":
            from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
            init = LlamaRotaryEmbedding.compute_default_rope_parameters
        pmodel = _posemb(params, folder, name)
        worst_f, worst_a, notes = 0.0, 0.0, []
        for seq_len in seq_lens:
            inv, factor = init(config, device=None, seq_len=seq_len)
            spec = pmodel.layers[0].rope_spec(seq_len)
            ours = spec.inv_freq
            if len(ours) != len(inv):
                notes.append(f"seq_len {seq_len}: transformers has {len(inv)} frequencies, posemb {len(ours)}")
                worst_f = float("inf")
                continue
            worst_f = max(worst_f, float(np.max(np.abs(inv.double().numpy() - ours) / ours)))
            worst_a = max(worst_a, abs(float(factor) - spec.attention_scale) / abs(float(factor)))
            hf32 = pmodel.layers[0].rope_spec(seq_len, angles="hf-float32").inv_freq
            same = int((hf32 == inv.numpy()).sum())
            notes.append(f"seq_len {seq_len}: hf-float32 inv_freq equal on {same}/{len(ours)}")
        tol_f, tol_a = 16 * 2.0**-24, 1e-12
        result.append(Row(case, "inv_freq", "pass" if worst_f <= tol_f else "fail", worst_f, tol_f,
                          "; ".join(notes)))
        result.append(Row(case, "attention_factor", "pass" if worst_a <= tol_a else "fail", worst_a,
                          tol_a))
    for name, params in INVALID.items():
        case = f"rope_utils/invalid/{name}"
        _, warnings, error = _transformers(params)
        try:
            pmodel = _posemb(params, folder, name)
            said = list(pmodel.warnings) + [f"unused key {k}" for k in pmodel.unused_keys]
            refused = None
        except posemb.Error as e:
            said, refused = [], str(e).replace(folder + os.sep, "")  # the file's name, no path
        hf_says = error or "; ".join(warnings)
        if not hf_says:
            result.append(Row(case, "validation", "pass", detail="transformers accepts it silently; "
                              f"posemb: {refused or said or 'accepts'}"))
            continue
        ok = bool(refused or said) if not error else bool(refused)
        result.append(Row(case, "validation", "pass" if ok else "fail",
                          detail=f"transformers: {hf_says[:160]}; posemb: {(refused or '; '.join(said) or 'accepts silently')[:160]}"))
    return result
