#!/usr/bin/env python3
"""Runs the two bench builds (bench_rope_default: a plain Release build whose kernels choose
their instruction set at run time; bench_rope: -march=native) one after the other and prints,
per summary row, each build's figure and default / native.

Every figure is already a ratio to a baseline timed in the same process (memcpy, the scalar
reference, one thread), so dividing the two builds' figures compares them without trusting
absolute times taken minutes apart on a shared machine. For time-like rows (fused scores,
ns per table entry) the division is inverted, so > 1 always means the default build is ahead.
Target: default / native >= 0.9 on every row.

  bench/compare_builds.py --build-dir build/bench [--rounds 2] [-- <Google Benchmark flags>]
"""
import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROW = re.compile(r"^(\S+)\s+(-?\d+\.\d+)\s+(.*)$")
# Rows where smaller is better.
TIME_LIKE = ("fused/", "table/fill/", "table/construct/")


def summary(binary, flags):
    out = subprocess.run([str(binary)] + flags, check=True, capture_output=True, text=True).stdout
    rows, header, seen = {}, "", False
    for line in out.splitlines():
        if line.startswith("Summary ("):
            seen, header = True, line
            continue
        match = ROW.match(line) if seen else None
        if match and match.group(1) != "benchmark":
            rows[match.group(1)] = (float(match.group(2)), match.group(3))
    if not rows:
        sys.exit(f"{binary}: no summary in its output:\n{out}")
    return header, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/bench")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of each build, alternating; the median figure per row is used")
    parser.add_argument("flags", nargs="*", help="Google Benchmark flags for both builds")
    args = parser.parse_args()
    bench = Path(args.build_dir) / "bench"
    runs = {"default": [], "native": []}
    def load():
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())

    for _ in range(args.rounds):
        for build, name in (("default", "bench_rope_default"), ("native", "bench_rope")):
            started = time.strftime("%H:%M:%S UTC", time.gmtime())
            before = load()
            header, rows = summary(bench / name, args.flags)
            print(f"{build}: {header}\n  started {started}, {before}; ended {load()}")
            runs[build].append(rows)

    def median(build, row):
        values = sorted(r[row][0] for r in runs[build] if row in r)
        return values[len(values) // 2] if values else None

    names = [n for n in runs["native"][0] if any(n in r for r in runs["default"])]
    print(f"\n{'benchmark':<62} {'default':>8} {'native':>8} {'def/nat':>8}  target >= 0.90")
    missed = 0
    for name in names:
        d, n = median("default", name), median("native", name)
        ratio = (n / d) if name.startswith(TIME_LIKE) else (d / n)
        verdict = "met" if ratio >= 0.9 else "MISSED"
        missed += ratio < 0.9
        print(f"{name:<62} {d:8.3f} {n:8.3f} {ratio:8.3f}  {verdict}")
    print(f"\n{len(names) - missed} of {len(names)} rows within 0.9 of the native build")


if __name__ == "__main__":
    main()
