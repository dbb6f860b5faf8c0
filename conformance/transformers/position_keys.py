"""The config keys transformers' modeling code reads for positions or attention, derived from the
installed transformers itself, for every model type of posemb's family tables:

    python conformance/transformers/position_keys.py            # prints the list
    python conformance/transformers/position_keys.py --write    # rewrites position_keys.json

A key is listed when it is a field of the model type's configuration class (its annotations and
attribute_map) and the model type's modeling_*.py reads it as `<...config>.key` or
`getattr(<...config>, "key")` inside an attention or rotary class (ATTENTION_CLASS, not a vision /
audio tower's) or a rope-index / attention-scaling function (ATTENTION_FUNCTION), or when
transformers' shared rope and mask code (SHARED_FILES) reads it from the config.

Every listed key is, in posemb, one of (tests/python/test_position_keys.py checks it):
  - in the reader's reported keys (include/posemb/model/config/unused_keys.hpp, position_keys()):
    named by `inspect`, Python's warnings and ModelPositions::unused_keys when the reader did not
    use it, and refused by --strict;
  - READ_WHEN_NEEDED: read by the reader whenever it decides something (hidden_size only without
    head_dim, ...), so never reported;
  - IRRELEVANT: no effect on positions, the rotation or the attention pattern, with the reason.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIST = os.path.join(HERE, "position_keys.json")
COMMAND = "python conformance/transformers/position_keys.py --write"

ATTENTION_CLASS = re.compile(r"Attention|Rotary|Rope|RoPE|Indexer")
TOWER_CLASS = re.compile(r"Vision|Audio|Speech|Image|Patch|Video|Cross")
ATTENTION_FUNCTION = re.compile(r"rope_index|rotary|attn_scale|attention_scaling", re.I)
SHARED_FILES = ("modeling_rope_utils.py", "masking_utils.py")

# Read by posemb's config reader where it needs them (include/posemb/model/config/).
READ_WHEN_NEEDED = {
    "hidden_size": "the head size hidden_size / num_attention_heads when head_dim is absent",
    "num_attention_heads": "the head count (layers.hpp, read_heads)",
    "num_heads": "the head count's other spelling (read_heads)",
    "n_head": "GPT-2's head count (read_heads)",
    "n_heads": "the head count's other spelling (read_heads)",
    "num_key_value_heads": "the key/value head count (read_heads)",
    "num_kv_heads": "the key/value head count's other spelling (read_heads)",
    "multi_query": "Falcon's one key/value head (read_heads)",
    "max_position_embeddings": "the length scaled rope types and learned tables read",
    "max_seq_len": "MPT's max_position_embeddings (read_heads)",
    "num_hidden_layers": "the layer count (read_layer_count)",
    "d_model": "the head size d_model / heads without head_dim (base_head_dim)",
    "d_kv": "T5's head size (base_head_dim)",
    "kv_channels": "JetMoE's head size (base_head_dim)",
    "attn_config": "MPT's ALiBi and softmax scale (mpt_attn_config)",
    "relative_attention_num_buckets": "T5's bucket count (read_t5_buckets)",
    "relative_attention_max_distance": "T5's bucket range (read_t5_buckets)",
    "mlp_layer_types": "Cohere2-MoE's dense layers with RoPE (dense_prefix_rope_layers)",
    "prefix_dense_sliding_window_pattern": "Cohere2-MoE's dense prefix pattern",
    "key_multiplier": "Falcon-H1's key scale in the softmax scale (read_softmax_scale)",
}

# Read by attention code, but nothing of positions, the rotation or which keys a query sees.
IRRELEVANT = {
    "attention_dropout": "training-time dropout of the attention probabilities",
    "attention_probs_dropout_prob": "training-time dropout of the attention probabilities",
    "attn_pdrop": "training-time dropout of the attention probabilities",
    "resid_pdrop": "training-time dropout after the attention output",
    "resid_dropout": "training-time dropout after the attention output",
    "hidden_dropout": "training-time dropout after the attention output",
    "residual_dropout": "training-time dropout after the attention output",
    "dropout": "training-time dropout",
    "dropout_rate": "training-time dropout",
    "attention_bias": "biases of the q/k/v/o projections: q and k are rotated after them",
    "bias": "biases of the projections, before the rotation",
    "use_bias": "biases of the projections, before the rotation",
    "enable_bias": "biases of the projections, before the rotation",
    "qkv_bias": "biases of the q/k/v projections, before the rotation",
    "use_qkv_bias": "biases of the q/k/v projections, before the rotation",
    "rms_norm_eps": "the epsilon of the q/k norms applied before the rotation",
    "layer_norm_eps": "the epsilon of the q/k norms applied before the rotation",
    "layer_norm_epsilon": "the epsilon of the q/k norms applied before the rotation",
    "norm_eps": "the epsilon of the q/k norms applied before the rotation",
    "use_qk_norm": "a norm of q and k before the rotation (their values, not their positions)",
    "qk_layernorm": "a norm of q and k before the rotation (their values, not their positions)",
    "q_lora_rank": "MLA's low-rank query projection, before the [nope, rope] split",
    "kv_lora_rank": "MLA's low-rank key/value projection, before the split",
    "v_head_dim": "the value head size: values are not rotated",
    "initializer_range": "weight initialisation",
    "dtype": "the weights' storage type",
    "hidden_act": "the activation of a projection, no position",
    "pretraining_tp": "tensor-parallel slicing of the projections (same result)",
    "slow_but_exact": "BLOOM's tensor-parallel merge of the output projection",
    "new_decoder_architecture": "Falcon's fused q/k/v layout (which weights, not which positions)",
    "is_decoder": "whether the module is built as a decoder (causality is the family's row)",
    "vision_config": "the vision tower's own config (posemb reads text towers)",
    "reorder_and_upcast_attn": "GPT-2's float32 upcast of q·k (arithmetic, not the formula)",
    "attention_softmax_in_fp32": "GPT-BigCode's float32 softmax (arithmetic, not the formula)",
    "scale_attention_softmax_in_fp32": "GPT-BigCode's float32 softmax scaling arithmetic",
    "learnable_sink_init": "the initial value of learned sink logits (the weights hold them)",
    "num_experts_per_tok": "mixture-of-experts routing",
    "block_size": "the kernel's tile size of a block-sparse implementation",
    "deterministic_flash_attn": "a kernel choice, same formula",
    "index_n_heads": "the lightning indexer's head count (each head rotated alike)",
    "index_topk": "how many keys the lightning indexer keeps, chosen by score (content), after "
                  "the rotation posemb gives (LayerPositions.indexer)",
    "attention_k_eq_v": "Gemma 4's values taken from the key projection before its norm and "
                        "rotation (modeling_gemma4.py, Gemma4TextAttention.forward)",
}


def _config_name(node) -> bool:
    """config, self.config, layer_config, text_config[...], ...: a config object."""
    if isinstance(node, ast.Name):
        return node.id.endswith("config")
    if isinstance(node, ast.Attribute):
        return node.attr.endswith("config")
    if isinstance(node, ast.Subscript):
        return _config_name(node.value)
    return False


class _Reads(ast.NodeVisitor):
    """The config attributes a module's attention code reads (everywhere when whole is true)."""

    def __init__(self, whole: bool):
        self.inside = [whole]
        self.keys: set[str] = set()

    def visit_ClassDef(self, node):
        self.inside.append(bool(ATTENTION_CLASS.search(node.name))
                           and not TOWER_CLASS.search(node.name))
        self.generic_visit(node)
        self.inside.pop()

    def visit_FunctionDef(self, node):
        self.inside.append(bool(ATTENTION_FUNCTION.search(node.name)))
        self.generic_visit(node)
        self.inside.pop()

    def visit_Attribute(self, node):
        if any(self.inside) and _config_name(node.value):
            self.keys.add(node.attr)
        self.generic_visit(node)

    def visit_Call(self, node):
        args = node.args
        if (any(self.inside) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(args) >= 2
                and _config_name(args[0]) and isinstance(args[1], ast.Constant)
                and isinstance(args[1].value, str)):
            self.keys.add(args[1].value)
        self.generic_visit(node)


