#!/usr/bin/python3
"""cpu_compare.py: wick's CPU backend beside PyTorch's CPU backend in one process, same data,
the same number of threads (2 by default), one table. A benchmark, not a test.
    /usr/bin/python3 bench/cpu_compare.py [build/libwick.so] [--threads N] [--rounds R] [filters]
Debian's python3-torch (1.13) is the peer; wick is called through ctypes on its public C API.
Both sides allocate their outputs on every call (as a user's code would), through the same glibc
malloc, told to serve every block from its heap and keep freed memory (MALLOC_MMAP_MAX_=0,
MALLOC_TRIM_THRESHOLD_, set before the process starts), so neither side pays the kernel's page
faults for a fresh 64 MiB mapping on each call: on a shared machine those dominate the
memory-bound rows and measure the kernel, not the op. Each time is the minimum over
R rounds (each round the mean of enough calls for ~0.1 s), wick and PyTorch interleaved per row:
the machine is shared, so the minimum is the least disturbed figure."""
import ctypes as C
import os
import sys
import time

THREADS = "2"
if "--threads" in sys.argv:
    THREADS = sys.argv[sys.argv.index("--threads") + 1]
# Set before the process starts: the OpenMP pool size of both libraries and malloc's behaviour.
if os.environ.get("WK_BENCH_CHILD") != "1":
    env = dict(os.environ, WK_BENCH_CHILD="1", OMP_NUM_THREADS=THREADS,
               MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_=str(1 << 34))
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(int(THREADS))

args = [a for a in sys.argv[1:]]
ROUNDS = 5
if "--rounds" in args:
    i = args.index("--rounds")
    ROUNDS = int(args[i + 1])
    del args[i:i + 2]
if "--threads" in args:
    i = args.index("--threads")
    del args[i:i + 2]
LIB = "build/libwick.so"
if args and args[0].endswith(".so") or (args and "/" in args[0]):
    LIB = args.pop(0)
FILTERS = args

# ---- wick through ctypes
MAXR = 8


class Layout(C.Structure):
    _fields_ = [("rank", C.c_int32), ("dims", C.c_int64 * MAXR), ("strides", C.c_int64 * MAXR),
                ("offset", C.c_int64)]


class ConvParams(C.Structure):
    _fields_ = [("stride", C.c_int32 * 2), ("padding", C.c_int32 * 2), ("dilation", C.c_int32 * 2),
                ("output_padding", C.c_int32 * 2), ("groups", C.c_int32)]


wk = C.CDLL(LIB)
wk.wk_last_error.restype = C.c_char_p
DT = {"u32": 1, "i64": 4, "bf16": 5, "f16": 6, "f32": 7, "f64": 8}
OP = {"exp": 0, "log": 1, "sin": 2, "cos": 3, "tanh": 4, "gelu": 10, "gelu_erf": 11, "erf": 12,
      "silu": 14, "sigmoid": 19, "add": 30, "sum": 60}
P = C.c_void_p


def ok(st):
    if st != 0:
        raise RuntimeError("wick: " + wk.wk_last_error().decode())


dev = P()
ok(wk.wk_device_open(C.byref(dev), b"cpu"))


def layout(dims, strides=None, offset=0):
    l = Layout()
    l.rank = len(dims)
    st = strides
    if st is None:
        st, m = [0] * len(dims), 1
        for k in range(len(dims) - 1, -1, -1):
            st[k] = m
            m *= dims[k]
    for k, d in enumerate(dims):
        l.dims[k], l.strides[k] = d, st[k]
    l.offset = offset
    return l


def store(t, dt):
    """A wick storage holding torch tensor t (contiguous), dtype name dt."""
    t = t.contiguous()
    if dt in ("bf16", "f16"):
        t = t.view(torch.int16)
    s = P()
    ok(wk.wk_storage_from_host(C.byref(s), dev, DT[dt], C.c_void_p(t.data_ptr()), C.c_size_t(t.numel())))
    return s


def wcall(fn, *a):
    """fn(&out, *a) then frees out."""
    o = P()
    ok(fn(C.byref(o), *a))
    wk.wk_storage_free(o)


