# What the Splash-3 test and benchmark share (sourced): where the programs are, how each
# is built with the pthread macros and with annotations/c.m4.midway, and which of their
# printed lines are results. Needs $build (the build tree) and $src (the source tree).
# splash3_locate sets $codes, or returns 1 when the programs are absent.
splash3_locate() {
  local suite=${MIDWAY_SPLASH3:-$src/../shared/splash3}
  if [ -z "${MIDWAY_SPLASH3:-}" ] && [ ! -d "$suite" ]; then
    # A git worktree: ../shared beside the main checkout.
    local common
    common=$(git -C "$src" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    [ -n "$common" ] && suite=$(dirname "$common")/../shared/splash3
  fi
  if [ ! -d "$suite/codes" ]; then
    echo "SKIPPED: the Splash-3 programs are not at $suite (test data kept outside the"
    echo "repository: ../shared/splash3, or set MIDWAY_SPLASH3)"
    return 1
  fi
  codes=$suite/codes
}

# The folder of program $1 (fft, lu, radix, water, ocean).
splash3_dir() {
  case $1 in
    fft) echo kernels/fft ;;
    lu) echo kernels/lu/contiguous_blocks ;;
    radix) echo kernels/radix ;;
    water) echo apps/water-nsquared ;;
    ocean) echo apps/ocean/contiguous_partitions ;;
    *) echo "unknown program $1" >&2; return 1 ;;
  esac
}

# Builds program $1 into $2/pthread/prog and $2/midway/prog ($splash3_mwcc_flags, if
# set, added to mwcc's command line).
splash3_build() {
  local dir
  dir=$(splash3_dir "$1")
  _splash3_build_with "$dir" "$2/pthread" \
    "$codes/pthread_macros/pthread.m4.POSIX_BARRIER $src/test/splash3/reference.m4" \
    "clang-19 -O2 -pthread -w"
  _splash3_build_with "$dir" "$2/midway" "$src/annotations/c.m4.midway" \
    "$build/bin/mwcc -O2 -fmidway-shared-globals -Wno-backend-plugin ${splash3_mwcc_flags:-}"
}
_splash3_build_with() {
  local dir=$1 out=$2 macros=$3 cc=$4 f
  mkdir -p "$out"
  for f in "$codes/$dir"/*.in; do
    m4 -Ulen -Uindex $macros "$f" > "$out/$(basename "$f" .in)"
  done
  (cd "$out" && $cc *.c -o prog -lm) > "$out/build.log" 2>&1 || { cat "$out/build.log"; return 1; }
}

# WATER-NSQUARED's input for P processes: the suite's, with P on its last line.
splash3_water_input() {
  sed "\$ s/^ *[0-9][0-9]*/ $1/" "$codes/apps/water-nsquared/input"
}

# The printed results: every line but the timing ones (times, time fractions, the per-process
# statistics table, the compute start/end stamps) and FFT's per-process progress lines
# (each process prints its own, in whatever order the processes run).
splash3_results() {
  awk 'tolower($0) ~ /time|fraction|computestart|computeend/ { next }
       /iter_num|^Step [0-9]+:/ { next }
       /PROCESS STATISTICS/ { skip = 1; next }
       skip && NF == 0 { skip = 0; next }
       skip { next }
       { print }'
}
