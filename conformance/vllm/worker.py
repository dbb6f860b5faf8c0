"""The vLLM side of the harness, run by the vLLM venv's python (setup.sh): for each case folder
that run.py wrote, builds every attention layer's rotary layer the way vLLM 0.33.0's model code
builds it from the same config (`get_rope` with that model file's arguments, ROPE_BUILDERS),
rotates the recorded q/k with it and writes the outputs.

    python worker.py WORK_DIR CASE...   (WORK_DIR/CASE/: config.json, inputs.npz, job.json)
    -> WORK_DIR/CASE/vllm.npz (one output per call) and vllm.json (module, layers, errors)

job.json: {"architectures": [...], "max_model_len": N, "calls": [{"key", "layer", "layer_type"}]};
inputs.npz: per call key, "<key>.x" [tokens, heads, width] float32 and "<key>.positions" [tokens]
int64. The config is transformers' full to_dict() (class defaults filled in), read as vLLM's model
code reads its PretrainedConfig: by attribute.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import traceback
import types

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # vllm/platforms/__init__.py cpu_platform_plugin

import numpy as np  # noqa: E402
import torch  # noqa: E402


def _namespace(config: dict):
    """A config dict as attributes, as vLLM's model code reads its PretrainedConfig."""
    return types.SimpleNamespace(**config)


def _head_dim(config) -> int:
    """head_dim as the Llama-style model files take it: config.head_dim, else hidden / heads."""
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def _block(config, layer_type):
    """The layer type's rope block where rope_parameters is nested per layer type (gemma3.py,
    gemma3n.py, gemma4.py, dory.py: config.rope_parameters[layer_type]), else the one block."""
    params = dict(config.rope_parameters)
    if layer_type in params and isinstance(params[layer_type], dict):
        return dict(params[layer_type])
    return params


def _llama_style(neox: bool):
    """get_rope(head_dim, max_position=config.max_position_embeddings, rope_parameters=...,
    is_neox_style=neox): llama.py, qwen2.py, qwen3.py, mixtral.py, gemma2.py, gemma3.py, ..."""

    def build(config, layer, layer_type):
        return dict(head_size=_head_dim(config), max_position=config.max_position_embeddings,
                    rope_parameters=_block(config, layer_type), is_neox_style=neox)

    return build


def _granite(config, layer, layer_type):
    # granite.py GraniteAttention: rope_theta = layer_rope_theta[layer_idx] if the config has it
    params = _block(config, layer_type)
    thetas = getattr(config, "layer_rope_theta", None)
    if thetas is not None:
        params["rope_theta"] = thetas[layer]
    return dict(head_size=_head_dim(config), max_position=config.max_position_embeddings,
                rope_parameters=params, is_neox_style=True)


def _gemma4(config, layer, layer_type):
    # gemma4.py Gemma4DecoderLayer: head_dim = config.per_layer_config[layer_idx].head_dim,
    # rope_parameters[layer_type], is_neox_style=True
    return dict(head_size=config.per_layer_config[layer]["head_dim"],
                max_position=config.max_position_embeddings,
                rope_parameters=_block(config, layer_type), is_neox_style=True)


def _gpt_j(config, layer, layer_type):
    # gpt_j.py GPTJAttention: partial_rotary_factor = rotary_dim / head_size, is_neox_style=False
    head = config.n_embd // config.n_head
    params = dict(getattr(config, "rope_parameters", None) or {})
    params["partial_rotary_factor"] = config.rotary_dim / head
    return dict(head_size=head, max_position=config.n_positions, rope_parameters=params,
                is_neox_style=False)


def _gpt_oss(config, layer, layer_type):
    # gpt_oss.py OAIAttention: an explicit yarn block (truncate defaults to True), float32 cache
    p = config.rope_parameters
    params = {"rope_theta": p["rope_theta"], "rope_type": "yarn", "factor": p["factor"],
              "original_max_position_embeddings": p["original_max_position_embeddings"],
              "beta_fast": p["beta_fast"], "beta_slow": p["beta_slow"],
              "truncate": p.get("truncate", True)}
    return dict(head_size=config.head_dim, max_position=config.max_position_embeddings,
                rope_parameters=params, is_neox_style=True, dtype=torch.float32)


