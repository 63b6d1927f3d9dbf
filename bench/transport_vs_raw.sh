#!/usr/bin/env bash
# mw::transport against raw libfabric, same provider, same run: ping-pong latency (8 B)
# and bandwidth (4 KiB, 1 MiB, 64 MiB), as fi_pingpong (libfabric-bin) measures them.
#
#   bench/transport_vs_raw.sh [--bench build/bin/transport_bench] [--runs 7]
#                             [--providers "shm tcp;ofi_rxm"] [--sizes "8 4096 1048576 67108864"]
#                             [--out FILE]
#
# Each (provider, size) is run --runs times (at least 5), raw and Midway alternating so
# that both see the same machine load; the table gives the medians and their ratios:
#   latency ratio   = Midway usec/xfer / raw usec/xfer   (target <= 1.2)
#   bandwidth ratio = Midway MB/sec   / raw MB/sec       (target >= 0.8)
# tcp runs over loopback (FI_TCP_IFACE=lo) for both. Both bind their two ranks one to a
# core (taskset for fi_pingpong, --pin for transport_bench), as mpirun --bind-to core
# would: left to the scheduler, Midway's two busy threads sometimes share a core for a
# whole run (see transport_bench.cpp). --out also writes the table (as markdown) to FILE,
# for docs/ to quote.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bench=""
for cand in "$here/../build/bin/transport_bench" "$here/../build/bench/transport_bench"; do
  [[ -x $cand ]] && bench=$cand && break
done
runs=7
providers="shm tcp;ofi_rxm"
sizes="8 4096 1048576 67108864"
out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --bench) bench=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --providers) providers=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--bench PATH] [--runs N] [--providers LIST] [--sizes LIST] [--out FILE]" >&2; exit 2 ;;
  esac
done
[[ -x $bench ]] || { echo "transport_vs_raw.sh: no transport_bench (build it, or pass --bench)" >&2; exit 1; }
command -v fi_pingpong >/dev/null || { echo "transport_vs_raw.sh: fi_pingpong not found (apt-get install libfabric-bin)" >&2; exit 1; }
(( runs >= 5 )) || runs=5
export FI_TCP_IFACE=lo

iters_for() {  # enough iterations for ~0.1-0.5 s per run
  case $1 in
    8) echo 20000 ;;
    4096) echo 10000 ;;
    1048576) echo 300 ;;
    *) echo 8 ;;
  esac
}

port=47592
# One raw ping-pong: prints "usec_per_xfer MB_per_sec" (the client's last line).
raw_once() {
  local prov=$1 size=$2 iters=$3
  port=$(( port + 1 > 48500 ? 47600 : port + 1 ))
  timeout 120 taskset -c 0 fi_pingpong -p "$prov" -e rdm -B "$port" -I "$iters" -S "$size" >/dev/null 2>&1 &
  local srv=$!
  local line=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.2
    if line=$(timeout 120 taskset -c 1 fi_pingpong -p "$prov" -e rdm -P "$port" -I "$iters" -S "$size" 127.0.0.1 2>/dev/null | tail -1); then
      [[ -n $line ]] && break
    fi
  done
  wait "$srv" 2>/dev/null || true
  # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
  awk '{print $7, $6}' <<<"$line"
}

# One Midway ping-pong: prints "usec_per_xfer MB_per_sec".
mw_once() {
  local prov=$1 size=$2 iters=$3
  "$bench" --provider "$prov" --size "$size" --iters "$iters" --pin | awk '/^midway/ {print $4, $5}'
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

table="| provider | size | raw usec/xfer | Midway usec/xfer | latency ratio | raw MB/s | Midway MB/s | bandwidth ratio |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for prov in $providers; do
  for size in $sizes; do
    iters=$(iters_for "$size")
    raw_lat=(); raw_bw=(); mw_lat=(); mw_bw=()
    for ((r = 0; r < runs; r++)); do
      read -r l b < <(raw_once "$prov" "$size" "$iters"); raw_lat+=("$l"); raw_bw+=("$b")
      read -r l b < <(mw_once "$prov" "$size" "$iters"); mw_lat+=("$l"); mw_bw+=("$b")
    done
    rl=$(printf '%s\n' "${raw_lat[@]}" | median); rb=$(printf '%s\n' "${raw_bw[@]}" | median)
    ml=$(printf '%s\n' "${mw_lat[@]}" | median); mb=$(printf '%s\n' "${mw_bw[@]}" | median)
    row=$(awk -v p="$prov" -v s="$size" -v rl="$rl" -v ml="$ml" -v rb="$rb" -v mb="$mb" \
      'BEGIN {printf "| %s | %d | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f |", p, s, rl, ml, ml/rl, rb, mb, mb/rb}')
    echo "$row"
    echo "  runs: raw ${raw_lat[*]} us | midway ${mw_lat[*]} us" >&2
    table+=$'\n'"$row"
  done
done
echo
echo "medians of $runs alternating runs; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$table"
if [[ -n $out ]]; then
  {
    echo "<!-- bench/transport_vs_raw.sh --runs $runs, $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg) -->"
    echo "$table"
  } >"$out"
fi
