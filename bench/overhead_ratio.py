#!/usr/bin/env python3
"""Reads Google Benchmark JSON from overhead_bench (run with repetitions) and prints,
for each kernel, the median time with the pass, the median without, and their ratio."""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: overhead_ratio.py RESULT.json")
    with open(sys.argv[1]) as f:
        runs = json.load(f)["benchmarks"]
    median = {r["run_name"]: r["real_time"] for r in runs
              if r.get("aggregate_name") == "median"}
    if not median:
        sys.exit("no median aggregates: run with --benchmark_repetitions=N (N >= 2)")
    unit = runs[0].get("time_unit", "ms")
    print(f"{'kernel':<8} {'plain clang -O2':>16} {'mwcc -O2':>12} {'ratio':>7}")
    worst = 0.0
    for kernel in ("mm", "jacobi", "chase", "fft"):
        plain, midway = median.get(kernel + "/plain"), median.get(kernel + "/midway")
        if plain is None or midway is None:
            continue
        ratio = midway / plain
        worst = max(worst, ratio)
        print(f"{kernel:<8} {plain:>13.3f} {unit} {midway:>9.3f} {unit} {ratio:>7.3f}")
    print(f"worst ratio {worst:.3f} (target <= 1.05, goal <= 1.02)")


if __name__ == "__main__":
    main()
