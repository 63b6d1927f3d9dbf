#!/usr/bin/env bash
# Splash-3 on Midway against threads: each of the five programs of ../shared/splash3 at
# the README's suggested size, built with the pthread macros (clang-19 -O2 -pthread) and
# with annotations/c.m4.midway (mwcc -O2 -fmidway-shared-globals, run by mwrun -n P over
# shm), at P=1 and P=2, runs alternating pthread / Midway, REPEAT of each. The figure is
# the program's own reported time leaving start-up out ("Total time without
# initialization", WATER-NSQUARED's "COMPUTETIME (after initialization)", microseconds of
# CLOCK), the median of the runs; the ratio is Midway / pthread. Messages and bytes are
# the Midway runs' totals over every rank (mwrun --stats=json), medians too.
#
# Usage: bench/splash3.sh [--repeat N] [--procs "1 2"] [--programs "fft lu radix water ocean"]
#                         [--build DIR] [--mwcc-flags "FLAGS"]
# --mwcc-flags adds FLAGS to the Midway build's mwcc command line (to compare a pass
# option's settings, e.g. "-mllvm -midway-inline-range-bytes=0", in one sitting).
# Prints a Markdown table (docs/PERFORMANCE.md keeps one). Exits 77 without the programs.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build repeat=5 procs="1 2" programs="fft lu radix water ocean"
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --programs) programs=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --mwcc-flags) splash3_mwcc_flags=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/splash3.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
. "$src/test/splash3/common.sh"
splash3_locate || exit 77
work=$build/bench-splash3
rm -rf "$work"; mkdir -p "$work"

args_of() {
  case $1 in
    fft) echo "-m18 -p$2 -t" ;;
    lu) echo "-n512 -b16 -p$2 -t" ;;
    radix) echo "-p$2 -n1048576 -t" ;;
    water) echo "" ;;
    ocean) echo "-n258 -p$2 -o" ;;
  esac
}
# The program's reported compute time, in microseconds, from its output on stdin.
time_of() {
  awk -F'[:=]' '/Total time without initialization/ { gsub(/ /, "", $2); print $2; exit }
                /COMPUTETIME \(after initialization\)/ { gsub(/ /, "", $2); print $2; exit }'
}

echo "| program | P | pthread (ms) | Midway (ms) | Midway / pthread | messages | MB (payload + protocol) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for prog in $programs; do
  splash3_build "$prog" "$work/$prog" >&2
  dir=$codes/$(splash3_dir "$prog")
  for P in $procs; do
    a=$(args_of "$prog" "$P")
    splash3_water_input "$P" > "$work/$prog/input.$P"
    : > "$work/$prog/times.$P"
    for i in $(seq "$repeat"); do
      t_p=$(cd "$dir" && "$work/$prog/pthread/prog" $a < "$work/$prog/input.$P" | time_of)
      stats=$work/$prog/stats.$P.$i.json
      t_m=$(cd "$dir" && "$build/bin/mwrun" -n "$P" --stats=json:"$stats" "$work/$prog/midway/prog" $a \
              < "$work/$prog/input.$P" | time_of)
      echo "$t_p $t_m $stats" >> "$work/$prog/times.$P"
      echo "  $prog P=$P run $i: pthread $t_p us, Midway $t_m us" >&2
    done
    python3 - "$prog" "$P" "$work/$prog/times.$P" <<'PY'
import json, statistics, sys
prog, P, path = sys.argv[1:4]
rows = [l.split() for l in open(path) if l.strip()]
tp = statistics.median(float(r[0]) for r in rows)
tm = statistics.median(float(r[1]) for r in rows)
def total(r):
    try:
        t = json.load(open(r[2]))["total"]
    except (OSError, ValueError, KeyError):
        return 0, 0
    return t.get("msgs_sent", 0), t.get("payload_bytes_sent", 0) + t.get("protocol_bytes_sent", 0)
tots = [total(r) for r in rows]
msgs = statistics.median(m for m, _ in tots)
mb = statistics.median(b for _, b in tots) / 1e6
print(f"| {prog} | {P} | {tp/1000:.1f} | {tm/1000:.1f} | {tm/tp:.2f} | {msgs:.0f} | {mb:.1f} |")
PY
  done
done
