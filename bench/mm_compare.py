#!/usr/bin/env python3
"""MM-ec against MM-rc: Midway's Table 1 (Bershad, Zekauskas and Sawdon 1993, section 5.2),
measured on this machine.

Runs each program as a job of P local processes,

    mwrun -n P --provider PROVIDER --model ec|rc --stats=json:FILE PROGRAM -n SIZE

and, for the single-processor row, the program compiled without the pass and without
the runtime (examples/<program>_seq: plain clang -O2 -DMW_SEQUENTIAL, as the paper "compiled
the program to run on a uniprocessor"). For every configuration it prints Table 1's
columns, each the median over --repeat runs:

    procs         number of processes (the sequential row is "1 seq")
    elapsed       the program's own figure: from just after mw_init (every rank has
                  joined) to the end of the master's output phase; verification excluded
    speedup       the sequential row's elapsed time / this row's
    input, compute, output
                  the phases "input", "compute" and "output" as the master (rank 0) saw
                  them (mw_phase_begin/mw_phase_end, from the statistics)
    MB            megabytes (10^6 bytes) sent over the whole job, data and protocol
    msgs          messages sent over the whole job

It writes the figures as JSON and CSV, and a PNG with two panels (elapsed time and
messages against P, the programs side by side) into --out. One line per run goes to
standard error while the sweep runs. A run that fails (non-zero exit, verification
mismatch, time-out) is reported in the table and after it, and makes the exit status 1,
once everything has been measured and written.

Exit status: 0 all runs passed; 1 a run failed; 2 bad usage or a missing program;
3 the runs passed but the plot could not be drawn (no matplotlib).
"""

import argparse
import csv
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What the driver knows of each example: its name in the table, the consistency model it
# is written to, and its arguments for a given --size. The mm programs are the point; the
# others run on request with the sizes their tests use (--size sets SOR's grid).
PROGRAMS = {
    "mm_ec": ("MM-ec", "ec", lambda size: ["-n", str(size)]),  # any size (mw_malloc past 512)
    "mm_rc": ("MM-rc", "rc", lambda size: ["-n", str(size)]),
    "sor_ec": ("SOR-ec", "ec", lambda size: ["-m", str(size), "-n", str(size), "-i", "30"]),
    "tsp_ec": ("TSP-ec", "ec", lambda size: ["-c", "12"]),
    "quicksort_ec": ("Quicksort-ec", "ec", lambda size: ["-n", "131072", "-l", "4096"]),
    "water_ec": ("Water-ec", "ec", lambda size: ["-k", "64", "-t", "6"]),
}
SIZED = {"mm_ec", "mm_rc", "sor_ec"}  # programs whose arguments --size sets
MAX_SIZE = {"mm_rc": 512, "sor_ec": 512}  # the others take any --size
ITERATED = {"mm_ec"}  # programs that take --iterations K (warm iterations)

