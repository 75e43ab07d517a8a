#!/usr/bin/env python3
"""gpu_compare_decode.py: runs build-gpu/wick_gpu_bench_decode and the same decode work in
PyTorch on the same GPU, in one run, and prints one table.
    python3 bench/gpu_compare_decode.py [path/to/wick_gpu_bench_decode] [--device cuda:0]
Rows: decode attention (q (1, 32, 1, 128), k and v (1, 8, L, 128), L 8192 and 32768) against
torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True) (for one query token
causal masking changes nothing, so torch runs without a mask: its is_causal aligns the mask to the
top left); 1000 small adds (1024 f32, a + b, outputs allocated by each library's caching
allocator). Times: CUDA events around 50 calls (attention) / 1000 calls (adds), best of 3 after
warm-up. ratio = torch us / wick us (> 1: wick faster); % copy = (K + V + q + out bytes) / time
against the copy bandwidth wick measured in the same run. wick's attention is timed twice: eager
(host launches included) and as a graph of the same 50 calls (device time). Rows "lens N": the
graph-replayable wk_decode_attention_lens reading N of the cache's L rows (torch on N rows)."""
import re
import subprocess
import sys

import torch


def bench_torch(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = 1e30
    for _ in range(3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) / 1e3 / reps)
    return best


DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def torch_attn(qdt, kvdt, L):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = (torch.rand(1, 32, 1, 128, device="cuda", generator=g) * 2 - 1).to(DT[qdt])
    k = (torch.rand(1, 8, L, 128, device="cuda", generator=g) * 2 - 1).to(DT[kvdt])
    v = (torch.rand(1, 8, L, 128, device="cuda", generator=g) * 2 - 1).to(DT[kvdt])
    if qdt != kvdt:  # torch needs one dtype: it would convert the cache first; not comparable
        return None
    f = torch.nn.functional.scaled_dot_product_attention
    try:
        return bench_torch(lambda: f(q, k, v, enable_gqa=True), 50)
    except TypeError:  # torch without enable_gqa
        kk, vv = k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1)
        return bench_torch(lambda: f(q, kk, vv), 50)


def torch_small_add():
    a = torch.arange(1024, device="cuda", dtype=torch.float32)
    b = a * 0.5

    def loop():
        for _ in range(1000):
            a + b

    return bench_torch(loop, 1) / 1000


def main():
    exe = "build-gpu/wick_gpu_bench_decode"
    args = [a for a in sys.argv[1:]]
    if args and not args[0].startswith("--"):
        exe = args.pop(0)
    out = subprocess.run([exe] + args, capture_output=True, text=True)
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)
    if out.returncode != 0:
        sys.exit(out.returncode)
    bw = float(re.search(r"copy bandwidth (\d+)", out.stdout).group(1))
    rows = []
    for line in out.stdout.splitlines():
        p = line.split()
        if p[:1] == ["ATTN"]:
            # ATTN qdt kvdt L len eager_us eager_pct graph_us graph_pct (len 0: no lens)
            qdt, kvdt, L, n = p[1], p[2], int(p[3]), int(p[4])
            us, pct, gus, gpct = float(p[5]), float(p[6]), float(p[7]), float(p[8])
            t = torch_attn(qdt, kvdt, n if n else L)  # torch on the rows the call reads
            name = "attn q %s kv %s L %d" % (qdt, kvdt, L) + (" lens %d" % n if n else "")
            rows.append((name, us, pct, gus if gus > 0 else None, gpct if gus > 0 else None,
                         t * 1e6 if t else None))
        elif p[:1] == ["GRAPH"]:
            rows.append(("small add 1024 f32, graph replay (us/op)", float(p[2]), None, None,
                         None, None))
        elif p[:1] == ["SMALL"]:
            t = torch_small_add()
            rows.append(("small add 1024 f32 (us/op, issue %s)" % p[3], float(p[2]), None, None,
                         None, t * 1e6))
    print("\n== decode beside PyTorch %s, %s (copy bandwidth %.0f GB/s)" %
          (torch.__version__, torch.cuda.get_device_name(), bw))
    print("eager: 50 calls back to back, host launches included; graph: the same 50 calls as "
          "one graph replay (device time); ratio = torch eager us / wick eager us")
    print("%-40s %9s %7s %9s %7s %9s %6s" % ("row", "wick us", "% copy", "graph us", "% copy",
                                             "torch us", "ratio"))
    fmt = lambda x, f: f % x if x is not None else "-"
    for name, us, pct, gus, gpct, tu in rows:
        print("%-40s %9.2f %7s %9s %7s %9s %6s" % (
            name, us, fmt(pct, "%.0f%%"), fmt(gus, "%.2f"), fmt(gpct, "%.0f%%"),
            fmt(tu, "%.2f"), "%.2f" % (tu / us) if tu else "-"))


if __name__ == "__main__":
    main()
