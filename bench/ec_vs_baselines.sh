#!/usr/bin/env bash
# Entry consistency against message passing, same machine, same run: each Midway figure
# is measured alternately with its baseline, --runs times, and the table gives the
# medians and their ratios.
#
#   bench/ec_vs_baselines.sh [--runs 5] [--provider shm|tcp] [--only "lock cached cold barrier grant mm"]
#                            [--nprocs "2 4 8"] [--warmup 1] [--build DIR] [--no-pin] [--unpin-midway]
#                            [--out FILE] [--log DIR]
#
# | Midway (ec_bench, mm_ec)                   | baseline                                 | target |
# | lock hand-over, strict alternation (µs)    | fi_pingpong 8 B round trip (2 × usec/xfer)| ≤ 1.5× |
# | remote acquire of an idle lock (µs)        | the same round trip                      | ≤ 1.5× |
# | cached re-acquire + release (ns)           | none: an absolute target                 | ≤ 50 ns|
# | first acquires after mw_init, P = 8: the   | none (a regression check: a lost wake-up |   —    |
# |   slowest of 16, median over runs (µs)     |   made it ~100 ms in half the runs)      |        |
# | mw_barrier, nothing bound, P = 2, 4, 8 (µs)| MPI_Barrier (bench/barrier_mpi)          | ≤ 1.0× |
# |   the same, P = 2                          | bench/line_transfer: a line each way     |   —    |
# |                                            |   between the CPUs (the floor)           |        |
# | grant of a lock bound to 1 MiB, 64 MiB     | fi_pingpong MB/sec at that size          | ≥ 0.8× |
# |   (GB/s: bytes / time in mw_acquire)       | and MPI moving freshly written data the  | ≥ 0.8× |
# |                                            | same way (bench/grant_mpi)               |        |
# | MM-ec 512² float, P = 2, 4, 8 (ms): its    | Open MPI, same partition (bench/mm_mpi): | ≤ 1.05×|
# |   own elapsed time (master's writes too)   |   its total_ms (the same interval)       |        |
# |   rank 0's input+compute+output phases     |   its elapsed_ms (first send to C done)  | ≤ 1.05×|
# |   (mwrun --stats; at P <= cores only)      |                                          |        |
#
# Placement: each system as its launcher places it by default. At P <= cores every rank
# is bound to a core: the baselines by mpirun's default --bind-to core (taskset for
# fi_pingpong, as bench/transport_vs_raw.sh does), Midway's by mwrun's default
# --bind-to core (the service thread shares its rank's core; the application thread
# serves requests at its loops' polls and while it waits). --no-pin unbinds them all;
# --unpin-midway only Midway's (mwrun --bind-to none). At P > cores every rank is unbound, and
# Open MPI runs with --oversubscribe --mca mpi_yield_when_idle 1 (DESIGN.md's reference
# figures were measured that way).
# --warmup N: the lock and barrier sections first run each command N times untimed (default
# 1): on these hosts the first run of a kind, baseline and Midway alike, took up to twice
# as long as the rest (fi_pingpong 2.1 µs, then 0.86-0.92), which is the host waking up,
# not the variation between runs that the max/min of the bimodal rows is about.
# --only breakdown (not run by default) splits a 1 MiB grant's time (see below).
# --build DIR: the build directory to measure (default build/ under the checkout).
# MM-ec is DIR/examples/mm_ec (MM_EC=path overrides; MM_EC_ARGS are passed to it).
# Providers: shm is libfabric shm against Open MPI's vader; tcp is libfabric
# "tcp;ofi_rxm" over loopback against Open MPI's tcp BTL over loopback.
# Every Midway run's full output (its statistics lines too) is kept in --log DIR.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build
runs=5
warmup=1
provider=shm
only="lock cached cold barrier grant mm"
nprocs_list="2 4 8"
pin=1      # the baselines
pin_mw=1   # Midway (mwrun's default)
out=""
log=""

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --provider) provider=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --nprocs) nprocs_list=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-pin) pin=0; pin_mw=0; shift ;;
    --unpin-midway) pin_mw=0; shift ;;
    --out) out=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "ec_vs_baselines.sh: unknown option $1" >&2; usage 2 ;;
  esac
