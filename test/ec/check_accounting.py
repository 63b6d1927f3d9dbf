#!/usr/bin/env python3
"""Runs accounting.c under mwrun --stats=json:FILE and checks, rank by rank and kind by
kind, the messages and bytes that the MM-ec pattern implies over the whole run.

    check_accounting.py --mwrun build/bin/mwrun -n 4 [--provider shm] [--timeout 120]
                        PROGRAM [--n 64]

The run (P ranks, W = P-1 workers, worker r computing rows_r rows of n floats):
  set-up   rank 0 acquires lock_B and lock_A[1..W] exclusively and writes B and A
  start    crossed twice (nothing bound)
  work     worker r acquires lock_B and lock_A[r] non-exclusively (2 remote acquires)
  done     mw_barrier_final, C bound: each worker's rows go to rank 0, nothing comes back
  gather   mw_barrier, bound to the workers' figures (120 bytes each): each worker's
           arrives at rank 0, each release carries the other W-1 workers' figures

What is asserted (the lock's manager is chosen by address, so which rank forwards a
request is not fixed; everything below holds whichever rank manages which lock):
  per worker r
    acquires: 2 remote, 0 local; 4 barrier crossings
    received.grant: exactly 2 messages, payload == bytes of B + bytes of A's rows r
    sent.grant payload 0 (a worker grants only rank 0's set-up requests, with no data)
    sent.barrier: 4 arrivals, payload == bytes of C's rows r + its figures
    received.barrier: 3 releases, payload == the other workers' figures
    (on shm, where the ranks share a page, a crossing that moves no data takes no
    message: start's arrivals and releases, and gather's release when W = 1, go through
    the page, so 2 arrivals, and 1 release if W > 1 else 0)
    sent.lock >= 2 (one request per acquire, to the manager or, if it is the manager
    itself, straight to the owner), more only as a forwarding manager
    payload bytes sent/received in all == the above (nothing else carries data)
  rank 0
    W+1 acquires (set-up); grants received == its remote acquires, with no data
    sent.grant: exactly 2W messages, payload == W x bytes of B + bytes of A
    sent.barrier: 3W releases; received.barrier: 4W arrivals, payload == C + W figures
    (on shm: W releases if W > 1 else 0, and 2W arrivals)
  the job
    per kind (lock, grant, barrier): messages and payload sent == received
    grants == remote acquires; remote acquires <= lock messages <= 2 x remote
    acquires (a request, and a forward when the manager is neither the requester
    nor the owner; no revocations: no exclusive request follows a shared grant)
    barrier messages == 7W (shm: 3W, or 2W if W = 1); lock + grant + barrier
    messages <= 3 per remote acquire + those
Control messages (start-up greetings, rendezvous acknowledgements, the FINALIZING
notices sent after the figures are written) are reported, not asserted.
"""
import argparse
import re
import sys