def _deepseek_v2(config, layer, layer_type):
    # deepseek_v2.py DeepseekV2MLAAttention: rope_type "yarn" becomes "deepseek_yarn"; the rope
    # slice qk_rope_head_dim, interleaved (is_neox_style=False)
    params = dict(config.rope_parameters)
    if params.get("rope_type", "default") != "default":
        params["rope_type"] = "deepseek_yarn"
    return dict(head_size=config.qk_rope_head_dim, max_position=config.max_position_embeddings,
                rope_parameters=params, is_neox_style=False), Inputs(per_head=True)


def _falcon_h1(config, layer, layer_type):
    # falcon_h1.py FalconH1AttentionDecoderLayer: partial_rotary_factor = attn_rotary_emb / head_dim
    head = _head_dim(config)
    params = dict(config.rope_parameters)
    params["partial_rotary_factor"] = getattr(config, "attn_rotary_emb", head) / head
    return dict(head_size=head, max_position=config.max_position_embeddings,
                rope_parameters=params, is_neox_style=True)


def _deepseek_indexer(config, layer, layer_type):
    # deepseek_v2.py DeepseekV2MLAAttention and vllm/models/deepseek_v32/attention.py:
    # indexer_rope_emb = get_rope(qk_rope_head_dim, max_position_embeddings, the attention's
    # rope_parameters (rope_type already made "deepseek_yarn"), is_neox_style=not
    # config.indexer_rope_interleave); Indexer.forward rotates q[..., :rope_dim] per head and k
    args, inputs = _deepseek_v2(config, layer, layer_type)
    args["is_neox_style"] = not getattr(config, "indexer_rope_interleave", False)
    return args, inputs


def _qwen_vl(positions_factor: int):
    """The text model of a Qwen-VL wrapper (qwen2_vl.py, qwen2_5_vl.py: Qwen2ForCausalLM;
    qwen3_vl.py, qwen3_vl_moe.py, qwen3_5.py: Qwen3 / Qwen3.5 decoder layers) built on
    config.text_config: get_rope(head_dim, max_position_embeddings, rope_parameters with
    mrope_section, mrope_positions_factor), MRotaryEmbedding. positions_factor: 4 for Qwen2 /
    2.5-VL (get_rope's default); 1 for Qwen3-VL (qwen3_vl.py mrope_positions_factor: 4 only with
    video pruning)."""

    def build(config, layer, layer_type):
        text = _namespace(config.text_config)
        return dict(head_size=_head_dim(text), max_position=text.max_position_embeddings,
                    rope_parameters=_block(text, layer_type), is_neox_style=True,
                    mrope_positions_factor=positions_factor)

    return build


def _glm4v(config, layer, layer_type):
    # glm4_1v.py Glm4vForConditionalGeneration: a Glm4ForCausalLM on text_config (glm4.py
    # Glm4Attention: partial_rotary_factor defaults to 0.5, is_neox_style=False), so an
    # MRotaryEmbedding whose sections pair interleaved
    text = _namespace(config.text_config)
    params = _block(text, layer_type)
    params.setdefault("partial_rotary_factor", 0.5)
    return dict(head_size=_head_dim(text), max_position=text.max_position_embeddings,
                rope_parameters=params, is_neox_style=False)


def _llama4(config, layer, layer_type):
    # llama4.py Llama4Attention: is_neox_style=True on q/k whose projection rows were permuted at
    # load (Llama4ForCausalLM.permute_qk_weight_for_rotary: per head, feature 2j + t moves to
    # t * d/2 + j), so that rotate-half rotates the checkpoint's interleaved pairs
    return _llama_style(True)(config, layer, layer_type), Inputs(permuted=True)


