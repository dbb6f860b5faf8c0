"""examples/length_generalization, run small: its tasks draw what they say, its drift measure is
zero for a relative scheme and not for an absolute one, and the bench trains every scheme through
posemb's modules, scores it past the training length, refuses bad input before training and
resumes an interrupted run. Never a scheme's ranking: the smoke configuration is too small."""
import importlib
import json
import math
import os
import sys

import pytest
import torch

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "length_generalization"))
tasks = importlib.import_module("tasks")
bench = importlib.import_module("bench")
drift = importlib.import_module("drift")
model_module = importlib.import_module("model")

# One tiny model per scheme and task, a few steps, every evaluation: the CI smoke configuration.
SMOKE = ["--no-plots", "--seeds", "0", "--train-length", "16", "--lm-multiples", "1,2",
         "--passkey-multiples", "1,2", "--lm-steps", "60", "--passkey-steps", "30",
         "--batch", "16", "--passkey-trials", "4", "--lm-tokens", "64"]


def test_markov_text_follows_its_chain():
    # The next token after a context (a, b) is drawn from transition[a, b]: the empirical
    # frequencies over many draws approach it (a Monte-Carlo bound, 4 standard errors).
    task = tasks.MarkovLm()
    batch = task.batch(2048, 128, torch.Generator().manual_seed(1))
    seq = torch.cat([batch.tokens, batch.targets[:, -1:]], dim=1)
    a, b, c = seq[:, :-2].flatten(), seq[:, 1:-1].flatten(), seq[:, 2:].flatten()
    counts = torch.zeros(tasks.LM_VOCAB, tasks.LM_VOCAB, tasks.LM_VOCAB, dtype=torch.float64)
    counts.index_put_((a, b, c), torch.ones_like(a, dtype=torch.float64), accumulate=True)
    seen = counts.sum(-1)
    a0, b0 = divmod(int(seen.argmax()), tasks.LM_VOCAB)
    n = seen[a0, b0]
    p = task.transition[a0, b0]
    assert n > 1000
    assert ((counts[a0, b0] / n - p).abs() <= 4 * (p * (1 - p) / n).sqrt() + 1e-12).all()
    assert 0 < task.entropy_rate() < math.log(tasks.LM_VOCAB)


def test_passkey_hides_five_digits_at_a_uniform_depth_and_asks_for_them():
    length, batch = 40, 4000
    b = tasks.Passkey().batch(batch, length, torch.Generator().manual_seed(2))
    seq = torch.cat([b.tokens, b.targets[:, -1:]], dim=1)  # [batch, length + 1]
    key_at = (seq == tasks.KEY_MARKER).int().argmax(1)
    assert ((seq == tasks.KEY_MARKER).sum(1) == 1).all()
    assert (seq[:, -6] == tasks.QUERY_MARKER).all()
    rows = torch.arange(batch)[:, None]
    key = seq[rows, key_at[:, None] + 1 + torch.arange(5)]
    assert (key == seq[:, -5:]).all() and (key < tasks.DIGITS).all()
    # digits occur only in the key and the answer; the answer is what the mask scores
    assert ((seq < tasks.DIGITS).sum(1) == 10).all()
    assert (b.targets[b.mask].view(batch, 5) == key).all()
    # depth: uniform over the length - 10 starts that leave the key before the answer
    # (each count within 5 standard errors of batch / starts)
    starts = length - 10
    counts = torch.bincount(key_at, minlength=starts).double()
    assert counts.numel() == starts
    expected = batch / starts
    assert ((counts - expected).abs() < 5 * math.sqrt(expected)).all()


def test_drift_is_zero_for_a_relative_scheme_and_not_for_an_absolute_one():
    # The gap-5 score of RoPE and ALiBi depends on the gap alone (spread at rounding level);
    # sinusoidal positions added to the embeddings move it (the drift table's contrast).
    figures = {}
    for name in ("rope", "alibi", "sinusoidal", "nope"):
        torch.manual_seed(0)
        shape = model_module.ModelShape(vocab=16)
        model = model_module.TinyLm(shape, bench.SCHEMES[name].build(shape, 64))
        figures[name] = drift.gap5_drift(model, 256)
    assert figures["rope"] < 1e-5 and figures["alibi"] < 1e-5 and figures["nope"] < 1e-5
    assert figures["sinusoidal"] > 1e-2


def read_runs(out):
    return {p.name: json.loads(p.read_text()) for p in (out / "runs").glob("*.json")}


def test_bench_trains_every_scheme_and_scores_past_the_training_length(tmp_path):
    out = tmp_path / "smoke"
    assert bench.main(SMOKE + ["--out", str(out)]) == 0
    runs = read_runs(out)
    trained = {row.model for row in bench.ROWS}
    assert len(runs) == 2 * len(trained)
    for run in runs.values():
        assert run["last_loss"] < run["first_loss"], (run["task"], run["model"])
    report = json.loads((out / "report.json").read_text())
    for task, metric in (("lm", "loss"), ("lm", "drift"), ("passkey", "accuracy")):
        table = report["tables"][task][metric]
        assert list(table) == list(bench.SCHEMES)  # every row, in the table's order
        for row, cells in table.items():
            assert list(cells) == ["16", "32"]
            for length, cell in cells.items():
                # a learned table has no row past its training length: n/a, never a number
                past = row == "learned" and length == "32"
                assert (cell["mean"] is None) == past, (row, length)
    markdown = (out / "report.md").read_text()
    assert "| rope+yarn | " in markdown and "| fope-cf | " in markdown and "n/a" in markdown


def test_resume_trains_only_what_an_interrupted_run_left(tmp_path):
    out = tmp_path / "resumed"
    args = SMOKE + ["--out", str(out), "--schemes", "rope,rope+ntk,alibi", "--tasks", "lm"]
    assert bench.main(args) == 0
    before = read_runs(out)
    assert sorted(before) == ["lm-alibi-seed0.json", "lm-rope-seed0.json"]
    (out / "runs" / "lm-alibi-seed0.json").unlink()  # as if interrupted before alibi finished
    kept = (out / "runs" / "lm-rope-seed0.json").stat().st_mtime_ns
    assert bench.main(args) == 2  # the folder holds a run: --resume or another folder
    assert bench.main(args + ["--resume"]) == 0
    after = read_runs(out)
    assert sorted(after) == sorted(before)
    assert (out / "runs" / "lm-rope-seed0.json").stat().st_mtime_ns == kept
    assert after["lm-rope-seed0.json"] == before["lm-rope-seed0.json"]
    # another configuration is refused, not mixed in
    assert bench.main(args + ["--resume", "--lm-steps", "21"]) == 2


@pytest.mark.parametrize("extra, message", [
    (["--schemes", "rope,fourier"], "unknown scheme 'fourier'"),
    (["--lm-multiples", "1,0"], "below the training length"),
    (["--passkey-steps", "5"], "too small to train"),
    (["--train-length", "8"], "--train-length = 8"),
])
def test_bad_input_is_one_error_before_any_training(tmp_path, capsys, extra, message):
    out = tmp_path / "bad"
    assert bench.main(SMOKE + ["--out", str(out)] + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("length_generalization: error: ") and message in err
    assert err.count("\n") == 1
    assert not out.exists()  # nothing trained, nothing written
