"""Does FoPE generalise past the training length better than RoPE or ALiBi? Trained here, on a CPU.

Hua et al. 2024 (Fourier Position Embedding, arXiv:2412.17739) train models with RoPE, ALiBi and
FoPE at one length and report that FoPE keeps its perplexity (fig. 4) and passkey accuracy (fig. 5)
beyond it where RoPE does not. This bench asks the same question at a size a CPU trains in
minutes: two-layer models (d_model 64, 4 heads of 16) with every position scheme of schemes.py,
each through posemb's modules, trained at one length L on two synthetic tasks (tasks.py) and
scored at L, 2L, 4L, 8L and 16L: language-model loss and perplexity, passkey accuracy, and the
gap-5 drift of the first attention layer (drift.py). Several seeds each; the tables give the mean
and the standard deviation over the seeds.

    python examples/length_generalization/bench.py --out runs/full [--jobs 2] [--quick] [--resume]

Every trained model's figures are written to OUT/runs/ as it finishes; --resume trains only the
models missing there. The report (OUT/report.md, OUT/report.json and, unless --no-plots, the
plots OUT/accuracy.png and OUT/perplexity.png) is written at the end. Needs torch, posemb and, for
the plots, matplotlib (requirements.txt beside this file).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import torch

import posemb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from drift import gap5_drift  # noqa: E402
from model import ModelShape, TinyLm  # noqa: E402
from report import write_report  # noqa: E402
from schemes import ROWS, SCHEMES, Rotary  # noqa: E402
from tasks import PASSKEY_MIN_LENGTH, TASKS, Batch  # noqa: E402

# The configuration, fixed before any run (README.md): the full bench and --quick.
# Passkey retrieval stops at 8L: 400 trials at 16L alone would cost more than all the training.
FULL = dict(train_length=64, lm_multiples="1,2,4,8,16", passkey_multiples="1,2,4,8",
            lm_steps=250, passkey_steps=600, batch=32, seeds="0,1,2", passkey_trials=400,
            lm_tokens=32768)
QUICK = dict(train_length=64, lm_multiples="1,2,4,8", passkey_multiples="1,2,4,8",
             lm_steps=120, passkey_steps=240, batch=32, seeds="0", passkey_trials=100,
             lm_tokens=8192)
LR = 3e-3
MIN_STEPS = 20  # the one-cycle schedule warms up over 10 % of the steps: below 2 it cannot run
CHUNK_ELEMENTS = 1 << 23  # attention scores held at once during evaluation


class BadInput(Exception):
    """A setting the bench refuses before it trains anything."""


def masked_loss(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    # logits [B, S, V]; the mean cross-entropy over the scored positions
    return torch.nn.functional.cross_entropy(logits[batch.mask], batch.targets[batch.mask])


def train(task_name: str, row, seed: int, config: dict):
    task, steps = TASKS[task_name](), config[task_name + "_steps"]
    torch.manual_seed(seed)
    shape = ModelShape(vocab=task.vocab)
    model = TinyLm(shape, row.build(shape, config["train_length"]))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=steps,
                                                pct_start=0.1)
    g = torch.Generator().manual_seed(10_000 + seed)
    losses = []
    for _ in range(steps):
        b = task.batch(config["batch"], config["train_length"], g)
        loss = masked_loss(model(b.tokens), b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return model.eval(), losses


def use_eval_spec(model, row, length: int, train_length: int) -> None:
    """Sets the rotary frequencies `row` evaluates at `length` (plain RoPE for a trained row)."""
    if row.eval_spec is None:
        return
    spec = row.eval_spec(model.shape.head_dim, train_length, length)
    for module in model.modules():
        if isinstance(module, Rotary):
            module.use(spec)


@torch.no_grad()
def score(model, task, length: int, sequences: int, g: torch.Generator) -> dict:
    """Loss over the scored positions and the fraction of sequences with every one right."""
    chunk = max(1, CHUNK_ELEMENTS // (model.shape.n_heads * length * length))
    total_loss, total_scored, correct = 0.0, 0, 0
    for start in range(0, sequences, chunk):
        b = task.batch(min(chunk, sequences - start), length, g)
        logits = model(b.tokens)
        total_loss += torch.nn.functional.cross_entropy(
            logits[b.mask], b.targets[b.mask], reduction="sum").item()
        total_scored += int(b.mask.sum())
        hit = (logits.argmax(-1) == b.targets) | ~b.mask  # [B, S]
        correct += int(hit.all(-1).sum())
    return {"loss": total_loss / total_scored, "accuracy": correct / sequences}


def evaluate(model, task_name: str, row, seed: int, config: dict) -> dict:
    task = TASKS[task_name]()
    n = config["train_length"]
    out = {}
    for m in config[task_name + "_multiples"]:
        length = n * m
        use_eval_spec(model, row, length, n)
        sequences = (config["passkey_trials"] if task_name == "passkey"
                     else max(1, config["lm_tokens"] // length))
        g = torch.Generator().manual_seed(20_000 + 100 * seed + m)
        try:
            figures = score(model, task, length, sequences, g)
        except posemb.Error:  # a learned table has no row past the training length
            figures = {"loss": math.nan, "accuracy": math.nan}
        figures["drift"] = gap5_drift(model, length)
        figures["sequences"] = sequences
        out[str(length)] = figures
    use_eval_spec(model, row, n, n)
    return out


def run_model(job) -> dict:
    """Trains one (task, model, seed), evaluates every row that uses the model, writes the file."""
    task_name, model_name, seed, config, path = job
    torch.set_num_threads(1)  # models this small gain nothing from more: parallel is --jobs
    start = time.perf_counter()
    model, losses = train(task_name, SCHEMES[model_name], seed, config)
    trained = time.perf_counter() - start
    rows = {row.name: evaluate(model, task_name, row, seed, config)
            for row in ROWS if row.model == model_name and row.name in config["schemes"]}
    result = {"task": task_name, "model": model_name, "seed": seed,
              "first_loss": losses[0], "last_loss": statistics.fmean(losses[-10:]),
              "train_seconds": trained, "seconds": time.perf_counter() - start, "rows": rows}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(path)  # whole or absent: an interruption never leaves half a result
    print(f"{task_name} {model_name} seed {seed}: train loss {losses[0]:.3f} -> "
          f"{result['last_loss']:.3f}, {result['seconds']:.0f} s", file=sys.stderr, flush=True)
    return result


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder of the runs and the report")
    ap.add_argument("--quick", action="store_true", help="the ~5-minute configuration")
    ap.add_argument("--resume", action="store_true", help="keep OUT's finished models")
    ap.add_argument("--tasks", default="lm,passkey")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    for key in FULL:
        ap.add_argument("--" + key.replace("_", "-"), type=type(FULL[key]), default=None)
    ap.add_argument("--jobs", type=int, default=1, help="models trained at once (processes)")
    ap.add_argument("--no-plots", action="store_true")
    return ap.parse_args(argv)


def split(text: str, what: str, cast=str) -> list:
    try:
        return [cast(item) for item in text.split(",") if item]
    except ValueError:
        raise BadInput(f"{what} = {text!r}: expected comma-separated {cast.__name__} "
                       "values") from None


def resolve(args) -> dict:
    """The run's configuration, checked whole before any training."""
    config = dict(QUICK if args.quick else FULL)
    config.update({k: getattr(args, k) for k in FULL if getattr(args, k) is not None})
    config["tasks"] = split(args.tasks, "--tasks")
    config["schemes"] = split(args.schemes, "--schemes")
    for task in TASKS:
        key = task + "_multiples"
        config[key] = split(config[key], f"--{task}-multiples", int)
    config["seeds"] = split(config["seeds"], "--seeds", int)
    for name in config["tasks"]:
        if name not in TASKS:
            raise BadInput(f"--tasks: unknown task {name!r}; expected one of {', '.join(TASKS)}")
    for name in config["schemes"]:
        if name not in SCHEMES:
            raise BadInput(f"--schemes: unknown scheme {name!r}; "
                           f"expected one of {', '.join(SCHEMES)}")
    if not config["schemes"] or not config["tasks"] or not config["seeds"]:
        raise BadInput("--schemes, --tasks and --seeds: expected at least one each")
    if config["train_length"] < PASSKEY_MIN_LENGTH:
        raise BadInput(f"--train-length = {config['train_length']}: expected at least "
                       f"{PASSKEY_MIN_LENGTH} (the passkey's key, answer and filler)")
    for task in TASKS:
        for m in config[task + "_multiples"]:
            if m < 1:
                raise BadInput(f"--{task}-multiples: {m} x L = {m * config['train_length']} is "
                               f"below the training length L = {config['train_length']}; "
                               "expected 1 or more")
        if config[task + "_steps"] < MIN_STEPS or config["batch"] < 1:
            raise BadInput(f"--{task}-steps = {config[task + '_steps']}, --batch = "
                           f"{config['batch']}: too small to train; expected at least "
                           f"{MIN_STEPS} steps of at least 1 sequence")
    if config["passkey_trials"] < 1 or config["lm_tokens"] < 1:
        raise BadInput("--passkey-trials and --lm-tokens: expected at least 1")
    return config


