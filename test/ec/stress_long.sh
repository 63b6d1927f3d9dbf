#!/usr/bin/env bash
# The long run of the stress test (stress.c): many seeds, each with its own job size,
# lock count, line size, nesting, delay, consistency model (mwrun --model), whether
# the arena mixes entry-, release- and processor-consistent data (--mix), whether
# ranks discard cached copies (--discard) and whether updates are big (--big, with
# MW_PC_INTERVAL_US drawn too under pc) drawn from the seed. Not part of ctest (which
# runs a few fixed seeds); run it by hand after changing the lock, barrier, copyset or
# pending-update protocols:
#
#   test/ec/stress_long.sh                 # 300 runs from seed 1000, shm and some tcp
#   test/ec/stress_long.sh -c 1000 -s 1    # 1000 runs from seed 1
#   test/ec/stress_long.sh -p shm -j 2     # shm only, two jobs at a time
#   test/ec/stress_long.sh -m ec -x 0 -d 0 # entry consistency only, as before --mix
#   test/ec/stress_long.sh -m rc -x 100 -n 8   # every run --mix under rc at 8 ranks
#   test/ec/stress_long.sh -p tcp -m rc,pc -B 100 -d 0 -n 3,4 -c 200
#                                          # release and processor consistency over tcp
#                                          # with big updates (ctest's ec-stress-big-*)
#
# Options:
#   -c COUNT     runs (default 300)
#   -s SEED      first seed (default 1000)
#   -p LIST      providers to draw from, comma separated (default shm,shm,shm,shm,tcp)
#   -m LIST      models to draw from (mwrun --model), comma separated (default ec,ec,rc,pc)
#   -x PCT       percent of runs with --mix (default 60)
#   -d PCT       percent of runs with --discard (mw_discard between sections; default 25).
#                -d 0 leaves it out.
#   -B PCT       percent of runs with --big (ranges up to 24 KiB, scattered writes: update
#                messages filled to the eager limit; default 20)
#   -n LIST      job sizes to draw from, comma separated (default 2,2,3,4,4,5,6,8)
#   -b DIR       build directory (default: build/ at the top of the repository)
#   -t SECONDS   timeout of each job (default 120)
#   -j JOBS      jobs run at a time (default 1; the machine has few cores and ranks spin)
#   -k           keep going after a failure (default: stop at the first)
# Each failing run's output is kept in a directory named at the end, with the command
# that reproduces it. Exit status 0 only if every run passed.
set -uo pipefail

count=300 first=1000 providers="shm,shm,shm,shm,tcp" models="ec,ec,rc,pc" mixpct=60 discardpct=25 bigpct=20
sizes_opt="2,2,3,4,4,5,6,8" build="" timeout=120 jobs=1 keep=0
while getopts "c:s:p:m:x:d:B:n:b:t:j:kh" opt; do
  case $opt in
    c) count=$OPTARG ;;
    s) first=$OPTARG ;;
    p) providers=$OPTARG ;;
    m) models=$OPTARG ;;
    x) mixpct=$OPTARG ;;
    d) discardpct=$OPTARG ;;
    B) bigpct=$OPTARG ;;
    n) sizes_opt=$OPTARG ;;
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
IFS=, read -r -a mlist <<< "$models"
IFS=, read -r -a sizes <<< "$sizes_opt"

# The parameters of run `seed`, drawn from the seed (bash's RANDOM, seeded).
params() {
  local seed=$1
  RANDOM=$seed
  local lines=(0 0 0 1 8 64 4096)
  local locks=(1 2 3 5 8 16 32 64)
  local intervals=(100 500 1000 1000 5000)
  np=${sizes[RANDOM % ${#sizes[@]}]}
  provider=${plist[RANDOM % ${#plist[@]}]}
  model=${mlist[RANDOM % ${#mlist[@]}]}
  args=(--seed "$seed" --locks "${locks[RANDOM % ${#locks[@]}]}"
        --iters $((200 + RANDOM % (np > 4 ? 1500 : 3000)))
        --nest $(( (RANDOM % 3) * 25 )) --delay $((RANDOM % 3 == 0 ? 0 : RANDOM % 40))
        --line "${lines[RANDOM % ${#lines[@]}]}" --stall 20)
  if [ $((RANDOM % 100)) -lt "$mixpct" ]; then
    args+=(--mix --pc-interval "${intervals[RANDOM % ${#intervals[@]}]}")
  fi
  if [ $((RANDOM % 100)) -lt "$discardpct" ]; then
    args+=(--discard $((5 + RANDOM % 21)))
  fi
  # Drawn last, so that the runs of a seed without --big stay what they were.
  pc_env=()
  if [ $((RANDOM % 100)) -lt "$bigpct" ]; then
    args+=(--big)
    # fewer locks: --big's ranges share the arena
    for ((i = 0; i < ${#args[@]}; i++)); do
      if [ "${args[i]}" = --locks ] && [ "${args[i + 1]}" -gt 16 ]; then args[i + 1]=16; fi
    done
    [ "$model" = pc ] && pc_env=(MW_PC_INTERVAL_US=$((RANDOM % 2 ? 200 : 1000)))
  fi
}

run_one() {
  local seed=$1 np provider model args pc_env
  params "$seed"
  local cmd=(env FI_TCP_IFACE="${FI_TCP_IFACE:-lo}" "${pc_env[@]}" "$mwrun" -n "$np" --provider "$provider" --model "$model" --timeout "$timeout" "$prog" "${args[@]}")
  local log=$out/seed-$seed.log t0=$SECONDS
  "${cmd[@]}" > "$log" 2>&1
  local rc=$?
  if [ "$rc" = 0 ]; then
    printf 'ok   seed %-6s n=%s %-4s %s %3ss  %s\n' "$seed" "$np" "$provider" "$model" $((SECONDS - t0)) "${args[*]}"
    rm -f "$log"
    return 0
  fi
  printf 'FAIL seed %-6s n=%s %-4s %s exit %s: %s\n' "$seed" "$np" "$provider" "$model" "$rc" "${cmd[*]}"
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
