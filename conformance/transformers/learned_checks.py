"""Learned absolute tables (GPT-2, OPT, BERT, RoBERTa): `posemb apply --weights` on the tiny
model's own model.safetensors against the family's embedding module run in transformers.

Reference per family, x [1, seq, d] token embeddings, positions 0..seq-1:
  gpt2     x + transformer.wpe(position_ids)                       (modeling_gpt2.py)
  opt      x + decoder.embed_positions(mask, 0, position_ids)      (OPTLearnedPositionalEmbedding: +2)
  bert     x + embeddings.position_embeddings(position_ids)        (modeling_bert.py)
  roberta  x + embeddings.position_embeddings(create_position_ids_from_input_ids(ids, padding_idx))
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import torch

import tiny_models
from report import Row


def _reference(name, model, x):
    seq = x.shape[1]
    ids = torch.arange(seq)[None]
    with torch.no_grad():
        if name == "gpt2":
            table = model.transformer.wpe(ids)
        elif name == "opt":
            table = model.model.decoder.embed_positions(torch.ones(1, seq, dtype=torch.int64), 0,
                                                        position_ids=ids)
        elif name == "bert":
            table = model.embeddings.position_embeddings(ids)
        else:
            from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

            pad = model.config.pad_token_id
            input_ids = torch.full((1, seq), pad + 1)  # no padding token
            rows = RobertaEmbeddings.create_position_ids_from_input_ids(input_ids, pad)
            table = model.embeddings.position_embeddings(rows)
    return (torch.from_numpy(x) + table).numpy()


def learned_case(name, out_dir, tool):
    model = tiny_models.model_for(name)
    folder = os.path.join(out_dir, "models", name)
    model.save_pretrained(folder)
    cfg = model.config
    length = cfg.n_positions if name == "gpt2" else cfg.max_position_embeddings
    seq = length - (2 if name == "roberta" else 0)  # RoBERTa's first rows are padding_idx + 1
    d = cfg.n_embd if name == "gpt2" else cfg.hidden_size
    x = np.random.default_rng(1).standard_normal((1, seq, d)).astype(np.float32)
    x_path, y_path = os.path.join(folder, "x.npy"), os.path.join(folder, "y.npy")
    np.save(x_path, x)
    run = subprocess.run([tool, "apply", os.path.join(folder, "config.json"), "--weights",
                          os.path.join(folder, "model.safetensors"), "--input", x_path,
                          "--output", y_path], capture_output=True, text=True)
    if run.returncode != 0:
        return [Row(name, "learned_table", "fail", detail=f"posemb apply: {run.stderr.strip()[:200]}")], {}
    y = np.load(y_path)
    ref = _reference(name, model, x)
    bad = int((y.view(np.uint32) != ref.view(np.uint32)).sum())
    return [Row(name, "learned_table", "pass" if bad == 0 else "fail", float(np.max(np.abs(y - ref))), 0.0,
                f"{bad} of {y.size} values differ in bits; positions 0..{seq - 1} of {length} rows")], \
        {"layers": cfg.num_hidden_layers if name != "gpt2" else cfg.n_layer, "positions": seq}
