#!/usr/bin/env bash
# Page faults inside a Splash-3 program's timed region (between its "Initialization
# finish time" and "Overall finish time"), its pthread build against Midway's, at P ranks
# or threads: how many pages each run meets for the first time while it is timed.
# On the 2-core machines here a first touch costs 20-40 µs (build/bin/first_touch),
# against 0.03 µs for a page in use, so these counts are much of what a DSM's copies
# cost a program (docs/PERFORMANCE.md, "Splash-3 against threads").
#
# Usage: bench/splash3_faults.sh [--procs P] [--programs "fft lu radix"] [--build DIR]
# Needs perf (linux-perf) and the programs built by bench/splash3.sh (it builds them
# if absent). Only FFT, LU and RADIX print the two stamps. Exits 77 without the programs.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build procs=2 programs="fft lu radix"
while [ $# -gt 0 ]; do
  case $1 in
    --procs) procs=$2; shift 2 ;;
    --programs) programs=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/splash3_faults.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v perf > /dev/null || { echo "bench/splash3_faults.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
. "$src/test/splash3/common.sh"
splash3_locate || exit 77
work=$build/bench-splash3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

args_of() {
  case $1 in
    fft) echo "-m18 -p$2 -t" ;;
    lu) echo "-n512 -b16 -p$2 -t" ;;
    radix) echo "-p$2 -n1048576 -t" ;;
    *) echo "bench/splash3_faults.sh: $1 prints no timed region" >&2; return 1 ;;
  esac
}

# Runs "$@" in the program's folder under perf with wall-clock stamps; prints the faults
# in the timed region per process (rank), largest first, and their sum.
faults_in_region() {
  local dir=$1; shift
  (cd "$dir" && perf record -q -k CLOCK_REALTIME -e page-faults -c 1 -o "$tmp/perf.data" -- "$@") \
    > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; return 1; }
  local from to
  from=$(awk -F: '/Initialization finish time/ { gsub(/ /, "", $2); print $2 }' "$tmp/out")
  to=$(awk -F: '/Overall finish time/ { gsub(/ /, "", $2); print $2 }' "$tmp/out")
  perf script -i "$tmp/perf.data" -F comm,pid,time 2> /dev/null |
    awk -v from="$from" -v to="$to" '
      $1 == "prog" { t = $3; sub(/:$/, "", t); t = t * 1e6
                     if (t >= from && t <= to) n[$2]++ }
      END { s = 0; line = ""
            for (p in n) { s += n[p]; line = line " " n[p] }
            printf "%d (per process:%s)\n", s, line }'
}

echo "| program | P | pthread: faults in the timed region | Midway: faults in the timed region |"
echo "| --- | --- | --- | --- |"
for prog in $programs; do
  [ -x "$work/$prog/midway/prog" ] || splash3_build "$prog" "$work/$prog" >&2
  dir=$codes/$(splash3_dir "$prog")
  a=$(args_of "$prog" "$procs")
  t=$(faults_in_region "$dir" "$work/$prog/pthread/prog" $a)
  m=$(faults_in_region "$dir" "$build/bin/mwrun" -n "$procs" "$work/$prog/midway/prog" $a)
  echo "| $prog | $procs | $t | $m |"
done
