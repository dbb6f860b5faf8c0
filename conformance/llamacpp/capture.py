"""Runs a GGUF in the pinned llama.cpp and records every GGML_OP_ROPE node it computes.

    nodes = capture("llama.gguf", n_ctx=256, ranges=[(0, 32), (100000, 16)])
    python capture.py MODEL.gguf N_CTX RANGES_JSON OUT.pickle [TARGET.gguf]   # in a child process

Through `llama_cpp`'s low-level ctypes API (llama.h): load the model, make a context of n_ctx
(llama_context_params.cb_eval = the eval callback), then per range clear the memory and decode
one batch of `count` random token ids at consecutive positions from `start`. The tiny GGUFs have
no vocabulary but `{arch}.vocab_size` dummy tokens (vocab type none, convert.py), so any id below
it is valid; id 0 is left out: it is the random models' pad token, whose embedding row is zero, and
llama.cpp's qwen2vl loader reads no RMS epsilon (llama_model_qwen2vl::load_arch_hparams,
src/models/qwen2vl.cpp), so a zero row normalises to NaN there. The callback asks for every node, so when it is asked about a ROPE node every earlier
node has been computed: the input (src[0]), the positions (src[1]) and the freq factors (src[2])
are copied before the ROPE runs (ggml-alloc may compute it in place), the output after.
run.py uses the child process: a GGML_ABORT in llama.cpp is then an error row, not a crash.

Each node: {name, range, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
attn_factor, beta_fast, beta_slow, sections[4], n_offs, positions int32 [n] (M-RoPE: [4 * n]),
freq_factors float32 [n_dims / 2] or None, x, y: float32 [n_tokens, n_heads, head_dim]}
(ggml's ne = [head_dim, n_heads, n_tokens] read with its byte strides nb).
"""

from __future__ import annotations

import ctypes
import json
import pathlib
import pickle
import struct
import sys

import numpy as np

import llama_cpp as lc

from ggml_ctypes import GgmlTensor, read_tensor


def _ggml_op_name():
    """ggml_op_name of the wheel's libggml-base (the filter uses ggml's own op names)."""
    lib_dir = pathlib.Path(lc.__file__).parent / "lib"
    base = ctypes.CDLL(str(next(lib_dir.glob("libggml-base.so*"))))
    base.ggml_op_name.restype = ctypes.c_char_p
    base.ggml_op_name.argtypes = [ctypes.c_int]
    return base.ggml_op_name


_op_name = _ggml_op_name()


@lc.llama_log_callback
def _log(level: int, text: bytes, _user) -> None:
    """llama.cpp's log: warnings and errors (ggml_log_level WARN 3, ERROR 4) to stderr."""
    if level in (3, 4):
        print(text.decode(errors="replace"), end="", file=sys.stderr)


lc.llama_log_set(_log, None)


def _rope_params(t: GgmlTensor) -> dict:
    """op_params of ggml_rope_impl (ggml/src/ggml.c): ints 1, 2, 4; floats 5..10; sections 11..14;
    15 the offset of the rotated window (ggml_rope_set_offset)."""
    p = list(t.op_params)
    f = [struct.unpack("f", struct.pack("i", v))[0] for v in p]
    return dict(
        n_dims=p[1], mode=p[2], n_ctx_orig=p[4], freq_base=f[5], freq_scale=f[6],
        ext_factor=f[7], attn_factor=f[8], beta_fast=f[9], beta_slow=f[10], sections=p[11:15],
        n_offs=p[15],
    )


class _Recorder:
    """The eval callback: asks for every node; copies a ROPE node's sources before, output after."""

    def __init__(self) -> None:
        self.nodes: list[dict] = []
        self.range = None
        self.pending: dict[int, dict] = {}
        self.callback = lc.ggml_backend_sched_eval_callback(self._call)

    def _call(self, tensor_p, ask, _user) -> bool:
        t = ctypes.cast(tensor_p, ctypes.POINTER(GgmlTensor)).contents
        if _op_name(t.op) != b"ROPE":
            return True
        if ask:
            src = t.src
            node = dict(name=t.name.decode(), src_name=src[0].contents.name.decode(),
                        range=self.range, **_rope_params(t))
            node["x"] = read_tensor(src[0].contents)[0]
            node["positions"] = read_tensor(src[1].contents).reshape(-1)
            node["freq_factors"] = read_tensor(src[2].contents).reshape(-1) if src[2] else None
            self.pending[tensor_p] = node
        else:
            node = self.pending.pop(tensor_p)
            node["y"] = read_tensor(t)[0]
            self.nodes.append(node)
        return True


def _load(gguf: str):
    model = lc.llama_model_load_from_file(gguf.encode(), lc.llama_model_default_params())
    if not model:
        raise RuntimeError(f"{gguf}: llama_model_load_from_file failed")
    return model


def _context(model, gguf: str, n_ctx: int, n_batch: int, recorder=None, other=None):
    """llama_init_from_model with one thread; the eval callback and ctx_other when given."""
    params = lc.llama_context_default_params()
    params.n_ctx = n_ctx
    params.n_batch = params.n_ubatch = n_batch
    params.n_threads = params.n_threads_batch = 1
    if recorder is not None:
        params.cb_eval = recorder.callback
    if other is not None:
        params.ctx_other = other
    ctx = lc.llama_init_from_model(model, params)
    if not ctx:
        raise RuntimeError(f"{gguf}: llama_init_from_model failed (n_ctx {n_ctx})")
    return ctx


def capture(gguf: str, n_ctx: int, ranges: list[tuple[int, int]], seed: int = 0,
            target: str | None = None) -> list[dict]:
    """Every ROPE node of decoding each (start, count) range after clearing the memory. A draft
    (dflash, eagle3) borrows token_embd / output from `target`'s context (ctx_other,
    llama_context::llama_context); only the draft's nodes are recorded."""
    lc.llama_backend_init()
    n_batch = max(count for _, count in ranges)
    target_model = _load(target) if target else None
    other = _context(target_model, target, n_ctx, n_batch) if target else None
    model = _load(gguf)
    recorder = _Recorder()
    try:
        ctx = _context(model, gguf, n_ctx, n_batch, recorder, other)
    except RuntimeError:
        lc.llama_model_free(model)
        raise
    try:
        n_vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model))
        rng = np.random.default_rng(seed)
        for start, count in ranges:
            recorder.range = (start, count)
            lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
            _decode(ctx, rng.integers(1, n_vocab, count), start)
    finally:
        lc.llama_free(ctx)
        lc.llama_model_free(model)
        if other is not None:
            lc.llama_free(other)
            lc.llama_model_free(target_model)
    return recorder.nodes


def _decode(ctx, tokens: np.ndarray, start: int) -> None:
    """llama_decode of one sequence of token ids at positions start, start + 1, ..."""
    count = tokens.size
    batch = lc.llama_batch_init(count, 0, 1)
    try:
        for i in range(count):
            batch.token[i] = int(tokens[i])
            batch.pos[i] = start + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i == count - 1
        batch.n_tokens = count
        status = lc.llama_decode(ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status} at positions {start}..")
    finally:
        lc.llama_batch_free(batch)


if __name__ == "__main__":
    gguf, n_ctx, ranges, out, *target = sys.argv[1:]
    nodes = capture(gguf, int(n_ctx), [tuple(r) for r in json.loads(ranges)],
                    target=target[0] if target else None)
    with open(out, "wb") as f:
        pickle.dump(nodes, f)
