#!/usr/bin/env bash
# Ranks on different hosts, for real, on one machine: each rank runs in a network
# namespace of its own, the namespaces joined by a veth pair, and the ranks talk over
# the tcp provider on those addresses. mwrun places rank r in namespace r with
# --exec-prefix. Needs root and iproute2 (CI has both); exits 77 (skipped) otherwise.
#
# usage: netns_test.sh MWRUN PROBE
set -euo pipefail
mwrun=$1
probe=$2

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "skipped: needs root and iproute2 to create network namespaces"
  exit 77
fi

tag="mw$$"
ns0="${tag}host0" ns1="${tag}host1"
cleanup() {
  ip netns del "$ns0" 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
}
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

if ! ip netns add "$ns0" 2>/dev/null; then
  echo "skipped: cannot create network namespaces here"
  exit 77
fi
ip netns add "$ns1"
# A veth pair, one end in each namespace, both ends renamed mweth there, so that one
# FI_TCP_IFACE names the interface on every host. Addresses of our own test network.
ip link add "${tag}a" type veth peer name "${tag}b"
ip link set "${tag}a" netns "$ns0"
ip link set "${tag}b" netns "$ns1"
ip -n "$ns0" link set "${tag}a" name mweth
ip -n "$ns1" link set "${tag}b" name mweth
ip -n "$ns0" addr add 10.77.0.1/24 dev mweth
ip -n "$ns1" addr add 10.77.0.2/24 dev mweth
for ns in "$ns0" "$ns1"; do
  ip -n "$ns" link set lo up
  ip -n "$ns" link set mweth up
done

echo "== 2 ranks on 2 hosts over tcp;ofi_rxm (10.77.0.1, 10.77.0.2)"
out=$("$mwrun" -n 2 --provider "tcp;ofi_rxm" --timeout 60 \
        --exec-prefix "ip netns exec ${tag}host{rank} env FI_TCP_IFACE=mweth" \
        "$probe" 2>&1) || { echo "$out"; echo "FAIL: the job did not run"; exit 1; }
echo "$out"
for r in 0 1; do
  grep -qx "rank $r of 2" <<<"$out" || { echo "FAIL: rank $r did not report"; exit 1; }
done

prefix="ip netns exec ${tag}host{rank} env FI_TCP_IFACE=mweth"

echo "== without --provider, ranks on two hosts choose tcp (each rank publishes its host)"
out=$("$mwrun" -n 2 --timeout 60 --exec-prefix "$prefix" "$probe" env 2>&1) ||
  { echo "$out"; echo "FAIL: the job did not run without --provider"; exit 1; }
grep -q "rank 1 of 2" <<<"$out" || { echo "$out"; echo "FAIL: rank 1 did not report"; exit 1; }

echo "== --provider shm across hosts is refused, naming both hosts"
if out=$("$mwrun" -n 2 --provider shm --timeout 60 --exec-prefix "$prefix" "$probe" 2>&1); then
  echo "$out"; echo "FAIL: shm was accepted between two hosts"; exit 1
fi
grep -q "the provider shm reaches only ranks on this host, but rank [01] runs on .*(network namespace [0-9]*)" <<<"$out" ||
  { echo "$out"; echo "FAIL: no clear error for shm across hosts"; exit 1; }

# Liveness (runtime/transport/liveness.cpp): ranks crossing barriers for ~8 s while the
# link between their hosts goes down. Short --liveness values keep this quick.
echo "== a link down for 3 s, within --liveness 10: no error"
"$mwrun" -n 2 --provider "tcp;ofi_rxm" --liveness 10 --timeout 60 --exec-prefix "$prefix" \
  "$probe" barriers 80 100 >"$tmp/blip" 2>&1 &
job=$!
sleep 2
ip -n "$ns1" link set mweth down
sleep 3
ip -n "$ns1" link set mweth up
if ! wait $job; then cat "$tmp/blip"; echo "FAIL: a link down for 3 s stopped the job"; exit 1; fi
grep -qx "crossed 80" "$tmp/blip" || { cat "$tmp/blip"; echo "FAIL: the job did not finish its barriers"; exit 1; }

# Lost for good, two ways: the host's link goes down (its own sends fail at once: the
# rank there names the peer it cannot reach), or the host goes silent with its link up
# (every packet either way dropped, as when a host dies: only the pings tell).
lost() {  # lost NAME CMD-TO-LOSE CMD-TO-RESTORE
  "$mwrun" -n 2 --provider "tcp;ofi_rxm" --liveness 3 --timeout 60 --exec-prefix "$prefix" \
    "$probe" barriers 200 100 >"$tmp/$1" 2>&1 &
  local job=$!
  sleep 2
  eval "$2"
  local down_ns
  down_ns=$(date +%s%N)
  if wait $job; then eval "$3"; cat "$tmp/$1"; echo "FAIL: the job ran on with a host lost"; exit 1; fi
  local took_ms=$((($(date +%s%N) - down_ns) / 1000000))
  eval "$3"
  cat "$tmp/$1"
  grep -q "midway: liveness: rank [01] (host .*(network namespace [0-9]*)) \(has not answered for [0-9.]* s (MW_LIVENESS_TIMEOUT is 3 s)\|cannot be reached\).* it last said it was waiting for: .*\. This rank waits for: " "$tmp/$1" ||
    { echo "FAIL: the error does not name the lost rank, its host and its wait"; exit 1; }
  if grep -q 'ran longer than --timeout' "$tmp/$1"; then echo "FAIL: --timeout stopped it, not liveness"; exit 1; fi
  echo "detected and stopped ${took_ms} ms after the host was lost (bound: 1.2 x 3 s, plus mwrun's stop)"
  # A bound far above 3.6 s: the machine may be busy; the figure above is the measurement.
  if [ "$took_ms" -gt 20000 ]; then echo "FAIL: detection took ${took_ms} ms"; exit 1; fi
}
echo "== a link down for good, --liveness 3: the job stops, naming the lost rank and its host"
lost linkdown "ip -n $ns1 link set mweth down" "ip -n $ns1 link set mweth up"
echo "== a host gone silent (all packets dropped), --liveness 3: found by the pings"
if command -v tc >/dev/null && tc -n "$ns0" qdisc add dev mweth root netem loss 0% 2>/dev/null; then
  tc -n "$ns0" qdisc del dev mweth root
  lost silent "tc -n $ns0 qdisc add dev mweth root netem loss 100%; tc -n $ns1 qdisc add dev mweth root netem loss 100%" \
       "tc -n $ns0 qdisc del dev mweth root; tc -n $ns1 qdisc del dev mweth root"
  grep -q "has not answered for" "$tmp/silent" || { echo "FAIL: the pings did not find the silent host"; exit 1; }
else
  echo "(skipped: tc netem is not available)"
fi

echo "== a host whose network is down: the job fails at start-up, naming the problem"
ip -n "$ns1" link set mweth down
if out=$(MW_STARTUP_TIMEOUT=5 "$mwrun" -n 2 --provider "tcp;ofi_rxm" --timeout 30 \
           --exec-prefix "ip netns exec ${tag}host{rank} env FI_TCP_IFACE=mweth" \
           "$probe" 2>&1); then
  echo "$out"
  echo "FAIL: the job ran although its hosts cannot reach each other"
  exit 1
fi
echo "$out" | tail -3
echo "PASS"
