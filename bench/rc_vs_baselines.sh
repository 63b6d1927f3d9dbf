#!/usr/bin/env bash
# Release consistency against raw libfabric, same machine, same run: each Midway figure is
# measured alternately with its baseline, --runs times, and the table gives the medians
# and their ratios.
#
#   bench/rc_vs_baselines.sh [--runs 7] [--providers "shm tcp"] [--pages 256] [--rounds 21]
#                            [--build DIR] [--no-pin] [--pin-midway] [--out FILE] [--log DIR]
#
# | Midway (bench/rc_bench.c)                         | baseline                              |
# | copyset fault serviced by the home, 4 KiB page:    | fi_pingpong -S 4096 round trip        |
# |   wall time per fault (µs), median over rounds     |   (2 x usec/xfer): a 4 KiB message    |
# |   of N first touches of pages homed at rank 1      |   each way, where a fault sends a     |
# |                                                    |   64-byte request and gets 4 KiB back |
# | the same, time inside the fault (mw_stats          | the same                              |
# |   fault_wait_seconds per fault)                    |                                       |
# | the same, median of single faults (each timed on   | the same                              |
# |   its own: the rounds' means above take in every   |                                       |
# |   preemption by other programs)                    |                                       |
# | fault on a page nobody wrote (no data travels)     | fi_pingpong -S 8 round trip           |
# | release of a lock with one word of RC data dirty   | fi_pingpong -S 8 round trip           |
# |   on a page rank 1 holds: at two ranks the update  |                                       |
# |   waits until a lock moves (rc_bench.c), so this   |                                       |
# |   is a release that keeps its lock                 |                                       |
#
# Placement as bench/ec_vs_baselines.sh: fi_pingpong's two processes are bound one to a
# core (taskset), Midway's ranks run as mwrun starts them (unbound: each rank is two
# threads); --no-pin unbinds fi_pingpong, --pin-midway binds Midway's ranks too.
# tcp is "tcp;ofi_rxm" over loopback (FI_TCP_IFACE=lo) for both.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build
runs=7
providers="shm tcp"
pages=256
rounds=21
pin=1
pin_mw=0
out=""
log=""

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --providers) providers=$2; shift 2 ;;
    --pages) pages=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-pin) pin=0; shift ;;
    --pin-midway) pin_mw=1; shift ;;
    --out) out=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "rc_vs_baselines.sh: unknown option $1" >&2; usage 2 ;;
  esac
done
[[ $runs =~ ^[0-9]+$ ]] && (( runs >= 1 )) || { echo "rc_vs_baselines.sh: --runs needs a positive number" >&2; exit 2; }
mwrun=$build/bin/mwrun
rc_bench=$build/bin/rc_bench
for f in "$mwrun" "$rc_bench"; do
  [[ -x $f ]] || { echo "rc_vs_baselines.sh: $f missing (build first, or pass --build)" >&2; exit 1; }
done
command -v fi_pingpong >/dev/null || { echo "rc_vs_baselines.sh: fi_pingpong not found (apt-get install libfabric-bin)" >&2; exit 1; }
export FI_TCP_IFACE=lo
if [[ -z $log ]]; then log=$(mktemp -d /tmp/rc_vs_baselines.XXXXXX); fi
mkdir -p "$log"
tmo=180

port=$(( 48900 + RANDOM % 500 ))
# fi_pingpong between two processes: prints "usec_per_xfer MB_per_sec".
raw_pingpong() {
  local prov=$1 size=$2 iters=$3 line="" srv
  port=$(( port + 1 > 49900 ? 48900 : port + 1 ))
  local t0="" t1=""
  (( pin )) && t0="taskset -c 0" && t1="taskset -c 1"
  timeout $tmo $t0 fi_pingpong -p "$prov" -e rdm -B "$port" -I "$iters" -S "$size" >/dev/null 2>&1 &
  srv=$!
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.2
    if line=$(timeout $tmo $t1 fi_pingpong -p "$prov" -e rdm -P "$port" -I "$iters" -S "$size" 127.0.0.1 2>/dev/null | tail -1); then
      [[ -n $line ]] && break
    fi
  done
  wait "$srv" 2>/dev/null
  echo "$line" >"$LOGF"
  # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
  awk 'NF >= 7 {print $7, $6}' <<<"$line"
}
rtt() { awk -v u="${1:-}" 'BEGIN {if (u != "") print 2 * u}'; }

seq_no=0
newlog() { LOGF=$(printf '%s/%03d-%s.out' "$log" "$seq_no" "$1"); seq_no=$((seq_no + 1)); }
getkey() { grep -o "^$2=[0-9.eE+-]*" "$1" 2>/dev/null | head -1 | cut -d= -f2; }

