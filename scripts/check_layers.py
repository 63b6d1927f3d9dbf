#!/usr/bin/env python3
"""Checks the runtime's layering: every #include "..." of runtime/ names a header of the
same folder or of a folder below it, and the include graph has no cycle.

  core       errors, settings, statistics, ranges
  memory     the shared window, the dirty map, the heap, the program image
  launch     bootstrap (mwrun's files, PMIx)
  transport  libfabric
  ec         entry consistency
  rc         release and processor consistency
  check      the checker of a check build (mwcc -fmidway-check)
  sync       fork/join, semaphores, condition variables
  (top)      api.cpp: the midway.h functions

Usage: scripts/check_layers.py [RUNTIME_DIR]. Exit 0 if the layering holds; otherwise each
upward include and each cycle is printed with its files, and the exit status is 1.
"""
import os
import re
import sys

# What each layer may include, itself included. "" is the top (runtime/*.cpp).
ALLOWED = {
    "core": {"core"},
    "memory": {"core", "memory"},
    "launch": {"core", "memory", "launch"},
    "transport": {"core", "transport"},
    "ec": {"core", "memory", "transport", "ec"},
    "rc": {"core", "memory", "transport", "ec", "rc"},
    "check": {"core", "memory", "transport", "ec", "rc", "check"},
    "sync": {"core", "memory", "transport", "ec", "rc", "sync"},
}
ALLOWED[""] = set(ALLOWED) | {""}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    return rel.split("/")[0] if "/" in rel else ""


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", "runtime"))
    files = []
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith((".cpp", ".hpp", ".c", ".h", ".def", ".inc")):
                files.append(os.path.relpath(os.path.join(d, n), root))
    known = set(files)
    problems = []
    graph = {}
    for rel in sorted(files):
        layer = layer_of(rel)
        if layer not in ALLOWED:
            problems.append(f"{rel}: folder '{layer}' is not a layer of scripts/check_layers.py")
            continue
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        graph[rel] = []
        for inc in INCLUDE.findall(text):
            if inc not in known:
                # A header of the same folder named without it, or outside the runtime
                # (midway.h): the former is ambiguous, so the folder must be spelled out.
                if os.path.join(os.path.dirname(rel), inc) in known and "/" not in inc:
                    problems.append(f'{rel}: #include "{inc}": name the folder ("{layer_of(rel) + "/" if layer_of(rel) else ""}{inc}")')
                continue
            graph[rel].append(inc)
            if layer_of(inc) not in ALLOWED[layer]:
                problems.append(f'{rel}: #include "{inc}": layer {layer or "top"} may not use '
                                f'{layer_of(inc) or "top"} (it may use {", ".join(sorted(x or "top" for x in ALLOWED[layer]))})')
    # Cycles: depth-first search, reporting each back edge's cycle once.
    state, stack, seen_cycles = {}, [], set()

    def visit(f):
        state[f] = 1
        stack.append(f)
        for g in graph.get(f, []):
            if state.get(g) == 1:
                cyc = stack[stack.index(g):] + [g]
                key = frozenset(cyc)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    problems.append("include cycle: " + " -> ".join(cyc))
            elif g not in state:
                visit(g)
        stack.pop()
        state[f] = 2

    for f in sorted(graph):
        if f not in state:
            visit(f)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s) in {root}")
        return 1
    print(f"check_layers: {len(graph)} files, every include goes down or sideways within a layer, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
