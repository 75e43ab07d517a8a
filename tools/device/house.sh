#!/bin/sh
# house.sh OUTDIR: the device check after the kernel variants were named and cut (issue 37): the
# parity matrix and the tests of every op whose kernels changed, then the benchmarks that the
# choice functions of src/gpu cite (docs/performance.md). From the repository root on a machine
# with one NVIDIA GPU, CUDA, compute-sanitizer and PyTorch:
#   sh tools/device/house.sh OUTDIR      (HOUSE_STAGES="test bench" by default; either alone
#                                         fits one device call of 10 minutes)
#   test:  build build-gpu (sm_90 unless WICK_CUDA_ARCHS says otherwise); `wick check --device
#          cuda:0` (the whole matrix), again with WICK_GEMM=portable, and the ops whose kernels
#          changed through NVRTC (WICK_FORCE_RTC=1); on cuda:0: test_qmv (every matvec kernel
#          forced in turn, then the default), test_attn (decode and prefill), test_gpu_gemm
#          (quick; every WICK_GEMM_TILE the H200 can run), test_conv_nhwc, test_conv_kat,
#          test_fused_kat, test_arg_sort; racecheck on test_qmv (mma, chunks) and test_attn;
#   bench: wick_gpu_bench_quant with every matvec kernel at 1, 2, 4 and 8 rows (the rowpair rows
#          at 2 and 4 were never measured; GGML_TBO=<llama.cpp>/bin/test-backend-ops puts ggml
#          beside them through tools/device/decode_join.py); bench/gpu_compare_decode.py (decode
#          attention, small ops); bench/gpu_compare_prefill.py (default and WICK_ATTN_FLASH=1buf);
#          bench/gpu_compare_ops.py: the copy ceiling, softmax, rms_norm, layer_norm, argsort,
#          matmul (cuBLAS and portable), conv2d and the convnet rows.
# Compare the figures with the tables of docs/performance.md; a choice whose measurement moved
# is changed in its function (src/gpu: qmv_pick, attn_pick, flash_pick, mm_pick, conv_nhwc_ok,
# conv_merge, rows_by, row_plan) together with its table.
set -u
. tools/device/lib.sh
dev_init house "${1:-}"
STAGES=${HOUSE_STAGES:-test bench}
dev_build wick_cli test_qmv test_attn test_gpu_gemm test_conv_nhwc test_conv_kat test_fused_kat \
  test_arg_sort wick_gpu_bench_quant wick_gpu_bench_decode wick_gpu_bench_ops
dev_gpu

case " $STAGES " in *" test "*)
  timeout 400 $B/wick check --device cuda:0 >"$O/parity.txt" 2>&1
  step "wick check (whole matrix)" "rc=$? $(grep summary "$O/parity.txt" | sed 's/.*summary/summary/')"
  grep -m6 FAIL "$O/parity.txt" | grep -v summary
  dev_parity portable matmul,conv1d,conv2d,conv_transpose1d,conv_transpose2d,qmatmul WICK_GEMM=portable
  dev_parity rtc qmatmul,decode_attention,matmul,conv2d,softmax_last_dim,rms_norm,layer_norm,arg_sort_last_dim \
    WICK_FORCE_RTC=1
  for t in test_qmv test_attn test_conv_nhwc test_conv_kat test_fused_kat test_arg_sort; do
    WICK_TEST_DEVICES=cuda:0 timeout 300 $B/$t >"$O/$t.log" 2>&1
    step "$t (cuda:0)" "rc=$? $(tail -1 "$O/$t.log")"
    grep -m5 FAIL "$O/$t.log"
  done
  for tile in "" pipe_128x256 pipe_128x128 pipe_64x64 mma_128x128 mma_64x64; do
    WICK_TEST_QUICK=1 WICK_GEMM_TILE=$tile WICK_TEST_DEVICES=cuda:0 timeout 300 $B/test_gpu_gemm \
      >"$O/test_gpu_gemm_${tile:-default}.log" 2>&1
    step "test_gpu_gemm quick (${tile:-default})" "rc=$? $(tail -1 "$O/test_gpu_gemm_${tile:-default}.log")"
  done
  dev_san racecheck test_qmv 200 env WICK_TEST_QMV_VARIANTS=mma,chunks WICK_TEST_DEVICES=cuda:0 \
    $B/test_qmv
  dev_san racecheck test_attn 200 env WICK_TEST_DEVICES=cuda:0 $B/test_attn
  ;;
esac

case " $STAGES " in *" bench "*)
  timeout 400 $B/wick_gpu_bench_quant --rows 1,2,4,8 --types q4_0,q8_0,q4_k,q6_k,q2_k \
    --variants default,warp,warp2,warp4,split,stream,chunks,mma,rowpair,words,words4 >"$O/bench_quant.log" 2>&1
  step "wick_gpu_bench_quant" "rc=$?"
  if [ -n "${GGML_TBO:-}" ] && [ -x "$GGML_TBO" ]; then
    timeout 300 "$GGML_TBO" perf -o MUL_MAT -b CUDA0 >"$O/ggml_mul_mat.log" 2>&1
    step "ggml test-backend-ops perf MUL_MAT" "rc=$?"
  fi
  python3 tools/device/decode_join.py "$O/bench_quant.log" "$O/ggml_mul_mat.log" >"$O/qmv_table.txt" 2>&1
  timeout 300 python3 bench/gpu_compare_decode.py $B/wick_gpu_bench_decode >"$O/bench_decode.log" 2>&1
  step "gpu_compare_decode.py" "rc=$?"
  timeout 300 python3 bench/gpu_compare_prefill.py $B/wick_gpu_bench_decode \
    --variants default,WICK_ATTN_FLASH=1buf >"$O/bench_prefill.log" 2>&1
  step "gpu_compare_prefill.py" "rc=$?"
  timeout 400 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 \
    copy_f32_16384x4096 softmax_ rms_norm_ layer_norm_ argsort matmul_ conv2d_ convnet_ \
    >"$O/bench_ops.log" 2>&1
  step "gpu_compare_ops.py" "rc=$?"
  ;;
esac

echo
for f in qmv_table.txt bench_decode.log bench_prefill.log bench_ops.log; do
  [ -f "$O/$f" ] && { echo "-- $f"; cat "$O/$f"; }
done
echo
cat "$S"
