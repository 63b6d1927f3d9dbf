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
trap cleanup EXIT

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
