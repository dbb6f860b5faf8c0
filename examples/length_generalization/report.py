"""The bench's report: Markdown tables, the JSON behind them and the two plots.

Every figure is the mean over the seeds ± their sample standard deviation (0 for one seed); the
JSON also holds each seed's value. A learned table has no figure past the training length: n/a in
the tables, null in the JSON, no point in the plots.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from schemes import SCHEMES

# (task, metric, heading, how a seed's value is derived from its figures)
TABLES = [
    ("lm", "loss", "Language model: loss (nats per token)", lambda f: f["loss"]),
    ("lm", "perplexity", "Language model: perplexity", lambda f: math.exp(f["loss"])),
    ("passkey", "accuracy", "Passkey: accuracy (all five digits right)", lambda f: f["accuracy"]),
    ("lm", "drift", "Gap-5 drift of the language models' first layer (nats)",
     lambda f: f["drift"]),
    ("passkey", "drift", "Gap-5 drift of the passkey models' first layer (nats)",
     lambda f: f["drift"]),
]


def aggregate(config: dict, results: list) -> dict:
    """{task: {metric: {row: {length: {"seeds": [...], "mean": m, "sd": s}}}}}"""
    out = {}
    for task, metric, _, value in TABLES:
        if task not in config["tasks"]:
            continue
        lengths = [str(config["train_length"] * m) for m in config[task + "_multiples"]]
        per_row = {}
        for row in config["schemes"]:
            runs = [r for r in results if r["task"] == task and row in r["rows"]]
            cells = {}
            for length in lengths:
                seeds = [value(r["rows"][row][length]) for r in runs]
                if any(math.isnan(v) for v in seeds):
                    cells[length] = {"seeds": None, "mean": None, "sd": None}
                    continue
                sd = statistics.stdev(seeds) if len(seeds) > 1 else 0.0
                cells[length] = {"seeds": seeds, "mean": statistics.fmean(seeds), "sd": sd}
            per_row[row] = cells
        out.setdefault(task, {})[metric] = per_row
    return out


def cell_text(cell: dict, digits: int) -> str:
    """mean ± sd over the seeds; one seed has no spread to show."""
    if cell["mean"] is None:
        return "n/a"
    if len(cell["seeds"]) == 1:
        return f"{cell['mean']:.{digits}f}"
    return f"{cell['mean']:.{digits}f} ± {cell['sd']:.{digits}f}"


def markdown_table(per_row: dict, digits: int) -> str:
    lengths = list(next(iter(per_row.values())))
    lines = ["| scheme | " + " | ".join(lengths) + " |", "|---" * (len(lengths) + 1) + "|"]
    for row, cells in per_row.items():
        text = [cell_text(c, digits) for c in cells.values()]
        lines.append(f"| {row} | " + " | ".join(text) + " |")
    return "\n".join(lines) + "\n"


def training_table(config: dict, results: list) -> str:
    lines = ["| task | model | first loss | last loss (mean of the last 10 steps) | seconds |",
             "|---|---|---|---|---|"]
    for task in config["tasks"]:
        models = dict.fromkeys(r["model"] for r in results if r["task"] == task)
        for model in models:
            runs = [r for r in results if r["task"] == task and r["model"] == model]
            first, last, seconds = (statistics.fmean(r[key] for r in runs)
                                    for key in ("first_loss", "last_loss", "seconds"))
            lines.append(f"| {task} | {model} | {first:.3f} | {last:.3f} | {seconds:.0f} |")
    return "\n".join(lines) + "\n"


def plot(per_row: dict, ylabel: str, title: str, path: Path, log_y: bool) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    colours = plt.get_cmap("tab20").colors
    for i, (row, cells) in enumerate(per_row.items()):
        points = [(int(n), c["mean"], c["sd"]) for n, c in cells.items() if c["mean"] is not None]
        x, y, err = zip(*points)
        derived = SCHEMES[row].trained_as is not None or row.startswith("fope-")
        ax.errorbar(x, y, yerr=err, label=SCHEMES[row].label, color=colours[(2 * i) % 20
                    + (i >= 10)], marker="os^vD<>phX*P"[i % 12], linestyle="--" if derived else "-",
                    capsize=3, markersize=5)
    ax.set_xscale("log", base=2)
    ax.set_xticks([int(n) for n in next(iter(per_row.values()))])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("evaluation length (tokens); trained at the first")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(out: Path, config: dict, results: list, seconds: float, trained: int,
                 plots: bool) -> None:
    tables = aggregate(config, results)
    seeds = len(config["seeds"])
    parts = [f"Trained at L = {config['train_length']}, {config['lm_steps']} (language model) "
             f"and {config['passkey_steps']} (passkey) steps of {config['batch']} sequences, "
             f"{seeds} seed(s) ({', '.join(map(str, config['seeds']))})"
             "; mean ± standard deviation over the seeds where there are several. Passkey: "
             f"{config['passkey_trials']} trials per model and length. Language model: "
             f"{config['lm_tokens']} tokens per "
             f"length. This invocation trained {trained} of {len(results)} models in "
             f"{seconds / 60:.1f} minutes.\n"]
    for task, metric, heading, _ in TABLES:
        if task in tables:
            digits = 2 if metric == "perplexity" else 3
            parts.append(f"### {heading}\n\n" + markdown_table(tables[task][metric], digits))
    parts.append("### Training\n\n" + training_table(config, results))
    (out / "report.md").write_text("\n".join(parts))
    (out / "report.json").write_text(json.dumps(
        {"config": config, "seconds": seconds, "trained": trained, "tables": tables,
         "runs": results}, indent=1))
    if plots and "passkey" in tables:
        plot(tables["passkey"]["accuracy"], "passkey accuracy (five digits)",
             "Passkey retrieval against length", out / "accuracy.png", log_y=False)
    if plots and "lm" in tables:
        plot(tables["lm"]["perplexity"], "perplexity (log scale)",
             "Language-model perplexity against length", out / "perplexity.png", log_y=True)