done
[[ $runs =~ ^[0-9]+$ ]] && (( runs >= 1 )) || { echo "ec_vs_baselines.sh: --runs needs a positive number" >&2; exit 2; }
[[ $warmup =~ ^[0-9]+$ ]] || { echo "ec_vs_baselines.sh: --warmup needs a number" >&2; exit 2; }

case $provider in
  shm) fi_prov=shm; mw_prov=shm; mpi_net=(--mca pml ob1 --mca btl self,vader) ;;
  tcp|"tcp;ofi_rxm") fi_prov="tcp;ofi_rxm"; mw_prov="tcp;ofi_rxm"
       mpi_net=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo) ;;
  *) echo "ec_vs_baselines.sh: --provider is shm or tcp" >&2; exit 2 ;;
esac
export FI_TCP_IFACE=lo
# mpirun refuses root without these; the machines here run benchmarks as root.
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

bin=$build/bin
mwrun=$bin/mwrun
ec_bench=$bin/ec_bench
mm_mpi=$bin/mm_mpi
transport_bench=$bin/transport_bench
barrier_mpi=$bin/barrier_mpi
grant_mpi=$bin/grant_mpi
mm_ec=${MM_EC:-$build/examples/mm_ec}
for f in "$mwrun" "$ec_bench"; do
  [[ -x $f ]] || { echo "ec_vs_baselines.sh: $f missing (build first, or pass --build)" >&2; exit 1; }
done
command -v fi_pingpong >/dev/null || { echo "ec_vs_baselines.sh: fi_pingpong not found (apt-get install libfabric-bin)" >&2; exit 1; }
have_mpi=1
[[ -x $mm_mpi && -x $barrier_mpi ]] && command -v mpirun >/dev/null || have_mpi=0
if [[ -z $log ]]; then log=$(mktemp -d /tmp/ec_vs_baselines.XXXXXX); fi
mkdir -p "$log"
tmo=180  # seconds: a hung run is recorded as a failure, and the script goes on

# ---------------------------------------------------------------------------------
# One measurement each; every function prints one number, or nothing on failure.

port=$(( 47700 + RANDOM % 500 ))
# fi_pingpong between two processes: prints "usec_per_xfer MB_per_sec".
raw_pingpong() {
  local size=$1 iters=$2 line="" srv
  port=$(( port + 1 > 48900 ? 47700 : port + 1 ))
  local t0="" t1=""
  (( pin )) && t0="taskset -c 0" && t1="taskset -c 1"
  timeout $tmo $t0 fi_pingpong -p "$fi_prov" -e rdm -B "$port" -I "$iters" -S "$size" >/dev/null 2>&1 &
  srv=$!
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.2
    if line=$(timeout $tmo $t1 fi_pingpong -p "$fi_prov" -e rdm -P "$port" -I "$iters" -S "$size" 127.0.0.1 2>/dev/null | tail -1); then
      [[ -n $line ]] && break
    fi
  done
  wait "$srv" 2>/dev/null
  echo "$line" >"$LOGF"
  # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
  awk 'NF >= 7 {print $7, $6}' <<<"$line"
}

# Each run's output is kept in the log directory; newlog names the next file (in LOGF,
# not through $(...), so that the count survives), getkey reads `key=value` from it.
seq_no=0
newlog() { LOGF=$(printf '%s/%03d-%s.out' "$log" "$seq_no" "$1"); seq_no=$((seq_no + 1)); }
getkey() { grep -o "^$2=[0-9.eE+-]*" "$1" 2>/dev/null | head -1 | cut -d= -f2; }

# A Midway job writing to $LOGF; prints the value of `key=`.
mw_job() {
  local np=$1 key=$2; shift 2
  local pre=()
  (( pin_mw )) || pre=(--bind-to none)
  timeout $tmo "$mwrun" -n "$np" --provider "$mw_prov" "${pre[@]}" "$@" >"$LOGF" 2>&1
  local rc=$?
  (( rc == 0 )) || echo "  midway run failed (exit $rc): mwrun -n $np $* (see $LOGF)" >&2
  getkey "$LOGF" "$key"
}