def _reads(path: str, whole: bool) -> set[str]:
    reader = _Reads(whole)
    with open(path) as file:
        reader.visit(ast.parse(file.read()))
    return reader.keys


def _fields(cls) -> set[str]:
    names = set(getattr(cls, "attribute_map", {}))
    for klass in cls.__mro__:
        names |= set(getattr(klass, "__annotations__", {}))
    return names


def posemb_model_types() -> set[str]:
    """The model types of posemb's family tables (include/posemb/model/families.hpp)."""
    with open(os.path.join(ROOT, "include", "posemb", "model", "families.hpp")) as file:
        return set(re.findall(r'^\s+\{"([a-z0-9_\-]+)", "', file.read(), flags=re.M))


def derive() -> dict:
    """{"transformers": version, "command": ..., "keys": {key: [model types]}}."""
    import transformers
    from transformers import CONFIG_MAPPING

    package = os.path.dirname(transformers.__file__)
    shared = set()
    for name in SHARED_FILES:
        shared |= _reads(os.path.join(package, name), whole=True)
    keys: dict[str, set[str]] = {}
    for model_type in sorted(posemb_model_types()):
        if model_type not in CONFIG_MAPPING:
            continue  # a family row for a model type this transformers does not have
        cls = CONFIG_MAPPING[model_type]
        folder = os.path.dirname(sys.modules[cls.__module__].__file__)
        read = set(shared)
        for name in sorted(os.listdir(folder)):
            if name.startswith("modeling_") and name.endswith(".py"):
                read |= _reads(os.path.join(folder, name), whole=False)
        for key in read & _fields(cls):
            keys.setdefault(key, set()).add(model_type)
    return {"transformers": transformers.__version__, "command": COMMAND,
            "keys": {key: sorted(types) for key, types in sorted(keys.items())}}


def reported_keys() -> list[str]:
    """The reader's reported keys: position_keys() in config/unused_keys.hpp."""
    path = os.path.join(ROOT, "include", "posemb", "model", "config", "unused_keys.hpp")
    with open(path) as file:
        text = file.read()
    body = text[text.index("position_keys()"):]
    body = body[:body.index("};")]
    return re.findall(r'"([a-z0-9_]+)"', body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {os.path.relpath(LIST, ROOT)}")
    args = parser.parse_args()
    derived = derive()
    text = json.dumps(derived, indent=1) + "\n"
    if args.write:
        with open(LIST, "w") as file:
            file.write(text)
    reported = set(reported_keys())
    for key, types in derived["keys"].items():
        where = ("reported" if key in reported else "read" if key in READ_WHEN_NEEDED
                 else "irrelevant" if key in IRRELEVANT else "UNCLASSIFIED")
        print(f"{where:12} {key}: {len(types)} types")


if __name__ == "__main__":
    main()
