#!/bin/sh
# interop.sh: the GPU half of wick's interop (issue 11) on an NVIDIA GPU with PyTorch. From the
# repository root:   sh tools/device/interop.sh OUTDIR        (OUTDIR default: $OUT, else ./gpu-out)
# Uses the CUDA build in build-gpu (made by `sh tools/gpu_check.sh "$OUT" build`), configuring it
# when missing, and (re)builds just libwick.so and test_dlpack there. Steps:
#   1. test_dlpack          the C DLPack tests, cuda:0 cases included (export names the device,
#                           the stream exists, a CUDA tensor is refused by the CPU device)
#   2. zero-copy            a PyTorch cuda:0 tensor into wick and back, and a wick cuda:0 storage
#                           into PyTorch: the same device address every way, writes seen by both
#   3. pytest               python/tests with the cuda:0 parameter on: every op family against
#                           NumPy on cuda:0, and against PyTorch on cuda:0 through DLPack
#   4. pip                  `pip install --no-build-isolation --no-index ./python` works offline
# Logs go to OUTDIR/logs; a summary table is printed last. About a minute after the build.
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/logs
mkdir -p "$O"
B=build-gpu
S=$R/summary_interop.txt
: >"$S"
step() { printf '%-28s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
PY=${PYTHON:-python3}

t0=$(date +%s)
{ [ -f $B/CMakeCache.txt ] || cmake -S . -B $B -DWICK_CUDA=ON -DWICK_HIP=OFF; } >"$O/interop_configure.log" 2>&1
if cmake --build $B -j"$(nproc)" --target wick test_dlpack >"$O/interop_build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s; incremental over build-gpu)"
else
  step build FAIL; grep -E "error|Error" "$O/interop_build.log" | head -20; cat "$S"; exit 1
fi
LIB=$(pwd)/$B/libwick.so

# 1. the C tests
$B/test_dlpack >"$O/test_dlpack.txt" 2>&1
step test_dlpack "rc=$? $(tail -1 "$O/test_dlpack.txt") $(grep -c '^skip' "$O/test_dlpack.txt") skip lines"
grep -E "^(FAIL|skip)" "$O/test_dlpack.txt" | head -10

# 2. zero-copy round trips with PyTorch on cuda:0
WICK_LIBRARY=$LIB PYTHONPATH=python $PY - >"$O/zero_copy.txt" 2>&1 <<'PYEOF'
import torch, wick
print("torch", torch.__version__, "wick", wick.version(), "devices", wick.devices())
a = torch.arange(1 << 20, dtype=torch.float32, device="cuda:0").reshape(1024, 1024)
v = a[3:, 5:]                                  # an offset, strided view
w = wick.from_dlpack(v)                        # torch -> wick
b = torch.from_dlpack(w)                       # wick -> torch
print("torch view", hex(v.data_ptr()), "wick", hex(w.data_ptr()), "back", hex(b.data_ptr()))
ok1 = v.data_ptr() == w.data_ptr() == b.data_ptr() and b.shape == v.shape and b.stride() == v.stride()
w.narrow(0, 0, 1).fill_(-7.0)                  # wick writes on its stream; handing it over
ok2 = bool((torch.from_dlpack(w)[0] == -7).all()) and bool((a[3, 5:] == -7).all())  # syncs
y = (w * 2.0).sum(dims=1)                      # a wick op on torch's memory
ok3 = torch.allclose(torch.from_dlpack(y), (v * 2).sum(1), rtol=1e-5)
s = wick.device("cuda:0").zeros((4, 4), wick.DType.F32)
t = torch.from_dlpack(s)
ok4 = t.data_ptr() == s.data_ptr() and t.device == torch.device("cuda:0")
t += 1                                          # torch writes on its stream, then wick
torch.cuda.synchronize()                        # reads (no DLPack hand-off here: sync by hand)
ok5 = (s.numpy() == 1).all()
print("same pointer torch->wick->torch:", ok1, "| wick write seen by torch:", ok2,
      "| wick op on torch memory:", ok3, "| wick->torch same pointer:", ok4,
      "| torch write seen by wick:", ok5)
print("ZERO_COPY", "ok" if all([ok1, ok2, ok3, ok4, ok5]) else "FAIL")
PYEOF
step "zero-copy cuda:0" "$(grep -E '^ZERO_COPY' "$O/zero_copy.txt" || echo "FAIL (see zero_copy.txt)")"
grep -E "same pointer|torch view|Error" "$O/zero_copy.txt" | head -5

# 3. the pytest suite, cuda:0 parameters on
WICK_LIBRARY=$LIB PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 $PY -m pytest -v -rs \
  -p no:cacheprovider python/tests >"$O/pytest.txt" 2>&1
rc=$?
step pytest "rc=$rc $(tail -1 "$O/pytest.txt" | tr -d '=')"
step "pytest cuda:0 cases" "$(grep -c 'cuda:0.*PASSED' "$O/pytest.txt") passed, $(grep -c 'cuda:0.*FAILED' "$O/pytest.txt") failed"
grep -E "FAILED|^SKIPPED" "$O/pytest.txt" | head -15

# 4. an offline install
rm -rf "$R/pip-target"
if $PY -m pip install -q --no-build-isolation --no-deps --no-index --target "$R/pip-target" ./python \
     >"$O/pip.txt" 2>&1 && WICK_LIBRARY=$LIB PYTHONPATH="$R/pip-target" $PY -c "import wick; wick.version()" >>"$O/pip.txt" 2>&1; then
  step "pip install ./python" ok
else
  step "pip install ./python" "FAIL (see pip.txt; PYTHONPATH=python works without it)"
fi
rm -rf "$R/pip-target" python/build python/wick.egg-info

echo "---- interop summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(git rev-parse --short HEAD 2>/dev/null))"
cat "$S"
