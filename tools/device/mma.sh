#!/bin/sh
# mma.sh OUTDIR: the portable GEMM on tensor cores (issue 12, item 1) on cuda:0 of an sm_80+ GPU
# (written for one H200). From the repository root: sh tools/device/mma.sh "$OUT"
#   0. configure and build build-gpu (CUDA, sm_90 unless WICK_CUDA_ARCHS says otherwise; plus
#      WICK_CMAKE_EXTRA, as tools/gpu_check.sh), only the targets used here; the registers and
#      spills of the matrix-unit kernels (cuobjdump -res-usage);
#   1. tests: test_gpu_gemm (cuBLAS and portable modes, every dtype, odd shapes, transposed,
#      strided, batched), test_dtype (the f8e4m3 -> f16 widening); wick check on cuda:0 for
#      matmul and the convolutions (which share the GEMM) with WICK_GEMM=portable, with the
#      kernels compiled at run time (WICK_FORCE_RTC=1: NVRTC meets gpu.h's inline PTX), and
#      with cuBLAS (unchanged path, for reference);
#      test_gpu_gemm again (WICK_TEST_QUICK=1) with each kernel configuration forced
#      (WICK_GEMM_TILE = pipe_128x256, pipe_128x128, pipe_64x64: the cp.async kernels;
#      mma_128x128, mma_64x64: register staging);
#   2. compute-sanitizer memcheck and racecheck on test_gpu_gemm (WICK_TEST_QUICK=1: the
#      portable kernel in f16, bf16, f8e4m3), with the default choice and with MMA_SAN_TILE
#      (default pipe_64x64) forced;
# Knobs for a shorter run: MMA_FULL_TESTS (default "test_gpu_gemm test_dtype"; "" skips the
# full tests), MMA_TEST_TILES, MMA_PARITY_MODES (default "portable portable_rtc cublas").
#   3. bench: the matmul rows of bench/gpu_compare_ops.py (cuBLAS and portable, bf16 / f16 /
#      f32 at 4096^3 and batched 64 x 512x128x512, f8e4m3 portable) beside PyTorch; then the
#      portable_matmul rows alone with each configuration of MMA_TILES
#      forced (the sweep; default "pipe_128x256 pipe_128x128 pipe_64x64 mma_128x128");
#      bench/gpu_mma_peak.cu (the rate of mma.sync
#      with nothing loaded: the ceiling of these kernels); with MMA_NCU=1, Nsight Compute's
#      speed-of-light, warp-state and tensor-pipe figures of gemm_pipe_128x256_bf16 and
#      gemm_pipe_128x128_bf16 at 4096^3 (OUTDIR/mma/ncu_<tile>.txt); with MMA_SASS=1 the SASS of
#      gemm_pipe_128x256_bf16;
#   4. the summary table last (also OUTDIR/mma/summary.txt; logs beside it).
# About 2-3 minutes after the build on an H200.
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/mma
mkdir -p "$O"
B=build-gpu
S=$O/summary.txt
: >"$S"
step() { printf '%-52s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)

# ---- 0. build
if cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF \
     -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$(nproc)" --target wick_cli test_gpu_gemm test_dtype wick_gpu_bench_ops \
     >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
  t1=$(date +%s)
else
  step build FAIL; tail -15 "$O/configure.log"; grep -E "error|Error" "$O/build.log" | head -30
  cat "$S"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
step gpu "$(head -1 "$O/gpu.txt") commit $(git rev-parse --short HEAD 2>/dev/null)"
FB=$(find $B -name matmul.fatbin | head -1)
if [ -n "$FB" ] && command -v cuobjdump >/dev/null 2>&1; then
  cuobjdump -res-usage "$FB" >"$O/res_usage.txt" 2>&1
  # one line per matrix-unit kernel: name, registers, stack, shared
  awk '/Function gemm_(pipe|mma)_/ { f = $2; sub(/:$/, "", f) } /REG:/ && f { print f, $1, $2, $3, $4; f = "" }' \
    "$O/res_usage.txt" >"$O/res_mma.txt"
  step "registers (gemm_pipe_*_bf16)" "$(grep -m3 -E 'gemm_pipe_[0-9x]+_bf16' "$O/res_mma.txt" | tr '\n' ' ')"
fi

# ---- 1. tests
for t in ${MMA_FULL_TESTS-test_gpu_gemm test_dtype}; do
  timeout 600 $B/$t >"$O/$t.log" 2>&1
  step "$t" "rc=$? $(tail -1 "$O/$t.log")"
  grep -m8 FAIL "$O/$t.log"
done
for tile in ${MMA_TEST_TILES:-pipe_128x256 pipe_128x128 pipe_64x64 mma_128x128 mma_64x64}; do
  WICK_TEST_QUICK=1 WICK_GEMM_TILE=$tile timeout 300 $B/test_gpu_gemm >"$O/test_gpu_gemm_$tile.log" 2>&1
  step "test_gpu_gemm quick, WICK_GEMM_TILE=$tile" "rc=$? $(tail -1 "$O/test_gpu_gemm_$tile.log")"
  grep -m4 FAIL "$O/test_gpu_gemm_$tile.log"
done
OPS=matmul,conv1d,conv2d,conv_transpose1d,conv_transpose2d
for mode in ${MMA_PARITY_MODES:-portable portable_rtc cublas}; do
  case $mode in
    portable) env="WICK_GEMM=portable" ;;
    portable_rtc) env="WICK_GEMM=portable WICK_FORCE_RTC=1" ;;
    *) env="" ;;
  esac
  env $env timeout 300 $B/wick check --device cuda:0 --op $OPS -v >"$O/parity_$mode.txt" 2>&1
  step "wick check --op matmul,conv* ($mode)" "rc=$? $(grep summary "$O/parity_$mode.txt" | sed 's/.*summary/summary/')"
  grep -m6 'FAIL' "$O/parity_$mode.txt" | grep -v summary
