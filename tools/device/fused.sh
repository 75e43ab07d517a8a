#!/bin/sh
# fused.sh OUTDIR: wick's decode fusions on cuda:0 (issue 10, item 5: fewer launches per decode
# step): the gated binary ops (wk_binary SWIGLU, GEGLU, GEGLU_ERF: kernels/binary.cu) and the
# residual add + norm (wk_add_rms_norm / wk_add_layer_norm: kernels/norm.cu norm_add_*), and
# what they give the llama example. From the repository root on a machine with one NVIDIA GPU,
# CUDA, compute-sanitizer and PyTorch:
#   sh tools/device/fused.sh OUTDIR          (LLAMA_BENCH=path/to/llama-bench: beside llama.cpp)
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90);
#   2. tests on cpu + cuda:0: test_binary_kat (known answers; f32 swiglu equals silu then mul bit
#      for bit), test_fused_kat (known answers; add+norm equals add then the norm bit for bit on
#      the fused kernel's shapes and others), test_bad_fused, test_bad_input; the parity rows of
#      the five ops and of add / rms_norm / layer_norm with the embedded code objects and
#      through NVRTC (WICK_FORCE_RTC=1);
#   3. compute-sanitizer memcheck and racecheck on test_fused_kat, memcheck on test_binary_kat;
#   4. bench/gpu_compare_ops.py rows add_rms_norm_*, swiglu_* (PyTorch: its two ops) and the copy
#      ceiling, twice;
#   5. FUSED_LLAMA=1 (default): tools/device/llama.sh bench stage, the 8B-shaped q4_0 and q4_k
#      models, LLAMA_VARIANTS f16 (fused, the default) and f16unfused (--fuse 0) beside
#      llama-bench when LLAMA_BENCH is set (needs python3 with numpy and gguf: llama.sh says how);
#   6. the summary table last (also OUTDIR/fused/summary.txt).
set -u
. tools/device/lib.sh
dev_init fused "${1:-}"
OPS=swiglu,geglu,geglu_erf,add_rms_norm,add_layer_norm,add,rms_norm,layer_norm
dev_build test_binary_kat test_fused_kat test_bad_fused test_bad_input wick_cli \
  wick_gpu_bench_ops wick_llama
dev_gpu

# ---- 2. tests and parity
for t in test_binary_kat test_fused_kat test_bad_fused test_bad_input; do
  WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 $B/$t >"$O/$t.log" 2>&1
  step "$t (cpu, cuda:0)" "rc=$? $(tail -1 "$O/$t.log")"
  grep -m5 FAIL "$O/$t.log"
done
dev_parity embedded $OPS
dev_parity rtc $OPS WICK_FORCE_RTC=1

# ---- 3. sanitizers
dev_san memcheck test_fused_kat 120 env WICK_TEST_DEVICES=cuda:0 $B/test_fused_kat
dev_san racecheck test_fused_kat 120 env WICK_TEST_DEVICES=cuda:0 $B/test_fused_kat
dev_san memcheck test_binary_kat 60 env WICK_TEST_DEVICES=cuda:0 $B/test_binary_kat

# ---- 4. bench beside PyTorch
for k in 1 2; do
  timeout 200 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 \
    copy_f32_16384x4096 add_rms_norm_ swiglu_ >"$O/bench_$k.log" 2>&1
  step "gpu_compare_ops.py fused rows (run $k)" "rc=$?"
done

# ---- 5. the llama example, fused and not
if [ "${FUSED_LLAMA:-1}" = 1 ]; then
  WICK_BUILD_DIR=$B LLAMA_STAGES=bench LLAMA_TYPES=${LLAMA_TYPES:-q4_0,q4_k} LLAMA_REPS=1 \
    LLAMA_VARIANTS=${LLAMA_VARIANTS:-f16,f16unfused} timeout 500 sh tools/device/llama.sh "$R" \
    >"$O/llama.log" 2>&1
  step "llama bench (fused vs unfused)" "rc=$?"
fi

echo
for k in 1 2; do [ -f "$O/bench_$k.log" ] && { echo "-- bench run $k"; sed -n '/^GPU:/,$p' "$O/bench_$k.log"; }; done
[ -f "$R/llama/bench.log" ] && { echo "-- llama"; cat "$R/llama/bench.log"; }
echo
cat "$S"
