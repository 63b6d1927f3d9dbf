#!/usr/bin/python3
"""Compiles and runs the code samples of Midway's user documentation.

Every fenced block of a user doc says what it is in its info string (GitHub reads only
the first word, the language, for highlighting; the rest is for this script):

  ```c program [np=N] [mwrun="OPTS"] [args="ARGS"]
        a whole program: built with mwcc -O2 and run with mwrun -n N (2 by default);
        it must exit 0. A ```text output block right after it is its exact stdout.
  ```c file=NAME
        a whole program saved as NAME in the doc's working directory, for the shell
        samples after it: one of them must name NAME.
  ```c misuse expect="TEXT" [np=N] [mwrun="OPTS"] [args="ARGS"]
        a program that is wrong on purpose: it must build, and its run must fail
        with TEXT in its standard error.
  ```c compile-error expect="TEXT"     mwcc -c must fail, saying TEXT
  ```c compile-warning expect="TEXT"   mwcc -c must succeed, warning TEXT
    ```c native [args="ARGS"]
        a program that is not a Midway program (the threaded original of a port):
        built with clang-19 -O2 -pthread and run; it must exit 0.
  ```c fragment                        part of a program: shown, not built
  ```sh run                            run with bash -eo pipefail in the working
                                       directory, mwcc and mwrun on PATH; must exit 0
  ```sh fragment                       not runnable here (an install, another host,
                                       Slurm, a program the doc does not give)
  ```cmake fragment                    the same, for CMake code
  ```text output                       the exact standard output of the run before it
  ```text                              literal text: messages, tables, usage
A block with anything else (no info string, an unknown language or kind) fails the
test: every sample is either run or classified on purpose. So does a relative link to a
file that does not exist, or to a heading the file does not have.

usage: check_samples.py BIN_DIR DOC.md [DOC.md ...]   (BIN_DIR holds mwcc and mwrun)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

try:
    from markdown_it import MarkdownIt
except ImportError:
    sys.exit("check_samples.py needs Debian's python3-markdown-it (scripts/setup.sh installs it)")

TIMEOUT = 120  # seconds, for one build or run (a loaded machine; a hang still fails)


class Failure(Exception):
    pass


def parse_info(info):
    words = shlex.split(info)
    if not words:
        return None, None, {}
    lang, kind, attrs = words[0], None, {}
    for w in words[1:]:
        if "=" in w:
            k, v = w.split("=", 1)
            attrs[k] = v
        elif kind is None:
            kind = w
        else:
            raise Failure(f"more than one kind in info string '{info}'")
    return lang, kind, attrs


class Doc:
    def __init__(self, path, bindir, work):
        self.path = path
        self.name = os.path.relpath(path)
        self.bindir = bindir
        self.work = work
        self.env = dict(os.environ)
        self.env["PATH"] = bindir + os.pathsep + self.env.get("PATH", "")
        self.env.pop("MW_MODEL", None)
        self.env.pop("MW_STATS", None)
        self.last_stdout = None  # of the last sample that ran
        self.saved = {}          # NAME -> line, for ```c file=NAME
        self.counts = {}

    def run(self, argv, what, **kw):
        try:
            return subprocess.run(argv, cwd=self.work, env=self.env, capture_output=True,
                                  text=True, timeout=TIMEOUT, **kw)
        except subprocess.TimeoutExpired:
            raise Failure(f"{what} did not finish within {TIMEOUT} s")

    def write(self, name, text):
        with open(os.path.join(self.work, name), "w") as f:
            f.write(text)

    def build(self, src, exe, line):
        r = self.run(["mwcc", "-O2", "-Wall", src, "-o", exe], f"mwcc {src}")
        if r.returncode != 0:
            raise Failure(f"mwcc failed (status {r.returncode}):\n{r.stderr}")
        return r

    def launch(self, exe, attrs):
        np = attrs.get("np", "2")
        argv = ["mwrun", "-n", np, "--timeout", str(TIMEOUT)]
        argv += shlex.split(attrs.get("mwrun", "")) + ["./" + exe] + shlex.split(attrs.get("args", ""))
        return argv, self.run(argv, " ".join(argv))

    def sample(self, lang, kind, attrs, text, line):
        key = f"{lang} {kind or ''}".strip()
        self.counts[key] = self.counts.get(key, 0) + 1
        stem = f"sample{line}"
        if lang == "c" and kind == "program":
            self.write(stem + ".c", text)
            self.build(stem + ".c", stem, line)
            argv, r = self.launch(stem, attrs)
            if r.returncode != 0:
                raise Failure(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
            self.last_stdout = r.stdout
        elif lang == "c" and kind == "native":
            self.write(stem + ".c", text)
            r = self.run(["clang-19", "-O2", "-Wall", "-pthread", stem + ".c", "-o", stem], "clang-19")
            if r.returncode != 0:
                raise Failure(f"clang-19 failed (status {r.returncode}):\n{r.stderr}")
            r = self.run(["./" + stem] + shlex.split(attrs.get("args", "")), stem)
            if r.returncode != 0:
                raise Failure(f"{stem} exited {r.returncode}:\n{r.stdout}{r.stderr}")
            self.last_stdout = r.stdout
        elif lang == "c" and kind is None and "file" in attrs:
            self.write(attrs["file"], text)
            self.saved[attrs["file"]] = line
        elif lang == "c" and kind == "misuse":
            want = attrs.get("expect")
            if not want:
                raise Failure("a misuse sample needs expect=\"TEXT\"")
            self.write(stem + ".c", text)
            self.build(stem + ".c", stem, line)
            argv, r = self.launch(stem, attrs)
            if r.returncode == 0:
                raise Failure(f"{' '.join(argv)} exited 0; the sample is meant to fail with: {want}")
            if want not in r.stderr:
                raise Failure(f"{' '.join(argv)} failed, but its stderr lacks '{want}':\n{r.stderr}")
            self.last_stdout = None
        elif lang == "c" and kind in ("compile-error", "compile-warning"):
            want = attrs.get("expect")
            if not want:
                raise Failure(f"a {kind} sample needs expect=\"TEXT\"")
            self.write(stem + ".c", text)
            r = self.run(["mwcc", "-O2", "-c", stem + ".c", "-o", stem + ".o"], "mwcc -c")
            if kind == "compile-error" and r.returncode == 0:
                raise Failure(f"mwcc -c succeeded; the sample is meant to fail with: {want}")
            if kind == "compile-warning" and r.returncode != 0:
                raise Failure(f"mwcc -c failed:\n{r.stderr}")
            if want not in r.stderr:
                raise Failure(f"mwcc's messages lack '{want}':\n{r.stderr}")
            self.last_stdout = None
        elif lang in ("sh", "console", "bash") and kind == "run":
            for name in list(self.saved):
                if name in text:
                    del self.saved[name]
            r = self.run(["bash", "-eo", "pipefail", "-c", text], "the shell sample")
            if r.returncode != 0:
                raise Failure(f"exited {r.returncode}:\n{r.stdout}{r.stderr}")
            self.last_stdout = r.stdout
        elif lang == "text" and kind == "output":
            if self.last_stdout is None:
                raise Failure("an output block with no run sample right before it")
            got = [l.rstrip() for l in self.last_stdout.rstrip("\n").split("\n")]
            want = [l.rstrip() for l in text.rstrip("\n").split("\n")]
            if got != want:
                raise Failure("the output differs from the doc's:\n--- doc\n" + "\n".join(want) +
                              "\n--- run\n" + "\n".join(got))
            self.last_stdout = None
        elif kind == "fragment" and lang in ("c", "sh", "console", "bash", "cmake"):
            pass
        elif lang == "text" and kind is None and not attrs:
            pass
        else:
            raise Failure(f"unclassified sample ('{lang} {kind or ''}'): give it an info string "
                          "this script knows (see test/docs/check_samples.py)")


def slugs(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    tokens = MarkdownIt("commonmark").parse(open(path).read())
    out = set()
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            text = "".join(c.content for c in tokens[i + 1].children if c.type in ("text", "code_inline"))
            out.add(re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-"))
    return out


def check_links(path, tokens):
    """Relative links must name a file that exists, and an anchor that its headings have."""
    failures = 0
    for t in tokens:
        for c in (t.children or []):
            href = c.attrs.get("href") if c.type == "link_open" else None
            if not href or re.match(r"[a-z]+:", href):
                continue
            target, _, anchor = href.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            line = (t.map[0] + 1) if t.map else 0
            if not os.path.exists(target):
                print(f"FAIL  {os.path.relpath(path)}:{line}: link to {href}: no such file")
                failures += 1
            elif anchor and target.endswith(".md") and anchor not in slugs(target):
                print(f"FAIL  {os.path.relpath(path)}:{line}: link to {href}: no such heading")
                failures += 1
    return failures


def check(path, bindir):
    with open(path) as f:
        tokens = MarkdownIt("commonmark").parse(f.read())
    work = tempfile.mkdtemp(prefix="mw-docs.")
    doc = Doc(path, bindir, work)
    failures = check_links(path, tokens)
    try:
        for t in tokens:
            if t.type not in ("fence", "code_block"):
                continue
            line = t.map[0] + 1
            where = f"{doc.name}:{line}"
            try:
                if t.type == "code_block":
                    raise Failure("an indented code block: make it a fenced block with an info string")
                lang, kind, attrs = parse_info(t.info)
                if lang is None:
                    raise Failure("a sample without an info string")
                doc.sample(lang, kind, attrs, t.content, line)
                print(f"ok    {where} ({t.info.strip()})")
            except Failure as e:
                failures += 1
                print(f"FAIL  {where} ({t.info.strip()}): {e}")
        for name, line in doc.saved.items():
            failures += 1
            print(f"FAIL  {doc.name}:{line}: {name} is saved for a shell sample, but none names it")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(doc.counts.items()))
    print(f"{doc.name}: {summary or 'no samples'}; {failures} failed")
    return failures


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bindir = os.path.abspath(sys.argv[1])
    failures = sum(check(p, bindir) for p in sys.argv[2:])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
