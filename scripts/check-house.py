#!/usr/bin/env python3
"""Checks the house rules that the compiler does not (docs/architecture.md):

- a header in a library's detail/ folder is private to that library: only
  files of the library's folder (the parent of detail/, and below it) and
  the tests include it;
- a collector (collectors/NAME_collector.{h,cc}) includes no other
  collector's header: what it reads of another comes through the Snapshot,
  by the part's type in collectors/parts/;
- no production function is over 100 lines, but the tables of data listed
  in TABLES (each with what it is a table of);
- every test file (tests/unit/*_test.cc, tests/integration/*_test.cc) is
  built: tests/CMakeLists.txt names it (a file it does not name is never
  compiled, and its tests never run: slurm_topology's did not for a day).

Functions are found by Universal Ctags (Debian's universal-ctags), which
gives each one's first and last line. Prints one line per breach and exits
1; 0 when the house keeps its rules. Usage: check-house.py [REPO_ROOT]
"""

import os
import re
import shutil
import subprocess
import sys

PRODUCTION = ("collectors/", "config/", "exporter/", "host/", "topology/", "transport/")
LONGEST = 100

# (file, function): a table of data, one entry per row, read as a list.
TABLES = {
    ("exporter/flags.cc", "Flags"): "the exporter's flags: help, placeholder and parser per flag",
    ("collectors/health/alert_config.cc", "ParseAlertConfig"): "the alerts file's keys: each key and its parser",
}


def tracked(root):
    out = subprocess.check_output(["git", "-C", root, "ls-files", "*.cc", "*.h"], text=True)
    return [f for f in out.split() if os.path.isfile(os.path.join(root, f))]


def includes(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = re.match(r'\s*#include "([^"]+)"', line)
            if m:
                yield number, m.group(1)


def private_headers(root, files):
    problems = []
    for f in files:
        for number, inc in includes(root, f):
            parts = inc.split("/")
            if "detail" not in parts[:-1]:
                continue
            owner = "/".join(parts[: parts.index("detail")]) + "/"
            if f.startswith(owner) or f.startswith("tests/"):
                continue
            problems.append(f"{f}:{number}: includes {inc}, private to {owner} (its detail/)")
    return problems


def collectors_apart(root, files):
    problems = []
    pattern = re.compile(r"collectors/([a-z_]+)_collector\.(h|cc)$")
    for f in files:
        mine = pattern.match(f)
        if not mine:
            continue
        for number, inc in includes(root, f):
            other = pattern.match(inc)
            if other and other.group(1) != mine.group(1):
                problems.append(
                    f"{f}:{number}: includes {inc}: a collector reads another's part "
                    f"(collectors/parts/{other.group(1)}.h), never its header"
                )
    return problems


def long_functions(root, files):
    sources = [f for f in files if f.startswith(PRODUCTION) and "/testing/" not in f]
    ctags = shutil.which("ctags-universal") or shutil.which("ctags")
    if not ctags:
        sys.exit("check-house.py: Universal Ctags not found (scripts/install-deps.sh installs universal-ctags)")
    tags = subprocess.check_output(
        [ctags, "--fields=+ne", "--c++-kinds=f", "--output-format=u-ctags", "-o", "-"] + sources,
        cwd=root,
        text=True,
        stderr=subprocess.DEVNULL,
    )
    functions = []  # (path, name, first line, last line)
    for line in tags.splitlines():
        fields = line.split("\t")
        start = re.search(r"\tline:(\d+)", line)
        end = re.search(r"\tend:(\d+)", line)
        if len(fields) >= 2 and start and end:
            functions.append((fields[1], fields[0], int(start.group(1)), int(end.group(1))))
    tables = [(p, a, b) for p, name, a, b in functions if (p, name) in TABLES]
    problems = []
    for path, name, first, last in functions:
        lines = last - first + 1
        if lines <= LONGEST or (path, name) in TABLES:
            continue
        # A lambda (ctags names it __anon...) inside a table: the table's.
        if any(p == path and a <= first and last <= b for p, a, b in tables):
            continue
        problems.append(f"{path}:{first}: {name} is {lines} lines (at most {LONGEST}, but the tables)")
    return problems


def tests_built(root, files):
    with open(os.path.join(root, "tests/CMakeLists.txt"), encoding="utf-8") as f:
        listed = f.read()
    problems = []
    for path in files:
        if re.fullmatch(r"tests/(unit|integration)/[^/]+_test\.cc", path) and path[len("tests/"):] not in listed:
            problems.append(f"{path}: not built (tests/CMakeLists.txt does not name it)")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = tracked(root)
    problems = (private_headers(root, files) + collectors_apart(root, files) + long_functions(root, files) +
                tests_built(root, files))
    for p in problems:
        print(p)
    if problems:
        print(f"check-house.py: {len(problems)} breach(es) of the house rules (docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check-house.py: {len(files)} files keep the house rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
