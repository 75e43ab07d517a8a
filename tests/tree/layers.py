#!/usr/bin/env python3
"""layers.py [ROOT]: every #include of the C, C++ and CUDA sources follows the map at the top of
docs/architecture.md (ctest `layers`, part of `make test`).

The map is the fenced block under "## The map": a header line naming the columns (folder, layer,
may include), then one row per folder: the folder(s), what the layer is, and from the column of
"may include" on what it may include (folders ending in "/", single files, "*" for anything, "-"
for nothing of this tree); a line that starts with spaces continues the row above. A file
belongs to the row of the longest folder that holds it. A quoted include is resolved as the build resolves it (the
including file's folder, then include/, src/, src/core/, src/simt/, kernels/, tests/,
tests/reference/, tests/parity/, tools/, examples/); system includes (<...>) are not resolved.
Two rules the map cannot say, also checked here:
  - no file includes a .c file (a driver never includes another driver, or any other unit);
  - the vendor headers (<cuda.h>, <cuda_runtime*.h>, <nvrtc.h>, <hip/...>) appear in src/ only
    in their own driver, src/gpu/cuda.c and src/gpu/hip.c.
Exit status 1 with one line per include that breaks a rule."""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
SEARCH = ["include", "src", "src/core", "src/simt", "kernels", "tests", "tests/reference",
          "tests/parity", "tools", "examples"]
EXTS = (".c", ".h", ".cu", ".cpp")
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
ANGLED = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
VENDOR = {"src/gpu/cuda.c": re.compile(r"^(cuda\.h|cuda_runtime.*\.h|nvrtc\.h)$"),
          "src/gpu/hip.c": re.compile(r"^hip/")}


def read_map():
    doc = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    m = re.search(r"^## The map\n.*?^```\n(.*?)^```", doc, re.S | re.M)
    if not m:
        sys.exit("layers: no fenced block under '## The map' in docs/architecture.md")
    lines = m.group(1).splitlines()
    head = lines[0]
    if not head.startswith("folder") or "may include" not in head:
        sys.exit("layers: the map's first line must name its columns: folder, layer, may include")
    col = head.index("may include")
    rules, last = {}, []
    for line in lines[1:]:
        folders, may = line[:col].split("  ")[0].strip(), line[col:].split()
        if folders:  # a row: "a/, b/" share one rule
            last = []
            for folder in folders.replace(",", " ").split():
                rules[folder.rstrip("/") + "/"] = last
        last.extend(may)  # a line without a folder continues the row above
    return rules

def layer_of(rel, rules):
    best = None
    for folder in rules:
        if rel.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def resolve(rel, name):
    for base in [os.path.dirname(rel)] + SEARCH:
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def allowed(target, rule):
    for a in rule:
        if a == "*" or (a.endswith("/") and target.startswith(a)) or target == a:
            return True
    return False


def main():
    rules = read_map()
    bad, files = [], 0
    for top in ("include", "src", "kernels", "examples", "tools", "tests", "bench", "python",
                "bindings"):
        for dirpath, dirnames, names in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d not in ("corpus", "target")]
            for n in names:
                if not n.endswith(EXTS):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, n), ROOT)
                text = open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace").read()
                files += 1
                layer = layer_of(rel, rules)
                for inc in QUOTED.findall(text):
                    tgt = resolve(rel, inc)
                    if inc.endswith(".c"):
                        bad.append(f"{rel}: includes a .c file, \"{inc}\"")
                    elif layer is None:
                        bad.append(f"{rel}: its folder has no row in the map")
                    elif tgt is None:
                        if rules[layer] != ["*"]:
                            bad.append(f"{rel}: \"{inc}\" is no file of the tree")
                    elif not allowed(tgt, rules[layer]):
                        bad.append(f"{rel}: includes {tgt}, which {layer} may not "
                                   f"(it may include: {' '.join(rules[layer])})")
                for inc in ANGLED.findall(text):
                    for drv, rx in VENDOR.items():
                        if rx.match(inc) and rel.startswith("src/") and rel != drv:
                            bad.append(f"{rel}: includes <{inc}>, a vendor header of {drv}")
    for b in bad:
        print("FAIL:", b)
    print(f"layers: {files} files, {len(rules)} rows in the map, {len(bad)} includes against it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
