#!/usr/bin/env bash
# The checker's cost: each example job built by mwcc -O2 (default) and by
# mwcc -fmidway-check -O2 (check build), timed by hyperfine under mwrun at NP ranks
# (default 2), RUNS runs each (default 5); prints the median seconds of each and their
# ratio (check / default); and the check build under mwrun --advise (the binding
# advisor's record and merge, docs/CHECKER.md) and its ratio to the default build.
# Needs the examples built (cmake --build build), hyperfine.
# Usage: bench/check_overhead.sh [BUILD_DIR]   (env NP, RUNS, PROGRAMS="mm_rc sor_ec ...")
set -euo pipefail
build=$(realpath "${1:-build}")
np=${NP:-2}
runs=${RUNS:-5}
command -v hyperfine >/dev/null || { echo "check_overhead.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
declare -A args=(
  [mm_ec]="-n 384" [mm_rc]="-n 384" [sor_ec]="-m 512 -n 512 -i 60" [tsp_ec]="-c 13"
  [quicksort_ec]="-n 524288 -l 4096" [water_ec]="-k 128 -t 6" [sor_rc]="-m 512 -n 512 -i 60")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-14s %10s %10s %7s %10s %7s\n' program default_s check_s ratio advise_s ratio
for ex in ${PROGRAMS:-mm_ec mm_rc sor_ec tsp_ec quicksort_ec water_ec}; do
  run="$build/bin/mwrun -n $np --timeout 120"
  # The three in one sitting, so that load from other jobs falls on them alike.
  hyperfine -N -w 1 -r "$runs" --export-json "$tmp/$ex.json" \
    "$run $build/examples/$ex ${args[$ex]}" "$run $build/examples/${ex}_check ${args[$ex]}" \
    "$run --advise=$tmp/advice.json $build/examples/${ex}_check ${args[$ex]}" >/dev/null 2>&1
  python3 - "$tmp/$ex.json" "$ex" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
d, c, a = (statistics.median(x["times"]) for x in r)
print(f"{sys.argv[2]:<14} {d:10.3f} {c:10.3f} {c / d:7.2f} {a:10.3f} {a / d:7.2f}")
PY
done
