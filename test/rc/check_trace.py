#!/usr/bin/env python3
"""mwrun --trace: a job's timeline says what its statistics say, event by event.

    check_trace.py --mwrun build/bin/mwrun -n 2 --probe build/test/launch/probe PROGRAM [ARGS]

Runs PROGRAM (a release-consistent job with faults, lock hand-overs and barriers:
test/rc/faults.c) under mwrun --model rc --trace=FILE --stats=json:STATS, then checks:
  - mwrun printed its summary, a row per rank, and named FILE;
  - FILE is one Chrome trace: each rank a process ("rank R") with an "application" and a
    "service" thread, every event complete ("X") with a start and a length >= 0;
  - per rank, the faults, remote acquires and barrier waits in the timeline are the ones
    the statistics counted and timed: as many fault events as page_faults, their lengths
    summing to fault_wait_seconds; acquire events as lock_acquires_remote and
    acquire_wait_seconds; barrier events summing to barrier_wait_seconds;
  - each fault names a page of the window (a multiple of the page size), a home that is
    another rank and the pages it asked for (>= 1); each home records at least as many
    "serve page" events as faults were sent to it (a forwarded request counts at both);
  - flushes and updates applied appear (release consistency pushes updates), and every
    remote acquire of a rank has a "grant" event to it at another rank;
and without mwrun, MW_TRACE=PATH makes a one-rank job (--probe) write PATH.0.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"check_trace: FAIL: {what}")


def close(a, b):
    return abs(a - b) <= 1e-6 + 1e-6 * max(abs(a), abs(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mwrun", required=True)
    ap.add_argument("-n", type=int, required=True, dest="nprocs")
    ap.add_argument("--probe", required=True)
    ap.add_argument("program")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    o = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mw-trace.") as tmp:
        trace, stats = os.path.join(tmp, "trace.json"), os.path.join(tmp, "stats.json")
        cmd = [o.mwrun, "-n", str(o.nprocs), "--model", "rc", "--timeout", "60", f"--trace={trace}",
               f"--stats=json:{stats}", o.program] + o.args
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout, end="")
        if p.returncode != 0:
            print(f"check_trace: FAIL: the job exited with status {p.returncode}")
            return 1
        check("where each rank's time went" in p.stdout, "mwrun printed no summary")
        rows = [l.split() for l in p.stdout.splitlines() if l.split() and l.split()[0].isdigit()]
        check([int(r[0]) for r in rows] == list(range(o.nprocs)), f"the summary's rows are not ranks 0..{o.nprocs - 1}")
        check(f"is in {trace}" in p.stdout, "mwrun did not say where the timeline is")
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        with open(stats) as f:
            ranks = json.load(f)["ranks"]

        meta = [e for e in events if e["ph"] == "M"]
        spans = [e for e in events if e["ph"] != "M"]
        check(all(e["ph"] == "X" and e["dur"] >= 0 and e["ts"] > 0 for e in spans),
              "an event that is not a complete one with a start and a length >= 0")
        page = 4096
        for r in range(o.nprocs):
            names = {e["args"]["name"] for e in meta if e["pid"] == r and e["name"] in ("process_name", "thread_name")}
            check({f"rank {r}", "application", "service"} <= names, f"rank {r}'s process and threads unnamed: {names}")
            mine = [e for e in spans if e["pid"] == r]
            by = lambda name: [e for e in mine if e["name"] == name]
            s = ranks[r]
            faults, acquires, barriers = by("fault"), by("acquire"), by("barrier")
            print(f"rank {r}: {len(faults)} faults, {len(acquires)} acquires, {len(barriers)} barrier waits, "
                  f"{len(by('serve page'))} pages served, {len(by('flush'))} flushes, {len(by('apply update'))} updates")
            check(len(faults) == s["page_faults"], f"rank {r}: {len(faults)} fault events, {s['page_faults']} faults counted")
            check(close(sum(e["dur"] for e in faults) / 1e6, s["fault_wait_seconds"]),
                  f"rank {r}: fault events last {sum(e['dur'] for e in faults) / 1e6} s, fault_wait_seconds "
                  f"{s['fault_wait_seconds']}")
            check(len(acquires) == s["lock_acquires_remote"],
                  f"rank {r}: {len(acquires)} acquire events, {s['lock_acquires_remote']} remote acquires counted")
            check(close(sum(e["dur"] for e in acquires) / 1e6, s["acquire_wait_seconds"]),
                  f"rank {r}: acquire events do not sum to acquire_wait_seconds")
            check(len(barriers) <= s["barrier_crossings"] and
                  close(sum(e["dur"] for e in barriers) / 1e6, s["barrier_wait_seconds"]),
                  f"rank {r}: barrier events do not match barrier_crossings / barrier_wait_seconds")
            check(len(faults) > 0, f"rank {r}: no fault at all (the program should fault)")
            for e in faults:
                a = e["args"]
                if not (0 <= a.get("peer", -1) < o.nprocs and a["peer"] != r and int(a.get("page", "0"), 16) % page == 0
                        and int(a["page"], 16) > 0 and a.get("pages", 0) >= 1):
                    check(False, f"rank {r}: a fault that names no page, home or pages: {e}")
                    break
            check(len(by("flush")) > 0, f"rank {r}: no flush")
        for h in range(o.nprocs):
            sent_here = sum(1 for e in spans if e["name"] == "fault" and e["args"].get("peer") == h)
            served = sum(1 for e in spans if e["name"] == "serve page" and e["pid"] == h)
            check(served >= sent_here, f"rank {h} served {served} page requests, {sent_here} faults asked it")
        check(any(e["name"] == "apply update" for e in spans), "no update applied anywhere")
        for a in range(o.nprocs):
            acquired = sum(1 for e in spans if e["name"] == "acquire" and e["pid"] == a)
            grants = sum(1 for e in spans if e["name"] == "grant" and e["pid"] != a and e["args"].get("peer") == a)
            check(grants >= acquired, f"rank {a} waited for {acquired} grants, {grants} were granted to it")

        # Without mwrun: MW_TRACE=PATH, one rank, PATH.0.json.
        solo = os.path.join(tmp, "solo")
        env = dict(os.environ, MW_TRACE=solo)
        for k in ("MW_JOB_DIR", "MW_NPROCS", "MW_RANK"):
            env.pop(k, None)
        q = subprocess.run([o.probe], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(q.stdout, end="")
        check(q.returncode == 0, f"the probe exited with status {q.returncode}")
        try:
            with open(solo + ".0.json") as f:
                names = {e["args"]["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "M" and "name" in e["args"]}
            check({"rank 0", "application"} <= names, f"{solo}.0.json names {names}")
        except (OSError, ValueError) as e:
            check(False, f"MW_TRACE={solo} without mwrun: no {solo}.0.json ({e})")
    if failures:
        return 1
    print("check_trace: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
