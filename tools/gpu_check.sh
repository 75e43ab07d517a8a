#!/bin/sh
# gpu_check.sh: everything this project proves on an NVIDIA GPU, in one run (for the device
# machine; see docs/performance.md and docs/parity/). From the repository root:
#   sh tools/gpu_check.sh [OUTDIR]     (default: $OUT, else ./gpu-out)
# Builds with nvcc (CUDA code objects only: the HIP ones are compiled by CI), then runs
#   wick devices; the whole ctest suite (GPU cases included); wick check on cuda:0 with the
#   embedded code objects and with WICK_FORCE_RTC=1; the GPU tests under compute-sanitizer
#   memcheck (WICK_GPU_NO_CACHE=1) and racecheck; the benchmark beside PyTorch.
# Logs go to OUTDIR; a summary table is printed last.
set -u
R=${1:-${OUT:-gpu-out}} # results: summary, parity matrices, bench table, logs.tar.gz
O=$R/logs
mkdir -p "$O"
B=build-gpu
J=$(nproc)
S=$R/summary.txt
: >"$S"
step() { printf '%-34s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"

t0=$(date +%s)
if cmake -S . -B $B -DWICK_CUDA=ON -DWICK_HIP=OFF >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$J" >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; tail -30 "$O/build.log"; cat "$S"; exit 1
fi
$B/wick devices >"$O/devices.txt" 2>&1; step "wick devices" "$(grep -m1 -i 'cuda' "$O/devices.txt")"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1

ctest --test-dir $B -j4 --output-on-failure --timeout 600 >"$O/ctest.log" 2>&1
step ctest "$(grep -E 'tests passed|tests failed' "$O/ctest.log" | tail -1)"

for mode in embedded rtc; do
  if [ $mode = rtc ]; then export WICK_FORCE_RTC=1; else unset WICK_FORCE_RTC; fi
  $B/wick check --device cuda:0 >"$O/parity_cuda_$mode.txt" 2>&1
  step "wick check cuda:0 ($mode)" "rc=$? $(grep summary "$O/parity_cuda_$mode.txt")"
done
unset WICK_FORCE_RTC

SAN=$(command -v compute-sanitizer)
if [ -n "$SAN" ]; then
  for t in test_unary_kat test_binary_kat test_cast_kat test_reduce_kat test_copy_kat test_rand test_bad_input; do
    [ -x $B/$t ] || continue
    WICK_GPU_NO_CACHE=1 "$SAN" --tool memcheck --report-api-errors no --error-exitcode 99 $B/$t >"$O/memcheck_$t.log" 2>&1
    step "memcheck $t" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_$t.log" | tail -1)"
  done
  for t in test_reduce_kat test_copy_kat; do
    "$SAN" --tool racecheck --error-exitcode 99 $B/$t >"$O/racecheck_$t.log" 2>&1
    step "racecheck $t" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/racecheck_$t.log" | tail -1)"
  done
fi

if [ "${GPU_CHECK_BENCH:-1}" = 1 ]; then
  PYTHONUNBUFFERED=1 python3 bench/gpu_compare.py $B/wick_gpu_bench >"$O/bench.txt" 2>&1
  step bench "rc=$?"
  cat "$O/bench.txt" | sed -n '/^GPU:/,$p'
fi
cp "$O/parity_cuda_embedded.txt" "$O/bench.txt" "$O/gpu.txt" "$R/" 2>/dev/null
tar -C "$R" -czf "$R/logs.tar.gz" logs && rm -rf "$O"
echo; cat "$S"
