#!/usr/bin/env bash
# Release consistency, one build against another, same machine, same sitting: each
# workload runs alternately under the two builds (their own mwrun and examples), --runs
# times, with mwrun --stats=json; the table gives the medians of messages, bytes (payload
# and protocol), page faults and the job's elapsed time, and the ratios new/old.
#
#   bench/rc_compare_builds.sh --old DIR [--new DIR] [--runs 5] [--np "2 4"] [--full]
#                              [--out FILE]
#
# DIR is a build directory (e.g. a worktree of the previous commit, built with
# scripts/build.sh). Workloads, all under --model rc on shm: MM-rc (-n 256), SOR
# (sor_ec -m 256 -n 256 -i 30) and Water (water_ec -k 64 -t 6), the examples that keep their data
# in static MW_SHARED arrays. --full: the arrays' whole compiled size instead (MM-rc -n
# 512, SOR -m 512 -n 512 -i 10, Water -k 1024 -t 2), where each rank's band is the
# block of each array it homes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
new=$here/../build
old=""
runs=5
nps="2 4"
out=""
full=0
while [ $# -gt 0 ]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --full) full=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rc_compare_builds.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$old" ] || { echo "rc_compare_builds.sh: --old DIR is required (see --help)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/rc_compare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
workloads=("mm_rc -n 256" "sor_ec -m 256 -n 256 -i 30" "water_ec -k 64 -t 6")
[ $full = 1 ] && workloads=("mm_rc -n 512" "sor_ec -m 512 -n 512 -i 10" "water_ec -k 1024 -t 2")
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for np in $nps; do
  for w in "${workloads[@]}"; do
    set -- $w
    prog=$1; shift
    for ((i = 0; i < runs; i++)); do
      for b in old new; do
        dir=$old; [ $b = new ] && dir=$new
        f=$tmp/$prog.$np.$b.$i.json
        if ! "$dir/bin/mwrun" -n "$np" --model rc --timeout 120 --stats="json:$f" \
             "$dir/examples/$prog" "$@" > "$tmp/out" 2>&1; then
          echo "rc_compare_builds.sh: $b $prog at $np ranks failed:" >&2; cat "$tmp/out" >&2; exit 1
        fi
      done
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$tmp" "$runs" "$nps" "${workloads[@]}" <<'PY' | tee ${out:+"$out"}
import json, statistics, sys
tmp, runs, nps, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
keys = [("messages", lambda t: t["msgs_sent"]),
        ("MB", lambda t: (t["payload_bytes_sent"] + t["protocol_bytes_sent"]) / 1e6),
        ("faults", lambda t: t["page_faults"]),
        ("update msgs", lambda t: t["sent.update.msgs"]),
        ("s", lambda t: t["elapsed_seconds"])]
print("| workload | P | " + " | ".join(f"{k} old → new" for k, _ in keys) + " |")
print("|---|---|" + "---|" * len(keys))
for np in nps:
    for w in workloads:
        prog = w.split()[0]
        cells = []
        for name, get in keys:
            med = {}
            for b in ("old", "new"):
                vals = [get(json.load(open(f"{tmp}/{prog}.{np}.{b}.{i}.json"))["total"]) for i in range(runs)]
                med[b] = statistics.median(vals)
            ratio = med["new"] / med["old"] if med["old"] else float("nan")
            fmt = (lambda v: f"{v:.3g}") if name in ("MB", "s") else (lambda v: f"{v:.0f}")
            cells.append(f"{fmt(med['old'])} → {fmt(med['new'])} ({ratio:.2f})")
        print(f"| {w} | {np} | " + " | ".join(cells) + " |")
PY
