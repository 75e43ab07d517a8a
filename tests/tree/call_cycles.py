#!/usr/bin/env python3
"""call_cycles.py OBJECT...: no two source files of src/core, and none of src/gpu, call each
other in a circle (ctest `call_cycles`, given the objects of the library, wick_obj).

The graph is per file, from the objects' symbols (`nm`): an edge A -> B for every symbol A's
object uses (U) that B's object defines (T, D, B, R). A cycle is a strongly connected
component of more than one file. The folders in ACYCLIC must have none inside them; circles
elsewhere (and through several folders) are printed for information."""
import os
import re
import subprocess
import sys

ACYCLIC = ("src/core", "src/gpu")


def scc(nodes, edges):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(100000)
    for v in nodes:
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    files = {}  # "src/gpu/gpu_ops.c" -> object
    for o in sys.argv[1:]:
        m = re.search(r"(src/[a-z]+/[^/]+\.c)\.o$", o)
        if m:
            files[m.group(1)] = o
    if not files:
        sys.exit("call_cycles: no objects of src/ given")
    defs, uses = {}, {f: set() for f in files}
    of = {o: f for f, o in files.items()}
    # one nm for every object (-A: each line starts with the object's path and a colon)
    out = subprocess.run(["nm", "-A"] + list(files.values()), capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        path, _, rest = line.rpartition(".o:")
        f = of.get(path + ".o")
        p = rest.split()
        if f is None:
            continue
        if len(p) == 2 and p[0] == "U":
            uses[f].add(p[1])
        elif len(p) == 3 and p[1] in "TDBR":
            defs.setdefault(p[2], f)
    edges = {f: {defs[s] for s in us if s in defs and defs[s] != f} for f, us in uses.items()}
    bad = 0
    for folder in ACYCLIC:
        inside = [f for f in files if os.path.dirname(f) == folder]
        sub = {f: {g for g in edges[f] if g in inside} for f in inside}
        for c in scc(inside, sub):
            bad += 1
            print(f"FAIL: {folder}: these files call each other in a circle: {' '.join(c)}")
            for f in c:
                for g in sorted(sub[f] & set(c)):
                    syms = sorted(s for s in uses[f] if defs.get(s) == g)
                    print(f"  {f} -> {g}: {' '.join(syms[:6])}")
    others = [c for c in scc(list(files), edges)
              if not any(all(os.path.dirname(f) == a for f in c) for a in ACYCLIC)]
    for c in others:
        print(f"(elsewhere: {' '.join(c)})")
    print(f"call_cycles: {len(files)} files, {bad} circles inside {', '.join(ACYCLIC)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
