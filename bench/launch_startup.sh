#!/usr/bin/env bash
# Start-up time of a Midway job under each launcher: mwrun, Open MPI's mpirun and Slurm's
# srun --mpi=pmix (on a one-node cluster of its own, test/slurm/cluster.sh; needs root).
# Each launcher starts the same 4-rank job of test/launch/probe (mw_init, one line of
# output, mw_finalize) and, as its own baseline, 4 processes of /bin/true, which never
# join a job: the difference is what mw_init and mw_finalize cost under that launcher.
# hyperfine times the commands (after a warm-up run, in rounds); the medians over all
# runs are printed and written to OUT/launch_startup.md, every time to launch_startup.json.
#
# usage: bench/launch_startup.sh [BUILD_DIR] [RUNS] [OUT]   (defaults: build 21 build/launch)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runs=${2:-21}
out=${3:-$build/launch}
mkdir -p "$out"
probe=$build/test/launch/probe
mwrun=$build/bin/mwrun
command -v hyperfine > /dev/null || { echo "hyperfine is not installed (scripts/setup.sh)"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mw-launch-bench.XXXXXX")
# shellcheck source=../test/slurm/cluster.sh
source "$here/../test/slurm/cluster.sh"
trap 'cluster_stop; rm -rf "$tmp"' EXIT
cluster_start "$tmp/cluster"

mpirun="mpirun --allow-run-as-root --oversubscribe -n 4"
# In rounds of 3 runs of each command, so that a change of load on a shared machine
# falls on every command alike rather than on whichever ran then.
rounds=$(((runs + 2) / 3))
for round in $(seq "$rounds"); do
  hyperfine --style none --warmup 1 --runs 3 --export-json "$out/round.$round.json" \
    -n "mwrun -n 4 probe" "$mwrun -n 4 $probe hello" \
    -n "mpirun -n 4 probe" "$mpirun $probe hello" \
    -n "srun --mpi=pmix -n 4 probe" "srun --mpi=pmix -n 4 $probe hello" \
    -n "mpirun -n 4 true" "$mpirun true" \
    -n "srun --mpi=pmix -n 4 true" "srun --mpi=pmix -n 4 true" > /dev/null 2>> "$out/hyperfine.log"
done

python3 - "$out" "$rounds" <<'EOF2'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/round.{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
json.dump(times, open(f"{out}/launch_startup.json", "w"), indent=1)
med = {name: statistics.median(t) for name, t in times.items()}
lines = ["| command | runs | median s | min s | max s |", "| --- | ---: | ---: | ---: | ---: |"]
for name, t in times.items():
    lines.append(f"| `{name}` | {len(t)} | {med[name]:.3f} | {min(t):.3f} | {max(t):.3f} |")
lines.append("")
p, t = "srun --mpi=pmix -n 4 ", "mpirun -n 4 "
lines.append(f"srun / mpirun, the probe job: {med[p + 'probe'] / med[t + 'probe']:.2f}; "
             f"srun / mwrun: {med[p + 'probe'] / med['mwrun -n 4 probe']:.2f}")
lines.append(f"mw_init + mw_finalize (probe - true): under mpirun {med[t + 'probe'] - med[t + 'true']:.3f} s, "
             f"under srun {med[p + 'probe'] - med[p + 'true']:.3f} s")
open(f"{out}/launch_startup.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF2
rm -f "$out"/round.*.json