PHASES = ("input", "compute", "output")
KINDS = ("lock", "grant", "barrier", "page", "update", "control")
# The figures of one run that are summarised by their median.
FIGURES = ("elapsed", "input", "compute", "output", "mbytes", "payload_mb", "protocol_mb",
           "msgs", "page_faults")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="mm_compare.py",
        description=__doc__.split("\n\n")[0] + " Runs MM-ec and MM-rc under mwrun at several "
        "process counts, next to the sequential build, and prints, writes and plots the table.",
        epilog="Columns: procs, elapsed, speedup (against the sequential row), input transfer, "
        "compute and output transfer (the master's phases), MB and messages (the whole "
        "job's). Example: bench/mm_compare.py --procs 1,2 --size 256 --repeat 5 --out /tmp/mm",
    )
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="build directory holding bin/mwrun and examples/ (default: %(default)s)")
    p.add_argument("--provider", default="shm",
                   help="libfabric provider for the ranks (mwrun --provider; default: %(default)s)")
    p.add_argument("--procs", default="1,2,4,8",
                   help="comma-separated process counts (default: %(default)s)")
    p.add_argument("--size", type=int, default=512,
                   help="matrix size N >= 1, for N x N floats (default: %(default)s; MM-rc and "
                        "SOR-ec take at most 512)")
    p.add_argument("--iterations", type=int, default=1,
                   help="MM-ec: input, compute and output K times over the same matrices, the "
                        "first cold, the others warm; each iteration's median is in the JSON "
                        "and below the table (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per configuration; the table shows medians (default: %(default)s)")
    p.add_argument("--out", default=None,
                   help="directory for mm_compare.{json,csv,png} and the runs' logs "
                        "(default: BUILD/mm_compare)")
    p.add_argument("--programs", default="mm_ec,mm_rc",
                   help="comma-separated examples to run (default: %(default)s; also "
                        + ", ".join(k for k in PROGRAMS if k not in ("mm_ec", "mm_rc")) + ")")
    p.add_argument("--timeout", type=int, default=120,
                   help="seconds a run may take before mwrun stops it (default: %(default)s)")
    a = p.parse_args(argv)
    fail = p.error  # prints the usage and the message, exits 2
    try:
        a.procs = [int(x) for x in a.procs.split(",") if x.strip()]
    except ValueError:
        fail(f"--procs {a.procs!r}: expected comma-separated integers, e.g. 1,2,4,8")
    if not a.procs or any(n < 1 or n > 4096 for n in a.procs):
        fail("--procs: each process count must be 1..4096")
    a.procs = sorted(set(a.procs))
    if a.size < 1:
        fail(f"--size {a.size}: must be at least 1")
    if a.iterations < 1:
        fail("--iterations must be at least 1")
    if a.repeat < 1:
        fail("--repeat must be at least 1")
    if a.timeout < 1:
        fail("--timeout must be at least 1")
    a.programs = [x.strip() for x in a.programs.split(",") if x.strip()]
    unknown = [x for x in a.programs if x not in PROGRAMS]
    if not a.programs or unknown:
        fail(f"--programs: unknown {', '.join(unknown) or '(none given)'}; "
             f"known: {', '.join(PROGRAMS)}")
    too_big = [x for x in a.programs if a.size > MAX_SIZE.get(x, a.size)]
    if too_big:
        fail(f"--size {a.size}: " + ", ".join(f"{PROGRAMS[x][0]} takes at most {MAX_SIZE[x]}"
                                              for x in too_big))
    a.build = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out or os.path.join(a.build, "mm_compare"))
    return a


def describe(args):
    """The programs and their arguments, for titles: "MM-ec -n 512, MM-rc -n 512"."""
    return ", ".join(f"{PROGRAMS[p][0]} {' '.join(PROGRAMS[p][2](args.size))}".strip()
                     for p in args.programs)


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def clean_env():
    """The driver's environment without the variables that would steer a rank."""
    env = dict(os.environ)
    for k in ("MW_STATS", "MW_MODEL", "MW_PROVIDER", "MW_JOB_DIR", "MW_JOB_ID", "MW_RANK",
              "MW_NPROCS", "MW_SECRET"):
        env.pop(k, None)
    return env


def figures_of(stats, elapsed_printed):
    """Table 1's figures of one run from its statistics ({"ranks": [...], "total": {...}})."""
    master, total = stats["ranks"][0], stats["total"]
    f = {
        "elapsed": elapsed_printed if elapsed_printed is not None else master.get("elapsed_seconds"),
        "payload_mb": total.get("payload_bytes_sent", 0) / 1e6,
        "protocol_mb": total.get("protocol_bytes_sent", 0) / 1e6,
        "msgs": total.get("msgs_sent", 0),
        "page_faults": total.get("page_faults", 0),
        "msgs_by_kind": {k: total.get(f"sent.{k}.msgs", 0) for k in KINDS},
    }
    f["mbytes"] = f["payload_mb"] + f["protocol_mb"]
    for ph in PHASES:
        f[ph] = master.get(f"phase.{ph}.seconds")
    # --iterations: each iteration's time at the master (phase "iteration_<k>").
    f["iterations"] = []
    while (t := master.get(f"phase.iteration_{len(f['iterations']) + 1}.seconds")) is not None:
        f["iterations"].append(t)
    return f


