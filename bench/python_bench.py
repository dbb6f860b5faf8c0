#!/usr/bin/env python3
"""The Python package's call overhead, as ratios from one run.

  decode:  apply_rope_ on one token [1, 1, 32, 128] float32 (numpy, and a torch tensor) against a
           numpy ufunc on the same array (np.multiply(x, 1.0, out=x)) and torch's x.mul_(1.0);
           the goal is at most 3x.
  prefill: apply_rope_ on [1, 2048, 32, 128] float32 against the same C++ call timed in C++
           (posemb._posemb._time_apply_rope_, the extension's own kernel, no Python in the loop);
           the goal is within 5%.

Each figure is the best of several timed rounds (the machine may be shared); the load average
is printed with them. Run with the built package on the path:

    PYTHONPATH=build/release/python python3 bench/python_bench.py
"""
import os
import timeit

import numpy as np

import posemb


def best_per_call(statement, number, rounds=7):
    return min(timeit.repeat(statement, number=number, repeat=rounds)) / number


def decode_rows(spec):
    x = np.random.default_rng(0).standard_normal((1, 1, 32, 128)).astype(np.float32)
    rows = []
    ufunc = best_per_call(lambda: np.multiply(x, 1.0, out=x), 20000)
    rope = best_per_call(lambda: posemb.apply_rope_(x, 4095, spec), 20000)
    rows.append(("decode numpy [1, 1, 32, 128]: apply_rope_ / np.multiply(out=x)", rope, ufunc))
    try:
        import torch
    except ImportError:
        return rows
    t = torch.from_numpy(x.copy())
    torch_op = best_per_call(lambda: t.mul_(1.0), 20000)
    rope_t = best_per_call(lambda: posemb.apply_rope_(t, 4095, spec), 20000)
    rows.append(("decode torch [1, 1, 32, 128]: apply_rope_ / t.mul_(1.0)", rope_t, torch_op))
    rows.append(("decode torch [1, 1, 32, 128]: apply_rope_ / np.multiply on numpy", rope_t, ufunc))
    return rows


def prefill_row(spec, rounds=9):
    # Rounds alternate between the two calls, so that a load change on a shared machine hits both.
    x = np.random.default_rng(1).standard_normal((1, 2048, 32, 128)).astype(np.float32)
    number = 10
    python, native = [], []
    for _ in range(rounds):
        python.append(timeit.timeit(lambda: posemb.apply_rope_(x, 0, spec), number=number) / number)
        native.append(posemb._posemb._time_apply_rope_(x, 0, spec, number))
    return ("prefill [1, 2048, 32, 128]: Python apply_rope_ / C++ apply_rope_inplace", min(python), min(native))


def main():
    spec = posemb.default_rope_spec(128, 500000.0)
    rows = decode_rows(spec) + [prefill_row(spec)]
    print(f"posemb {posemb.__version__}, load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, {os.cpu_count()} CPUs")
    for name, ours, baseline in rows:
        print(f"{name:75s} {ours * 1e6:10.2f} us / {baseline * 1e6:10.2f} us = {ours / baseline:5.2f}x")


if __name__ == "__main__":
    main()
