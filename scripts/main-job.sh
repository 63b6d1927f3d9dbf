#!/usr/bin/env bash
# The main job: Midway's Table 1 measured here. Builds everything (scripts/build.sh), then
# runs bench/mm_compare.py: MM-ec (examples/mm_ec.c, entry consistency) and MM-rc
# (examples/mm_rc.c, release consistency) as jobs of 1, 2, 4 and 8 local processes over
# shm, next to the single-process row (the same program compiled by clang -O2 without
# the pass and without the runtime), 512 x 512 floats, median of 3 runs each. It prints
# the table (processes, elapsed, speedup, input transfer, compute, output transfer,
# MB transferred, messages), one progress line per run on stderr, and the paths of
# build/main-job/mm_compare.{json,csv,png}; each run's log is in build/main-job/runs/.
#
# Arguments go to the driver (bench/mm_compare.py --help), e.g.
#   scripts/main-job.sh --procs 1,2 --repeat 5 --size 256
# The exit status is the driver's: non-zero if a run failed (after the table is printed).
#
#   scripts/main-job.sh --programs splash3 [bench/splash3.sh's arguments]
# runs the Splash-3 table instead (bench/splash3.sh: five real programs, Midway against
# their pthread build at P=1 and 2; needs ../shared/splash3).
set -euo pipefail
cd "$(dirname "$0")/.."
programs=mm
if [ "${1:-}" = --programs ]; then
  programs=${2:?--programs takes mm or splash3}
  shift 2
fi
case $programs in
  mm | splash3) ;;
  *) echo "main-job.sh: --programs $programs: choose mm (the default) or splash3" >&2; exit 2 ;;
esac
bash scripts/build.sh
if [ "$programs" = splash3 ]; then
  exec bash bench/splash3.sh --build build "$@"
fi
# The plot needs Debian's python3-matplotlib (scripts/setup.sh), which is /usr/bin/python3's.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
echo
exec "$py" bench/mm_compare.py --build build --out build/main-job "$@"