# A Midway job writing to $LOGF.
mw_job() {
  local prov=$1; shift
  local pre=()
  (( pin_mw )) && pre=(--exec-prefix 'taskset -c {rank}')
  timeout $tmo "$mwrun" -n 2 --provider "$prov" "${pre[@]}" "$rc_bench" "$@" >"$LOGF" 2>&1
  local rc=$?
  (( rc == 0 )) || echo "  midway run failed (exit $rc): mwrun -n 2 --provider $prov rc_bench $* (see $LOGF)" >&2
}

median() {
  grep -E '^[0-9.eE+-]+$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) exit; if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
fmt() { [[ -n $1 ]] && awk -v v="$1" 'BEGIN {printf "%.1f", v}'; }
ratio() { [[ -n $1 && -n $2 ]] && awk -v m="$1" -v b="$2" 'BEGIN {printf "%.2f", m / b}'; }

rows=()
add_row() {  # provider figure baseline_name base mid
  local r
  r=$(ratio "$5" "$4")
  rows+=("$1|$2|$3|$(fmt "$4")|$(fmt "$5")|${r:-—}")
  printf '  %-5s %-44s %-22s %8s %8s  ratio %s\n' "$1" "$2" "$3" "$(fmt "$4")" "$(fmt "$5")" "${r:-—}" >&2
}

echo "rc_vs_baselines: $runs alternating runs, $pages faults x $rounds rounds per run, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); logs in $log" >&2
for p in $providers; do
  case $p in
    shm) prov=shm ;;
    tcp|"tcp;ofi_rxm") prov="tcp;ofi_rxm"; p=tcp ;;
    *) echo "rc_vs_baselines.sh: provider $p is shm or tcp" >&2; exit 2 ;;
  esac
  r4=(); r8=(); f=(); fw=(); fp=(); fu=(); rel=()
  for ((r = 0; r < runs; r++)); do
    newlog "$p-fi_pingpong-4096"; read -r us _ < <(raw_pingpong "$prov" 4096 10000); r4+=("$(rtt "${us:-}")")
    newlog "$p-rc_bench-fault"; mw_job "$prov" fault "$pages" "$rounds"
    f+=("$(getkey "$LOGF" fault_us)"); fw+=("$(getkey "$LOGF" fault_wait_us)"); fp+=("$(getkey "$LOGF" fault_p50_us)")
    newlog "$p-fi_pingpong-8"; read -r us _ < <(raw_pingpong "$prov" 8 20000); r8+=("$(rtt "${us:-}")")
    newlog "$p-rc_bench-fault-unwritten"; mw_job "$prov" fault "$pages" "$rounds" unwritten
    fu+=("$(getkey "$LOGF" fault_us)")
    newlog "$p-rc_bench-release"; mw_job "$prov" release 20000
    rel+=("$(getkey "$LOGF" release_us)")
  done
  echo "    runs ($p): fi_pingpong 4 KiB RTT ${r4[*]} | fault ${f[*]} | fault_wait ${fw[*]} | single-fault median ${fp[*]}" >&2
  echo "    runs ($p): fi_pingpong 8 B RTT ${r8[*]} | unwritten fault ${fu[*]} | release ${rel[*]}" >&2
  m4=$(printf '%s\n' "${r4[@]}" | median); m8=$(printf '%s\n' "${r8[@]}" | median)
  add_row "$p" "copyset fault, 4 KiB page, wall (µs)" "fi_pingpong 4 KiB RTT" "$m4" "$(printf '%s\n' "${f[@]}" | median)"
  add_row "$p" "copyset fault, 4 KiB page, in fault (µs)" "fi_pingpong 4 KiB RTT" "$m4" "$(printf '%s\n' "${fw[@]}" | median)"
  add_row "$p" "copyset fault, 4 KiB page, single-fault median (µs)" "fi_pingpong 4 KiB RTT" "$m4" "$(printf '%s\n' "${fp[@]}" | median)"
  add_row "$p" "copyset fault, unwritten page (µs)" "fi_pingpong 8 B RTT" "$m8" "$(printf '%s\n' "${fu[@]}" | median)"
  add_row "$p" "release keeping its lock, one dirty word (µs)" "fi_pingpong 8 B RTT" "$m8" "$(printf '%s\n' "${rel[@]}" | median)"
done

table="| provider | figure | baseline | baseline (µs) | Midway (µs) | ratio |
| --- | --- | --- | ---: | ---: | ---: |"
for row in "${rows[@]}"; do
  IFS='|' read -r a b c d e g <<<"$row"
  table+=$'\n'"| $a | $b | $c | $d | $e | $g |"
done
echo
echo "medians of $runs alternating runs; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$table"
if [[ -n $out ]]; then
  {
    echo "<!-- bench/rc_vs_baselines.sh --runs $runs --providers \"$providers\", $(date -u +%Y-%m-%d) -->"
    echo "$table"
  } >"$out"
fi
