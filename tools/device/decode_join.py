#!/usr/bin/env python3
"""decode_join.py BENCH_LOG [GGML_LOG]: the quantized matvec table of tools/device/decode.sh.

BENCH_LOG: output of wick_gpu_bench_quant ("QMV qt n k m variant cold_us warm_us cold% warm%
nmse" lines). GGML_LOG: output of llama.cpp's `test-backend-ops perf -o MUL_MAT -b CUDA0`
(lines "MUL_MAT(type_a=q4_0,type_b=f32,m=4096,n=1,k=14336,...): ... 14.30 us/run ..."); ggml's
m is wick's n (weight rows), ggml's n is wick's m (activation rows). Prints per (type, shape, m):
ggml us, each wick kernel's warm us, the best kernel, best/ggml speed ratio (ggml us / wick
us: > 1 means wick is faster), the cold-L2 us and % of copy bandwidth of the best, and the
default variant's ratio (dflt_x). ggml's type names (q4_K) are matched in lower case."""
import re
import sys


def main():
    rows = {}
    variants = []
    copy = None
    for line in open(sys.argv[1], errors="replace"):
        m = re.match(r"copy bandwidth (\d+)", line)
        if m:
            copy = m.group(1)
        p = line.split()
        if len(p) >= 10 and p[0] == "QMV":
            qt, n, k, mm, v = p[1], int(p[2]), int(p[3]), int(p[4]), p[5]
            if v not in variants:
                variants.append(v)
            rows.setdefault((qt, n, k, mm), {})[v] = (float(p[6]), float(p[7]), float(p[8]),
                                                        float(p[9]), "MISMATCH" in line)
    ggml = {}
    if len(sys.argv) > 2:
        try:
            for line in open(sys.argv[2], errors="replace"):
                m = re.search(r"MUL_MAT\(type_a=(\w+),type_b=f32,m=(\d+),n=(\d+),k=(\d+)", line)
                t = re.search(r"([\d.]+) us/run", line)
                if m and t:
                    key = (m.group(1).lower(), int(m.group(2)), int(m.group(4)), int(m.group(3)))
                    ggml.setdefault(key, float(t.group(1)))
        except OSError:
            pass
    print("quantized matvec, x f32; us per call (warm = weights in L2 between calls as ggml "
          "measures; cold = a different weight copy each call); copy bandwidth %s GB/s" % copy)
    head = "%-6s %-11s %-3s %8s " % ("type", "n x k", "m", "ggml") + \
        " ".join("%7s" % v for v in variants) + "  %-7s %6s %8s %6s %6s" % ("best", "xggml", "cold_us", "cold%",
                                                                  "dflt_x")
    print(head)
    for (qt, n, k, mm), d in sorted(rows.items(), key=lambda kv: (-kv[0][2] if kv[0][1] == 4096 else 0, kv[0])):
        g = ggml.get((qt, n, k, mm))
        best = min((v for v in d if v != "default" or len(d) == 1), key=lambda v: d[v][1])
        bw = d[best]
        cells = []
        for v in variants:
            if v in d:
                cells.append("%6.1f%s" % (d[v][1], "!" if d[v][4] else " "))
            else:
                cells.append("%7s" % "-")
        ratio = "%6.2f" % (g / bw[1]) if g else "%6s" % "-"
        # the kernel wick runs without WICK_QMV (measured as "default" when the bench was given
        # it: src/gpu/gpu_quant.c qmv_pick), against ggml
        dv = "default" if "default" in d else None
        dr = "%6.2f" % (g / d[dv][1]) if g and dv in d else "%6s" % "-"
        print("%-6s %-11s %-3d %8s " % (qt, "%dx%d" % (n, k), mm, "%.1f" % g if g else "-") +
              " ".join(cells) + "  %-7s %s %8.1f %5.0f%% %s" % (best, ratio, bw[0], bw[2], dr))
    print("(! = output differs from the first kernel's: a broken kernel)")


if __name__ == "__main__":
    main()