# An MPI job writing to $LOGF; prints the value of `key=` in its output.
mpi_job() {
  local np=$1 key=$2; shift 2
  local place=(--bind-to core)
  (( np > $(nproc) || ! pin )) && place=(--oversubscribe --bind-to none)
  (( np > $(nproc) )) && place+=(--mca mpi_yield_when_idle 1)
  timeout $tmo mpirun -n "$np" "${place[@]}" "${mpi_net[@]}" "$@" >"$LOGF" 2>&1
  local rc=$?
  (( rc == 0 )) || echo "  mpi run failed (exit $rc): mpirun -n $np $* (see $LOGF)" >&2
  grep -o "$key=[0-9.eE+-]*" "$LOGF" | head -1 | cut -d= -f2
}

# MM-ec, writing to $LOGF and its statistics to $LOGF.json; prints "elapsed_ms phases_ms":
# its own elapsed time (read from "elapsed X s", the form examples/mm_ec.c prints, or
# "elapsed_ms=X"), and rank 0's input + compute + output phases from mwrun --stats
# (full precision; mm_ec prints its elapsed time in whole milliseconds).
mm_ec_once() {
  local np=$1
  local pre=()
  (( pin_mw )) || pre=(--bind-to none)
  rm -f "$LOGF.json"
  timeout $tmo "$mwrun" -n "$np" --provider "$mw_prov" --stats="json:$LOGF.json" "${pre[@]}" "$mm_ec" ${MM_EC_ARGS:-} >"$LOGF" 2>&1
  local rc=$?
  (( rc == 0 )) || { echo "  midway run failed (exit $rc): mwrun -n $np $mm_ec (see $LOGF)" >&2; return; }
  local el ph
  el=$(awk '
    match($0, /elapsed_ms[=:] *[0-9.]+/) { s = substr($0, RSTART, RLENGTH); sub(/.*[=:] */, "", s); print s; exit }
    match(tolower($0), /elapsed[^0-9]*[0-9.]+ *(ms|s)/) {
      s = substr(tolower($0), RSTART, RLENGTH); unit = (s ~ /ms$/) ? 1 : 1000
      sub(/ *(ms|s)$/, "", s); sub(/.*[^0-9.]/, "", s); print s * unit; exit }' "$LOGF")
  ph=$(python3 - "$LOGF.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
r0 = d["ranks"][0] if "ranks" in d else d
def phase(name):
    if "phase." + name + ".seconds" in r0: return float(r0["phase." + name + ".seconds"])
    return float(r0["phase"][name]["seconds"])
print(1e3 * sum(phase(p) for p in ("input", "compute", "output")))
PY
)
  echo "${el:-x} ${ph:-x}"
}

# Midway's own transport (bench/transport_bench, no protocol on top): prints
# "usec_per_xfer MB_per_sec", as fi_pingpong measures them. A reference that splits a
# ratio into the transport's share and the protocol's.
mw_transport() {
  local size=$1 iters=$2
  [[ -x $transport_bench ]] || return
  local p=(); (( pin )) && p=(--pin)  # as bench/transport_vs_raw.sh runs it
  timeout $tmo "$transport_bench" --provider "$mw_prov" --size "$size" --iters "$iters" "${p[@]}" >"$LOGF" 2>&1
  awk '/^midway/ {print $4, $5}' "$LOGF"
}

median() {  # of the numbers on stdin, ignoring empty lines; prints nothing if none
  grep -E '^[0-9.eE+-]+$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) exit; if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# ---------------------------------------------------------------------------------
rows=()   # "figure|baseline|base value|Midway value|ratio|target|verdict"
add_row() {  # name baseline_name base mid unit ratio_kind target
  local name=$1 bname=$2 base=$3 mid=$4 unit=$5 kind=$6 target=$7
  local ratio="—" verdict="no data"
  if [[ -n $mid ]]; then
    case $kind in
      le|ge)
        if [[ -n $base ]]; then
          ratio=$(awk -v m="$mid" -v b="$base" 'BEGIN {printf "%.2f", m / b}')
          verdict=$(awk -v m="$mid" -v b="$base" -v t="$target" -v k="$kind" 'BEGIN {r = m / b; print ((k == "le" ? r <= t : r >= t) ? "met" : "missed")}')
        fi ;;
      abs)
        verdict=$(awk -v m="$mid" -v t="$target" 'BEGIN {print (m <= t ? "met" : "missed")}') ;;
      info)
        verdict="(reference)"
        [[ -n $base ]] && ratio=$(awk -v m="$mid" -v b="$base" 'BEGIN {printf "%.2f", m / b}') ;;
    esac
  fi
  local tdesc
  case $kind in le) tdesc="≤ $target×" ;; ge) tdesc="≥ $target×" ;; abs) tdesc="≤ $target $unit" ;; info) tdesc="—" ;; esac
  rows+=("$name|$bname|${base:-—}|${mid:-—}|$ratio|$tdesc|$verdict")
  printf '  %-34s baseline %-10s midway %-10s ratio %-6s (%s: %s)\n' "$name" "${base:-—}" "${mid:-—}" "$ratio" "$tdesc" "$verdict" >&2
}
runs_note() { echo "    runs: baseline $1 | midway $2" >&2; }
fmt() { [[ -n $1 ]] && awk -v v="$1" -v p="${2:-3}" 'BEGIN {printf "%.*f", p, v}'; }

