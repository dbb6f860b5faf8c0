"""Sweep cases: a model type of the pinned transformers that has no hand-written case
(tiny_models.CASES) and no documented reason (coverage.REASONS) gets a tiny model built from its
config class's own defaults (for most classes the positional values of the checkpoint their
docstring names), with only the sizes made small (SIZES; LAYERS where two layers would not hold
each layer type), run through the same rope checks as
a hand-written case (rope_case.rope_case). The rope function is the modeling module's
`apply_rotary_pos_emb` (and `apply_rotary_pos_emb_interleave` where it has one); its arguments are read by signature (q, k, cos, sin) or (x, cos, sin) and
the layout from the 32-position sequence axis.

    register(model_type) -> case name ("sweep/<model_type>") in tiny_models.CASES and
                            capture.ADAPTERS, or raises when the type has no such function
"""

from __future__ import annotations

import importlib
import inspect

import capture
import tiny_models

# Small sizes, each set only when the config class has the field (per-family names).
SIZES = {
    "vocab_size": 256, "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 2, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32, "num_experts": 2, "num_local_experts": 2,
    "n_routed_experts": 2, "num_experts_per_tok": 1, "n_shared_experts": 1, "n_group": 1,
    "topk_group": 1, "first_k_dense_replace": 1, "pad_token_id": 0, "bos_token_id": 1,
    "eos_token_id": 2, "q_lora_rank": 32, "kv_lora_rank": 32, "d_model": 64, "n_embd": 64,
    "n_layer": 2, "n_head": 2, "ffn_hidden_size": 64, "shared_intermediate_size": 32,
}
# Model types whose class pattern needs more than SIZES' two layers to hold each of its layer
# types (the default layer_types of 2 layers are all sliding; HY V4's indexer_types of 2 layers
# are all "full"): the layers their sweep builds.
LAYERS = {"afmoe": 4, "exaone_moe": 4, "kolibri1": 5, "lara_mini": 5, "ultrabert": 3,
          "hy_v4": 3}  # HY V4: layer 2 a "shared" indexer layer
SEQ = 32  # every position set has 32 positions (rope_case.position_sets)


def _layout(x) -> str:
    return "bhsd" if x.shape[2] == SEQ else "bshd"


def _pair(args, result):
    return [("q", args[0], result[0], _layout(args[0])), ("k", args[1], result[1], _layout(args[1]))]


def _single(args, result):
    return [("x", args[0], result, _layout(args[0]))]


def modeling_module(model_type: str) -> str:
    """The module path under transformers.models of the config class's modeling file."""
    from transformers import CONFIG_MAPPING

    package = CONFIG_MAPPING[model_type].__module__.rsplit(".", 1)[0]  # transformers.models.x
    name = package.rsplit(".", 1)[1]
    return f"{name}.modeling_{name}"


def register(model_type: str) -> str:
    from transformers import CONFIG_MAPPING

    module = modeling_module(model_type)
    modeling = importlib.import_module(f"transformers.models.{module}")
    # HY V4 (5.25.0) has apply_rotary_pos_emb_interleave only
    function = getattr(modeling, "apply_rotary_pos_emb", None) or \
        getattr(modeling, "apply_rotary_pos_emb_interleave")
    # transformers 5.25 with its kernels dependency installed wraps the function in an
    # nn.Module (use_kernel_forward_from_hub): the signature is its forward's
    params = list(inspect.signature(getattr(function, "forward", function)).parameters)
    # DeepSeek-V3's rope_interleave: both functions
    names = "|".join(name for name in ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave")
                     if hasattr(modeling, name))
    adapt = _pair if params[:2] == ["q", "k"] else _single
    fields = set()
    for klass in CONFIG_MAPPING[model_type].__mro__:
        fields |= set(getattr(klass, "__annotations__", {}))
    name = f"sweep/{model_type}"
    overrides = {k: v for k, v in SIZES.items() if k in fields}
    if model_type in LAYERS:
        overrides["num_hidden_layers"] = LAYERS[model_type]
    tiny_models.CASES[name] = tiny_models.Case(model_type, overrides, "config-class defaults", auto="any")
    capture.ADAPTERS[model_type] = capture.Adapter(module, names, adapt)
    return name