# vLLM module (vllm/model_executor/models/<module>.py, from registry.py) -> the get_rope arguments
# its attention passes for (config, layer index, layer type), with Inputs where the model code
# hands q/k to the rotary layer otherwise than as [tokens, heads * head_size].
ROPE_BUILDERS = {
    "llama": _llama_style(True),  # LlamaAttention (also Phi3ForCausalLM, via phi3.py)
    "phi3": _llama_style(True),  # Phi3ForCausalLM is a LlamaForCausalLM
    "mistral": _llama_style(True),  # MistralForCausalLM is a LlamaForCausalLM
    # ernie45.py Ernie4_5ForCausalLM: a LlamaForCausalLM whose rotary layers are then set to
    # is_neox_style = False
    "ernie45": _llama_style(False),
    "granite": _granite,
    "stablelm": _llama_style(True),
    "qwen2": _llama_style(True),
    "qwen2_moe": _llama_style(True),
    "qwen3": _llama_style(True),
    "qwen3_moe": _llama_style(True),
    "qwen3_next": _llama_style(True),
    "mixtral": _llama_style(True),
    "gemma2": _llama_style(True),
    "gemma3": _llama_style(True),
    "gemma3n": _llama_style(True),
    "exaone4": _llama_style(True),
    "lfm2": _llama_style(True),
    "phimoe": _llama_style(True),
    "dory": _llama_style(True),
    "glm4_moe": _llama_style(True),
    "granitemoehybrid": _llama_style(True),
    "falcon": _llama_style(True),
    "glm4": _llama_style(False),
    "commandr": _llama_style(False),
    "cohere2_moe": _llama_style(False),
    "ernie45_moe": _llama_style(False),
    "gpt_j": _gpt_j,
    "gpt_oss": _gpt_oss,
    "deepseek_v2": _deepseek_v2,
    "falcon_h1": _falcon_h1,
    "gemma4": _gemma4,
    "llama4": _llama4,
    "granitemoeshared": _granite,  # granitemoe.py GraniteMoeAttention: layer_rope_theta too
    "vllm.models.deepseek_v32": _deepseek_v2,  # vllm/models/deepseek_v32/attention.py: as MLA
    "qwen2_vl": _qwen_vl(4),
    "qwen2_5_vl": _qwen_vl(4),
    "qwen3_vl": _qwen_vl(1),
    "qwen3_vl_moe": _qwen_vl(1),
    "qwen3_5": _qwen_vl(1),
    "glm4_1v": _glm4v,
}

# The lightning indexer's rotary layer (DeepSeek Sparse Attention), by vLLM module, for the calls
# transformers records inside an indexer.
INDEXER_BUILDERS = {
    "deepseek_v2": _deepseek_indexer,
    "vllm.models.deepseek_v32": _deepseek_indexer,
}

# Architecture names transformers saves that differ from the released checkpoints' (the name
# vLLM registers): transformers 5.24 saves PhimoeForCausalLM, microsoft/Phi-3.5-MoE-instruct's
# config.json names PhiMoEForCausalLM; the Qwen-VL tiny models are the base models (their
# config.json says *Model), the checkpoints (Qwen/Qwen2-VL-7B-Instruct, ...) name
# *ForConditionalGeneration.
ARCHITECTURE_ALIASES = {"PhimoeForCausalLM": "PhiMoEForCausalLM",
                        "Qwen2VLModel": "Qwen2VLForConditionalGeneration",
                        "Qwen2_5_VLModel": "Qwen2_5_VLForConditionalGeneration",
                        "Qwen3VLModel": "Qwen3VLForConditionalGeneration",
                        "Qwen3_5Model": "Qwen3_5ForConditionalGeneration",
                        "Glm4vModel": "Glm4vForConditionalGeneration"}


@dataclasses.dataclass(frozen=True)
class Inputs:
    """How the model code hands q/k to the rotary layer."""

    per_head: bool = False  # [tokens, heads, head_size] (MLA's q_pe / k_pe, deepseek_v2.py)
    permuted: bool = False  # per head in the order of permute_qk_weight_for_rotary (llama4.py)