import mwjob


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mwrun", required=True)
    ap.add_argument("-n", type=int, required=True, dest="nprocs")
    ap.add_argument("--provider", default="shm")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("program")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    o = ap.parse_args()

    ran = mwjob.run_with_stats("check_accounting", o.mwrun, o.nprocs, o.provider, o.timeout, [o.program] + o.args)
    if ran is None:
        return 1
    out, job = ran

    m = re.search(r"shape n=(\d+) ranks=(\d+) row_bytes=(\d+) slot=(\d+)", out)
    if not m:
        print("check_accounting: FAIL: the program printed no 'shape' line")
        return 1
    n, P, row_bytes, slot = (int(x) for x in m.groups())
    W = P - 1
    ranks = job["ranks"]
    if job["nprocs"] != P or len(ranks) != P or any(r is None for r in ranks):
        print(f"check_accounting: FAIL: statistics of {len(ranks)} ranks, expected {P}")
        return 1
    rows = [0] + [((r * n) // W) - (((r - 1) * n) // W) for r in range(1, P)]
    # Barrier messages per worker. On shm the ranks share a page (the transport's doorbell
    # page), and a crossing with nothing to move goes through it instead of messages.
    shared = o.provider == "shm"
    arrivals = 2 if shared else 4  # done, gather; and start twice without the page
    releases = (1 if W > 1 else 0) if shared else 3  # gather's (the others' figures); start's
    B = A = C = n * row_bytes

    failures = []

    def expect(who, what, got, want):
        ok = got == want
        print(f"  {'ok  ' if ok else 'FAIL'} {who:7} {what:44} {got}" + ("" if ok else f", expected {want}"))
        if not ok:
            failures.append(f"{who}: {what} is {got}, expected {want}")

    def expect_range(who, what, got, lo, hi):
        ok = lo <= got <= hi
        print(f"  {'ok  ' if ok else 'FAIL'} {who:7} {what:44} {got} (in [{lo}, {hi}])")
        if not ok:
            failures.append(f"{who}: {what} is {got}, expected between {lo} and {hi}")

    kinds = ["lock", "grant", "barrier", "control"]
    print("per rank and kind: messages sent/received, payload bytes sent/received")
    print("  rank" + "".join(f"  {k:>24}" for k in kinds))
    for i, r in enumerate(ranks):
        cells = "".join(
            f"  {r[f'sent.{k}.msgs']:>3}/{r[f'received.{k}.msgs']:<3}"
            f"{r[f'sent.{k}.payload_bytes']:>8}/{r[f'received.{k}.payload_bytes']:<8}"
            for k in kinds)
        print(f"  {i:4}{cells}")

    print("checks:")
    for i in range(1, P):
        r, who = ranks[i], f"rank {i}"
        mine = rows[i] * row_bytes
        expect(who, "lock_acquires_remote", r["lock_acquires_remote"], 2)
        expect(who, "lock_acquires_local", r["lock_acquires_local"], 0)
        expect(who, "barrier_crossings", r["barrier_crossings"], 4)
        expect(who, "received.grant.msgs", r["received.grant.msgs"], 2)
        expect(who, "received.grant.payload_bytes (B + A rows)", r["received.grant.payload_bytes"], B + mine)
        expect(who, "sent.grant.payload_bytes", r["sent.grant.payload_bytes"], 0)
        expect(who, "sent.barrier.msgs", r["sent.barrier.msgs"], arrivals)
        expect(who, "sent.barrier.payload_bytes (C rows + figures)", r["sent.barrier.payload_bytes"], mine + slot)
        expect(who, "received.barrier.msgs", r["received.barrier.msgs"], releases)
        expect(who, "received.barrier.payload_bytes", r["received.barrier.payload_bytes"], (W - 1) * slot)
        expect_range(who, "sent.lock.msgs", r["sent.lock.msgs"], 2, 2 + 2 * 2 * W)
        expect(who, "payload_bytes_received", r["payload_bytes_received"], B + mine + (W - 1) * slot)
        expect(who, "payload_bytes_sent", r["payload_bytes_sent"], mine + slot)
    r, who = ranks[0], "rank 0"
    expect(who, "lock acquires (set-up)", r["lock_acquires_remote"] + r["lock_acquires_local"], W + 1)
    expect(who, "received.grant.msgs == remote acquires", r["received.grant.msgs"], r["lock_acquires_remote"])
    expect(who, "received.grant.payload_bytes", r["received.grant.payload_bytes"], 0)
    expect(who, "sent.grant.msgs", r["sent.grant.msgs"], 2 * W)
    expect(who, "sent.grant.payload_bytes (W B + A)", r["sent.grant.payload_bytes"], W * B + A)
    expect(who, "sent.barrier.msgs", r["sent.barrier.msgs"], releases * W)
    expect(who, "sent.barrier.payload_bytes", r["sent.barrier.payload_bytes"], W * (W - 1) * slot)
    expect(who, "received.barrier.msgs", r["received.barrier.msgs"], arrivals * W)
    expect(who, "received.barrier.payload_bytes (C + figures)", r["received.barrier.payload_bytes"], C + W * slot)
    expect(who, "barrier_crossings", r["barrier_crossings"], 4)

    def total(field):
        return sum(x[field] for x in ranks)

    who = "job"
    for k in ["lock", "grant", "barrier"]:
        expect(who, f"{k} messages received == sent", total(f"received.{k}.msgs"), total(f"sent.{k}.msgs"))
        expect(who, f"{k} payload received == sent", total(f"received.{k}.payload_bytes"),
               total(f"sent.{k}.payload_bytes"))
    R = total("lock_acquires_remote")
    expect(who, "grants == remote acquires", total("sent.grant.msgs"), R)
    expect_range(who, "lock messages (requests + forwards)", total("sent.lock.msgs"), R, 2 * R)
    bm = (arrivals + releases) * W
    expect(who, "barrier messages", total("sent.barrier.msgs"), bm)
    sync = total("sent.lock.msgs") + total("sent.grant.msgs") + total("sent.barrier.msgs")
    expect_range(who, "lock + grant + barrier messages", sync, 2 * R + bm, 3 * R + bm)
    payload = total("payload_bytes_sent")
    expect(who, "payload bytes", payload, W * B + A + C + W * W * slot)
    print(f"summary: {P} ranks, {R} remote acquires, {sync} lock/grant/barrier messages "
          f"({sync / W:.1f} per worker), {total('sent.control.msgs')} control messages sent; "
          f"{payload} payload bytes, of which matrices {W * B + A + C} "
          f"({(W * B + A + C) / (A + B + C):.2f}x A+B+C: B goes to every worker)")
    if failures:
        print(f"check_accounting: FAIL ({len(failures)}): " + "; ".join(failures))
        return 1
    print("check_accounting: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
