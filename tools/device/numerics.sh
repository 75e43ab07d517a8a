#!/bin/sh
# numerics.sh: the GPU half of issue 13 (numerics), for the device machine. From the repository
# root, after `sh tools/gpu_check.sh "$OUT" build` has made build-gpu:
#   sh tools/device/numerics.sh OUTDIR
# Stages (logs in OUTDIR/numerics_logs.tgz, the table in OUTDIR/numerics_summary.txt and printed
# last; few files, as the device tool brings back at most 8):
#   1. wick check --device cuda:0: the whole parity matrix, adversarial rows included (embedded
#      code objects), then the row ops again with run-time compiled kernels (WICK_FORCE_RTC=1)
#   2. tests/diff/torch_diff.py on cuda:0 through tests/diff/slices.sh: DIFF_CASES (default
#      60000) seeded cases against PyTorch, in DIFF_JOBS (default 8) parallel slices of one run
#      (seed DIFF_SEED, default 13); tools/gpu_check.sh runs the same as its stage diff
#   3. the norm kernels before/after: wick_gpu_bench_ops rows "norm" (softmax too) with
#      kernels/norm.cu as now (A), as of 4a9d262 (B: tools/device/numerics_base/norm.cu, two
#      passes), and as now again (A'); prints GB/s and the change of min(A, A') against B
#      (issue 13's limit: no norm row slower by more than 2%). kernels/norm.cu is restored at the
#      end whatever happens.
# Knobs: DIFF_CASES, DIFF_JOBS, DIFF_SEED, BENCH_ROWS (default "norm softmax_f32").
set -u
R=${1:-${OUT:-gpu-out}}
O=${TMPDIR:-/tmp}/wick-numerics.$$
mkdir -p "$O" "$R"
B=build-gpu
S=$O/summary.txt
: >"$S"
step() { printf '%-44s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
PY=${PYTHON:-python3}
[ -x $B/wick ] || { echo "numerics.sh: $B/wick missing: run sh tools/gpu_check.sh \"\$OUT\" build first"; exit 2; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$O/gpu.txt" 2>&1
step "gpu" "$(head -1 "$O/gpu.txt")"

# ---- 1. parity with the adversarial rows
ROWOPS=sum,min,max,argmin,argmax,softmax_last_dim,rms_norm,layer_norm,arg_sort_last_dim
t0=$(date +%s)
$B/wick check --device cuda:0 -v >"$O/check_cuda.txt" 2>&1
step "wick check cuda:0 (all rows)" "rc=$? $(grep summary "$O/check_cuda.txt") [$(( $(date +%s) - t0 )) s]"
grep -E "FAIL" "$O/check_cuda.txt" | head -12
WICK_FORCE_RTC=1 $B/wick check --device cuda:0 --op $ROWOPS >"$O/check_cuda_rtc.txt" 2>&1
step "wick check cuda:0 row ops (NVRTC)" "rc=$? $(grep summary "$O/check_cuda_rtc.txt")"
grep -E "FAIL" "$O/check_cuda_rtc.txt" | head -6
adv=$(grep -c "adversarial" "$O/check_cuda.txt")
step "adversarial failures named in the check" "$adv"

# ---- 2. the differential test against PyTorch
t0=$(date +%s)
sh tests/diff/slices.sh $B/libwick.so cuda:0 "$O" >"$O/diff.txt" 2>&1
head -24 "$O/diff.txt" | grep -v '^torch_diff'
step "$(tail -1 "$O/diff.txt" | cut -d: -f1)" "$(tail -1 "$O/diff.txt" | cut -d: -f2-) [$(( $(date +%s) - t0 )) s]"

# ---- 3. norm kernels before/after
ROWS=${BENCH_ROWS:-"norm softmax_f32"}
cp kernels/norm.cu "$O/norm_now.cu"
restore() { cp "$O/norm_now.cu" kernels/norm.cu; }
trap restore EXIT INT TERM
bench() { # $1: label
  cmake --build $B -j"$(nproc)" --target wick_gpu_bench_ops >"$O/build_$1.log" 2>&1 || { echo "build $1 failed"; tail -20 "$O/build_$1.log"; return 1; }
  $B/wick_gpu_bench_ops $ROWS >"$O/bench_$1.txt" 2>&1
}
bench A && cp tools/device/numerics_base/norm.cu kernels/norm.cu && bench B && restore && bench A2
restore
trap - EXIT INT TERM
cmake --build $B -j"$(nproc)" --target wick >"$O/build_final.log" 2>&1
echo
printf '%-26s %10s %10s %10s %9s\n' "row (GB/s)" "before" "after" "after'" "change" | tee -a "$S"
awk '
  FNR == 1 { f++ }
  $1 == "row" { bw = $4 / $5 / 1e9; v[f, $2] = bw; if (f == 1) names[++n] = $2 }
  END {
    worst = 1e9
    for (i = 1; i <= n; i++) {
      k = names[i]; a = v[1, k]; b = v[2, k]; a2 = v[3, k]
      best = a > a2 ? a : a2
      ch = b > 0 ? 100 * (best / b - 1) : 0
      if (k ~ /norm/ && ch < worst) worst = ch
      printf "%-26s %10.1f %10.1f %10.1f %+8.1f%%\n", k, b, a, a2, ch
    }
    printf "worst norm change: %+.1f%% (limit -2%%)\n", worst
  }' "$O/bench_A.txt" "$O/bench_B.txt" "$O/bench_A2.txt" | tee -a "$S"
tar czf "$R/numerics_logs.tgz" -C "$O" . 2>/dev/null
cp "$S" "$R/numerics_summary.txt"
echo
echo "== numerics summary (logs: $R/numerics_logs.tgz)"
cat "$S"
