#!/bin/sh
# conv.sh OUTDIR: the implicit-GEMM convolution (kernels/conv.cu conv_nhwc_*) on cuda:0 beside
# the im2col path and cuDNN. From the repository root on a machine with one
# NVIDIA GPU, CUDA, compute-sanitizer and PyTorch:
#   sh tools/device/conv.sh OUTDIR
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90; the targets used);
#      the registers and spills of conv_nhwc_* (cuobjdump -res-usage);
#   2. tests: test_conv_nhwc on cuda:0 (the implicit path bit-identical to the portable GEMM in
#      (kh, kw, c) order and within the f32-sum bound of a float64 reference); test_conv_kat,
#      test_bad_linalg and the conv parity rows (wick check -v) with WICK_CONV=nhwc, and through
#      NVRTC;
#   3. compute-sanitizer memcheck and racecheck on test_conv_nhwc;
#   4. bench: the conv rows of bench/gpu_compare_ops.py (conv2d_f16/bf16 32x64x56x56 k3, and the
#      convnet_ rows: the convolutions of a ResNet-50 and of a SD-1.5-style UNet, by shape) beside
#      PyTorch (cuDNN, benchmark mode), once per mode of CONV_MODES (default: "default nhwc
#      im2col"; also merged, batched: src/gpu/gpu_conv.c) in one run;
#   5. the summary table last (also OUTDIR/conv/summary.txt).
# What it showed (H200; docs/performance.md "Matmul and convolutions"): the implicit GEMM wins
# for multi-tap kernels with C_out/groups <= 64 and is the default there (conv_nhwc_ok).
set -u
. tools/device/lib.sh
dev_init conv "${1:-}"
dev_build test_conv_nhwc test_conv_kat test_bad_linalg wick_cli wick_gpu_bench_ops
dev_gpu
t1=$(date +%s)
FB=$(find "$B" -name 'conv.fatbin' | head -1)
if [ -n "$FB" ] && command -v cuobjdump >/dev/null; then
  cuobjdump -res-usage "$FB" 2>&1 | grep -A1 'conv_nhwc' | grep -E 'Function|REG' | paste - - \
    | awk '{print $2, $3, $4, $5}' >"$O/res_conv_nhwc.txt"
  step "registers conv_nhwc*" "$(tr '\n' ';' <"$O/res_conv_nhwc.txt")"
fi

# ---- 2. tests and parity
WICK_TEST_DEVICES=cuda:0 timeout 300 $B/test_conv_nhwc >"$O/test_conv_nhwc.log" 2>&1
step "test_conv_nhwc (cuda:0)" "rc=$? $(tail -1 "$O/test_conv_nhwc.log")"
grep -m6 FAIL "$O/test_conv_nhwc.log"
for m in nhwc; do
  for t in test_conv_kat test_bad_linalg; do
    WICK_CONV=$m WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 $B/$t >"$O/${t}_$m.log" 2>&1
    step "$t (WICK_CONV=$m)" "rc=$? $(tail -1 "$O/${t}_$m.log")"
    grep -m5 FAIL "$O/${t}_$m.log"
  done
done
OPS=conv1d,conv2d,conv_transpose1d,conv_transpose2d
dev_parity conv_nhwc $OPS WICK_CONV=nhwc
dev_parity conv_nhwc_rtc $OPS WICK_CONV=nhwc WICK_FORCE_RTC=1
dev_parity conv_default $OPS

# ---- 3. sanitizers
dev_san memcheck test_conv_nhwc 300 env WICK_TEST_DEVICES=cuda:0 $B/test_conv_nhwc
dev_san racecheck test_conv_nhwc 300 env WICK_TEST_DEVICES=cuda:0 $B/test_conv_nhwc

# ---- 4. bench beside PyTorch (cuDNN)
MODES=${CONV_MODES:-default nhwc im2col}
for mode in $MODES; do
  if [ "$mode" = default ]; then set --; else set -- WICK_CONV=$mode; fi
  env "$@" timeout 200 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops \
    --device cuda:0 conv2d_f16 conv2d_bf16 convnet_ >"$O/bench_$mode.log" 2>&1
  step "gpu_compare_ops.py conv (WICK_CONV=$mode)" "rc=$?"
done
step "after the build" "$(( $(date +%s) - t1 )) s"

# ---- 5. summary
echo
echo "beside PyTorch (TFLOP/s; wick/torch > 1: wick faster):" | tee -a "$S"
for mode in $MODES; do
  echo "WICK_CONV=$mode:" | tee -a "$S"
  sed -n '/^op /,$p' "$O/bench_$mode.log" | grep -E '^op |conv' | tee -a "$S"
done
echo
cat "$S"
