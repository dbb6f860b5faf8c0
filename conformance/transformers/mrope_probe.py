"""Which posemb M-RoPE rules, if any, give each transformers family's get_rope_index.

Every model file of the installed transformers with a `get_rope_index` method is called on its
config class's defaults (the method bound to a stand-in holding the config and the class's other
methods) for PROMPTS, and compared with posemb.mrope_index under the Qwen2-VL and Qwen3-VL rules,
each resume rule. Informational (docs/conformance-transformers.md, "transformers 5.25.0"):

    PYTHONPATH=build/test/python build/venv/bin/python conformance/transformers/mrope_probe.py
"""
import functools
import importlib
import inspect
import os
import types

import torch
import transformers
from transformers import AutoConfig

import posemb

PROMPTS = ("text:3,image:1x4x6,text:5",
           "text:2,image:1x8x4,text:1,video:1x4x4,text:2,video:1x4x4,text:3",
           "text:2,video:3x4x4,text:3")


def families():
    """The model folders whose modeling file defines get_rope_index."""
    root = os.path.dirname(transformers.models.__file__)
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, f"modeling_{name}.py")
        if os.path.exists(path) and "def get_rope_index" in open(path).read():
            yield name


def segments(prompt, merge):
    """mm_token_type_ids, image grids and video grids of a prompt in posemb's segment syntax."""
    kinds, images, videos = [], [], []
    for segment in prompt.split(","):
        kind, size = segment.split(":")
        if kind == "text":
            kinds += [0] * int(size)
            continue
        t, h, w = (int(v) for v in size.split("x"))
        kinds += [1 if kind == "image" else 2] * (t * h * w // merge**2)
        (images if kind == "image" else videos).append([t, h, w])
    return kinds, images, videos


def transformers_ids(klass, config, prompt, merge):
    """klass.get_rope_index of the prompt: int64 [3, seq]."""
    stub = types.SimpleNamespace(config=config)
    for name, fn in vars(klass).items():
        if callable(fn) and name != "get_rope_index":
            setattr(stub, name, functools.partial(fn, stub))
    kinds, images, videos = segments(prompt, merge)
    params = inspect.signature(klass.get_rope_index).parameters
    given = {"mm_token_type_ids": torch.tensor([kinds]),
             "image_grid_thw": torch.tensor(images) if images else None,
             "video_grid_thw": torch.tensor(videos) if videos else None}
    with torch.no_grad():
        ids = klass.get_rope_index(stub, torch.arange(len(kinds))[None] + 3,
                                   **{k: v for k, v in given.items() if k in params})[0]
    return ids[:, 0].numpy()


def rules_agreeing(ids, prompt, merge):
    agree = []
    for family in ("qwen2_vl", "qwen3_vl"):
        for resume in ("past_largest", "spatial_extent"):
            rules = posemb.MropeIndexRules(family, spatial_merge_size=merge, resume=resume)
            ours, _ = posemb.mrope_index(rules, prompt)
            if ours.shape == ids.shape and (ours == ids).all():
                agree.append(f"{family}/{resume}")
    return agree or ["none"]


def main():
    print(f"transformers {transformers.__version__}")
    for name in families():
        module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
        klass = next(c for c in vars(module).values()
                     if isinstance(c, type) and "get_rope_index" in vars(c))
        config = AutoConfig.for_model(name)
        vision = getattr(config, "vision_config", None)
        merge = getattr(vision, "spatial_merge_size", 2) if vision is not None else 2
        results = []
        for prompt in PROMPTS:
            try:
                results.append(" ".join(rules_agreeing(
                    transformers_ids(klass, config, prompt, merge), prompt, merge)))
            except Exception as error:  # reported, never dropped
                results.append(f"error {type(error).__name__}: {str(error)[:80]}")
        print(f"{name} ({klass.__name__}, merge {merge}): " + " | ".join(results), flush=True)


if __name__ == "__main__":
    main()