def prepare_out(out: Path, config: dict, resume: bool) -> None:
    saved = out / "config.json"
    if saved.exists():
        if not resume:
            raise BadInput(f"--out = {out}: holds a run already; pass --resume to continue it "
                           "or choose another folder")
        if json.loads(saved.read_text()) != config:
            raise BadInput(f"--resume: {saved} was written with another configuration")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(config, indent=1))


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        config = resolve(args)
        if not args.no_plots:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise BadInput("the plots need matplotlib (pip install -r "
                               "examples/length_generalization/requirements.txt) "
                               "or pass --no-plots") from None
        prepare_out(args.out, config, args.resume)
    except BadInput as e:
        print(f"length_generalization: error: {e}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    models = list(dict.fromkeys(SCHEMES[name].model for name in config["schemes"]))
    jobs = [(t, m, s, config, args.out / "runs" / f"{t}-{m}-seed{s}.json")
            for s in config["seeds"] for t in config["tasks"] for m in models]
    todo = [job for job in jobs if not job[4].exists()]
    print(f"{len(jobs) - len(todo)} of {len(jobs)} models already done; training {len(todo)}",
          file=sys.stderr, flush=True)
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            list(pool.imap_unordered(run_model, todo))
    else:
        for job in todo:
            run_model(job)
    results = [json.loads(job[4].read_text()) for job in jobs]
    write_report(args.out, config, results, time.perf_counter() - start, len(todo),
                 plots=not args.no_plots)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
