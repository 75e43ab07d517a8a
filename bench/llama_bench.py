#!/usr/bin/env python3
"""llama_bench.py: wick's Llama decoder beside llama.cpp's llama-bench on the same GGUF files.

  python3 bench/llama_bench.py [--wick build-gpu/wick_llama] [--llama-bench PATH]
                               [--device cuda:0] [--types q4_0,q4_k,q8_0,f16] [--reps 3]
                               [--pp 512] [--tg 128] [--depth N] [--variants default,f32,...]
                               [--arch llama|qwen2|qwen3|gemma2|gemma3]
                               [--models /tmp/wick_llama_models] [--log DIR] [--keep]
                               [--n-layer N] [--threads T] [--llama-args ARGS] [--rt]

For each type: writes an 8B-class GGUF with random weights (tests/models/llama_ref.py
bench-model: random valid blocks, no float model quantized) of the family --arch: Llama-3-8B
(dim 4096, 32 blocks, 32 heads, 8 KV heads, ffn 14336, vocabulary 128256; the default),
Qwen2.5-7B, Qwen3-8B, Gemma-2-9B or Gemma-3-4B (their configs' shapes: llama_ref.py
BENCH_SHAPES), then measures
  - wick:      wick_llama FILE --bench 512,128 --device DEV --reps R [--depth N]
               (pp512: one 512-token prefill into an empty cache; tg128: 128 single-token steps
               from an empty cache; with --depth N both after N tokens put in the cache first,
               not timed; one warm-up run, the mean of R runs; logits of the last position
               copied to the host after every step);
  - llama.cpp: llama-bench -m FILE -p 512 -n 128 -ngl 99 -r R -o json [-d N] (the same two
               tests, as llama-bench defines them), when --llama-bench or $LLAMA_BENCH names the
               binary.
llama.cpp is not part of this project: build it yourself beside it and pass the binary's path.
--device cpu: both on the CPU with --threads T each (OMP_NUM_THREADS; llama-bench -t T, no -ngl);
--n-layer N cuts the model to its first N blocks (the vocabulary and output stay whole); --rt
runs every timed program under SCHED_FIFO (chrt -f 50, root) so a shared machine's other work
cannot take the cores from either.
--variants picks wick's rows per type: default (the default: wick_llama without precision flags,
which on GPUs is f16 prefill products and an f16 KV cache, on the CPU all f32), f32 (--gemm-dtype
f32 --kv-dtype f32: every product and the cache in f32), tf32 (f32 with WICK_MATMUL_TF32=1:
prefill's f32 GEMMs on TF32 tensor cores), f16 (--gemm-dtype f16 --kv-dtype f32: f16 prefill
products with f32 accumulation, f32 cache; against default: what the f16 cache gives). eager
and unfused: the defaults with decode steps op by op instead of graph replays (--graph 0), with
the residual add + rms_norm and silu * up as two ops each (--fuse 0); f16eager and f16unfused
the same on f16. Prints one table, tokens/s and wick / llama.cpp, and deletes each model after
its rows unless --keep (the F16 file is 15 GiB).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "tests", "models", "llama_ref.py")


def log_run(cmd, log, env=None):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
    return r, time.time() - t0


F32 = ["--gemm-dtype", "f32", "--kv-dtype", "f32"]
F16 = ["--gemm-dtype", "f16", "--kv-dtype", "f32"]
VARIANTS = {  # wick's run variants: extra arguments, extra environment
    "default": ([], {}),                               # the example's defaults (no flags)
    "f32": (F32, {}),                                  # every product and the cache in f32
    "tf32": (F32, {"WICK_MATMUL_TF32": "1"}),          # prefill's f32 GEMMs on TF32 tensor cores
    "f16": (F16, {}),                                  # prefill's products in f16, f32 cache
    "eager": (["--graph", "0"], {}),                   # decode steps issued op by op, no graph
    "f16eager": (F16 + ["--graph", "0"], {}),
    "unfused": (["--fuse", "0"], {}),                  # add + rms_norm and silu * up as two ops each
    "f16unfused": (F16 + ["--fuse", "0"], {}),
}


def prefix(args):
    """--rt: each timed run under SCHED_FIFO (chrt -f 50): on a machine shared with other work
    the two programs then get the cores alike (root only)."""
    return ["chrt", "-f", "50"] if args.rt else []


def wick_bench(args, path, log, variant="default"):
    extra, env = VARIANTS[variant]
    env = {**os.environ, "WICK_MATMUL_TF32": "0", **env}
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    depth = ["--depth", str(args.depth)] if args.depth else []
    r, _ = log_run(prefix(args) + [args.wick, path, "--device", args.device, "--bench",
                                   f"{args.pp},{args.tg}", "--reps", str(args.reps)] + depth + extra,
                   log, env=env)
    m = re.search(rf"pp{args.pp} ([\d.]+) ± ([\d.]+) tokens/s, tg{args.tg} ([\d.]+) ± ([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return (float(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4))), ""


def llama_cpp_bench(args, path, log):
    if not args.llama_bench:
        return None, "no llama-bench given"
    dev = ["-t", str(args.threads)] if args.device == "cpu" else ["-ngl", "99"]
    if args.device == "cpu" and args.llama_args:
        dev += args.llama_args.split()
    depth = ["-d", str(args.depth)] if args.depth else []
    r, _ = log_run(prefix(args) + [args.llama_bench, "-m", path, "-p", str(args.pp), "-n", str(args.tg)] +
                   dev + depth + ["-r", str(args.reps), "-o", "json"], log)
    try:
        rows = json.loads(r.stdout)
        pp = [x for x in rows if x["n_prompt"] == args.pp and x["n_gen"] == 0][0]
        tg = [x for x in rows if x["n_gen"] == args.tg and x["n_prompt"] == 0][0]
        return (pp["avg_ts"], pp["stddev_ts"], tg["avg_ts"], tg["stddev_ts"]), \
            f"{pp.get('build_commit', '?')} {pp.get('gpu_info', '')}".strip()
    except (ValueError, KeyError, IndexError):
        return None, f"llama-bench failed (rc {r.returncode}): see {log}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wick", default="build-gpu/wick_llama")
    p.add_argument("--llama-bench", default=os.environ.get("LLAMA_BENCH", ""))
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--types", default="q4_0,q4_k,q8_0,f16")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--models", default=os.environ.get("LLAMA_MODEL_DIR", "/tmp/wick_llama_models"))
    p.add_argument("--log", default=".")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--n-layer", type=int, default=0, help="fewer blocks (a quick check)")
    p.add_argument("--arch", default="llama", help="llama, qwen2, qwen3, gemma2 or gemma3")
    p.add_argument("--variants", default="default",
                   help="wick rows per type, of " + ",".join(VARIANTS) +
                        " (default: default, the example's own defaults)")
    p.add_argument("--pp", type=int, default=512)
    p.add_argument("--tg", type=int, default=128)
    p.add_argument("--depth", type=int, default=0,
                   help="pp and tg after this many tokens in the cache (wick --depth, llama-bench -d)")
    p.add_argument("--threads", type=int, default=0,
                   help="--device cpu: threads of both (OMP_NUM_THREADS, llama-bench -t; default: all)")
    p.add_argument("--llama-args", default="", help="--device cpu: more llama-bench arguments")
    p.add_argument("--rt", action="store_true", help="run the timed programs under chrt -f 50")
    a = p.parse_args()
    if a.device == "cpu" and not a.threads:
        a.threads = os.cpu_count() or 1
    os.makedirs(a.models, exist_ok=True)
    os.makedirs(a.log, exist_ok=True)
    rows, notes = [], []
    for t in a.types.split(","):
        stem = "llama8b" if a.arch == "llama" else f"{a.arch}_8b"
        path = os.path.join(a.models, f"{stem}_{t}" + (f"_{a.n_layer}l" if a.n_layer else "") + ".gguf")
        t0 = time.time()
        if not os.path.exists(path):
            cmd = [sys.executable, REF, "bench-model", "--out", path, "--type", t, "--arch", a.arch]
            if a.n_layer:
                cmd += ["--n-layer", str(a.n_layer)]
            r, _ = log_run(cmd, os.path.join(a.log, f"llama_gen_{t}.log"))
            if r.returncode != 0:
                notes.append(f"{t}: generation failed: {r.stderr.strip()[-300:]}")
                continue
        gen_s = time.time() - t0
        c, cn = llama_cpp_bench(a, path, os.path.join(a.log, f"llama_cpp_{t}.log"))
        wn = []
        for v in a.variants.split(","):
            w, msg = wick_bench(a, path, os.path.join(a.log, f"llama_wick_{t}_{v}.log"), v)
            rows.append((t if v == "default" else f"{t} (wick {v})", w, c))
            wn.append(f"{v} {msg or 'ok'}")
        wn = ", ".join(wn)
        notes.append(f"{t}: generated in {gen_s:.0f} s; wick {wn or 'ok'}; llama.cpp {cn}")
        if not a.keep:
            os.remove(path)
    print("\n".join(notes))
    where = f"{a.device} ({a.threads} threads)" if a.device == "cpu" else a.device
    shape = {"llama": "Llama-3-8B", "qwen2": "Qwen2.5-7B", "qwen3": "Qwen3-8B", "gemma2": "Gemma-2-9B",
             "gemma3": "Gemma-3-4B"}.get(a.arch, a.arch)
    blocks = f", {a.n_layer} blocks" if a.n_layer else ""
    depth = f", at depth {a.depth}" if a.depth else ""
    print(f"\n{shape}-shaped{blocks}, random weights, {where}{depth}, {a.reps} reps (tokens/s, mean ± sd)")
    print(f"| type | wick pp{a.pp} | llama.cpp pp{a.pp} | ratio | wick tg{a.tg} | llama.cpp tg{a.tg} | ratio |")
    print("|---|---|---|---|---|---|---|")

    def cell(x, i):
        return f"{x[i]:.1f} ± {x[i + 1]:.1f}" if x else "n/a"

    def ratio(w, c, i):
        return f"{w[i] / c[i]:.2f}×" if w and c and c[i] > 0 else "n/a"
    for t, w, c in rows:
        print(f"| {t} | {cell(w, 0)} | {cell(c, 0)} | {ratio(w, c, 0)} | {cell(w, 2)} | "
              f"{cell(c, 2)} | {ratio(w, c, 2)} |")
    n = len(a.types.split(",")) * len(a.variants.split(","))
    return 0 if all(w for _, w, _ in rows) and len(rows) == n else 1


if __name__ == "__main__":
    sys.exit(main())