done

# ---- 2. sanitizers
SAN=$(command -v compute-sanitizer)
if [ -n "$SAN" ]; then
  WICK_TEST_QUICK=1 WICK_GPU_NO_CACHE=1 timeout 400 "$SAN" --tool memcheck --report-api-errors no \
    --error-exitcode 99 $B/test_gpu_gemm >"$O/memcheck_test_gpu_gemm.log" 2>&1
  step "memcheck test_gpu_gemm (quick)" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_test_gpu_gemm.log" | tail -1)"
  WICK_TEST_QUICK=1 timeout 400 "$SAN" --tool racecheck --error-exitcode 99 $B/test_gpu_gemm \
    >"$O/racecheck_test_gpu_gemm.log" 2>&1
  step "racecheck test_gpu_gemm (quick)" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/racecheck_test_gpu_gemm.log" | tail -1)"
  for tool in memcheck racecheck; do
    WICK_TEST_QUICK=1 WICK_GEMM_TILE=${MMA_SAN_TILE:-pipe_64x64} timeout 300 "$SAN" --tool $tool --error-exitcode 99 \
      $B/test_gpu_gemm >"$O/${tool}_forced.log" 2>&1
    step "$tool test_gpu_gemm (quick, ${MMA_SAN_TILE:-pipe_64x64} forced)" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/${tool}_forced.log" | tail -1)"
  done
else
  step "compute-sanitizer" "not found"
fi

# ---- 3. bench: every row whose name contains "matmul_"
if python3 -c "import torch" >/dev/null 2>&1; then
  timeout 600 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops --device cuda:0 matmul_ \
    >"$O/bench_matmul.log" 2>&1
  step "gpu_compare_ops.py matmul_" "rc=$?"
