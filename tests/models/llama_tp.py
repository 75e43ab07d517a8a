#!/usr/bin/env python3
"""llama_tp.py: the tensor-parallel llama example (wick_llama --devices A,B,...) against the same
model on one device (tests/models/llama_ref.py checks the one-device run against numpy).

  llama_tp.py --bin build/wick_llama --dir build/models/llama_tp [--devices cpu,cpu]
              [--single cpu] [--types f32,q4_0,...]

The model (made once, cached in --dir by the hash of this script and llama_ref.py, written by
llama_ref.py's writer): dim 512, 2 blocks, 8 heads of 64, 4 kv heads, ffn 1024, vocabulary 1001.
Its shapes split 2 ways for every weight type (a rank's Wo columns: 4 heads x 64 = 256, one
K-quant block; its Wd columns: 512) and 4 ways for the 32-element block types (128 columns of
Wo); the vocabulary 1001 splits unevenly (500 + 501 rows of the output matrix).

Checks, for each type:
  - logits of a 32-token prompt at every position and of 16 teacher-forced decode steps
    (48 rows) with --devices D (2 ranks, and 4 where the type allows) equal the one-device run:
    err = max over rows of max_j |tp_j - one_j| / max_j |one_j| <= BOUND (1e-5). Both runs do
    the same arithmetic except that the ranks' Wo and Wd products are partial sums over a part
    of the k dimension each, added by the all_reduce, and the logits are computed in vocabulary
    slices: a reordering of f32 sums, a few f32 roundings (2^-24 = 6e-8 each) of the residual
    stream, amplified by the blocks that follow. Measured on the CPU: at most 7.4e-7, so the
    bound leaves a factor 13 (docs/llama.md);
    On a GPU (--qref cpu) the decode steps quantize the activations to 8 bits (per block of 32,
    docs/semantics.md), and a reordered sum that moves a value across a rounding step of that
    grid moves the result by up to a step: the bound is then BOUND + 2 e_q per type, e_q the
    measured effect of that quantization on this model (the one-GPU run against the --qref
    device run with WICK_CPU_QDOT=exact, which does not quantize activations: both GPU runs lie
    within about e_q of it);
  - 16 greedy tokens equal those of the one-device run;
    The CPU's own decode path quantizes activations as well (its integer dot products): with a
    CPU as the one device the same widening applies, against the CPU with WICK_CPU_QDOT=exact
    (unless that is already the path under test);
  - a type whose K-quant Wo does not split 4 ways (128 columns < a 256-block) is refused with
    a message naming the tensor and the block boundary, exit status 1.
Bad input (once): --devices cpu,cpu,cpu on 4 kv heads (4 % 3 != 0) and an empty name in the
device list: a clear message, exit status 1, no crash.
"""
import argparse
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref as ref  # noqa: E402  (exits 77, skip, without numpy/gguf)
import numpy as np  # noqa: E402

CFG = dict(dim=512, n_layer=2, n_head=8, n_kv=4, ffn=1024, vocab=1001, ctx=64,
           eps=1e-5, rope_base=10000.0, seed=20261125)
TYPES = ["f32", "f16", "q4_0", "q8_0", "q5_1", "q4_k", "q6_k", "mixed"]
TIED = {"q8_0", "q5_1"}          # output = token_embd: its vocabulary rows are split
N_PROMPT, N_FORCE, N_GREEDY = 32, 16, 16
BOUND = 1e-5  # measured on the CPU: at most 7.4e-7 (q6_k, 2 ranks); GPUs: --bound
SKIP = 77


def block_elems(t):
    return ref.BLOCKS[t][0] if t in ref.BLOCKS else (256 if t == "mixed" else 1)


def generate(d):
    os.makedirs(d, exist_ok=True)
    h = hashlib.sha256()
    for f in (__file__, ref.__file__):
        with open(f, "rb") as fp:
            h.update(fp.read())
    stamp = os.path.join(d, "stamp")
    if os.path.exists(stamp) and open(stamp).read().strip() == h.hexdigest()[:16]:
        return
    hf = ref.hf_model(CFG)
    for i, t in enumerate(TYPES):
        ref.write_model(os.path.join(d, f"tp_{t}.gguf"), hf, CFG, t, tied=t in TIED,
                        rng=np.random.default_rng(CFG["seed"] + 100 + i))
    ids = np.random.default_rng(CFG["seed"] + 1).integers(0, CFG["vocab"], N_PROMPT + N_FORCE)
    np.save(os.path.join(d, "ids.npy"), ids)
    with open(stamp, "w") as f:
        f.write(h.hexdigest()[:16] + "\n")


def run(binary, path, devices, extra, env=None):
    flag = "--devices" if "," in devices else "--device"
    # the exact path (f32 products and cache, the defaults on the CPU only): the bound below
    # assumes it on every device
    cmd = [binary, path, flag, devices, "--gemm-dtype", "f32", "--kv-dtype", "f32"] + extra
    return cmd, subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               env=None if env is None else {**os.environ, **env})


def run_ok(binary, path, devices, extra, env=None):
    cmd, r = run(binary, path, devices, extra, env)
    if r.returncode != 0:
        if "WK_ERR_NO_DEVICE" in r.stderr:
            print(f"SKIP: {devices}: {r.stderr.strip()}")
            sys.exit(SKIP)
        print(" ".join(cmd))
        print(r.stdout + r.stderr)
        return None
    return r.stdout + r.stderr  # generated text on stdout; ids and speeds on stderr


