#!/bin/sh
# norms.sh OUTDIR: softmax_last_dim, rms_norm and layer_norm on cuda:0 (the register and
# streaming row kernels of kernels/norm.cu and kernels/softmax.cu). From the
# repository root on a machine with one NVIDIA GPU, CUDA, compute-sanitizer and PyTorch:
#   sh tools/device/norms.sh OUTDIR
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90; only the targets
#      used here);
#   2. tests on cuda:0 (and the CPU): test_fused_kat (known answers, rows of 4096 masked over
#      whole threads, constant layer_norm rows) and test_bad_fused; the parity rows of the three
#      ops (wick check -v: worst NMSE against the float64 reference per dtype) with the embedded
#      code objects and with run-time compiled kernels (NVRTC);
#   3. compute-sanitizer memcheck and racecheck on test_fused_kat, memcheck on the parity rows of
#      the three ops (rc 124: stopped at its cap);
#   4. bench: the rows copy_f32_16384x4096 (the ceiling), softmax_f32/bf16, rms_norm_f32/bf16,
#      layer_norm_f32/bf16 (16384 x 4096) and the streamed norm rows (D 1025, 65537) of
#      bench/gpu_compare_ops.py beside PyTorch, twice; once with WICK_ROWS_KV=8 (f32 rows: 128
#      threads of 32 values per row,
#      two rows per block, 3 blocks per SM) and WICK_ROWS_KV=4 (bf16 rows: 128 threads of 32
#      values, the plan before bf16 went to KV 8): whether the other register plan is faster;
#   5. the summary table last (also OUTDIR/norms/summary.txt).
set -u
. tools/device/lib.sh
dev_init norms "${1:-}"
OPS=softmax_last_dim,rms_norm,layer_norm
dev_build test_fused_kat test_bad_fused wick_cli wick_gpu_bench_ops
dev_gpu
t1=$(date +%s)

# ---- 2. tests and parity
for t in test_fused_kat test_bad_fused; do
  WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 $B/$t >"$O/$t.log" 2>&1
  step "$t (cpu, cuda:0)" "rc=$? $(tail -1 "$O/$t.log")"
  grep -m5 FAIL "$O/$t.log"
done
for mode in embedded rtc; do
  unset WICK_FORCE_RTC
  [ $mode = rtc ] && export WICK_FORCE_RTC=1
  timeout 200 $B/wick check --device cuda:0 --op $OPS -v >"$O/parity_$mode.txt" 2>&1
  step "wick check --op (3 ops) ($mode)" "rc=$? $(grep summary "$O/parity_$mode.txt" | sed 's/.*summary/summary/')"
  grep -m5 FAIL "$O/parity_$mode.txt" | grep -v summary
done
unset WICK_FORCE_RTC

# ---- 3. sanitizers
dev_san memcheck test_fused_kat 90 env WICK_TEST_DEVICES=cuda:0 $B/test_fused_kat
dev_san racecheck test_fused_kat 90 env WICK_TEST_DEVICES=cuda:0 $B/test_fused_kat
# the parity rows (every layout family, D from 1 up, both plans) under memcheck; capped at 60 s
dev_san memcheck parity 60 $B/wick check --device cuda:0 --op $OPS

# ---- 4. bench beside PyTorch
ROWS="copy_f32_16384x4096 softmax_ rms_norm_ layer_norm_"
for k in 1 2; do
  timeout 200 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 $ROWS \
    >"$O/bench_$k.log" 2>&1
  step "gpu_compare_ops.py norms (run $k)" "rc=$?"
done
WICK_ROWS_KV=8 timeout 200 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 \
  softmax_f32 rms_norm_f32 layer_norm_f32 >"$O/bench_kv8.log" 2>&1
step "gpu_compare_ops.py f32 norms (WICK_ROWS_KV=8)" "rc=$?"
WICK_ROWS_KV=4 timeout 200 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 \
  softmax_bf16 rms_norm_bf16 layer_norm_bf16 >"$O/bench_kv4.log" 2>&1
step "gpu_compare_ops.py bf16 norms (WICK_ROWS_KV=4)" "rc=$?" # the bf16 plan before
step "after the build" "$(( $(date +%s) - t1 )) s"

# ---- 5. summary
echo
echo "worst NMSE against the float64 reference, bound after the /:"
grep -E 'cases  nmse' "$O/parity_embedded.txt" | grep -E 'bf16|f16|f32|f64' \
  | awk '{printf "  %-17s %-7s %s\n", $1, $2, $7 " / " $9}' | tee -a "$S"
echo
echo "beside PyTorch (GB/s; wick/torch > 1: wick faster; note: % of wick's copy of 16384x4096 f32):"
pat='^(copy_f32|softmax_|rms_norm_|layer_norm_)'
for k in 1 2; do echo "run $k:"; grep -E "$pat" "$O/bench_$k.log"; done | tee -a "$S"
echo "WICK_ROWS_KV=8 (f32: two rows per block) and WICK_ROWS_KV=4 (bf16: two rows per block):" | tee -a "$S"
grep -E "$pat" "$O/bench_kv8.log" "$O/bench_kv4.log" | sed 's/^.*bench_kv[48].log://' | tee -a "$S"
echo
cat "$S"
