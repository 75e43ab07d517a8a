#!/usr/bin/env python3
"""gpu_compare_prefill.py: prefill attention, wick beside PyTorch, on the same GPU in one run.
    python3 bench/gpu_compare_prefill.py build/wick_gpu_bench_decode [--device cuda:0]
Runs `wick_gpu_bench_decode --prefill` (causal attention, Lq = Lk = L, q (1, 32, L, D), k and v
(1, 8, L, D): grouped-query 4:1, D 64 and 128, L 2048 / 4096 / 8192, f16 and bf16; wick's
matrix-unit kernel, kernels/flash.cu) and the same shapes through
torch.nn.functional.scaled_dot_product_attention(is_causal=True) with the flash backend forced
(k and v repeated to 32 heads beforehand, untimed: the flash backend takes equal head counts),
timed the same way (best of 3 trials of 5 calls after a warm-up, CUDA events). TFLOP/s count
the causal half, 4 L^2 D / 2 per head; the ratio is torch ms / wick ms.
    --variants "default,WICK_ATTN_FLASH=1buf": wick run once per variant (an environment setting,
    "default" for none), one column pair (ms, ratio) each beside the same torch time."""
import os, subprocess, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def torch_ms(dt, d, L):
    q = torch.rand(1, 32, L, d, device="cuda", dtype=dt) * 2 - 1
    k = torch.rand(1, 8, L, d, device="cuda", dtype=dt) * 2 - 1
    v = torch.rand(1, 8, L, d, device="cuda", dtype=dt) * 2 - 1
    k, v = k.repeat_interleave(4, 1).contiguous(), v.repeat_interleave(4, 1).contiguous()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
        best = 1e30
        for _ in range(3):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(5):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)
            e.record()
            torch.cuda.synchronize()
            best = min(best, s.elapsed_time(e) / 5)
    return best


def wick_rows(exe, dev, variant):
    env = dict(os.environ)
    if variant != "default":
        key, val = variant.split("=", 1)
        env[key] = val
    r = subprocess.run([exe, "--prefill", "--device", dev], capture_output=True, text=True,
                       env=env)
    if r.returncode:
        print(f"wick ({variant}) failed, rc {r.returncode}: {r.stderr.strip()[-300:]}")
    return [l.split()[1:] for l in r.stdout.splitlines() if l.startswith("PREFILL ")]


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else "build/wick_gpu_bench_decode"
    dev = "cuda:0"
    if "--device" in sys.argv:
        dev = sys.argv[sys.argv.index("--device") + 1]
    variants = ["default"]
    if "--variants" in sys.argv:
        variants = sys.argv[sys.argv.index("--variants") + 1].split(",")
    torch.cuda.set_device(torch.device(dev))
    runs = [wick_rows(exe, dev, v) for v in variants]
    dts = {"f16": torch.float16, "bf16": torch.bfloat16}
    print(f"prefill attention, causal, 32 query heads on 8 kv heads, {torch.cuda.get_device_name()},"
          f" torch {torch.__version__}")
    for i, v in enumerate(variants):
        print(f"  wick[{i}]: {v}")
    head = f"{'dtype':6} {'D':>4} {'L':>6} {'torch ms':>9} {'torch TF/s':>11}"
    for i in range(len(variants)):
        head += f" {'wick' + str(i) + ' ms':>9} {'TF/s':>6} {'ratio':>6}"
    print(head)
    for r, row in enumerate(runs[0]):
        dt, d, L = row[0], int(row[1]), int(row[2])
        t = torch_ms(dts[dt], d, L)
        flop = 4.0 * 32 * L * L * d / 2
        line = f"{dt:6} {d:4d} {L:6d} {t:9.3f} {flop / (t * 1e-3) / 1e12:11.1f}"
        for run in runs:
            if r >= len(run):
                line += f" {'-':>9} {'-':>6} {'-':>6}"
                continue
            ms = float(run[r][3])
            line += f" {ms:9.3f} {flop / (ms * 1e-3) / 1e12:6.1f} {t / ms:6.2f}"
        print(line)


if __name__ == "__main__":
    main()
