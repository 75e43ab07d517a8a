#!/bin/sh
# sort.sh OUTDIR: arg_sort_last_dim on cuda:0 (wick issue 12, item 3: the radix sorts of
# kernels/sort_radix.h). From the repository root on a machine with one NVIDIA GPU, CUDA,
# compute-sanitizer and PyTorch:
#   sh tools/device/sort.sh OUTDIR
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90; only the targets
#      used here);
#   2. tests on cuda:0 (and the CPU): test_arg_sort (every dtype against a qsort reference, rows
#      1 .. 200,000, every GPU path), test_fused_kat, the arg_sort_last_dim parity rows of
#      wick check with the embedded code objects and with run-time compiled kernels (NVRTC);
#   3. compute-sanitizer memcheck and racecheck on test_arg_sort (WICK_TEST_QUICK=1);
#   4. bench: the argsort rows of bench/gpu_compare_ops.py (4096 x 1024 and 64 x 200,000 f32)
#      beside torch.argsort(stable=True), twice; then in the same run 4096 x 1024 with
#      WICK_SORT_ROWS=radix (the shared-memory radix sort, which the default warp sort of
#      kernels/sort_warp.h replaced there); WICK_SORT_AB adds more "VAR=value:row" variants
#      (e.g. WICK_SORT_AB="WICK_SORT_ROWS=bitonic:argsort_4096");
#      then, where nsys exists, the per-kernel times of those rows (OUTDIR/sort/nsys.log);
#   5. the summary table last (also OUTDIR/sort/summary.txt).
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/sort
mkdir -p "$O"
B=build-gpu
S=$O/summary.txt
: >"$S"
step() { printf '%-44s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)

if cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF \
     -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$(nproc)" --target test_arg_sort test_fused_kat wick_cli wick_gpu_bench_ops \
     >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; tail -15 "$O/configure.log"; grep -E "error|Error" "$O/build.log" | head -30
  cat "$S"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
step gpu "$(head -1 "$O/gpu.txt") commit $(git rev-parse --short HEAD 2>/dev/null)"
t1=$(date +%s)

# ---- 2. tests
for t in test_arg_sort test_fused_kat; do
  WICK_TEST_DEVICES=cpu,cuda:0 timeout 300 $B/$t >"$O/$t.log" 2>&1
  step "$t (cpu, cuda:0)" "rc=$? $(tail -1 "$O/$t.log")"
  grep -m5 FAIL "$O/$t.log"
done
for mode in embedded rtc; do
  if [ $mode = rtc ]; then export WICK_FORCE_RTC=1; else unset WICK_FORCE_RTC; fi
  timeout 300 $B/wick check --device cuda:0 --op arg_sort_last_dim >"$O/parity_$mode.txt" 2>&1
  step "wick check --op arg_sort_last_dim ($mode)" "rc=$? $(grep summary "$O/parity_$mode.txt" | sed 's/.*summary/summary/')"
  grep -m5 FAIL "$O/parity_$mode.txt" | grep -v summary
done
unset WICK_FORCE_RTC

# ---- 3. sanitizers
SAN=$(command -v compute-sanitizer)
if [ -n "$SAN" ]; then
  WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 WICK_GPU_NO_CACHE=1 timeout 150 "$SAN" --tool memcheck \
    --report-api-errors no --error-exitcode 99 $B/test_arg_sort >"$O/memcheck.log" 2>&1
  step "memcheck test_arg_sort" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck.log" | tail -1)"
  WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 timeout 150 "$SAN" --tool racecheck --error-exitcode 99 \
    $B/test_arg_sort >"$O/racecheck.log" 2>&1
  step "racecheck test_arg_sort" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/racecheck.log" | tail -1)"
else
  step compute-sanitizer "not found"
fi

# ---- 4. bench beside PyTorch
for k in 1 2; do
  timeout 300 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 argsort \
    >"$O/bench_$k.log" 2>&1
  step "gpu_compare_ops.py argsort (run $k)" "rc=$?"
done
# A/B in the same run: the shared-memory radix sort (see the top), then WICK_SORT_AB's
ab() { # ab VAR=value row: one bench row with one variable set
  env "$1" timeout 300 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 \
    "$2" >"$O/bench_ab_$1.log" 2>&1
  step "gpu_compare_ops.py $2 ($1)" "rc=$?"
}
for v in WICK_SORT_ROWS=radix:argsort_4096 ${WICK_SORT_AB:-}; do
  ab "${v%%:*}" "${v#*:}"
done
# Per-kernel times (where nsys exists): how the argsort rows split over sort_radix_hist /
# sort_radix_scan / sort_radix_scatter / sort_warp32, for the next round of tuning.
if command -v nsys >/dev/null 2>&1; then
  timeout 90 nsys profile -f true -o "$O/nsys_argsort" --stats=true $B/wick_gpu_bench_ops --device cuda:0 \
    argsort >"$O/nsys.log" 2>&1
  step "nsys argsort kernels" "rc=$? (log: nsys.log)"
  grep -E ' sort_' "$O/nsys.log" | head -12
else
  step nsys "not found (no per-kernel times)"
fi
step "after the build" "$(( $(date +%s) - t1 )) s"

# ---- 5. summary
echo
echo "argsort beside torch.argsort(stable=True) (GB/s of input; wick/torch > 1: wick faster):"
for k in 1 2; do grep -E '^argsort_' "$O/bench_$k.log"; done | tee -a "$S"
for f in "$O"/bench_ab_*.log; do
  v=${f#"$O"/bench_ab_}
  grep -E '^argsort_' "$f" | sed "s/\$/ (${v%.log})/"
done | tee -a "$S"
echo
cat "$S"
