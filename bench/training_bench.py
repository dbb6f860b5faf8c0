#!/usr/bin/env python3
"""Forward + backward of a RoPE rotation of q and k, as ratios from one run: posemb's custom op
(posemb.apply_rope on tensors that require grad: the C++ kernel forward, its transpose backward)
and posemb's composite path (the same op inside _ops.composite_path(): PyTorch ops fed by posemb's
tables, what a GPU runs) against the peers, each in its own layout and its own cos/sin step:
  - transformers' eager code (LlamaRotaryEmbedding for cos/sin, apply_rotary_pos_emb, BSHD);
  - the same under torch.compile (inductor, the default backend; aot_eager where inductor fails,
    with the reason printed);
  - rotary-embedding-torch (RotaryEmbedding.rotate_queries_or_keys, BHSD, its cache on);
  - torchtune (RotaryPositionalEmbeddings, BSHD, its cache).

Shapes: q [1, 2048, 32, 128] (prefill, positions 2048 .. 4095) and [32, 1, 32, 128] (decode, every
row at 4095), k with 8 heads; float32 and bfloat16; torch.set_num_threads(1 and 2) and posemb's
threads= the same. Upstream gradients are seeded tensors. Each figure is the best per-call time
of several rounds (wall clock, or with --timer cpu the process's CPU time); the load average is
printed. The goals (docs/training.md) are checked per row:
  prefill   fastest peer / posemb >= 2        decode    fastest peer / posemb >= 1
  backward  posemb backward / forward <= 1.1  composite composite / HF eager <= 1.5

    PYTHONPATH=build/test/python VENV/bin/python bench/training_bench.py [--backend aot_eager]
(VENV: torch 2.13.0, transformers, rotary-embedding-torch and torchtune at the versions of
conformance/peers/requirements.txt; transformers at the test venv's.)
"""
import argparse
import os
import sys
import time
import timeit
from importlib.metadata import version

import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

import posemb
from posemb import _ops

THETA, HEADS, KV_HEADS, D, END = 500000.0, 32, 8, 128, 4096
CASES = (("prefill", 1, 2048), ("decode", 32, 1))


TIMER = [time.perf_counter]


def best(fn, seconds=0.4, rounds=5):
    """Best per-call time; calls per round sized to about seconds / rounds."""
    fn()
    once = timeit.timeit(fn, number=1, timer=TIMER[0])
    number = max(1, int(seconds / rounds / max(once, 1e-7)))
    return min(timeit.repeat(fn, number=number, repeat=rounds, timer=TIMER[0])) / number


class Contender:
    """forward(q, k) -> (q_out, k_out) on leaves q, k of shape q_shape(batch, seq) etc."""

    bhsd = False

    def leaves(self, batch, seq, dtype, gen):
        shapes = [(batch, HEADS, seq, D), (batch, KV_HEADS, seq, D)] if self.bhsd else \
                 [(batch, seq, HEADS, D), (batch, seq, KV_HEADS, D)]
        leaves = [torch.randn(s, generator=gen).to(dtype).requires_grad_() for s in shapes]
        grads = [torch.randn(s, generator=gen).to(dtype) for s in shapes]
        return leaves, grads


class Posemb(Contender):
    def __init__(self, positions, threads, composite=False):
        self.spec, self.positions = posemb.default_rope_spec(D, THETA), positions
        self.threads, self.composite = threads, composite

    def forward(self, q, k):
        if self.composite:
            with _ops.composite_path():
                return self.rotate(q), self.rotate(k)
        return self.rotate(q), self.rotate(k)

    def rotate(self, x):
        return posemb.apply_rope(x, self.positions, self.spec, threads=self.threads)


class HfEager(Contender):
    def __init__(self, positions):
        config = LlamaConfig(hidden_size=HEADS * D, num_attention_heads=HEADS,
                             rope_parameters={"rope_type": "default", "rope_theta": THETA})
        self.rotary, self.positions = LlamaRotaryEmbedding(config), positions

    def forward(self, q, k):
        cos, sin = self.rotary(q, self.positions)
        return apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2)  # BSHD


class HfCompiled(HfEager):
    def __init__(self, positions, backend):
        super().__init__(positions)
        self.compiled = torch.compile(super().forward, backend=backend, dynamic=False)

    def forward(self, q, k):
        return self.compiled(q, k)