def run_once(cmd, env, stats_file, stats_read, log_path, timeout):
    """Runs one job; returns a dict with ok, reason and the figures."""
    for stale in (stats_file, stats_read):
        if os.path.exists(stale):
            os.remove(stale)
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout + 30, stdin=subprocess.DEVNULL)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        code = None
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    wall = time.monotonic() - t
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.write(out)
        log.write(err)
    r = {"command": cmd, "exit": code, "wall_seconds": wall,
         "stdout": out.strip().splitlines()[-3:], "stderr": err.strip().splitlines()[-6:],
         "log": log_path, "detail": None}
    m_res = re.search(r"result (ok|WRONG)", out)
    m_el = re.search(r"elapsed ([0-9.]+) s", out)
    elapsed = float(m_el.group(1)) if m_el else None
    err_lines = [line for line in err.splitlines() if line.strip()]
    if code is None or code == 124:
        r["reason"] = f"timed out after {timeout} s"
    elif (m_res and m_res.group(1) == "WRONG") or "MISMATCH" in err:
        r["reason"] = "verification mismatch"
        r["detail"] = next((line for line in err_lines if "MISMATCH" in line), None)
    elif code != 0:
        r["reason"] = f"exit status {code}"
        r["detail"] = err_lines[-1] if err_lines else "(nothing on stderr)"
    elif not m_res:
        r["reason"] = "no 'result ok' line on stdout"
    elif not os.path.exists(stats_read):
        r["reason"] = f"no statistics written to {stats_read}"
    else:
        try:
            with open(stats_read) as fh:
                stats = json.load(fh)
            if "ranks" not in stats:  # a rank's own file (the sequential build)
                stats = {"nprocs": 1, "ranks": [stats], "total": stats}
            r.update(figures_of(stats, elapsed))
            r["reason"] = None
        except (OSError, ValueError, KeyError, IndexError) as e:
            r["reason"] = f"unreadable statistics {stats_read}: {e}"
    r["ok"] = r["reason"] is None
    return r


def median_of(runs):
    ok = [r for r in runs if r.get("ok")]
    med = {}
    for k in FIGURES:
        vals = [r[k] for r in ok if r.get(k) is not None]
        med[k] = statistics.median(vals) if vals else None
    if ok:
        med["msgs_by_kind"] = {k: statistics.median(r["msgs_by_kind"][k] for r in ok) for k in KINDS}
        k_all = min(len(r.get("iterations", [])) for r in ok)
        med["iterations"] = [statistics.median(r["iterations"][i] for r in ok) for i in range(k_all)]
    return med


# ---- the table ----

COLUMNS = [  # header line 1, header line 2, width (0: the last, left-aligned)
    ("", "Program", 14), ("#", "Procs", 6), ("Elapsed", "(ms)", 9), ("", "Speedup", 8),
    ("Input", "xfer (ms)", 10), ("Compute", "(ms)", 9), ("Output", "xfer (ms)", 10),
    ("Data", "(MB)", 8), ("#", "Msgs", 7), ("", "Status", 0),
]


def fmt_ms(v):
    return "-" if v is None else f"{v * 1e3:.2f}"


def table_lines(rows, args):
    lines = []
    head1 = head2 = ""
    for h1, h2, w in COLUMNS:
        if w == 0:
            head1 += "  " + h1
            head2 += "  " + h2
        elif h2 == "Program":
            head1 += h1.ljust(w)
            head2 += h2.ljust(w)
        else:
            head1 += h1.rjust(w) + " "
            head2 += h2.rjust(w) + " "
    lines.append(head1.rstrip())
    lines.append(head2.rstrip())
    last_prog = None
    for row in rows:
        if last_prog is not None and row["program"] != last_prog:
            lines.append("")
        label = row["label"] if row["program"] != last_prog else ""
        last_prog = row["program"]
        m = row["median"]
        procs = "1 seq" if row["sequential"] else str(row["procs"])
        speed = "-" if row["speedup"] is None else f"{row['speedup']:.2f}"
        cells = [
            label.ljust(14), procs.rjust(6), fmt_ms(m["elapsed"]).rjust(9), speed.rjust(8),
            fmt_ms(m["input"]).rjust(10), fmt_ms(m["compute"]).rjust(9),
            fmt_ms(m["output"]).rjust(10),
            ("-" if m["mbytes"] is None else f"{m['mbytes']:.2f}").rjust(8),
            ("-" if m["msgs"] is None else f"{m['msgs']:.0f}").rjust(7),
        ]
        lines.append(cells[0] + " ".join(cells[1:]) + "   " + row["status"])
    return lines


