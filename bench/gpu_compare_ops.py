#!/usr/bin/env python3
"""gpu_compare_ops.py: runs build/wick_gpu_bench_ops and the same ops in PyTorch on the same GPU,
in one run, and prints one table: TFLOP/s for matmul and convolutions, GB/s for the rest
(amounts as wick's bench counts them; the ratio is a ratio of times either way).
    python3 bench/gpu_compare_ops.py [path/to/wick_gpu_bench_ops] [--device cuda:0] [row filters]
PyTorch runs with TF32 off (matching wick's default) and cuDNN benchmark mode on; argsort uses
torch.argsort(stable=True), the same contract as wick's."""
import re, subprocess, sys, time

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def bench_torch(fn):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = time.perf_counter() - t0
    reps = 3 if one > 0.05 else min(200, int(0.2 / max(one, 1e-6)))
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


def rnd(*shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, device="cuda") * (hi - lo) + lo).to(dtype)


def torch_row(name):
    """A zero-argument callable doing the op of wick's row `name` (None when not comparable)."""
    dts = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    if name.startswith("matmul_") or name.startswith("portable_matmul_"):
        p = name.split("_")
        if p[-2] not in dts:  # f8e4m3: no plain PyTorch matmul (the note compares it with bf16)
            return None
        dt = dts[p[-2]]
        if p[-1] == "b64":
            a, b = rnd(64, 512, 128, dtype=dt), rnd(64, 128, 512, dtype=dt)
        else:
            s = int(p[-1])
            a, b = rnd(s, s, dtype=dt), rnd(s, s, dtype=dt)
        return lambda: torch.matmul(a, b)
    if name.startswith("conv2d_"):
        dt = dts[name.split("_")[1]]
        x, w = rnd(32, 64, 56, 56, dtype=dt), rnd(64, 64, 3, 3, dtype=dt, lo=-0.1, hi=0.1)
        return lambda: F.conv2d(x, w, padding=1)
    if name.startswith("convnet_"):  # convnet_<dt>_<net>_n..c..h..w..o..k..s..p..
        dt = dts[name.split("_")[1]]
        n, c, h, w, o, k, s, p = (int(v) for v in re.search(
            r"n(\d+)c(\d+)h(\d+)w(\d+)o(\d+)k(\d+)s(\d+)p(\d+)$", name).groups())
        x, wt = rnd(n, c, h, w, dtype=dt), rnd(o, c, k, k, dtype=dt, lo=-0.1, hi=0.1)
        return lambda: F.conv2d(x, wt, stride=s, padding=p)
    if name == "conv1d_f32":
        x, w = rnd(32, 256, 4096), rnd(256, 256, 3, lo=-0.1, hi=0.1)
        return lambda: F.conv1d(x, w, padding=1)
    if name == "copy_f32_16384x4096":
        x = rnd(16384, 4096)
        return lambda: x.clone()
    rows = {"": (16384, 4096), "_d1025": (65536, 1025), "_d65537": (1024, 65537)}
    for op in ("softmax", "rms_norm", "layer_norm"):
        for dn in ("bf16", "f16", "f32"):
            for suffix, (m, d) in rows.items():
                if name != f"{op}_{dn}{suffix}":
                    continue
                dt = dts[dn]
                x = rnd(m, d, dtype=dt, lo=-4, hi=4)
                a, b = rnd(d, dtype=dt, lo=0.5, hi=1.5), rnd(d, dtype=dt, lo=-0.5, hi=0.5)
                if op == "softmax":
                    return lambda: torch.softmax(x, dim=-1)
                if op == "rms_norm":
                    return lambda: F.rms_norm(x, (d,), a, 1e-5)
                return lambda: F.layer_norm(x, (d,), a, b, 1e-5)
    m = re.match(r"(add_rms_norm|swiglu)_(bf16|f16|f32)(?:_(\d+)x(\d+))?$", name)
    if m:  # PyTorch eager runs each as its two ops
        dt = dts[m.group(2)]
        if m.group(1) == "add_rms_norm":
            r_, d = (int(m.group(3)), int(m.group(4))) if m.group(3) else (16384, 4096)
            x, r, a = rnd(r_, d, dtype=dt, lo=-4, hi=4), rnd(r_, d, dtype=dt), rnd(d, dtype=dt)
            return lambda: F.rms_norm(x + r, (d,), a, 1e-5)
        r_, f = (int(m.group(3)), int(m.group(4))) if m.group(3) else (4096, 14336)
        gu = rnd(r_, 2 * f, dtype=dt, lo=-4, hi=4)
        g, u = gu[:, :f], gu[:, f:]
        return lambda: F.silu(g) * u
    if name == "index_select_bf16":
        t = rnd(128256, 4096, dtype=torch.bfloat16)
        ids = torch.randint(0, 128256, (8192,), device="cuda")
        return lambda: torch.index_select(t, 0, ids)
    if name == "gather_f32":
        s = rnd(8192, 4096)
        ids = torch.randint(0, 4096, (8192, 4096), device="cuda")
        return lambda: torch.gather(s, 1, ids)
    if name == "scatter_add_f32":
        d, s = rnd(8192, 4096), rnd(8192, 4096)
        ids = torch.randint(0, 4096, (8192, 4096), device="cuda")
        return lambda: d.scatter_add_(1, ids, s)
    if name.startswith("upsample_nearest2d"):
        x = rnd(16, 64, 128, 128)
        return lambda: F.interpolate(x, scale_factor=2, mode="nearest")
    if name.startswith("upsample_bilinear2d"):
        x = rnd(16, 64, 128, 128)
        return lambda: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
    if name.startswith("max_pool2d"):
        x = rnd(16, 64, 128, 128)
        return lambda: F.max_pool2d(x, 2, 2)
    if name.startswith("avg_pool2d"):
        x = rnd(16, 64, 128, 128)
        return lambda: F.avg_pool2d(x, 2, 2)
    if name == "argsort_4096x1024_f32":
        x = rnd(4096, 1024)
        return lambda: torch.argsort(x, dim=-1, stable=True)
    if name == "argsort_64x200000_f32":
        x = rnd(64, 200000)
        return lambda: torch.argsort(x, dim=-1, stable=True)
    return None