def _to_half(x):
    """Per head, the interleaved feature 2j + t at t * d/2 + j (the last axis)."""
    d = x.shape[-1]
    return x.reshape(*x.shape[:-1], d // 2, 2).swapaxes(-1, -2).reshape(x.shape)


def _from_half(x):
    d = x.shape[-1]
    return x.reshape(*x.shape[:-1], 2, d // 2).swapaxes(-1, -2).reshape(x.shape)


@dataclasses.dataclass
class Registry:
    """vLLM's architecture registry (vllm/model_executor/models/registry.py)."""

    native: dict  # architecture -> (module, class): vLLM's own model code
    transformers: dict  # architecture -> (module, class): run through transformers' own code


def _registry() -> Registry:
    from vllm.model_executor.models import registry

    native = {}
    for name in dir(registry):
        table = getattr(registry, name)
        if name.startswith("_") and name.endswith("_MODELS") and isinstance(table, dict) \
                and name != "_TRANSFORMERS_SUPPORTED_MODELS":
            native.update({k: v for k, v in table.items() if isinstance(v, tuple)})
    return Registry(native, dict(registry._TRANSFORMERS_SUPPORTED_MODELS))


def _rotate(rope, positions, x, head_size: int, inputs: Inputs):
    """vLLM's rotation of x [tokens, heads, width] (width <= head_size: the leading features of
    a zero-padded head): forward_native where the layer has one (RotaryEmbedding and its
    subclasses), else its forward (Phi3LongRoPEScaledRotaryEmbedding); q/k handed over as the
    model code hands them (Inputs)."""
    tokens, heads, width = x.shape
    full = np.zeros((tokens, heads, head_size), dtype=np.float32)
    full[..., :width] = _to_half(x) if inputs.permuted else x
    query = torch.from_numpy(full)
    query = query if inputs.per_head else query.reshape(tokens, heads * head_size)
    forward = getattr(rope, "forward_native", None) or rope.forward
    out, _ = forward(torch.from_numpy(positions), query, query.clone())
    out = out.reshape(tokens, heads, head_size)[..., :width].numpy()
    return _from_half(out) if inputs.permuted else out


def run_case(folder: str, registry: Registry) -> dict:
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding import _ROPE_DICT, get_rope

    job = json.load(open(os.path.join(folder, "job.json")))
    config = _namespace(json.load(open(os.path.join(folder, "config.json"))))
    arch = ARCHITECTURE_ALIASES.get(job["architectures"][0], job["architectures"][0])
    meta = {"architecture": arch, "layers": {}, "indexer_layers": {}, "errors": {}}
    if arch in registry.transformers:
        meta["module"] = "transformers"
        return meta
    if arch not in registry.native:
        meta["module"] = None
        return meta
    module = registry.native[arch][0]
    meta["module"] = module
    if module not in ROPE_BUILDERS:
        meta["errors"]["build"] = f"no get_rope arguments written for vLLM module {module}.py"
        return meta
    inputs = np.load(os.path.join(folder, "inputs.npz"))
    vllm_config = VllmConfig()
    # Phi3LongRoPEScaledRotaryEmbedding reads get_current_vllm_config().model_config.max_model_len
    # (phi3_long_rope_scaled_rope.py); a ModelConfig would load the model from a hub.
    vllm_config.model_config = types.SimpleNamespace(max_model_len=job["max_model_len"])
    outputs = {}
    with set_current_vllm_config(vllm_config):
        _ROPE_DICT.clear()  # get_rope caches layers by arguments, not by max_model_len
        for call in job["calls"]:
            key = call["key"]
            try:
                builders = INDEXER_BUILDERS if call.get("indexer") else ROPE_BUILDERS
                if module not in builders:
                    raise KeyError(f"no indexer get_rope arguments written for vLLM module "
                                   f"{module}")
                args = builders[module](config, call["layer"], call["layer_type"])
                args, how = args if isinstance(args, tuple) else (args, Inputs())
                rope = get_rope(**args)
                meta["indexer_layers" if call.get("indexer") else "layers"][str(call["layer"])] = {
                    "class": type(rope).__name__, "head_size": args["head_size"],
                    "rotary_dim": getattr(rope, "rotary_dim", None),
                    "is_neox_style": args["is_neox_style"],
                    "max_position": args["max_position"],
                    "cache": int(rope.cos_sin_cache.shape[0])
                    if hasattr(rope, "cos_sin_cache") else None,
                    "rope_parameters": {k: v for k, v in args["rope_parameters"].items()
                                        if not isinstance(v, (list, tuple))}}
                outputs[key] = _rotate(rope, inputs[f"{key}.positions"], inputs[f"{key}.x"],
                                       args["head_size"], how)
            except Exception as error:  # reported as the call's error row, never dropped
                meta["errors"][key] = f"{type(error).__name__}: {str(error)[:300]}"
    if job.get("mrope_prompts"):
        try:
            outputs.update(mrope_positions(registry.native[arch], job, config, meta))
        except Exception:  # reported as the case's vllm_mrope_ids error row
            meta["errors"]["mrope"] = traceback.format_exc(limit=4)[-600:]
    np.savez(os.path.join(folder, "vllm.npz"), **outputs)
    return meta


def _attributes(value):
    """A config dict as nested attributes (vision_config.spatial_merge_size, ...)."""
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: _attributes(v) for k, v in value.items()})
    return value


class _Absent(types.ModuleType):
    """A torchvision that is not there: transformers' Qwen-VL image processors import it at
    module level (vLLM's Qwen-VL model files import those processors); the position code never
    calls it. Any attribute is a placeholder that raises when used."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__}: torchvision is not installed in the vLLM venv")

    def __mro_entries__(self, bases):
        return (object,)


class _AbsentFinder:
    """Meta path finder answering torchvision and its submodules with _Absent modules."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        import importlib.machinery

        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, _AbsentFinder, is_package=True)
        return None

    @staticmethod
    def create_module(spec):
        return _Absent(spec.name)

    @staticmethod
    def exec_module(module):
        module.__path__ = []


