#!/usr/bin/python3
"""Fails if the user docs leave out something a user can use: a function, type or macro
of midway.h (docs/API.md), an option of `mwrun --help` or a setting the runtime reads
(docs/mwrun.md), an option of `mwcc --help` or of the pass (docs/mwcc.md).

usage: check_coverage.py SOURCE_DIR BIN_DIR
"""
import glob
import os
import re
import subprocess
import sys


def main():
    src, bindir = sys.argv[1], sys.argv[2]
    read = lambda p: open(os.path.join(src, p)).read()
    missing = []

    def need(doc, names, where):
        text = read(doc)
        for n in sorted(set(names)):
            if n not in text:
                missing.append(f"{doc} does not mention {n} ({where})")

    header = read("annotations/midway.h") + read("annotations/midway_types.h")
    api = re.findall(r"\b(mw_[a-z_]+|__mw_[a-z_]+)\s*\(", header)
    api += re.findall(r"#define\s+(MW_[A-Z_]+)", header)
    api += re.findall(r"\}\s*(mw_[a-z_]+_t)\s*;", header)
    api += ["MW_EXCLUSIVE", "MW_NONEXCLUSIVE"]
    need("docs/API.md", api, "annotations/midway.h and midway_types.h")

    def options(tool):
        out = subprocess.run([os.path.join(bindir, tool), "--help"], capture_output=True,
                             text=True, check=True).stdout
        opts = []
        for line in out.splitlines():
            m = re.match(r"\s+(-\S.*?)(\s{2,}|$)", line)
            if m:
                opts += re.findall(r"(--?[a-z][a-z:-]*)", m.group(1))
        return opts

    need("docs/mwrun.md", options("mwrun"), "mwrun --help")
    need("docs/mwcc.md", options("mwcc"), "mwcc --help")

    settings = []
    for path in glob.glob(os.path.join(src, "runtime", "**", "*.cpp"), recursive=True):
        settings += re.findall(r'getenv\("(MW_[A-Z_]+)"\)', open(path).read())
    # The settings table the runtime reads them all through (runtime/core/settings.def).
    table = os.path.join(src, "runtime", "core", "settings.def")
    if os.path.exists(table):
        settings += re.findall(r"^MW_SETTING\((MW_[A-Z_]+)", open(table).read(), re.M)
    settings_doc = "docs/SETTINGS.md" if os.path.exists(os.path.join(src, "docs/SETTINGS.md")) else "docs/mwrun.md"
    need(settings_doc, settings, "getenv in runtime/")

    knobs = []
    for path in glob.glob(os.path.join(src, "pass", "**", "*.cpp"), recursive=True):
        knobs += re.findall(r'cl::opt<[^>]*>\s*\w+\(\s*"(midway-[a-z-]+)"', open(path).read())
    if not knobs:
        missing.append("found no -midway-... options in pass/*.cpp (has the pass moved?)")
    need("docs/mwcc.md", ["-" + k for k in knobs], "the pass's cl::opt options")

    for m in missing:
        print("MISSING", m)
    print(f"{len(set(api))} API names, {len(set(settings))} settings, {len(knobs)} pass options checked; "
          f"{len(missing)} missing")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