class RotaryEmbeddingTorch(Contender):
    bhsd = True

    def __init__(self, offset):
        from rotary_embedding_torch import RotaryEmbedding
        self.rope, self.offset = RotaryEmbedding(D, theta=THETA), offset

    def forward(self, q, k):
        return (self.rope.rotate_queries_or_keys(q, offset=self.offset),
                self.rope.rotate_queries_or_keys(k, offset=self.offset))


class Torchtune(Contender):
    def __init__(self, positions):
        from torchtune.modules import RotaryPositionalEmbeddings
        self.rope = RotaryPositionalEmbeddings(D, max_seq_len=END, base=int(THETA))
        self.positions = positions

    def forward(self, q, k):
        return self.rope(q, input_pos=self.positions), self.rope(k, input_pos=self.positions)


def times(contender, batch, seq, dtype):
    """(forward + backward, forward, backward) per call, seconds."""
    (q, k), grads = contender.leaves(batch, seq, dtype, torch.Generator().manual_seed(0))

    def step():  # autograd.grad: nothing accumulates into q.grad between calls
        torch.autograd.grad(contender.forward(q, k), (q, k), grads)

    outs = contender.forward(q, k)
    backward = best(lambda: torch.autograd.grad(outs, (q, k), grads, retain_graph=True))
    return best(step), best(lambda: contender.forward(q, k)), backward


def inductor_works():
    """None if the inductor backend compiles and runs a small function here, else the reason."""
    try:
        torch.compile(lambda x: x.sin() * 2)(torch.randn(4))
        return None
    except Exception as e:  # noqa: BLE001 - the reason is reported
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", help="torch.compile backend for HF (default: inductor if it "
                        "works here, else aot_eager)")
    parser.add_argument("--timer", choices=["wall", "cpu"], default="wall",
                        help="cpu: the process's CPU time (time.process_time; steadier on a "
                        "loaded machine, but with 2 threads it adds both threads' time)")
    args = parser.parse_args(argv[1:])
    TIMER[0] = time.process_time if args.timer == "cpu" else time.perf_counter
    backend = args.backend
    if backend is None:
        reason = inductor_works()
        backend = "inductor" if reason is None else "aot_eager"
        if reason:
            print(f"inductor fails here ({reason}); HF compiled with aot_eager")
    print(f"torch {torch.__version__}, transformers {version('transformers')}, "
          f"rotary-embedding-torch {version('rotary-embedding-torch')}, "
          f"torchtune {version('torchtune')}; HF compiled with {backend}")
    print(f"load average at start: {os.getloadavg()} (cpus: {os.cpu_count()})")
    print(f"{args.timer} times in us, forward + backward of q and k; ratios: peer / posemb "
          "(> 1: posemb faster)")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for name, batch, seq in CASES:
            positions = torch.arange(END - seq, END).expand(batch, seq)
            for dtype in (torch.float32, torch.bfloat16):
                label = f"{name} [{batch}, {seq}, {HEADS}, {D}] {str(dtype)[6:]} threads {threads}"
                ours, fwd, bwd = times(Posemb(positions, threads), batch, seq, dtype)
                composite = times(Posemb(positions, threads, composite=True), batch, seq, dtype)[0]
                peers = {"HF eager": HfEager(positions),
                         f"HF compiled ({backend})": HfCompiled(positions, backend),
                         "rotary-embedding-torch": RotaryEmbeddingTorch(END - seq),
                         "torchtune": Torchtune(positions)}
                peer_times = {n: times(c, batch, seq, dtype)[0] for n, c in peers.items()}
                fastest = min(peer_times, key=peer_times.get)
                speedup = peer_times[fastest] / ours
                goal = 2.0 if name == "prefill" else 1.0
                print(f"{label}: posemb {ours * 1e6:.1f} (forward {fwd * 1e6:.1f}, backward "
                      f"{bwd * 1e6:.1f}, backward / forward {bwd / fwd:.2f} "
                      f"{'ok' if bwd / fwd <= 1.1 else 'MISSED'}); composite {composite * 1e6:.1f}")
                print("    " + "; ".join(f"{n} {t * 1e6:.1f} ({t / ours:.2f})"
                                         for n, t in peer_times.items()))
                hf = peer_times["HF eager"]
                print(f"    fastest peer {fastest}: {speedup:.2f}x (goal >= {goal:g}: "
                      f"{'ok' if speedup >= goal else 'MISSED'}); composite / HF eager "
                      f"{composite / hf:.2f} ({'ok' if composite / hf <= 1.5 else 'MISSED'})")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