def logits(args, path, devices, tag, env=None):
    ids = np.load(os.path.join(args.dir, "ids.npy"))
    out = os.path.join(args.dir, f"logits_{tag}.f32")
    if run_ok(args.bin, path, devices, ["--prompt-ids", " ".join(map(str, ids[:N_PROMPT])),
                                        "--force", " ".join(map(str, ids[N_PROMPT:])),
                                        "--logits", out], env) is None:
        return None
    return np.fromfile(out, np.float32).reshape(N_PROMPT + N_FORCE, CFG["vocab"])


def greedy(args, path, devices):
    out = run_ok(args.bin, path, devices, ["--prompt-ids", "1 17 300 511 42 1000 7 256",
                                           "-n", str(N_GREEDY), "--ignore-eos"])
    if out is None:
        return None
    line = [s for s in out.splitlines() if s.startswith("ids:")][0]
    return [int(tok) for tok in line[len("ids:"):].split()]


def expect_error(args, path, devices, words, what):
    """A refused configuration: exit status 1 (not a signal) and a message holding words."""
    cmd, r = run(args.bin, path, devices, ["--prompt-ids", "1 2 3", "-n", "2"])
    ok = r.returncode == 1 and words in r.stderr
    msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "(no message)"
    print(f"{what:44} rc={r.returncode} {'ok' if ok else 'FAIL'}: {msg}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--devices", default="cpu,cpu", help="the tensor-parallel devices (2 ranks)")
    p.add_argument("--single", default="", help="the one-device run (default: the first)")
    p.add_argument("--four", default="", help="4 ranks (default: the first device 4 times, "
                   "CPU only; 'none' skips)")
    p.add_argument("--types", default="")
    p.add_argument("--bound", type=float, default=BOUND)
    p.add_argument("--qref", default="", help="a device without activation quantization (cpu): "
                   "widens the bound by twice the one-device run's measured distance to it")
    a = p.parse_args()
    types = a.types.split(",") if a.types else TYPES
    single = a.single or a.devices.split(",")[0]
    # The CPU's decode steps quantize activations too (its integer dot products, unless
    # WICK_CPU_QDOT=exact): the same widening as on GPUs, against its own float path. (Whether a
    # reordered sum crosses a rounding step depends on the data and the machine: a 2-rank q4_k
    # run crossed one, 3.7e-3, on an AVX-512 VNNI machine, 2026-12-04.)
    if not a.qref and single.startswith("cpu") and os.environ.get("WICK_CPU_QDOT") != "exact":
        a.qref = "cpu"
    four = a.four or ("none" if not single.startswith("cpu") else ",".join([single] * 4))
    generate(a.dir)
    fails = 0
    print(f"{'type':6} {'ranks':>5} {'err':>10} {'bound':>9}  greedy  ({single} vs {a.devices}"
          f"{'; bound = ' + str(a.bound) + ' + 2 e_q, e_q vs ' + a.qref if a.qref else ''}"
          f"{'' if four == 'none' else ' and ' + four})")
    for t in types:
        path = os.path.join(a.dir, f"tp_{t}.gguf")
        one = logits(a, path, single, f"{t}_1")
        g1 = greedy(a, path, single)
        if one is None or g1 is None:
            fails += 1
            continue
        scale = np.abs(one).max(1)
        bound, eq = a.bound, 0.0
        if a.qref:
            # the reference without activation quantization (the CPU's float path)
            q = logits(a, path, a.qref, f"{t}_q", {"WICK_CPU_QDOT": "exact"})
            if q is None:
                fails += 1
                continue
            eq = float((np.abs(one.astype(np.float64) - q).max(1) / scale).max())
            bound = a.bound + 2.0 * eq
        runs = [a.devices] + ([] if four == "none" else [four])
        for devs in runs:
            n = len(devs.split(","))
            if n == 4 and block_elems(t) > 128:  # Wo's 128 columns a rank: not whole blocks
                fails += not expect_error(a, path, devs, "block boundary",
                                          f"{t} on {n} ranks (Wo in 256-blocks)")
                continue
            tp = logits(a, path, devs, f"{t}_{n}")
            g = greedy(a, path, devs)
            if tp is None or g is None:
                fails += 1
                continue
            err = float((np.abs(tp.astype(np.float64) - one).max(1) / scale).max())
            same = g == g1
            ok = np.isfinite(tp).all() and err <= bound and same
            fails += not ok
            print(f"{t:6} {n:5} {err:10.3e} {bound:9.1e}  {'same' if same else 'DIFFER'}"
                  f"  {'ok' if ok else 'FAIL'}  {' '.join(map(str, g[:8]))} ...")
    path = os.path.join(a.dir, "tp_f32.gguf")
    three = ",".join([single] * 3)
    if single.startswith("cpu"):
        fails += not expect_error(a, path, three, "do not split evenly",
                                  "4 kv heads on 3 ranks")
        fails += not expect_error(a, path, "cpu,,cpu", "empty device name",
                                  "an empty name in --devices")
    print(f"llama tensor parallel: {'ok' if not fails else f'{fails} FAILED'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