def rnd(*shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    g = torch.Generator().manual_seed(1234)
    return (torch.rand(*shape, generator=g) * (hi - lo) + lo).to(dtype)


# ---- the rows: name -> (wick callable, torch callable)
def rows():
    R = []
    n = 1 << 24
    x, y = rnd(n), rnd(n, lo=-2, hi=2)
    sx, sy = store(x, "f32"), store(y, "f32")
    l1 = layout([n])
    R.append(("add f32, 2^24", lambda: wcall(wk.wk_binary, OP["add"], sx, C.byref(l1), sy, C.byref(l1)),
              lambda: torch.add(x, y)))
    for name, tf in (("exp", torch.exp), ("gelu_erf", lambda t: F.gelu(t)), ("gelu", lambda t: F.gelu(t, approximate="tanh")),
                     ("tanh", torch.tanh), ("silu", F.silu), ("sigmoid", torch.sigmoid), ("erf", torch.erf),
                     ("log", None), ("sin", torch.sin)):
        src, ssrc = (y, sy)
        if name == "log":
            src = rnd(n, lo=0.01, hi=4)
            ssrc, tf = store(src, "f32"), torch.log
        R.append((f"{name} f32, 2^24", (lambda o=OP[name], s=ssrc: wcall(wk.wk_unary, o, s, C.byref(l1))),
                  (lambda f=tf, t=src: f(t))))
    xb = rnd(n, dtype=torch.bfloat16, lo=-2, hi=2)
    sxb = store(xb, "bf16")
    R.append(("gelu_erf bf16, 2^24", lambda: wcall(wk.wk_unary, OP["gelu_erf"], sxb, C.byref(l1)),
              lambda: F.gelu(xb)))
    R.append(("cast f32 -> bf16, 2^24", lambda: wcall(wk.wk_to_dtype, sx, C.byref(l1), DT["bf16"]),
              lambda: x.to(torch.bfloat16)))
    m = rnd(4096, 4096)
    sm = store(m, "f32")
    lm = layout([4096, 4096])
    dims = (C.c_int32 * 1)(1)
    R.append(("sum over last dim, 4096 x 4096", lambda: wcall(wk.wk_reduce, OP["sum"], sm, C.byref(lm), dims, 1),
              lambda: m.sum(-1)))
    lt = layout([4096, 4096], [1, 4096])
    dst = P()
    ok(wk.wk_storage_alloc_uninit(C.byref(dst), dev, DT["f32"], C.c_size_t(4096 * 4096)))

    def wk_tcopy():
        o = P()  # a fresh destination, as torch's .contiguous() makes one
        ok(wk.wk_storage_alloc_uninit(C.byref(o), dev, DT["f32"], C.c_size_t(4096 * 4096)))
        ok(wk.wk_copy_strided_src(o, C.c_size_t(0), sm, C.byref(lt)))
        wk.wk_storage_free(o)
    R.append(("transposed copy 4096 x 4096", wk_tcopy, lambda: m.t().contiguous()))
    s2 = rnd(4096, 1024, lo=-4, hi=4)
    ss2 = store(s2, "f32")
    l2 = layout([4096, 1024])
    g, b = rnd(1024, lo=0.5, hi=1.5), rnd(1024)
    sg, sb = store(g, "f32"), store(b, "f32")
    lv = layout([1024])
    R.append(("softmax last dim, 4096 x 1024", lambda: wcall(wk.wk_softmax_last_dim, ss2, C.byref(l2)),
              lambda: torch.softmax(s2, -1)))
    R.append(("layer_norm, 4096 x 1024", lambda: wcall(wk.wk_layer_norm, ss2, C.byref(l2), sg, C.byref(lv), sb,
                                                         C.byref(lv), C.c_float(1e-5)),
              lambda: F.layer_norm(s2, (1024,), g, b, 1e-5)))
    # torch 1.13 has no fused rms_norm: the composition a user writes
    R.append(("rms_norm, 4096 x 1024", lambda: wcall(wk.wk_rms_norm, ss2, C.byref(l2), sg, C.byref(lv), C.c_float(1e-5)),
              lambda: s2 * torch.rsqrt(s2.pow(2).mean(-1, keepdim=True) + 1e-5) * g))
    a = rnd(1024, 1024)
    sa = store(a, "f32")
    la = layout([1024, 1024])
    R.append(("arg_sort 1024 x 1024", lambda: wcall(wk.wk_arg_sort_last_dim, sa, C.byref(la), 1),
              lambda: torch.argsort(a, dim=-1, stable=True)))
    for dt, tdt in (("f32", torch.float32), ("bf16", torch.bfloat16), ("f16", torch.float16)):
        if dt == "f16":
            continue  # torch 1.13 has no f16 matmul on the CPU
        ma, mb = rnd(1024, 1024, dtype=tdt), rnd(1024, 1024, dtype=tdt)
        sma, smb = store(ma, dt), store(mb, dt)
        R.append((f"matmul {dt} 1024^3", (lambda p=sma, q=smb: wcall(wk.wk_matmul, p, C.byref(la), q, C.byref(la))),
                  (lambda p=ma, q=mb: torch.matmul(p, q))))
    # attention-shaped batched products (MiniLM at batch 32 x 128 tokens: 12 heads of 32)
    q, k = rnd(384, 128, 32), rnd(384, 32, 128)
    sq, sk = store(q, "f32"), store(k, "f32")
    lq, lk = layout([384, 128, 32]), layout([384, 32, 128])
    R.append(("matmul f32 batched 384 x 128x32 @ 32x128", lambda: wcall(wk.wk_matmul, sq, C.byref(lq), sk, C.byref(lk)),
              lambda: torch.matmul(q, k)))
    pm = rnd(384, 128, 128)
    spm, lpm = store(pm, "f32"), layout([384, 128, 128])
    R.append(("matmul f32 batched 384 x 128x128 @ 128x32", lambda: wcall(wk.wk_matmul, spm, C.byref(lpm), sq, C.byref(lq)),
              lambda: torch.matmul(pm, q)))
    cx, cw = rnd(8, 64, 56, 56), rnd(64, 64, 3, 3, lo=-0.1, hi=0.1)
    scx, scw = store(cx, "f32"), store(cw, "f32")
    lcx, lcw = layout([8, 64, 56, 56]), layout([64, 64, 3, 3])
    cp = ConvParams()
    cp.stride[:], cp.padding[:], cp.dilation[:], cp.output_padding[:], cp.groups = [1, 1], [1, 1], [1, 1], [0, 0], 1
    R.append(("conv2d 8x64x56x56, k3 p1 -> 64", lambda: wcall(wk.wk_conv2d, scx, C.byref(lcx), scw, C.byref(lcw), C.byref(cp)),
              lambda: F.conv2d(cx, cw, padding=1)))
    c1x, c1w = rnd(8, 256, 1024), rnd(256, 256, 3, lo=-0.1, hi=0.1)
    sc1x, sc1w = store(c1x, "f32"), store(c1w, "f32")
    lc1x, lc1w = layout([8, 256, 1024]), layout([256, 256, 3])
    R.append(("conv1d 8x256x1024, k3 p1 -> 256", lambda: wcall(wk.wk_conv1d, sc1x, C.byref(lc1x), sc1w, C.byref(lc1w), C.byref(cp)),
              lambda: F.conv1d(c1x, c1w, padding=1)))
    tab = rnd(32000, 1024)
    stab = store(tab, "f32")
    ltab = layout([32000, 1024])
    ids = torch.randint(0, 32000, (4096,), generator=torch.Generator().manual_seed(7))
    sids = store(ids, "i64")
    lids = layout([4096])
    R.append(("index_select 4096 rows of 32000 x 1024", lambda: wcall(wk.wk_index_select, stab, C.byref(ltab), sids, C.byref(lids), 0),
              lambda: torch.index_select(tab, 0, ids)))
    gids = torch.randint(0, 1024, (4096, 1024), generator=torch.Generator().manual_seed(8))
    sgids = store(gids, "i64")
    R.append(("gather dim 1, 4096 x 1024", lambda: wcall(wk.wk_gather, ss2, C.byref(l2), sgids, C.byref(l2), 1),
              lambda: torch.gather(s2, 1, gids)))
    return R


def timeit(fn):
    fn()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    reps = max(1, min(100, int(0.1 / max(one, 1e-6))))
    best = 1e30
    return reps, best


# Debian's torch 1.13 runs its matmul through the system OpenBLAS, the library wick links; wick
# sets OpenBLAS to one thread (it threads its gemms itself, src/cpu/cpu_gemm.c), which would run
# PyTorch's matmul on one thread too. So each side gets its own setting before its calls.
try:
    _OPENBLAS = C.CDLL("libopenblas.so.0")
except OSError:
    _OPENBLAS = None


def blas_threads(n):
    if _OPENBLAS is not None:
        _OPENBLAS.openblas_set_num_threads(n)


def measure(fw, ft):
    blas_threads(1)
    rw, _ = timeit(fw)
    blas_threads(int(THREADS))
    rt, _ = timeit(ft)
    bw = bt = 1e30
    for _ in range(ROUNDS):
        blas_threads(1)
        t0 = time.perf_counter()
        for _ in range(rw):
            fw()
        bw = min(bw, (time.perf_counter() - t0) / rw)
        blas_threads(int(THREADS))
        t0 = time.perf_counter()
        for _ in range(rt):
            ft()
        bt = min(bt, (time.perf_counter() - t0) / rt)
    return bw * 1e3, bt * 1e3


def main():
    print(f"wick {LIB} vs torch {torch.__version__}, {THREADS} threads each, min of {ROUNDS} rounds")
    print("| op | wick ms | PyTorch ms | PyTorch / wick |")
    print("|---|---|---|---|")
    for name, fw, ft in rows():
        if FILTERS and not any(f in name for f in FILTERS):
            continue
        w, t = measure(fw, ft)
        flag = "" if t / w >= 1.0 else " *"
        print(f"| {name} | {w:.2f} | {t:.2f} | {t / w:.2f}{flag} |", flush=True)


main()
