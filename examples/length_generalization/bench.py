"""Does FoPE generalise past the training length better than RoPE or ALiBi? Trained here, on a CPU.

Hua et al. 2024 (Fourier Position Embedding, arXiv:2412.17739) train models with RoPE, ALiBi and
FoPE at one length and report that FoPE keeps its perplexity (fig. 4) and passkey accuracy (fig. 5)
beyond it where RoPE does not. This bench asks the same question at a size a CPU trains in
minutes: two-layer models (d_model 64, 4 heads of 16) with every position scheme posemb has a
training module for, trained at one length on two synthetic tasks (tasks.py), scored at that
length and at 2x, 4x and 8x, several seeds each. It prints a Markdown table per task (mean and
spread over seeds) and writes the raw figures as JSON.

    python examples/length_generalization/bench.py [--steps 250] [--seeds 2] [--json out.json]

Needs torch (the CPU wheel: pip install torch==2.13.0 --index-url
https://download.pytorch.org/whl/cpu) and posemb installed (pip install .). README.md beside this
file holds a run's table and what reproduces.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

import posemb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model import ModelShape, TinyLm  # noqa: E402
from schemes import SCHEMES  # noqa: E402
from tasks import TASKS, Batch  # noqa: E402


def masked_loss(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    # logits [B, S, V]; the mean cross-entropy over the scored positions
    return torch.nn.functional.cross_entropy(logits[batch.mask], batch.targets[batch.mask])


def train(task, scheme_name: str, seed: int, train_length: int, steps: int, batch: int):
    torch.manual_seed(seed)
    shape = ModelShape(vocab=task.vocab)
    model = TinyLm(shape, SCHEMES[scheme_name](shape, train_length))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps, pct_start=0.1)
    g = torch.Generator().manual_seed(10_000 + seed)
    losses = []
    for _ in range(steps):
        b = task.batch(batch, train_length, g)
        loss = masked_loss(model(b.tokens), b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return model, losses


@torch.no_grad()
def evaluate(model, task, length: int, seed: int, sequences: int) -> dict:
    g = torch.Generator().manual_seed(20_000 + seed)
    b = task.batch(sequences, length, g)
    try:
        logits = model(b.tokens)
    except posemb.Error:  # a learned table has no row past the training length
        return {"loss": math.nan, "accuracy": math.nan}
    loss = masked_loss(logits, b).item()
    accuracy = (logits[b.mask].argmax(-1) == b.targets[b.mask]).float().mean().item()
    return {"loss": loss, "accuracy": accuracy}


def summary(values):
    mean = statistics.fmean(values)
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, spread


def table(task_name: str, results: dict, lengths, metric: str) -> str:
    head = f"| scheme | " + " | ".join(f"{metric} @ {n}" for n in lengths) + " |"
    rows = [head, "|" + "---|" * (len(lengths) + 1)]
    for scheme, per_length in results.items():
        cells = []
        for n in lengths:
            values = [r[metric] for r in per_length[str(n)]]
            if any(math.isnan(v) for v in values):
                cells.append("n/a")
                continue
            mean, spread = summary(values)
            cells.append(f"{mean:.3f} ± {spread:.3f}")
        rows.append(f"| {scheme} | " + " | ".join(cells) + " |")
    return f"### {task_name}: {metric}\n\n" + "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default="lm,passkey")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--train-length", type=int, default=64)
    ap.add_argument("--multiples", default="1,2,4,8")
    ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--eval-sequences", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = [args.train_length * int(m) for m in args.multiples.split(",")]
    report = {"args": {k: str(v) for k, v in vars(args).items()}, "tasks": {}}
    for task_name in args.tasks.split(","):
        task = TASKS[task_name]()
        results = {}
        for scheme in args.schemes.split(","):
            per_length = {str(n): [] for n in lengths}
            for seed in range(args.seeds):
                start = time.perf_counter()
                model, losses = train(task, scheme, seed, args.train_length, args.steps, args.batch)
                model.eval()
                for n in lengths:
                    per_length[str(n)].append(evaluate(model, task, n, seed, args.eval_sequences))
                print(f"{task_name} {scheme} seed {seed}: train loss {losses[0]:.3f} -> "
                      f"{statistics.fmean(losses[-20:]):.3f} in {time.perf_counter() - start:.1f} s",
                      file=sys.stderr, flush=True)
            results[scheme] = per_length
        report["tasks"][task_name] = results
        floor = f" (entropy rate {task.entropy_rate():.3f} nats)" if task_name == "lm" else ""
        print(f"## {task_name}{floor}, trained at {args.train_length}\n")
        print(table(task_name, results, lengths, "loss"))
        if task_name == "passkey":
            print(table(task_name, results, lengths, "accuracy"))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
