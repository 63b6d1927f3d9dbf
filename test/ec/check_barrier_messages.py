#!/usr/bin/env python3
"""Runs `ec_bench barrier N` (a barrier with nothing bound, crossed N + 100 times) under
mwrun --stats=json:FILE and checks how many barrier messages each rank sent and received.

    check_barrier_messages.py --mwrun build/bin/mwrun --ec-bench build/bin/ec_bench
                              -n 4 --provider shm|tcp [--crossings N] [--timeout 120]

On shm every rank of the job maps one shared page (the transport's doorbell page), and a
crossing with no data to move goes through it (runtime/ec/barriers.cpp, "Crossing through
shared words"): no rank may send or receive a single barrier message. Over tcp there is
no such page, and each crossing is one arrival from every rank but rank 0 (the manager)
and one release back: per crossing C, rank r > 0 sends and receives one barrier message
each, rank 0 receives and sends P - 1.
"""
import argparse
import sys

import mwjob


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mwrun", required=True)
    ap.add_argument("--ec-bench", required=True)
    ap.add_argument("-n", type=int, required=True, dest="nprocs")
    ap.add_argument("--provider", default="shm")
    ap.add_argument("--crossings", type=int, default=2000, help="timed crossings (100 more go untimed)")
    ap.add_argument("--timeout", type=int, default=120)
    o = ap.parse_args()
    P = o.nprocs
    C = o.crossings + 100  # ec_bench barrier crosses 100 times before it times N

    ran = mwjob.run_with_stats("check_barrier_messages", o.mwrun, P, o.provider, o.timeout, [o.ec_bench, "barrier", str(o.crossings)])
    if ran is None:
        return 1
    out, job = ran

    ranks = job["ranks"]
    if job["nprocs"] != P or len(ranks) != P or any(r is None for r in ranks):
        print(f"check_barrier_messages: FAIL: statistics of {len(ranks)} ranks, expected {P}")
        return 1

    shared = o.provider == "shm"
    failures = []

    def expect(who, what, got, want):
        ok = got == want
        print(f"  {'ok  ' if ok else 'FAIL'} {who:7} {what:28} {got}" + ("" if ok else f", expected {want}"))
        if not ok:
            failures.append(f"{who}: {what} is {got}, expected {want}")

    print(f"checks ({'through the shared page' if shared else 'by message'}, {C} crossings):")
    for i, r in enumerate(ranks):
        who = f"rank {i}"
        per_crossing = 0 if shared else (P - 1 if i == 0 else 1)
        expect(who, "barrier_crossings", r["barrier_crossings"], C)
        expect(who, "sent.barrier.msgs", r["sent.barrier.msgs"], per_crossing * C)
        expect(who, "received.barrier.msgs", r["received.barrier.msgs"], per_crossing * C)
        expect(who, "sent.barrier.payload_bytes", r["sent.barrier.payload_bytes"], 0)
    if failures:
        print(f"check_barrier_messages: FAIL ({len(failures)}): " + "; ".join(failures))
        return 1
    print("check_barrier_messages: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