# ---- the plot ----

def plot(rows, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (f"matplotlib is not importable by {sys.executable}: install python3-matplotlib "
                "(scripts/setup.sh does) and run the driver with /usr/bin/python3")
    progs = list(dict.fromkeys(r["program"] for r in rows))
    procs = args.procs
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 4.8))
    width = min(0.35, 0.8 / max(1, len(progs)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, prog in enumerate(progs):
        color = colors[i % len(colors)]
        prow = {r["procs"]: r for r in rows if r["program"] == prog and not r["sequential"]}
        first = next(r for r in rows if r["program"] == prog)
        label, model = first["label"], first["model"]
        xs = [j + (i - (len(progs) - 1) / 2) * width for j in range(len(procs))]
        for ax, key, scale, fmt in ((ax_t, "elapsed", 1e3, "{:.1f}"), (ax_m, "msgs", 1, "{:.0f}")):
            vals = [prow[p]["median"][key] if p in prow else None for p in procs]
            heights = [v * scale if v is not None else 0 for v in vals]
            bars = ax.bar(xs, heights, width, label=f"{label} (mwrun --model={model})", color=color)
            for b, p, v in zip(bars, procs, vals):
                failed = p in prow and prow[p]["failed_runs"] > 0
                text = "failed" if v is None else fmt.format(v * scale) + (" (!)" if failed else "")
                ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                            textcoords="offset points", color="red" if failed or v is None else "black")
        seq = next((r for r in rows if r["program"] == prog and r["sequential"]), None)
        if seq and seq["median"]["elapsed"] is not None:
            ax_t.axhline(seq["median"]["elapsed"] * 1e3, color=color, linestyle="--", linewidth=1,
                         label=f"{label} sequential (clang -O2, no pass, no runtime)")
    for ax in (ax_t, ax_m):
        ax.set_xticks(range(len(procs)))
        ax.set_xticklabels([str(p) for p in procs])
        ax.set_xlabel("processes (P)")
        ax.grid(axis="y", alpha=0.3)
    ax_t.set_ylabel("elapsed (ms), median")
    ax_t.set_title("Elapsed time")
    ax_m.set_ylabel("messages sent, whole job (median)")
    ax_m.set_title("Messages")
    msgs = [r["median"]["msgs"] for r in rows if not r["sequential"] and r["median"]["msgs"]]
    if msgs and max(msgs) / max(1, min(msgs)) > 30:
        ax_m.set_yscale("symlog", linthresh=10)
    for ax in (ax_t, ax_m):
        ax.margins(y=0.12)  # room for the labels above the bars
    if any(r["failed_runs"] for r in rows):
        fig.text(0.99, 0.01, "failed: no run passed; (!): the median of the runs that passed, "
                 "some failed", ha="right", va="bottom", fontsize=7, color="red")
    handles, labels = ax_t.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8,
               frameon=False)
    fig.suptitle(f"Midway: {describe(args)}; provider {args.provider}; median of {args.repeat} "
                 f"run(s); {platform.node()} ({os.cpu_count()} CPUs)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def main(argv):
    args = parse_args(argv)
    mwrun = os.path.join(args.build, "bin", "mwrun")
    missing = [mwrun] if not os.access(mwrun, os.X_OK) else []
    exe = {}
    for prog in args.programs:
        exe[prog] = os.path.join(args.build, "examples", prog)
        if not os.access(exe[prog], os.X_OK):
            missing.append(exe[prog])
    if missing:
        progress("mm_compare: not built: " + ", ".join(missing) +
                 " (build first: scripts/build.sh, or pass --build DIR)")
        return 2
    runs_dir = os.path.join(args.out, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    env = clean_env()

    # Every configuration: the sequential build where there is one, then P = each --procs.
    configs = []
    for prog in args.programs:
        label, model, argf = PROGRAMS[prog]
        pargs = argf(args.size)
        if prog in ITERATED and args.iterations > 1:
            pargs += ["--iterations", str(args.iterations)]
        seq = exe[prog] + "_seq"
        if os.access(seq, os.X_OK):
            configs.append({"program": prog, "label": label, "model": model, "procs": 1,
                            "sequential": True, "command": [seq] + pargs})
        for n in args.procs:
            configs.append({
                "program": prog, "label": label, "model": model, "procs": n, "sequential": False,
                "command": [mwrun, "-n", str(n), "--provider", args.provider, "--model", model,
                            "--timeout", str(args.timeout), "--stats=json:STATS", "--",
                            exe[prog]] + pargs})
    for c in configs:
        c["runs"] = []

    # The sweep: repeats outermost, so that drift on the machine touches every
    # configuration alike; a configuration that timed out is not run again.
    total = len(configs) * args.repeat
    k = 0
    for rep in range(args.repeat):
        for c in configs:
            k += 1
            name = f"{c['program']}-{'seq' if c['sequential'] else 'p%d' % c['procs']}-r{rep + 1}"
            where = f"{c['program']} {'seq' if c['sequential'] else 'P=%d' % c['procs']}"
            if any(r.get("reason", "") and r["reason"].startswith("timed out") for r in c["runs"]):
                progress(f"[{k:3d}/{total}] {where:16s} run {rep + 1}/{args.repeat}: skipped "
                         "(timed out before)")
                continue
            stats_file = os.path.join(runs_dir, name + ".json")
            if c["sequential"]:
                cmd = c["command"]
                run_env = dict(env, MW_STATS="json:" + stats_file)
                stats_read = stats_file + ".0.json"  # the runtime's name for a rank's own file
            else:
                cmd = [a.replace("STATS", stats_file) if a == "--stats=json:STATS" else a
                       for a in c["command"]]
                run_env, stats_read = env, stats_file
            r = run_once(cmd, run_env, stats_file, stats_read,
                         os.path.join(runs_dir, name + ".log"), args.timeout)
            r["repeat"] = rep + 1
            c["runs"].append(r)
            if r["ok"]:
                progress(f"[{k:3d}/{total}] {where:16s} run {rep + 1}/{args.repeat}: ok, "
                         f"elapsed {r['elapsed'] * 1e3:.2f} ms, {r['msgs']} msgs, "
                         f"{r['mbytes']:.2f} MB, {r['page_faults']} faults")
            else:
                progress(f"[{k:3d}/{total}] {where:16s} run {rep + 1}/{args.repeat}: FAILED: "
                         f"{r['reason']}" + (f": {r['detail']}" if r["detail"] else "")
                         + f" (log: {r['log']})")

    # Medians, speedups, status.
    # Speedup against the sequential row; a program without one (not built) is measured
    # against its mwrun -n 1 row instead, and the table says so.
    baseline = {}
    for c in configs:
        c["median"] = median_of(c["runs"])
    for c in configs:
        if c["median"]["elapsed"] and (c["sequential"] or c["procs"] == 1):
            if c["sequential"] or c["program"] not in baseline:
                baseline[c["program"]] = (c["median"]["elapsed"],
                                          "sequential" if c["sequential"] else "mwrun -n 1")
    failures = []
    for c in configs:
        base, base_name = baseline.get(c["program"], (None, None))
        el = c["median"]["elapsed"]
        c["speedup"] = base / el if base and el else None
        c["speedup_baseline"] = base_name if c["speedup"] is not None else None
        bad = [r for r in c["runs"] if not r["ok"]]
        c["failed_runs"] = len(bad)
        if not bad:
            c["status"] = "ok"
        else:
            reasons = list(dict.fromkeys(r["reason"] for r in bad))
            c["status"] = f"FAILED {len(bad)}/{len(c['runs'])}: " + "; ".join(reasons)
            if len(c["runs"]) < args.repeat:
                c["status"] += f" ({args.repeat - len(c['runs'])} later run(s) skipped)"
            failures.append(c)

    # The table.
    title = (f"Midway Table 1, measured: {describe(args)}; {args.provider} between local "
             f"processes; median of {args.repeat} run(s)")
    print(title)
    print("Elapsed: the time the program prints (from just after mw_init to the end of the "
          "master's output,\nverification left out); speedup against the sequential row; "
          "input/compute/output: the master's\nphases; MB (10^6 bytes, data + protocol) and "
          "messages: sent over the whole job. '1 seq': the\nprogram compiled by clang -O2 "
          "without the pass and without the runtime (examples/<program>_seq).")
    print()
    for line in table_lines(configs, args):
        print(line)
    if args.iterations > 1:
        print()
        print(f"Each iteration (ms, medians; the first cold, the others warm; speedup of the "
              f"warm median against the sequential row's):")
        for c in configs:
            its = c["median"].get("iterations") or []
            if len(its) < 2:
                continue
            warm = statistics.median(its[1:])
            seq = next((x for x in configs if x["program"] == c["program"] and x["sequential"]), None)
            seq_its = (seq["median"].get("iterations") or []) if seq else []
            sp = (f", warm speedup {statistics.median(seq_its[1:]) / warm:.2f}"
                  if len(seq_its) > 1 and warm else "")
            c["warm_seconds"] = warm
            print(f"  {c['label']} {'seq' if c['sequential'] else 'P=%d' % c['procs']}: "
                  + " ".join(f"{t * 1e3:.2f}" for t in its) + sp)
    other = [p for p in args.programs if baseline.get(p, (0, "sequential"))[1] != "sequential"]
    if other:
        print("(no sequential row for " + ", ".join(other) + ": speedup against mwrun -n 1 "
              "where it passed, else none)")

    # The files.
    stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    doc = {
        "title": title, "date": stamp, "host": platform.node(), "cpus": os.cpu_count(),
        "build": args.build, "provider": args.provider, "size": args.size,
        "iterations": args.iterations,
        "repeat": args.repeat, "procs": args.procs, "programs": args.programs,
        "columns": {
            "elapsed": "seconds, the program's printed elapsed time",
            "speedup": "the sequential row's median elapsed / this row's",
            "input, compute, output": "seconds, phases of rank 0 (mw_phase_begin/end)",
            "mbytes": "10^6 bytes sent over the whole job (payload + protocol)",
            "msgs": "messages sent over the whole job",
        },
        "rows": [{k: v for k, v in c.items()} for c in configs],
    }
    json_path = os.path.join(args.out, "mm_compare.json")
    with open(json_path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    csv_path = os.path.join(args.out, "mm_compare.csv")
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["program", "model", "provider", "size", "procs", "sequential", "runs",
                    "failed_runs", "elapsed_s", "speedup", "input_s", "compute_s", "output_s",
                    "mbytes", "payload_mb", "protocol_mb", "msgs", "page_faults", "status"])
        for c in configs:
            m = c["median"]
            w.writerow([c["program"], c["model"], "none" if c["sequential"] else args.provider,
                        args.size, c["procs"], int(c["sequential"]), len(c["runs"]),
                        c["failed_runs"], m["elapsed"],
                        None if c["speedup"] is None else round(c["speedup"], 4),
                        m["input"], m["compute"], m["output"], m["mbytes"], m["payload_mb"],
                        m["protocol_mb"], m["msgs"], m["page_faults"], c["status"]])
    png_path = os.path.join(args.out, "mm_compare.png")
    plot_error = plot(configs, args, png_path)

    print()
    if failures:
        print("Failed configurations:")
        for c in failures:
            where = f"{c['program']} {'sequential' if c['sequential'] else 'P=%d' % c['procs']}"
            print(f"  {where}: {c['status']}")
            r = next(r for r in c["runs"] if not r["ok"])
            print(f"    first failed run: {shlex.join(r['command'])}")
            for line in r["stderr"][-3:]:
                print(f"    | {line}")
            print(f"    log: {r['log']}")
        print()
    print(f"JSON: {json_path}")
    print(f"CSV:  {csv_path}")
    if plot_error:
        print(f"PNG:  not written: {plot_error}")
    else:
        print(f"PNG:  {png_path}")
    sys.stdout.flush()
    if failures:
        progress(f"mm_compare: {len(failures)} configuration(s) failed: "
                 + ", ".join(f"{c['program']} {'seq' if c['sequential'] else 'P=%d' % c['procs']}"
                             for c in failures))
        return 1
    if plot_error:
        progress("mm_compare: " + plot_error)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