def main():
    exe = "build/wick_gpu_bench_ops"
    args = list(sys.argv[1:])
    if args and not args[0].startswith("--") and "/" in args[0]:
        exe = args.pop(0)
    res = subprocess.run([exe] + args, capture_output=True, text=True)
    print(res.stdout, end="")
    if res.returncode != 0:
        print(res.stderr)
    rows = []
    for line in res.stdout.splitlines():
        p = line.split()
        if p and p[0] == "row":
            rows.append((p[1], p[2], float(p[3]), float(p[4])))
    wick = {r[0]: r for r in rows}
    print(f"\nGPU: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"{'op':30s} {'unit':>7s} {'wick':>9s} {'torch':>9s} {'wick/torch':>10s}  note")
    for name, unit, amount, t in rows:
        tt = None
        fn = torch_row(name)
        if fn is not None:
            tt = bench_torch(fn)
            del fn
            torch.cuda.empty_cache()
        scale, u = (1e12, "TFLOP/s") if unit == "flop" else (1e9, "GB/s")
        note = ""
        copy = wick.get("copy_f32_16384x4096")
        if unit == "byte" and copy and name != copy[0]:
            note = f"{100 * (amount / t) / (copy[2] / copy[3]):.0f}% of wick copy"
        if name.startswith("portable_matmul_"):
            vendor = wick.get(name.replace("portable_", ""))
            if vendor:
                note = f"{100 * vendor[3] / t:.0f}% of wick-cuBLAS"
            bf16 = wick.get(name.replace("f8e4m3", "bf16"))
            if "f8e4m3" in name and bf16:
                note = f"{bf16[3] / t:.2f}x the rate of {bf16[0]}"
        tw = amount / t / scale
        tp = amount / tt / scale if tt else float("nan")
        ratio = tt / t if tt else float("nan")
        print(f"{name:30s} {u:>7s} {tw:9.1f} {tp:9.1f} {ratio:10.2f}  {note}")
    if res.returncode != 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