echo "ec_vs_baselines: $runs alternating runs, provider $provider, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); logs in $log" >&2

for section in $only; do
  case $section in
  lock)
    rtt=(); ho=(); acq=(); trtt=()
    for ((r = 0; r < warmup + runs; r++)); do
      newlog fi_pingpong-8; read -r us _ < <(raw_pingpong 8 10000); rtt+=("$(awk -v u="${us:-}" 'BEGIN {if (u != "") print 2 * u}')")
      newlog mw-handover; ho+=("$(mw_job 2 handover_us "$ec_bench" handover 20000)")
      newlog fi_pingpong-8; read -r us _ < <(raw_pingpong 8 10000); rtt+=("$(awk -v u="${us:-}" 'BEGIN {if (u != "") print 2 * u}')")
      newlog mw-acquire; a0=$(mw_job 2 acquire_remote_rank0_us "$ec_bench" acquire 2000)
      a1=$(getkey "$LOGF" acquire_remote_rank1_us)
      acq+=("$(awk -v a="$a0" -v b="${a1:-}" 'BEGIN {if (a != "" && b != "") print (a + b) / 2; else if (a != "") print a}')")
      newlog mw-transport-8; read -r us _ < <(mw_transport 8 20000); trtt+=("$(awk -v u="${us:-}" 'BEGIN {if (u != "") print 2 * u}')")
    done
    rtt=("${rtt[@]:2*warmup}"); ho=("${ho[@]:warmup}"); acq=("${acq[@]:warmup}"); trtt=("${trtt[@]:warmup}")
    m_rtt=$(printf '%s\n' "${rtt[@]}" | median)
    runs_note "${rtt[*]}" "${ho[*]}"
    add_row "lock hand-over (µs)" "fi_pingpong RTT" "$(fmt "$m_rtt")" "$(fmt "$(printf '%s\n' "${ho[@]}" | median)")" µs le 1.5
    runs_note "${rtt[*]}" "${acq[*]}"
    add_row "remote acquire, idle lock (µs)" "fi_pingpong RTT" "$(fmt "$m_rtt")" "$(fmt "$(printf '%s\n' "${acq[@]}" | median)")" µs le 1.5
    runs_note "${rtt[*]}" "${trtt[*]}"
    add_row "Midway transport RTT, 8 B (µs)" "fi_pingpong RTT" "$(fmt "$m_rtt")" "$(fmt "$(printf '%s\n' "${trtt[@]}" | median)")" µs info -
    ;;
  cached)
    c=(); cn=()
    for ((r = 0; r < runs; r++)); do
      newlog mw-cached; c+=("$(mw_job 2 cached_ns "$ec_bench" cached 1000000)")
      cn+=("$(getkey "$LOGF" cached_nonexclusive_ns)")
    done
    runs_note "-" "${c[*]}"
    add_row "cached re-acquire, exclusive (ns)" "none" "" "$(fmt "$(printf '%s\n' "${c[@]}" | median)" 1)" ns abs 50
    runs_note "-" "${cn[*]}"
    add_row "cached re-acquire, non-excl. (ns)" "none" "" "$(fmt "$(printf '%s\n' "${cn[@]}" | median)" 1)" ns abs 50
    ;;
  cold)
    c=(); slow=0
    for ((r = 0; r < runs; r++)); do
      newlog mw-cold-8; v=$(mw_job 8 cold_acquire_max_us "$ec_bench" cold); c+=("$v")
      awk -v v="${v:-0}" 'BEGIN {exit !(v > 50000)}' && slow=$((slow + 1))
    done
    runs_note "-" "${c[*]}"
    add_row "first acquires P=8, slowest (µs; $slow/$runs runs > 50 ms)" "none" "" "$(fmt "$(printf '%s\n' "${c[@]}" | median)" 1)" µs info -
    ;;
  barrier)
    for np in $nprocs_list; do
      b=(); m=(); f=()
      for ((r = 0; r < warmup + runs; r++)); do
        (( have_mpi )) && newlog "mpi-barrier-$np" && b+=("$(mpi_job "$np" barrier_us "$barrier_mpi" --iters 10000)")
        newlog "mw-barrier-$np"; m+=("$(mw_job "$np" barrier_us "$ec_bench" barrier 10000)")
        # The floor at two ranks: a cache line each way between the two CPUs.
        (( np == 2 )) && [[ -x $bin/line_transfer ]] &&
          f+=("$("$bin/line_transfer" 500000 | awk -F= '/^barrier_ns=/ {print $2 / 1000}')")
      done
      (( ${#b[@]} )) && b=("${b[@]:warmup}"); m=("${m[@]:warmup}"); (( ${#f[@]} )) && f=("${f[@]:warmup}")
      runs_note "${b[*]:-}" "${m[*]}"
      add_row "mw_barrier P=$np (µs)" "MPI_Barrier" "$(fmt "$( ((${#b[@]})) && printf '%s\n' "${b[@]}" | median)")" "$(fmt "$(printf '%s\n' "${m[@]}" | median)")" µs le 1.0
      (( ${#f[@]} )) && add_row "mw_barrier P=2 over the line floor (µs)" "line_transfer barrier" "$(fmt "$(printf '%s\n' "${f[@]}" | median)")" "$(fmt "$(printf '%s\n' "${m[@]}" | median)")" µs info -
    done
    ;;
  grant)
    for size in 1048576 67108864; do
      if (( size == 1048576 )); then iters=300; reps=100; label="1 MiB"; else iters=8; reps=10; label="64 MiB"; fi
      b=(); m=(); t=(); g=()
      for ((r = 0; r < runs; r++)); do
        if (( have_mpi )) && [[ -x $grant_mpi ]]; then
          newlog "mpi-grant-$size"; g+=("$(mpi_job 2 gbs "$grant_mpi" "$size" "$reps")")
        fi
        newlog "mw-transport-$size"; read -r _ mbs < <(mw_transport "$size" "$iters"); t+=("$(awk -v v="${mbs:-}" 'BEGIN {if (v != "") print v / 1000}')")
        newlog "fi_pingpong-$size"; read -r _ mbs < <(raw_pingpong "$size" "$iters"); b+=("$(awk -v v="${mbs:-}" 'BEGIN {if (v != "") print v / 1000}')")
        newlog "mw-grant-$size"; g0=$(mw_job 2 grant_rank0_gbs "$ec_bench" grant "$size" "$reps")
        g1=$(getkey "$LOGF" grant_rank1_gbs)
        m+=("$(awk -v a="$g0" -v b="${g1:-}" 'BEGIN {if (a != "" && b != "") print (a + b) / 2; else if (a != "") print a}')")
      done
      runs_note "${b[*]}" "${m[*]}"
      add_row "grant bandwidth $label (GB/s)" "fi_pingpong" "$(fmt "$(printf '%s\n' "${b[@]}" | median)" 2)" "$(fmt "$(printf '%s\n' "${m[@]}" | median)" 2)" GB/s ge 0.8
      if ((${#g[@]})); then
        runs_note "${g[*]}" "${m[*]}"
        add_row "grant bandwidth $label (GB/s)" "MPI, fresh data" "$(fmt "$(printf '%s\n' "${g[@]}" | median)" 2)" "$(fmt "$(printf '%s\n' "${m[@]}" | median)" 2)" GB/s ge 0.8
      fi
      runs_note "${b[*]}" "${t[*]}"
      add_row "Midway transport $label (GB/s)" "fi_pingpong" "$(fmt "$(printf '%s\n' "${b[@]}" | median)" 2)" "$(fmt "$(printf '%s\n' "${t[@]}" | median)" 2)" GB/s info -
    done
    ;;
  mm)
    # Two comparisons: mm_ec's own elapsed time (from mw_init, the master writing A and B
    # included) against mm_mpi's total_ms (the same interval); and mm_ec's input +
    # compute + output phases at rank 0 against mm_mpi's elapsed_ms (first send to C
    # complete), the finer figure.
    if [[ ! -x $mm_ec ]]; then echo "  mm: $mm_ec not built yet; only the baseline runs" >&2; fi
    for np in $nprocs_list; do
      bt=(); be=(); mt=(); mp=()
      for ((r = 0; r < runs; r++)); do
        if (( have_mpi )); then
          newlog "mpi-mm-$np"; be+=("$(mpi_job "$np" elapsed_ms "$mm_mpi")"); bt+=("$(grep -o 'total_ms=[0-9.]*' "$LOGF" | cut -d= -f2)")
        fi
        if [[ -x $mm_ec ]]; then
          newlog "mw-mm_ec-$np"; read -r el ph < <(mm_ec_once "$np"); mt+=("${el/x/}"); mp+=("${ph/x/}")
        fi
      done
      runs_note "${bt[*]:-}" "${mt[*]:-}"
      add_row "MM 512² P=$np, elapsed (ms)" "mm_mpi total" "$(fmt "$( ((${#bt[@]})) && printf '%s\n' "${bt[@]}" | median)" 2)" "$(fmt "$( ((${#mt[@]})) && printf '%s\n' "${mt[@]}" | median)" 2)" ms le 1.05
      # Rank 0's phases stand for the job only when every rank has a core of its own
      # (oversubscribed, rank 0 may compute while others still wait to run).
      (( np <= $(nproc) )) || continue
      runs_note "${be[*]:-}" "${mp[*]:-}"
      add_row "MM 512² P=$np, in+comp+out (ms)" "mm_mpi elapsed" "$(fmt "$( ((${#be[@]})) && printf '%s\n' "${be[@]}" | median)" 2)" "$(fmt "$( ((${#mp[@]})) && printf '%s\n' "${mp[@]}" | median)" 2)" ms le 1.05
    done
    ;;
  breakdown)
    # Not in the default set: where a 1 MiB grant's time goes. The writer writes all of
    # the bound data, one word per 4 KiB (256 scattered runs: the dirty map is scanned
    # and the runs stamped, shipped and recorded, 16 KiB of data), or nothing (the
    # protocol's fixed cost for a lock bound to 1 MiB); a lock bound to 64 bytes with
    # nothing written is the bare remote acquire.
    for w in "1048576 all" "1048576 sparse" "1048576 none" "64 none"; do
      read -r size what <<<"$w"
      m=()
      for ((r = 0; r < runs; r++)); do
        newlog "mw-grant-$size-$what"; g0=$(mw_job 2 grant_rank0_us "$ec_bench" grant "$size" 200 "$what")
        g1=$(getkey "$LOGF" grant_rank1_us)
        m+=("$(awk -v a="$g0" -v b="${g1:-}" 'BEGIN {if (a != "" && b != "") print (a + b) / 2; else if (a != "") print a}')")
      done
      runs_note "-" "${m[*]}"
      add_row "grant, $size B bound, writes $what (µs)" "none" "" "$(fmt "$(printf '%s\n' "${m[@]}" | median)" 1)" µs info -
    done
    ;;
  *) echo "ec_vs_baselines.sh: unknown section $section (lock cached cold barrier grant mm breakdown)" >&2; exit 2 ;;
  esac
done

table="| figure | baseline | baseline value | Midway | ratio | target | |
| --- | --- | ---: | ---: | ---: | --- | --- |"
for row in "${rows[@]}"; do
  IFS='|' read -r a b c d e f g <<<"$row"
  table+=$'\n'"| $a | $b | $c | $d | $e | $f | $g |"
done
echo
echo "medians of $runs alternating runs (the lock and barrier sections after $warmup untimed); provider $provider; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$table"
if [[ -n $out ]]; then
  {
    echo "<!-- bench/ec_vs_baselines.sh --runs $runs --provider $provider, $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg) -->"
    echo "$table"
  } >"$out"
fi