def _model_class(module: str, name: str):
    """vLLM's model class, imported without torchvision: torchvision's PyPI wheel does not load
    beside torch 2.13.0+cpu ("operator torchvision::nms does not exist"). transformers decides
    torchvision is absent when vllm.config is imported, before the finder is installed."""
    import importlib

    import vllm.config  # noqa: F401 (transformers' availability checks run here)

    if _AbsentFinder not in sys.meta_path:
        sys.meta_path.insert(0, _AbsentFinder)
    return getattr(importlib.import_module(f"vllm.model_executor.models.{module}"), name)


def mrope_positions(entry, job, config, meta) -> dict:
    """vLLM's M-RoPE positions of each prompt of job["mrope_prompts"] by the model class's own
    get_mrope_input_positions(input_tokens, mm_features) (SupportsMRoPE,
    vllm/model_executor/models/interfaces.py), on an instance that holds only its config:
    -> {"mrope.<i>": positions [3, seq] int64}; meta["mrope_deltas"] the deltas.
    job["mrope_prompts"][i]: {"tokens": [...], "features": [{"modality", "offset", "length",
    "grid": [t, h, w], "seconds"}]} (seconds: second_per_grid_ts of a video, or null)."""
    from torch import nn
    from vllm.multimodal.inputs import MultiModalFeatureSpec, PlaceholderRange

    cls = _model_class(*entry)
    model = cls.__new__(cls)
    nn.Module.__init__(model)
    model.config = _attributes(vars(config))
    out, meta["mrope_deltas"], meta["mrope_class"] = {}, [], f"{entry[0]}.py {entry[1]}"
    for i, prompt in enumerate(job["mrope_prompts"]):
        features = []
        for f in prompt["features"]:
            grid = types.SimpleNamespace(data=torch.tensor(f["grid"]))
            data = {f"{f['modality']}_grid_thw": grid}
            if f.get("seconds") is not None:  # a float32 tensor, as the processor's output
                data["second_per_grid_ts"] = types.SimpleNamespace(
                    data=torch.tensor(f["seconds"], dtype=torch.float32))
            features.append(MultiModalFeatureSpec(
                data=data, modality=f["modality"], identifier=str(len(features)),
                mm_position=PlaceholderRange(
                    offset=f["offset"], length=f["length"],
                    is_embed=None if f.get("is_embed") is None else torch.tensor(f["is_embed"]))))
        positions, delta = model.get_mrope_input_positions(prompt["tokens"], features)
        out[f"mrope.{i}"] = np.asarray(positions, dtype=np.int64)
        meta["mrope_deltas"].append(int(delta))
    return out


