#!/usr/bin/env bash
# Midway under Slurm, for real: Debian's slurmctld and slurmd (installed by
# scripts/setup.sh) as a one-node cluster of this test's own (cluster.sh), and
# `srun --mpi=pmix -n 4` starting
#   - an example (MM-ec), which must compute the right product;
#   - a job whose rank 1 is killed by SIGKILL while the others run, and one whose rank 1
#     exits with status 3: srun must fail, the whole job must stop, and no rank process
#     and no /dev/shm file of a rank may be left.
# Exits 77 (skipped), saying why, where it cannot run: not root, or Slurm cannot be
# installed. The daemons it started are stopped however it ends.
#
# usage: srun_test.sh SOURCE_DIR EXAMPLE PROBE
set -euo pipefail
src=$1
example=$2
probe=$3
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: needs root, to install Slurm and run slurmctld and slurmd"
  exit 77
fi
if ! out=$(bash "$src/scripts/setup.sh" 2>&1); then
  echo "$out" | tail -5
  echo "skipped: cannot install Slurm (scripts/setup.sh failed)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mw-srun-test.XXXXXX")
# shellcheck source=cluster.sh
source "$here/cluster.sh"
cleanup() {
  cluster_stop
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

rc=0
cluster_start "$tmp/cluster" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
echo "== Slurm $(srun --version | cut -d' ' -f2), one node; MPI plugins: $(srun --mpi=list 2>&1 | tr -s ' \t\n' ' ')"
srun --mpi=list 2>&1 | grep -qw pmix || fail "this Slurm has no mpi/pmix plugin"

# Runs srun with a time limit of its own; sets out, status, seconds.
srun_job() {
  local start=$SECONDS
  status=0
  out=$(timeout 60 srun --mpi=pmix "$@" 2>&1) || status=$?
  seconds=$((SECONDS - start))
  echo "$out"
  echo "(exit status $status, $seconds s)"
}

# No process of the recorded pids runs, and none left a /dev/shm file.
expect_nothing_left() {
  local pid i
  for pid in $(cat "$1"/rank.* 2> /dev/null); do
    for i in $(seq 50); do
      [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" != Z ] || break
      sleep 0.1
    done
    [ ! -d "/proc/$pid" ] || [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" = Z ] \
      || fail "rank process $pid still runs"
    if ls /dev/shm | grep -qE "^(midway-$pid-r|$pid:)"; then
      ls -l /dev/shm | grep -E "midway-$pid-r|$pid:"
      fail "rank process $pid left a /dev/shm file"
    fi
  done
}

echo "== srun --mpi=pmix -n 4 mm_ec -n 128"
srun_job -n 4 "$example" -n 128
[ "$status" -eq 0 ] || fail "the example failed"
grep -q "P=4: result ok" <<<"$out" || fail "the example did not compute the right product"

echo "== srun --mpi=pmix -n 4: rank 1 killed by SIGKILL while the others run"
mkdir "$tmp/killed"
srun_job -n 4 "$probe" --pids "$tmp/killed" signal-sleep 1 9
[ "$status" -ne 0 ] || fail "srun reported success"
grep -q "task 1: Killed" <<<"$out" || fail "srun did not report rank 1 killed"
[ "$seconds" -lt 30 ] || fail "the job took $seconds s to stop (its ranks sleep 60 s)"
[ "$(ls "$tmp/killed" | wc -l)" -eq 4 ] || fail "not every rank recorded its pid"
expect_nothing_left "$tmp/killed"

echo "== srun --mpi=pmix -n 4: rank 1 exits with status 3 after mw_init"
mkdir "$tmp/exited"
srun_job -n 4 "$probe" --pids "$tmp/exited" exit 1 3
[ "$status" -eq 3 ] || fail "the job's exit status is $status, not rank 1's 3"
grep -q "task 1: Exited with exit code 3" <<<"$out" || fail "srun did not report rank 1's exit"
grep -q "tasks 0,2-3: Exited with exit code 1" <<<"$out" || fail "the other ranks did not fail"
# Slurm fails their last fence (PARTIAL SUCCESS) or, now and then, completes it without
# rank 1: either way each says why it fails.
[ "$(grep -cE "mw_finalize: .*(a rank of the job has exited|rank 1 of 4 never reached mw_finalize)" \
     <<<"$out")" -eq 3 ] || fail "the other ranks did not say why they stop"
[ "$seconds" -lt 30 ] || fail "the job took $seconds s to stop"
expect_nothing_left "$tmp/exited"

echo "PASS"
