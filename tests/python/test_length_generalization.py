"""examples/length_generalization, run small: its tasks draw what they say, and the bench trains
every scheme through posemb's training modules and scores it past the training length."""
import importlib
import math
import os
import sys

import torch

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "length_generalization"))
tasks = importlib.import_module("tasks")
bench = importlib.import_module("bench")


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


def test_passkey_holds_one_value_and_asks_for_it():
    batch = tasks.Passkey().batch(64, 40, torch.Generator().manual_seed(2))
    values = batch.tokens < tasks.PASSKEY_VALUES
    assert (values.sum(1) == 1).all()
    assert (batch.tokens[values] == batch.targets[:, -1]).all()
    assert (batch.tokens[:, -1] == tasks.QUERY_MARKER).all()
    assert batch.mask.sum() == 64 and batch.mask[:, -1].all()


def test_bench_trains_every_scheme_and_scores_past_the_training_length(capsys, tmp_path):
    out = tmp_path / "bench.json"
    assert bench.main(["--steps", "3", "--seeds", "1", "--train-length", "16", "--multiples",
                       "1,2", "--eval-sequences", "4", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    report = __import__("json").loads(out.read_text())
    for task in ("lm", "passkey"):
        results = report["tasks"][task]
        assert set(results) == set(bench.SCHEMES)
        for scheme, per_length in results.items():
            for length, runs in per_length.items():
                loss = runs[0]["loss"]
                # a learned table has no row past its training length: n/a, never a number
                assert math.isnan(loss) == (scheme == "learned" and length == "32"), (scheme, length)
    assert "| learned | " in printed and "n/a" in printed
