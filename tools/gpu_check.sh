#!/bin/sh
# gpu_check.sh: everything this project proves on an NVIDIA GPU (for the device machine; see
# docs/performance.md and docs/parity/). From the repository root:
#   sh tools/gpu_check.sh [OUTDIR] [STAGES]     (OUTDIR default: $OUT, else ./gpu-out)
# STAGES (default "build test parity diff sanitize bench"), any of:
#   build     cmake + build with nvcc (CUDA code objects only, WICK_CUDA_ARCHS from the env or all;
#             the HIP ones are compiled by CI)
#   test      wick devices; the whole ctest suite (GPU cases included)
#   parity    wick check on cuda:0: embedded code objects with the vendor GEMM, the portable GEMM
#             (WICK_GEMM=portable), and run-time compiled kernels (WICK_FORCE_RTC=1)
#   diff      tests/diff/slices.sh: the randomised differential test against PyTorch on cuda:0,
#             DIFF_CASES (default 60000) seeded cases in DIFF_JOBS parallel slices (issue 13);
#             skipped, saying so, where python3 has no torch
#   sanitize  the GPU tests under compute-sanitizer memcheck (WICK_GPU_NO_CACHE=1) and racecheck
#   bench     elementwise/reduce beside PyTorch (bench/gpu_compare.py)
#   benchops  matmul, conv, fused, indexing, image ops, argsort beside PyTorch (gpu_compare_ops.py)
#   benchq    quantized matmul / dequantize (wick_gpu_bench_quant)
# Knobs (environment): WICK_CMAKE_EXTRA (more configure arguments, e.g. -DCMAKE_LIBRARY_PATH=...
# where jansson or SLEEF were unpacked on a machine without them), CTEST_ARGS (extra ctest arguments, e.g. "-E test_gpu_runtime"),
# PARITY_MODES (default "embedded portable rtc"), MEMCHECK_TESTS / RACECHECK_TESTS (test lists).
# Logs go to OUTDIR; a summary table is printed last.
set -u
R=${1:-${OUT:-gpu-out}}
STAGES=${2:-"build test parity diff sanitize bench"}
O=$R/logs
mkdir -p "$O"
B=build-gpu
J=$(nproc)
S=$R/summary.txt
: >"$S"
step() { printf '%-40s %s\n' "$1" "$2" | tee -a "$S"; }
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
export PATH="$PATH:/usr/local/cuda/bin"

if has build; then
  t0=$(date +%s)
  if cmake -S . -B $B -DWICK_CUDA=ON -DWICK_HIP=OFF ${WICK_CUDA_ARCHS:+-DWICK_CUDA_ARCHS=$WICK_CUDA_ARCHS} \
       ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 && cmake --build $B -j"$J" >"$O/build.log" 2>&1; then
    step build "ok ($(( $(date +%s) - t0 )) s)"
  else
    step build FAIL; tail -15 "$O/configure.log"; grep -E "error|Error" "$O/build.log" | head -30; cat "$S"; exit 1
  fi
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1

if has test; then
  $B/wick devices >"$O/devices.txt" 2>&1; step "wick devices" "$(grep -m1 -i 'cuda' "$O/devices.txt")"
  ctest --test-dir $B -j6 --output-on-failure --timeout 500 ${CTEST_ARGS:-} >"$O/ctest.log" 2>&1
  step ctest "$(grep -E 'tests passed|tests failed' "$O/ctest.log" | tail -1)"
  grep -E "^\s*[0-9]+/[0-9]+ Test.*(Failed|Timeout|Exception)" "$O/ctest.log" | head -20
fi

if has parity; then
  for mode in ${PARITY_MODES:-embedded portable rtc}; do
    unset WICK_FORCE_RTC WICK_GEMM
    [ $mode = rtc ] && export WICK_FORCE_RTC=1
    [ $mode = portable ] && export WICK_GEMM=portable
    $B/wick check --device cuda:0 >"$O/parity_cuda_$mode.txt" 2>&1
    step "wick check cuda:0 ($mode)" "rc=$? $(grep summary "$O/parity_cuda_$mode.txt")"
    grep -E "FAIL" "$O/parity_cuda_$mode.txt" | head -15
  done
  unset WICK_FORCE_RTC WICK_GEMM
fi

if has diff; then
  if python3 -c "import torch, numpy" >/dev/null 2>&1; then
    t0=$(date +%s)
    sh tests/diff/slices.sh $B/libwick.so cuda:0 "$O/diff" >"$O/diff.txt" 2>&1
    rc=$?
    head -24 "$O/diff.txt" | grep -v '^torch_diff'
    step "diff vs PyTorch" "rc=$rc $(tail -1 "$O/diff.txt") [$(( $(date +%s) - t0 )) s]"
  else
    step "diff vs PyTorch" "skipped: python3 has no torch/numpy"
  fi
fi
if has sanitize; then
  SAN=$(command -v compute-sanitizer)
  if [ -n "$SAN" ]; then
    for t in ${MEMCHECK_TESTS:-test_unary_kat test_binary_kat test_cast_kat test_reduce_kat test_copy_kat test_rand \
             test_bad_input test_matmul_kat test_conv_kat test_image_kat test_index_kat \
             test_fused_kat test_gpu_index test_gpu_gemm test_quant_kat test_bad_index \
             test_bad_linalg test_bad_image test_bad_fused test_bad_quant test_gguf}; do
      [ -x $B/$t ] || continue
      WICK_GPU_NO_CACHE=1 timeout 300 "$SAN" --tool memcheck --report-api-errors no --error-exitcode 99 $B/$t >"$O/memcheck_$t.log" 2>&1
      step "memcheck $t" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_$t.log" | tail -1)"
    done
    for t in ${RACECHECK_TESTS:-test_reduce_kat test_copy_kat test_matmul_kat test_fused_kat test_index_kat test_conv_kat test_image_kat test_quant_kat}; do
      [ -x $B/$t ] || continue
      timeout 300 "$SAN" --tool racecheck --error-exitcode 99 $B/$t >"$O/racecheck_$t.log" 2>&1
      step "racecheck $t" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/racecheck_$t.log" | tail -1)"
    done
  fi
fi

if has bench; then
  PYTHONUNBUFFERED=1 python3 bench/gpu_compare.py $B/wick_gpu_bench >"$O/bench.txt" 2>&1
  step bench "rc=$?"
  sed -n '/^GPU:/,$p' "$O/bench.txt"
fi
if has benchops; then
  PYTHONUNBUFFERED=1 python3 bench/gpu_compare_ops.py $B/wick_gpu_bench_ops ${BENCH_FILTER:-} >"$O/bench_ops.txt" 2>&1
  step "bench ops" "rc=$?"
  sed -n '/^GPU:/,$p' "$O/bench_ops.txt"
fi
if has benchq; then
  $B/wick_gpu_bench_quant >"$O/bench_quant.txt" 2>&1
  step "bench quant" "rc=$?"
  sed -n '/^GPU quantized/,$p' "$O/bench_quant.txt"
fi
for f in parity_cuda_embedded.txt parity_cuda_portable.txt bench.txt bench_ops.txt bench_quant.txt gpu.txt; do
  [ -f "$O/$f" ] && cp "$O/$f" "$R/"
done
tar -C "$R" -czf "$R/logs.tar.gz" logs && rm -rf "$O"
echo; cat "$S"
