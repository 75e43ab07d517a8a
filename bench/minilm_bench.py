#!/usr/bin/env python3
"""minilm_bench.py MODEL_DIR WICK_MINILM [--batch 64] [--tokens 128] [--iters 30] [--device cuda:0]
    [--threads N]:
all-MiniLM-L6-v2 sentences/s at batch B x T tokens in f16, wick (examples/minilm --bench) beside
sentence-transformers' model in PyTorch eager (model.half() on the same GPU), in one run; wick
eager and with its forward captured as a graph and replayed (--graph). With --device cpu both run
in f32 on the CPU with N threads each (default 2; OMP_NUM_THREADS for wick,
torch.set_num_threads for PyTorch), wick eager only (graphs are a GPU feature). Both
take the same shape of input (B sentences of exactly T tokens, no padding) and run the whole
model: embeddings, 6 layers, mean pooling, normalisation. Prints a table last."""
import argparse
import os
import re
import subprocess
import time

import torch
from sentence_transformers import SentenceTransformer


def sync(device):
    if device != "cpu":
        torch.cuda.synchronize()


def torch_rate(model_dir, b, t, iters, device):
    model = SentenceTransformer(model_dir, device=device).eval()
    if device != "cpu":
        model = model.half()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 30000, (b, t), generator=g).to(device)
    feats = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    with torch.inference_mode():
        for _ in range(3):
            model(dict(feats))
        sync(device)
        t0 = time.perf_counter()
        for _ in range(iters):
            out = model(dict(feats))["sentence_embedding"]
        sync(device)
        dt = time.perf_counter() - t0
    assert out.shape == (b, 384)
    name = "CPU, %d threads" % torch.get_num_threads() if device == "cpu" else torch.cuda.get_device_name()
    return b * iters / dt, torch.__version__, name


def wick_rate(exe, model_dir, b, t, iters, device, graph=False, threads=None):
    dtype = "f32" if device == "cpu" else "f16"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None
    r = subprocess.run([exe, model_dir, "--device", device, "--dtype", dtype, "--bench", f"{b},{t},{iters}"]
                       + (["--graph"] if graph else []), check=True, capture_output=True, text=True, env=env)
    print(r.stdout.strip())
    return float(re.search(r"([0-9.]+) sentences/s", r.stdout).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("wick_minilm")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
        w = wick_rate(a.wick_minilm, a.model_dir, a.batch, a.tokens, a.iters, a.device, threads=a.threads)
        p, tv, dev = torch_rate(a.model_dir, a.batch, a.tokens, a.iters, a.device)
        print(f"\nminilm f32, batch {a.batch} x {a.tokens} tokens, {dev}, torch {tv}")
        print(f"| {'implementation':<34} | {'sentences/s':>12} | {'ratio':>6} |")
        print(f"| {'wick (examples/minilm --bench)':<34} | {w:>12.1f} | {w / p:>5.2f}x |")
        print(f"| {'sentence-transformers, torch eager':<34} | {p:>12.1f} | {1.0:>5.2f}x |")
        print(f"goal >= 1.5x: {'met' if w / p >= 1.5 else 'not met'}")
        return
    w = wick_rate(a.wick_minilm, a.model_dir, a.batch, a.tokens, a.iters, a.device)
    wg = wick_rate(a.wick_minilm, a.model_dir, a.batch, a.tokens, a.iters, a.device, graph=True)
    p, tv, gpu = torch_rate(a.model_dir, a.batch, a.tokens, a.iters, a.device)
    print(f"\nminilm f16, batch {a.batch} x {a.tokens} tokens, {gpu}, torch {tv}")
    print(f"| {'implementation':<34} | {'sentences/s':>12} | {'ratio':>6} |")
    print(f"| {'wick (examples/minilm --bench)':<34} | {w:>12.1f} | {w / p:>5.2f}x |")
    print(f"| {'wick, graph replay (--graph)':<34} | {wg:>12.1f} | {wg / p:>5.2f}x |")
    print(f"| {'sentence-transformers, torch eager':<34} | {p:>12.1f} | {1.0:>5.2f}x |")
    print(f"goal >= 1.5x: eager {'met' if w / p >= 1.5 else 'not met'}, graph replay {'met' if wg / p >= 1.5 else 'not met'}")

if __name__ == "__main__":
    main()
