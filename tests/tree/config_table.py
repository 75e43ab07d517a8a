#!/usr/bin/env python3
"""config_table.py [ROOT]: every switch the sources read has a row in docs/configuration.md, and
every row names a switch the sources read (ctest `config_table`, part of `make test`).

A switch is a name WICK_<NAME> that the tree reads:
  - C, C++, CUDA (.c .h .cu .cpp), Python (.py) and Rust (.rs) under src, kernels, examples,
    tools, python, bindings, bench, tests: a string literal that is exactly the name (getenv,
    setenv, os.environ.get, env::var and the tables that hold names all pass it that way);
  - shell scripts (.sh, .ci/run): a read of the variable ($WICK_X, ${WICK_X...});
  - CMake (CMakeLists.txt, cmake/*.cmake): $ENV{WICK_X}, and the cache entries a user may set
    with -D (option(WICK_X ...), set(WICK_X ... CACHE ...), find_program/find_path/
    find_library(WICK_X ...)).
A row of docs/configuration.md is a table line whose first cell is `WICK_X` (in backquotes).
Names in fuzz corpora and in build outputs are not looked at. Exit status 1 with the list of
names missing a row, or rows naming nothing read."""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
CODE_DIRS = ["src", "kernels", "examples", "tools", "python", "bindings", "bench", "tests"]
LITERAL = re.compile(r"""["'](WICK_[A-Z0-9_]+)["']""")
SHELL_READ = re.compile(r"\$\{?(WICK_[A-Z0-9_]+)")
CMAKE_ENV = re.compile(r"\$ENV\{(WICK_[A-Z0-9_]+)\}")
CMAKE_OPTION = re.compile(r"\boption\(\s*(WICK_[A-Z0-9_]+)")
CMAKE_CACHE = re.compile(r"\bset\(\s*(WICK_[A-Z0-9_]+)\b[^()]*?\bCACHE\b", re.S)
CMAKE_FIND = re.compile(r"\bfind_(?:program|path|library|file)\(\s*(WICK_[A-Z0-9_]+)")
ROW = re.compile(r"^\|\s*`(WICK_[A-Z0-9_]+)`")


def sources():
    for d in CODE_DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = [x for x in dirnames if x not in ("corpus", "target", "__pycache__")]
            for f in files:
                yield os.path.join(dirpath, f)
    yield os.path.join(ROOT, ".ci", "run")
    yield os.path.join(ROOT, "CMakeLists.txt")
    for f in os.listdir(os.path.join(ROOT, "cmake")):
        yield os.path.join(ROOT, "cmake", f)


def read_names():
    found = {}
    for path in sources():
        if not os.path.isfile(path):
            continue
        base = os.path.basename(path)
        ext = os.path.splitext(base)[1]
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        rel = os.path.relpath(path, ROOT)
        names = set()
        if ext in (".c", ".h", ".cu", ".cpp", ".py", ".rs"):
            names |= set(LITERAL.findall(text))
        elif ext == ".sh" or base == "run":
            names |= set(SHELL_READ.findall(text))
        elif ext == ".cmake" or base == "CMakeLists.txt":
            for rx in (CMAKE_ENV, CMAKE_OPTION, CMAKE_CACHE, CMAKE_FIND):
                names |= set(rx.findall(text))
        for n in names:
            found.setdefault(n, rel)
    return found


def rows():
    doc = os.path.join(ROOT, "docs", "configuration.md")
    out = set()
    for line in open(doc, encoding="utf-8"):
        m = ROW.match(line)
        if m:
            out.add(m.group(1))
    return out


def main():
    found, documented = read_names(), rows()
    missing = sorted(set(found) - documented)
    stale = sorted(documented - set(found))
    for n in missing:
        print(f"FAIL: {n} is read by {found[n]} but has no row in docs/configuration.md")
    for n in stale:
        print(f"FAIL: docs/configuration.md has a row for {n}, which nothing reads any more")
    print(f"config_table: {len(found)} switches read, {len(documented)} rows, "
          f"{len(missing)} missing, {len(stale)} stale")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())