else
  timeout 600 $B/wick_gpu_bench_ops --device cuda:0 matmul_ >"$O/bench_matmul.log" 2>&1
  step "wick_gpu_bench_ops matmul_ (python3 has no torch)" "rc=$?"
fi

for tile in ${MMA_TILES:-pipe_128x256 pipe_128x128 pipe_64x64 mma_128x128}; do
  WICK_GEMM_TILE=$tile timeout 120 $B/wick_gpu_bench_ops --device cuda:0 portable_matmul_ \
    >"$O/bench_tile_$tile.log" 2>&1
  step "bench portable_matmul_ WICK_GEMM_TILE=$tile" "rc=$?"
done

if nvcc -std=c++17 -O3 -arch=sm_"${WICK_CUDA_ARCHS:-90}" -Ikernels -Isrc/core bench/gpu_mma_peak.cu \
     -o "$B/gpu_mma_peak" >"$O/mma_peak.log" 2>&1 && timeout 60 "$B/gpu_mma_peak" >>"$O/mma_peak.log" 2>&1; then
  step "mma_peak" "ok"
else
  step "mma_peak" "FAIL"
fi
if [ "${MMA_SASS:-0}" = 1 ] && [ -n "$FB" ]; then # the SASS of the 128x256 kernel (OUTDIR/mma/sass_cx.txt)
  cuobjdump -sass -fun gemm_pipe_128x256_bf16 "$FB" >"$O/sass_cx.txt" 2>&1
  step "sass gemm_pipe_128x256_bf16" "$(grep -c HMMA "$O/sass_cx.txt") HMMA, $(grep -c LDSM "$O/sass_cx.txt") LDSM, $(grep -c LDGSTS "$O/sass_cx.txt") LDGSTS, $(wc -l <"$O/sass_cx.txt") lines"
fi
if [ "${MMA_NCU:-0}" = 1 ] && command -v ncu >/dev/null 2>&1; then
  st=smsp__average_warps_issue_stalled
  stalls=$(for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait \
    not_selected dispatch_stall lg_throttle selected no_instruction; do
    printf '%s_%s_per_issue_active.ratio,' $st $r; done)
  for tile in ${MMA_NCU_TILES:-pipe_128x256 pipe_128x128}; do
    WICK_GEMM_TILE=$tile timeout 200 ncu --kernel-name regex:gemm_pipe_.*_bf16 --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
      --metrics "${stalls}sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active" \
      $B/wick_gpu_bench_ops --device cuda:0 portable_matmul_bf16_4096 >"$O/ncu_$tile.txt" 2>&1
    step "ncu gemm_${tile}_bf16 4096" "rc=$?"
  done
fi

# ---- 4. summary
step "time after the build" "$(( $(date +%s) - t1 )) s"
echo
echo "== matmul rows (TFLOP/s; wick/torch = torch time / wick time) =="
sed -n '/^op /,$p' "$O/bench_matmul.log" | grep -E '^op |matmul'
echo
echo "== sweep: portable_matmul rows with WICK_GEMM_TILE forced (TFLOP/s) =="
for tile in ${MMA_TILES:-pipe_128x256 pipe_128x128 pipe_64x64 mma_128x128}; do
  awk -v t="$tile" '$1 == "row" { printf "%-13s %-34s %8.1f\n", t, $2, $4 / $5 / 1e12 }' \
    "$O/bench_tile_$tile.log"
done
echo
echo "== mma.sync with nothing loaded =="
grep mma_peak "$O/mma_peak.log"
for f in "$O"/ncu_*.txt; do
  [ -f "$f" ] || continue
  echo "== $f =="
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Issued Warp|No Eligible|Warp Cycles Per Issued|hmma|Eligible Warps|issue_stalled" "$f" | sed 's/smsp__average_warps_issue_stalled_//' | head -30
done
echo
echo "== registers: $(tr '\n' ';' <"$O/res_mma.txt" 2>/dev/null | head -c 600)"
echo
echo "== $O/summary.txt =="
cat "$S"
