#!/usr/bin/env bash
# Splash-3 programs, unmodified, on Midway: builds one program of ../shared/splash3 with
# the pthread macros (the reference) and with annotations/c.m4.midway (built by mwcc
# -fmidway-shared-globals, run by mwrun -n P with no other flag), runs both at each P
# and fails unless Midway's printed results equal the pthread build's, timing lines
# aside. Small inputs, to keep CI short (bench/splash3.sh runs the suggested ones).
#
# Usage: splash3_test.sh BUILD_DIR SOURCE_DIR PROGRAM "P..."
#   PROGRAM: fft, lu, radix, water or ocean. Exit 77 (skipped) without ../shared/splash3.
set -euo pipefail
build=$1 src=$2 prog=$3 procs=$4
. "$src/test/splash3/common.sh"
splash3_locate || exit 77
case $prog in
  fft) args='-m12 -p{P} -t' ;;
  lu) args='-n128 -b16 -p{P} -t' ;;
  radix) args='-p{P} -n65536 -t' ;;
  water) args='' ;;  # input on stdin, P on its last line
  ocean) args='-n66 -p{P} -o' ;;
esac
dir=$(splash3_dir "$prog")
work=$(mktemp -d "${TMPDIR:-/tmp}/splash3-$prog.XXXXXX")
trap 'rm -rf "$work"' EXIT
splash3_build "$prog" "$work"

status=0
for P in $procs; do
  a=${args//\{P\}/$P}
  splash3_water_input "$P" > "$work/input.$P"
  # From the program's folder (WATER-NSQUARED reads its files there), input on stdin.
  # Standard output only: mwcc's and mw_init's warnings (WATER-NSQUARED's fscanf) go to
  # standard error.
  (cd "$codes/$dir" && "$work/pthread/prog" $a < "$work/input.$P") > "$work/pthread.$P"
  (cd "$codes/$dir" && "$build/bin/mwrun" --timeout 120 -n "$P" "$work/midway/prog" $a < "$work/input.$P") \
    > "$work/midway.$P" 2> "$work/midway.$P.err" ||
    { echo "P=$P: the Midway run failed:"; cat "$work/midway.$P" "$work/midway.$P.err"; status=1; continue; }
  if diff -u <(splash3_results < "$work/pthread.$P") <(splash3_results < "$work/midway.$P") > "$work/diff.$P"; then
    echo "P=$P: $prog on Midway prints the pthread build's results ($(splash3_results < "$work/midway.$P" | wc -l) lines)"
  else
    echo "P=$P: $prog on Midway differs from the pthread build:"; cat "$work/diff.$P"; status=1
  fi
done
exit $status
