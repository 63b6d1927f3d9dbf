#!/usr/bin/env bash
# The instrumentation-overhead benchmark as docs/PERFORMANCE.md records it: each kernel
# with the pass and without, interleaved, 7 repetitions, medians and their ratio.
# Usage: bench/run_overhead.sh [build-dir]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=$(mktemp --suffix=.json)
trap 'rm -f "$out"' EXIT
"$build/bin/overhead_bench" --benchmark_repetitions=7 --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_out="$out" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/overhead_ratio.py "$out"
