"""Runs a tiny model's forward pass in transformers and records what its own rope function and
attention function received and returned, per layer.

ADAPTERS is the one table of (modeling module, rope function, argument adapter): the adapter
turns one call of the family's rope function into the tensors it rotated, each
(name, x_in, x_out, layout), layout "bhsd" ([batch, heads, seq, head_dim]) or "bshd".
The wrappers replace the module attribute (the forward looks the function up in its module's
globals at call time), so the family's own code runs unchanged; the current layer is set by a
forward pre-hook on every module with a `layer_idx`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math

import torch


def _pair(args, result):
    # apply_rotary_pos_emb(q, k, cos, sin, ...) -> (q_out, k_out): q, k [batch, heads, seq, d]
    return [("q", args[0], result[0], "bhsd"), ("k", args[1], result[1], "bhsd")]


def _gptj(args, result):
    # apply_rotary_pos_emb(tensor, sin, cos) -> tensor: [batch, seq, heads, rotary_dim]; k first
    return [("x", args[0], result, "bshd")]


def _llama4(args, result):
    # apply_rotary_emb(xq, xk, freqs_cis) -> (xq_out, xk_out): [batch, seq, heads, d]
    return [("q", args[0], result[0], "bshd"), ("k", args[1], result[1], "bshd")]


def _complex(args, result):
    # apply_rotary_emb(xq, xk, freqs_cis) -> (xq_out, xk_out): [batch, heads, seq, d] (DeepSeek-V2)
    return [("q", args[0], result[0], "bhsd"), ("k", args[1], result[1], "bhsd")]


def _single(args, result):
    # apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=2) -> x: [batch, seq, heads, d]; q, then k
    return [("x", args[0], result, "bshd")]


@dataclasses.dataclass(frozen=True)
class Adapter:
    module: str  # transformers.models.<module>
    function: str  # the rope function the attention calls (several: "a|b", whichever it picks)
    adapt: object  # (args, result) -> [(name, x_in, x_out, layout)]


# model_type -> the family's modeling module, its rope function and the adapter.
ADAPTERS: dict[str, Adapter] = {
    "llama": Adapter("llama.modeling_llama", "apply_rotary_pos_emb", _pair),
    "granite": Adapter("granite.modeling_granite", "apply_rotary_pos_emb", _pair),
    "granite_swa": Adapter("granite_swa.modeling_granite_swa", "apply_rotary_pos_emb", _pair),
    "granitemoe_swa": Adapter("granitemoe_swa.modeling_granitemoe_swa", "apply_rotary_pos_emb",
                              _pair),
    "helium": Adapter("helium.modeling_helium", "apply_rotary_pos_emb", _pair),
    "olmo3": Adapter("olmo3.modeling_olmo3", "apply_rotary_pos_emb", _pair),
    "starcoder2": Adapter("starcoder2.modeling_starcoder2", "apply_rotary_pos_emb", _pair),
    "smollm3": Adapter("smollm3.modeling_smollm3", "apply_rotary_pos_emb", _pair),
    "ernie4_5": Adapter("ernie4_5.modeling_ernie4_5", "apply_rotary_pos_emb", _pair),
    "stablelm": Adapter("stablelm.modeling_stablelm", "apply_rotary_pos_emb", _pair),
    "persimmon": Adapter("persimmon.modeling_persimmon", "apply_rotary_pos_emb", _pair),
    "phi": Adapter("phi.modeling_phi", "apply_rotary_pos_emb", _pair),
    "glm": Adapter("glm.modeling_glm", "apply_rotary_pos_emb", _pair),
    "qwen2": Adapter("qwen2.modeling_qwen2", "apply_rotary_pos_emb", _pair),
    "qwen2_moe": Adapter("qwen2_moe.modeling_qwen2_moe", "apply_rotary_pos_emb", _pair),
    "qwen3": Adapter("qwen3.modeling_qwen3", "apply_rotary_pos_emb", _pair),
    "qwen3_moe": Adapter("qwen3_moe.modeling_qwen3_moe", "apply_rotary_pos_emb", _pair),
    "mistral": Adapter("mistral.modeling_mistral", "apply_rotary_pos_emb", _pair),
    "mixtral": Adapter("mixtral.modeling_mixtral", "apply_rotary_pos_emb", _pair),
    "gemma2": Adapter("gemma2.modeling_gemma2", "apply_rotary_pos_emb", _pair),
    "gemma3_text": Adapter("gemma3.modeling_gemma3", "apply_rotary_pos_emb", _pair),
    "phi3": Adapter("phi3.modeling_phi3", "apply_rotary_pos_emb", _pair),
    "gpt_neox": Adapter("gpt_neox.modeling_gpt_neox", "apply_rotary_pos_emb", _pair),
    "gptj": Adapter("gptj.modeling_gptj", "apply_rotary_pos_emb", _gptj),
    "falcon": Adapter("falcon.modeling_falcon", "apply_rotary_pos_emb", _pair),
    "deepseek_v3": Adapter("deepseek_v3.modeling_deepseek_v3", "apply_rotary_pos_emb|apply_rotary_pos_emb_interleave", _pair),
    # MLA's apply_rotary_pos_emb_interleave and the indexer's apply_rotary_pos_emb (RopeCall.indexer)
    "deepseek_v32": Adapter("deepseek_v32.modeling_deepseek_v32", "apply_rotary_pos_emb|apply_rotary_pos_emb_interleave", _pair),
    "glm4": Adapter("glm4.modeling_glm4", "apply_rotary_pos_emb", _pair),
    # MLA's and the indexer's apply_rotary_pos_emb_interleave (both interleaved)
    "glm_moe_dsa": Adapter("glm_moe_dsa.modeling_glm_moe_dsa", "apply_rotary_pos_emb_interleave", _pair),
    "cohere": Adapter("cohere.modeling_cohere", "apply_rotary_pos_emb", _pair),
    "cohere2": Adapter("cohere2.modeling_cohere2", "apply_rotary_pos_emb", _pair),
    "cohere2_moe": Adapter("cohere2_moe.modeling_cohere2_moe", "apply_rotary_pos_emb", _pair),
    "llama4_text": Adapter("llama4.modeling_llama4", "apply_rotary_emb", _llama4),
    "gpt_oss": Adapter("gpt_oss.modeling_gpt_oss", "apply_rotary_pos_emb", _pair),
    "qwen2_vl": Adapter("qwen2_vl.modeling_qwen2_vl", "apply_rotary_pos_emb", _pair),
    "qwen2_5_vl": Adapter("qwen2_5_vl.modeling_qwen2_5_vl", "apply_rotary_pos_emb", _pair),
    "qwen3_vl": Adapter("qwen3_vl.modeling_qwen3_vl", "apply_rotary_pos_emb", _pair),
    "qwen3_vl_moe": Adapter("qwen3_vl_moe.modeling_qwen3_vl_moe", "apply_rotary_pos_emb", _pair),
    "qwen3_5": Adapter("qwen3_5.modeling_qwen3_5", "apply_rotary_pos_emb", _pair),
    "qwen3_5_moe": Adapter("qwen3_5_moe.modeling_qwen3_5_moe", "apply_rotary_pos_emb", _pair),
    "codegen": Adapter("codegen.modeling_codegen", "apply_rotary_pos_emb", _gptj),
    "deepseek_v2": Adapter("deepseek_v2.modeling_deepseek_v2", "apply_rotary_emb", _complex),
    "ernie4_5_moe": Adapter("ernie4_5_moe.modeling_ernie4_5_moe", "apply_rotary_pos_emb", _pair),
    "exaone4": Adapter("exaone4.modeling_exaone4", "apply_rotary_pos_emb", _pair),
    "falcon_h1": Adapter("falcon_h1.modeling_falcon_h1", "apply_rotary_pos_emb", _pair),
    "gemma3n_text": Adapter("gemma3n.modeling_gemma3n", "apply_rotary_pos_emb", _single),
    "gemma4_text": Adapter("gemma4.modeling_gemma4", "apply_rotary_pos_emb", _single),
    "glm4_moe": Adapter("glm4_moe.modeling_glm4_moe", "apply_rotary_pos_emb", _pair),
    "granitemoehybrid": Adapter("granitemoehybrid.modeling_granitemoehybrid", "apply_rotary_pos_emb", _pair),
    "hunyuan_v1_dense": Adapter("hunyuan_v1_dense.modeling_hunyuan_v1_dense", "apply_rotary_pos_emb", _pair),
    "hunyuan_v1_moe": Adapter("hunyuan_v1_moe.modeling_hunyuan_v1_moe", "apply_rotary_pos_emb", _pair),
    "lfm2": Adapter("lfm2.modeling_lfm2", "apply_rotary_pos_emb", _pair),
    "minimax": Adapter("minimax.modeling_minimax", "apply_rotary_pos_emb", _pair),
    "ministral3": Adapter("ministral3.modeling_ministral3", "apply_rotary_pos_emb", _pair),
    "mllama_text_model": Adapter("mllama.modeling_mllama", "apply_rotary_pos_emb", _pair),
    "phimoe": Adapter("phimoe.modeling_phimoe", "apply_rotary_pos_emb", _pair),
    "qwen3_next": Adapter("qwen3_next.modeling_qwen3_next", "apply_rotary_pos_emb", _pair),
    "zaya": Adapter("zaya.modeling_zaya", "apply_rotary_pos_emb", _pair),
    "dory": Adapter("dory.modeling_dory", "apply_rotary_pos_emb", _pair),
}


@dataclasses.dataclass
class RopeCall:
    layer: int
    name: str  # q, k, x
    x_in: torch.Tensor
    x_out: torch.Tensor
    layout: str
    function: str = ""  # the modeling module's function that was called
    indexer: bool = False  # called by a lightning indexer (DeepseekV32Indexer, ...), not the attention


@dataclasses.dataclass
class AttentionCall:
    layer: int
    scaling: float | None
    sliding_window: int | None
    softcap: float | None
    sinks: bool
    query: torch.Tensor | None = None  # the whole q heads the attention got [b, h, s, head_dim]
    key: torch.Tensor | None = None  # the whole k heads [b, kv_heads, s, head_dim]


@dataclasses.dataclass
class Capture:
    rope: list[RopeCall]
    attention: list[AttentionCall]
    buffers: dict = dataclasses.field(default_factory=dict)  # inv_freq buffers after the call
    # the windows of the sliding-window masks the model built (create_sliding_window_causal_mask
    # reads config.sliding_window): families such as PhiMoE window every layer through the mask
    # and pass no sliding_window to the attention function
    mask_windows: list = dataclasses.field(default_factory=list)
    causal_masks: int = 0  # full causal masks built (create_causal_mask)


def _layer_modules(model):
    return [m for m in model.modules() if isinstance(getattr(m, "layer_idx", None), int)]


def _falcon_attention(module, _args, _output):
    # FalconAttention.forward (modeling_falcon.py), eager, no ALiBi: its own
    # `attention_scores /= math.sqrt(self.head_dim)`; no window, softcap or sinks.
    return 1.0 / math.sqrt(module.head_dim)


# model_type -> (attention module class name, module -> the scaling its forward applies): the
# families whose attention forward computes the logits itself, without eager_attention_forward.
INLINE_ATTENTION = {"falcon": ("FalconAttention", _falcon_attention)}


def _inline_attention_hooks(model, model_type, capture, state):
    if model_type not in INLINE_ATTENTION:
        return []
    class_name, scaling = INLINE_ATTENTION[model_type]

    def hook(module, args, output):
        capture.attention.append(AttentionCall(state["layer"], scaling(module, args, output),
                                               None, None, False))

    return [m.register_forward_hook(hook) for m in model.modules()
            if type(m).__name__ == class_name]


@contextlib.contextmanager
def recording(model, model_type: str):
    """Within the block, the family's rope and eager attention calls are recorded."""
    adapter = ADAPTERS[model_type]
    module = importlib.import_module(f"transformers.models.{adapter.module}")
    capture = Capture([], [])
    state = {"layer": -1, "indexer": False}
    originals = {name: getattr(module, name) for name in adapter.function.split("|")}
    attention_fn = getattr(module, "eager_attention_forward", None)

    def wrap(function, rope_fn):
        def rope(*args, **kwargs):
            result = rope_fn(*args, **kwargs)
            for name, x_in, x_out, layout in adapter.adapt(args, result):
                if kwargs.get("unsqueeze_dim") == 2:  # cos, sin [batch, seq, 1, d]: q, k BSHD
                    layout = "bshd"
                capture.rope.append(RopeCall(state["layer"], name, x_in.detach().clone(),
                                             x_out.detach().clone(), layout, function,
                                             state["indexer"]))
            return result

        return rope

    def attention(attn_module, *args, **kwargs):
        query, key = (args[0].detach().clone(), args[1].detach().clone()) if len(args) >= 2 \
            else (None, None)
        capture.attention.append(AttentionCall(
            state["layer"], kwargs.get("scaling"),
            kwargs.get("sliding_window", getattr(attn_module, "sliding_window", None)),
            kwargs.get("softcap"), kwargs.get("s_aux") is not None, query, key))
        return attention_fn(attn_module, *args, **kwargs)

    masks = {name: getattr(module, name) for name in ("create_causal_mask",
             "create_sliding_window_causal_mask") if hasattr(module, name)}

    def mask(name, mask_fn):
        def build(*args, **kwargs):
            config = kwargs.get("config", args[0] if args else None)
            if name == "create_causal_mask":
                capture.causal_masks += 1
            else:
                capture.mask_windows.append(getattr(config, "sliding_window", None))
            return mask_fn(*args, **kwargs)

        return build

    for name, mask_fn in masks.items():
        setattr(module, name, mask(name, mask_fn))
    hooks = [m.register_forward_pre_hook(lambda m, a, i=m.layer_idx: state.update(layer=i))
             for m in _layer_modules(model)]
    indexers = [m for m in model.modules() if type(m).__name__.endswith("Indexer")]
    hooks += [m.register_forward_pre_hook(lambda m, a: state.update(indexer=True)) for m in indexers]
    hooks += [m.register_forward_hook(lambda m, a, o: state.update(indexer=False)) for m in indexers]
    if attention_fn is None:
        hooks += _inline_attention_hooks(model, model_type, capture, state)
    for name, rope_fn in originals.items():
        setattr(module, name, wrap(name, rope_fn))
    if attention_fn is not None:
        module.eager_attention_forward = attention
    try:
        yield capture
    finally:
        for name, rope_fn in originals.items():
            setattr(module, name, rope_fn)
        for name, mask_fn in masks.items():
            setattr(module, name, mask_fn)
        if attention_fn is not None:
            module.eager_attention_forward = attention_fn
        for hook in hooks:
            hook.remove()


def forward(model, model_type: str, position_ids: torch.Tensor, vocab: int = 256) -> Capture:
    """One forward pass at position_ids [1, seq] (int64), use_cache=False, no grad."""
    seq = position_ids.shape[-1]
    input_ids = torch.arange(3, 3 + seq, dtype=torch.int64)[None] % vocab
    with recording(model, model_type) as capture, torch.no_grad():
        model(input_ids=input_ids, position_ids=position_ids, use_cache=False)
    # the rotary module's frequencies as this call left them (dynamic NTK, LongRoPE update them)
    capture.buffers = {name: b.clone() for name, b in model.named_buffers() if name.endswith("inv_freq")}
    return capture
