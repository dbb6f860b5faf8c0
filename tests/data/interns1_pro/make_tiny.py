"""Writes tiny/: coefficients.safetensors (model.language_model.rotary_emb.{sin,cos}_coef
[2, 4, 4], identity plus seeded noise, by the safetensors package), x.npy (q [1, 32, 4, 16],
seeded) and y_vllm.npy (vLLM 0.33.0's FourierRotaryEmbedding.forward_native of q at positions
0..31, built as vllm/model_executor/models/interns1_pro.py builds it from tiny/config.json).
Run with the vLLM venv of conformance/vllm (setup.sh):

    /var/cache/posemb/venv-vllm/bin/python tests/data/interns1_pro/make_tiny.py
"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "conformance", "vllm"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

import worker  # noqa: E402  (the harness's builder of Intern-S1-Pro's FoPE)


def main():
    tiny = os.path.join(here, "tiny")
    config = json.load(open(os.path.join(tiny, "config.json")))["text_config"]
    rng = np.random.default_rng(48)
    shape = (config["num_key_value_heads"], 4, 4)  # D_in 4: frequencies > 2 pi / 512
    coef = {f"model.language_model.rotary_emb.{name}":
            (np.eye(4) + 0.5 * rng.standard_normal(shape)).astype(np.float32)
            for name in ("sin_coef", "cos_coef")}
    save_file(coef, os.path.join(tiny, "coefficients.safetensors"))
    x = rng.standard_normal((1, 32, config["num_attention_heads"], config["head_dim"]))
    x = x.astype(np.float32)
    np.save(os.path.join(tiny, "x.npy"), x)
    from vllm.config import VllmConfig, set_current_vllm_config

    with set_current_vllm_config(VllmConfig()):
        rope = worker.interns1_pro_rope(config)
        for name in ("sin_coef", "cos_coef"):
            getattr(rope, name).data.copy_(
                torch.from_numpy(coef[f"model.language_model.rotary_emb.{name}"]))
        q = torch.from_numpy(x[0])
        k = q[:, :config["num_key_value_heads"]].contiguous()
        y, _ = rope.forward_native(torch.arange(32), q.flatten(1), k.flatten(1))
    np.save(os.path.join(tiny, "y_vllm.npy"), y.reshape(x.shape).numpy())
    print(f"tiny: D_in {rope.inv_freq.numel()}, y {tuple(x.shape)}")


if __name__ == "__main__":
    main()
