"""Runs a Midway job under mwrun with --stats=json and returns what the checks read.

Shared by check_accounting.py and check_barrier_messages.py: the command is printed, the
job's output echoed, and the statistics file read before its directory goes.
"""
import json
import os
import subprocess
import tempfile
import time


def run_with_stats(who, mwrun, nprocs, provider, timeout, argv):
    """Returns (stdout, statistics) of the job, or None (after saying why) if it failed."""
    with tempfile.TemporaryDirectory(prefix=f"mw-{who}.") as tmp:
        stats = os.path.join(tmp, "stats.json")
        cmd = [mwrun, "-n", str(nprocs), "--provider", provider, "--timeout", str(timeout),
               f"--stats=json:{stats}"] + argv
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout, end="")
        print(f"(job took {time.monotonic() - t0:.2f} s)")
        if p.returncode != 0:
            print(f"{who}: FAIL: the job exited with status {p.returncode}")
            return None
        with open(stats) as f:
            return p.stdout, json.load(f)