def run_fope(folder: str) -> dict:
    """FourierRotaryEmbedding (fope.py) through get_rope's use_fope path, its cos_coef / sin_coef
    set to the job's, rotating the job's q and k: WORK/fope/{fope.json, fope.npz} ->
    vllm.npz {q, k, inv_freq} and, by autograd through forward_native (which recomputes its
    cos/sin cache from the coefficients on its first call) of L = sum(g_q * q_out) +
    sum(g_k * k_out), {grad_q, grad_k, grad_sin_coef, grad_cos_coef}."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding import get_rope

    job = json.load(open(os.path.join(folder, "fope.json")))
    data = np.load(os.path.join(folder, "fope.npz"))
    with set_current_vllm_config(VllmConfig()):
        rope = get_rope(job["head_dim"], max_position=job["max_position"], is_neox_style=True,
                        rope_parameters={"rope_type": "default", "rope_theta": job["theta"],
                                         "use_fope": True,
                                         "num_key_value_heads": job["n_kv_heads"],
                                         "num_inv_freq": None, "fope_sep_head": True,
                                         "fope_init_factor": 0.1},
                        dtype=torch.float32)
        rope.sin_coef.data.copy_(torch.from_numpy(data["sin_coef"]))
        rope.cos_coef.data.copy_(torch.from_numpy(data["cos_coef"]))
        rope.sin_coef.requires_grad_(True)
        rope.cos_coef.requires_grad_(True)
        rope.update_cache = True
        positions = torch.from_numpy(data["positions"])
        # q, k: [tokens, heads, d]
        q = torch.from_numpy(data["q"]).requires_grad_(True)
        k = torch.from_numpy(data["k"]).requires_grad_(True)
        q_out, k_out = rope.forward_native(positions, q.flatten(1), k.flatten(1))
        q_out, k_out = q_out.reshape(q.shape), k_out.reshape(k.shape)
        g_q, g_k = torch.from_numpy(data["g_q"]), torch.from_numpy(data["g_k"])
        ((g_q * q_out).sum() + (g_k * k_out).sum()).backward()
    np.savez(os.path.join(folder, "vllm.npz"), q=q_out.detach().numpy(), k=k_out.detach().numpy(),
             inv_freq=rope.inv_freq.numpy(), grad_q=q.grad.numpy(), grad_k=k.grad.numpy(),
             grad_sin_coef=rope.sin_coef.grad.numpy(), grad_cos_coef=rope.cos_coef.grad.numpy())
    return {"class": type(rope).__name__, "d_in": int(rope.inv_freq.numel()), "errors": {}}


def interns1_pro_rope(text_config: dict, dtype=torch.float32):
    """The FourierRotaryEmbedding vLLM's interns1_pro.py builds from a text_config: its
    InternS1ProMoeDecoderLayer turns rope_scaling's fope keys into rope_parameters (use_fope,
    fope_init_factor, fope_sep_head, num_inv_freq), InternS1ProMoeAttention adds
    num_key_value_heads and calls get_rope(head_dim, max_position=max_position_embeddings,
    rope_parameters=...). Call inside set_current_vllm_config."""
    from vllm.model_executor.layers.rotary_embedding import get_rope

    c = _namespace(text_config)
    scaling = dict(c.rope_scaling)
    keys = ("fope_init_factor", "fope_sep_head", "num_inv_freq")
    params = dict(scaling, rope_theta=c.rope_theta,
                  use_fope=any(scaling.get(k) is not None for k in keys),
                  num_key_value_heads=c.num_key_value_heads)
    for k in keys:
        params[k] = scaling.get(k)
    return get_rope(_head_dim(c), max_position=c.max_position_embeddings,
                    rope_parameters=params, dtype=dtype)


def run_interns1_pro(folder: str) -> dict:
    """Intern-S1-Pro's FoPE (interns1_pro_rope) with the coefficients of WORK/CASE/
    coefficients.safetensors (model.language_model.rotary_emb.{sin,cos}_coef, the checkpoint's
    names), rotating inputs.npz's q [tokens, n_heads, head_dim] and k [tokens, n_kv_heads,
    head_dim] at its positions -> vllm.npz {q, k, inv_freq}."""
    from safetensors.numpy import load_file
    from vllm.config import VllmConfig, set_current_vllm_config

    config = json.load(open(os.path.join(folder, "config.json")))["text_config"]
    coef = load_file(os.path.join(folder, "coefficients.safetensors"))
    data = np.load(os.path.join(folder, "inputs.npz"))
    with set_current_vllm_config(VllmConfig()):
        rope = interns1_pro_rope(config)
        # What FourierRotaryEmbedding.weight_loader does with one tensor-parallel rank (its
        # process group is not set up here): the whole tensor copied in.
        for name in ("sin_coef", "cos_coef"):
            getattr(rope, name).data.copy_(
                torch.from_numpy(coef[f"model.language_model.rotary_emb.{name}"]))
        q, k = torch.from_numpy(data["q"]), torch.from_numpy(data["k"])
        q_out, k_out = rope.forward_native(torch.from_numpy(data["positions"]), q.flatten(1),
                                           k.flatten(1))
    np.savez(os.path.join(folder, "vllm.npz"), q=q_out.reshape(q.shape).numpy(),
             k=k_out.reshape(k.shape).numpy(), inv_freq=rope.inv_freq.numpy())
    return {"class": type(rope).__name__, "d_in": int(rope.inv_freq.numel()), "errors": {}}


RUNNERS = {"fope": run_fope, "interns1_pro": run_interns1_pro}


def main():
    import vllm

    work, cases = sys.argv[1], sys.argv[2:]
    torch.set_num_threads(1)
    registry = _registry()
    for case in cases:
        folder = os.path.join(work, case)
        try:
            runner = RUNNERS.get(case)
            meta = runner(folder) if runner else run_case(folder, registry)
        except Exception:
            meta = {"errors": {"build": traceback.format_exc(limit=3)[-600:]}}
        meta["vllm"] = vllm.__version__
        json.dump(meta, open(os.path.join(folder, "vllm.json"), "w"), indent=1)
    print(f"worker: {len(cases)} cases", flush=True)


if __name__ == "__main__":
    main()
