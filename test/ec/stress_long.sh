#!/usr/bin/env bash
# The long run of the entry-consistency stress test (stress.c): many seeds, each with
# its own job size, lock count, line size, nesting and delay drawn from the seed. Not
# part of ctest (which runs a few fixed seeds); run it by hand after changing the lock or
# barrier protocol:
#
#   test/ec/stress_long.sh                 # 200 runs from seed 1000, shm and some tcp
#   test/ec/stress_long.sh -c 1000 -s 1    # 1000 runs from seed 1
#   test/ec/stress_long.sh -p shm -j 2     # shm only, two jobs at a time
#
# Options:
#   -c COUNT     runs (default 200)
#   -s SEED      first seed (default 1000)
#   -p LIST      providers to draw from, comma separated (default shm,shm,shm,shm,tcp)
#   -b DIR       build directory (default: build/ at the top of the repository)
#   -t SECONDS   timeout of each job (default 120)
#   -j JOBS      jobs run at a time (default 1; the machine has few cores and ranks spin)
#   -k           keep going after a failure (default: stop at the first)
# Each failing run's output is kept in a directory named at the end, with the command
# that reproduces it. Exit status 0 only if every run passed.
set -uo pipefail

count=200 first=1000 providers="shm,shm,shm,shm,tcp" build="" timeout=120 jobs=1 keep=0
while getopts "c:s:p:b:t:j:kh" opt; do
  case $opt in
    c) count=$OPTARG ;;
    s) first=$OPTARG ;;
    p) providers=$OPTARG ;;
    b) build=$OPTARG ;;
    t) timeout=$OPTARG ;;
    j) jobs=$OPTARG ;;
    k) keep=1 ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${build:-$top/build}
mwrun=$build/bin/mwrun
mwcc=$build/bin/mwcc
[ -x "$mwrun" ] && [ -x "$mwcc" ] || { echo "stress_long: no $mwrun or $mwcc: build first (scripts/build.sh)"; exit 2; }

out=$(mktemp -d "${TMPDIR:-/tmp}/ec-stress-long.XXXXXX")
prog=$out/stress
"$mwcc" -O2 -Wall -Werror "$here/stress.c" -o "$prog" || exit 2
IFS=, read -r -a plist <<< "$providers"

# The parameters of run `seed`, drawn from the seed (bash's RANDOM, seeded).
params() {
  local seed=$1
  RANDOM=$seed
  local sizes=(2 2 3 4 4 5 6 8)
  local lines=(0 0 0 1 8 64 4096)
  local locks=(1 2 3 5 8 16 32 64)
  np=${sizes[RANDOM % ${#sizes[@]}]}
  provider=${plist[RANDOM % ${#plist[@]}]}
  args=(--seed "$seed" --locks "${locks[RANDOM % ${#locks[@]}]}"
        --iters $((200 + RANDOM % (np > 4 ? 1500 : 3000)))
        --nest $(( (RANDOM % 3) * 25 )) --delay $((RANDOM % 3 == 0 ? 0 : RANDOM % 40))
        --line "${lines[RANDOM % ${#lines[@]}]}" --stall 20)
}

run_one() {
  local seed=$1 np provider args
  params "$seed"
  local cmd=("$mwrun" -n "$np" --provider "$provider" --timeout "$timeout" "$prog" "${args[@]}")
  local log=$out/seed-$seed.log t0=$SECONDS
  "${cmd[@]}" > "$log" 2>&1
  local rc=$?
  if [ "$rc" = 0 ]; then
    printf 'ok   seed %-6s n=%s %-4s %3ss  %s\n' "$seed" "$np" "$provider" $((SECONDS - t0)) "${args[*]}"
    rm -f "$log"
    return 0
  fi
  printf 'FAIL seed %-6s n=%s %-4s exit %s: %s\n' "$seed" "$np" "$provider" "$rc" "${cmd[*]}"
  echo "  $(grep -m1 -E 'FAIL|midway:|mwrun:' "$log")"
  echo "${cmd[*]}" >> "$log"
  return 1
}

failed=0 done_runs=0
pids=()
for ((seed = first; seed < first + count; seed++)); do
  if [ "$jobs" -le 1 ]; then
    run_one "$seed" || { failed=$((failed + 1)); [ "$keep" = 1 ] || break; }
  else
    run_one "$seed" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
      wait "${pids[0]}" || failed=$((failed + 1))
      pids=("${pids[@]:1}")
      [ "$failed" -gt 0 ] && [ "$keep" = 0 ] && break
    fi
  fi
  done_runs=$((done_runs + 1))
done
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
if [ "$failed" -gt 0 ]; then
  echo "stress_long: $failed of $done_runs runs FAILED; their output is in $out"
  exit 1
fi
echo "stress_long: all $done_runs runs passed"
rm -rf "$out"
