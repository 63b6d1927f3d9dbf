#!/usr/bin/env python3
"""Nothing left behind: what the test suite's jobs leave in /dev/shm and job directories.

    leftovers.py baseline STATE   at the start of the suite (ctest fixture setup)
    leftovers.py check STATE      at its end (fixture cleanup): fails naming each leftover

A leftover is a file in /dev/shm named as this project names what it puts there
(midway-*: ranks' shm regions, fi_setname'd, and doorbell pages; mw-* and ec_bench_*: the
tests' and benchmarks' own), or an mwrun job directory (mwrun.* in $TMPDIR, else /tmp),
that was not there at the baseline, is still there after a short settle (a job
that is ending removes its own), and that no live process uses: none maps it, holds it
open or names it in its environment (a running job's ranks map their shm regions and
doorbell page and have MW_JOB_DIR set; mwrun holds its job directory open). So files from before the suite, and those of
jobs still running, are not counted, nor other programs' files (libfabric's own
<pid>:0:0 regions included: Midway names its own). What it cannot tell apart: a leftover
of another suite's Midway job that ran on this host at the same time.
"""
import json
import os
import sys
import time

SHM = "/dev/shm"
SHM_PREFIXES = ("midway-", "mw-", "ec_bench_")
SETTLE_S = 3.0


def job_root():
    return os.environ.get("TMPDIR") or "/tmp"


def candidates():
    found = set()
    try:
        for name in os.listdir(SHM):
            if name.startswith(SHM_PREFIXES):
                found.add(os.path.join(SHM, name))
    except OSError:
        pass
    root = job_root()
    try:
        for name in os.listdir(root):
            if name.startswith("mwrun.") and os.path.isdir(os.path.join(root, name)):
                found.add(os.path.join(root, name))
    except OSError:
        pass
    return found


def in_use():
    """Paths that some live process maps, holds open or names in its environment."""
    used, environs = set(), []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        base = "/proc/" + pid
        try:
            with open(base + "/maps", "rb") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6:
                        used.add(parts[5].strip().decode(errors="replace").replace(" (deleted)", ""))
        except OSError:
            pass
        try:
            for fd in os.listdir(base + "/fd"):
                try:
                    used.add(os.readlink(base + "/fd/" + fd))
                except OSError:
                    pass
        except OSError:
            pass
        try:
            with open(base + "/environ", "rb") as f:
                environs.append(f.read())
        except OSError:
            pass
    return used, b"\0".join(environs)


def describe(path):
    try:
        st = os.stat(path)
    except OSError:
        return path
    kind = "directory" if os.path.isdir(path) else "%d bytes" % st.st_size
    return "%s (%s, modified %s)" % (path, kind, time.strftime("%H:%M:%S", time.localtime(st.st_mtime)))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("baseline", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, state = sys.argv[1], sys.argv[2]
    if mode == "baseline":
        with open(state, "w") as f:
            json.dump(sorted(candidates()), f)
        print("leftovers: baseline of %d Midway files in %s and job directories in %s"
              % (len(candidates()), SHM, job_root()))
        return 0
    try:
        with open(state) as f:
            before = set(json.load(f))
    except OSError as e:
        print("leftovers: no baseline (%s): the fixture's setup test did not run" % e, file=sys.stderr)
        return 1
    new = candidates() - before
    if new:
        time.sleep(SETTLE_S)
        new &= candidates()
    used, environ = in_use()
    left = sorted(p for p in new if p not in used and p.encode() not in environ and
                  # a doorbell page is named in its ranks' environment by its secret
                  not (os.path.basename(p).startswith("midway-") and
                       ("MW_SECRET=" + os.path.basename(p)[7:23]).encode() in environ))
    if left:
        print("leftovers: the suite left %d file(s) behind that no live process uses:" % len(left))
        for p in left:
            print("  " + describe(p))
        print("leftovers: every test must remove what its jobs create (runtime/transport/transport.cpp, "
              "remove_names_at_exit; mwrun removes a killed rank's)")
        return 1
    print("leftovers: nothing left behind (%d new files, all in use by live processes)" % len(new)
          if new else "leftovers: nothing left behind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
