#!/usr/bin/env python3
"""gpu_compare.py: runs build/wick_gpu_bench and the same ops in PyTorch on the same GPU, in one
run, and prints one table (GB/s = bytes read + written once per call / time per call).
    python3 bench/gpu_compare.py [path/to/wick_gpu_bench] [--device cuda:0]
Copy bandwidth = the best device-to-device copy seen (wick's clone or torch's clone)."""
import subprocess, sys, time

import torch

def bench_torch(fn, reps=10):
    for _ in range(2):
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

def torch_rows():
    R = 16384
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(R, R, device="cuda", generator=g) * 4 - 2
    b = torch.rand(R, R, device="cuda", generator=g) * 4 - 2
    a16, b16 = a.bfloat16(), b.bfloat16()
    row = torch.rand(1, R, device="cuda", generator=g)
    cond = (torch.rand(R, R, device="cuda", generator=g) * 2).to(torch.uint8)
    out = {}
    ops = {
        "copy_f32": lambda: a.clone(),
        "add_f32": lambda: a + b,
        "add_bf16": lambda: a16 + b16,
        "exp_f32": lambda: torch.exp(a),
        "gelu_f32": lambda: torch.nn.functional.gelu(a, approximate="tanh"),
        "affine_f32": lambda: a * 1.5 + 0.25,
        "cast_f32_bf16": lambda: a.to(torch.bfloat16),
        "where_f32": lambda: torch.where(cond.bool(), a, b),
        "bcast_add_f32": lambda: a + row,
        "transpose_copy_f32": lambda: a.t().contiguous(),
        "sum_last_f32": lambda: a.sum(dim=1, keepdim=True),
        "sum_dim0_f32": lambda: a.sum(dim=0, keepdim=True),
        "sum_all_f32": lambda: a.sum(),
        "max_last_f32": lambda: a.amax(dim=1, keepdim=True),
        "argmax_last_f32": lambda: a.argmax(dim=1, keepdim=True),
    }
    for k, fn in ops.items():
        out[k] = bench_torch(fn)
    sa, sb = torch.rand(1024, device="cuda"), torch.rand(1024, device="cuda")
    torch.cuda.synchronize()
    best = 1e30
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(1000):
            sa + sb
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / 1000)
    out["small_add_1024"] = best
    return out

def main():
    exe = "build/wick_gpu_bench"
    args = [a for a in sys.argv[1:]]
    if args and not args[0].startswith("--"):
        exe = args.pop(0)
    res = subprocess.run([exe] + args, capture_output=True, text=True)
    print(res.stdout, end="")
    if res.returncode != 0:
        print(res.stderr)
        sys.exit(1)
    wick = {}
    for line in res.stdout.splitlines():
        p = line.split()
        if p and p[0] == "row":
            wick[p[1]] = (float(p[2]), float(p[3]))
    tt = torch_rows()
    copy_bw = max(wick["copy_f32"][0] / wick["copy_f32"][1], wick["copy_f32"][0] / tt["copy_f32"])
    print(f"\nGPU: {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"copy bandwidth {copy_bw / 1e9:.0f} GB/s")
    print(f"{'op':22s} {'wick GB/s':>10s} {'% copy':>7s} {'torch GB/s':>11s} {'wick/torch':>10s}")
    for k, (nbytes, t) in wick.items():
        if k == "small_add_1024":
            continue
        tw = nbytes / t
        tp = nbytes / tt[k]
        print(f"{k:22s} {tw / 1e9:10.0f} {100 * tw / copy_bw:6.0f}% {tp / 1e9:11.0f} {tw / tp:10.2f}")
    if "small_add_1024" in wick:
        print(f"{'small_add_1024 (us/op)':22s} {wick['small_add_1024'][1] * 1e6:10.2f} {'':7s} "
              f"{tt['small_add_1024'] * 1e6:11.2f} {tt['small_add_1024'] / wick['small_add_1024'][1]:10.2f}")

if __name__ == "__main__":
    main()
