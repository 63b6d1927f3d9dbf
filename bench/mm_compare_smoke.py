#!/usr/bin/env python3
"""Smoke test of bench/mm_compare.py, the main job's driver: runs it small on MM-ec alone
(--procs 1,2 --size 64 --repeat 1 --programs mm_ec) and checks what a user would look at:
exit status 0, the table's header and its three rows (sequential, P=1, P=2), one progress
line per run on standard error, and the JSON, CSV and PNG it says it wrote.

    mm_compare_smoke.py --build BUILD_DIR --out SCRATCH_DIR
"""

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    cmd = [sys.executable, os.path.join(HERE, "mm_compare.py"), "--build", a.build, "--out", a.out,
           "--procs", "1,2", "--size", "64", "--repeat", "1", "--programs", "mm_ec"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=110)
    problems = []

    def check(cond, what):
        if not cond:
            problems.append(what)

    check(r.returncode == 0, f"exit status {r.returncode}, expected 0")
    out = r.stdout.splitlines()
    header = next((i for i, line in enumerate(out) if "Procs" in line), None)
    check(header is not None, "no table header (a line with 'Procs')")
    if header is not None:
        for col in ("Procs", "Speedup", "Msgs", "Status"):
            check(col in out[header], f"header lacks '{col}': {out[header]!r}")
        for col in ("Elapsed", "Input", "Compute", "Output", "Data"):
            check(col in out[header - 1], f"header lacks '{col}': {out[header - 1]!r}")
        rows = out[header + 1:header + 4]
        want = [r"^MM-ec\s+1 seq\s", r"^\s+1\s", r"^\s+2\s"]
        for row, pattern in zip(rows + [""] * 3, want):
            check(re.search(pattern, row) and row.rstrip().endswith("ok"),
                  f"expected a row matching {pattern!r} ending in 'ok', got {row!r}")
    progress = [line for line in r.stderr.splitlines() if re.match(r"\[\s*\d+/3\]", line)]
    check(len(progress) == 3, f"expected 3 progress lines on stderr, got {len(progress)}")

    paths = {}
    for kind in ("JSON", "CSV", "PNG"):
        m = re.search(rf"^{kind}:\s+(\S+)$", r.stdout, re.M)
        check(m is not None, f"no '{kind}: PATH' line on stdout")
        if m:
            paths[kind] = m.group(1)
            check(os.path.isfile(m.group(1)) and os.path.getsize(m.group(1)) > 0,
                  f"{kind} file {m.group(1)} is missing or empty")
    if os.path.isfile(paths.get("JSON", "")):
        doc = json.load(open(paths["JSON"]))
        rows = doc.get("rows", [])
        check(len(rows) == 3, f"JSON: expected 3 rows, got {len(rows)}")
        check(all(row.get("status") == "ok" for row in rows), "JSON: a row is not ok")
        two = [row for row in rows if row.get("procs") == 2 and not row.get("sequential")]
        med = two[0].get("median", {}) if two else {}
        check((med.get("msgs") or 0) > 0 and (med.get("mbytes") or 0) > 0,
              "JSON: the P=2 row sent no messages or no bytes")
    if os.path.isfile(paths.get("CSV", "")):
        table = list(csv.reader(open(paths["CSV"])))
        check(len(table) == 4 and "msgs" in table[0], f"CSV: expected a header and 3 rows, got {table}")
    if os.path.isfile(paths.get("PNG", "")):
        check(open(paths["PNG"], "rb").read(8) == b"\x89PNG\r\n\x1a\n", "PNG: not a PNG file")

    if problems:
        print("mm_compare smoke test FAILED:", *problems, sep="\n  ")
        print("---- command:", " ".join(cmd), "\n---- stdout:\n" + r.stdout + "---- stderr:\n" + r.stderr)
        return 1
    print(r.stdout, end="")
    print("mm_compare smoke test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
