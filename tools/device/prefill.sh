#!/bin/sh
# prefill.sh OUTDIR: prefill attention on the matrix units (issue 12, item 5: kernels/flash.cu,
# taken by wk_decode_attention for f16/bf16 q, k, v with D 64 or 128 and Lq >= 64). From the
# repository root, on a machine with one NVIDIA GPU, CUDA, PyTorch and compute-sanitizer:
#   sh tools/device/prefill.sh [OUTDIR]        (OUTDIR default: $OUT, else ./gpu-out)
#   0. configure build-gpu (CUDA only, sm_90 unless WICK_CUDA_ARCHS says otherwise, no simt);
#   1. test_attn on cuda:0 and the CPU (its prefill shapes: Lq 64 .. 300 against the float64
#      reference), also with WICK_FORCE_RTC=1 (NVRTC), WICK_ATTN_FLASH=p2 (P in two terms) and
#      WICK_ATTN_FLASH=0 (the decode kernels on the same shapes); the decode_attention parity
#      rows (large_t: 160 tokens);
#   2. ptxas's registers / spills of kernels/flash.cu for sm_90 (flash_ptxas.txt);
#   3. bench/gpu_compare_prefill.py: wick beside torch sdpa (flash backend), causal, GQA 4:1,
#      D 64 / 128, L 2048 / 4096 / 8192, f16 and bf16, once per variant of PREFILL_VARIANTS
#      (default: default, WICK_ATTN_FLASH=p2, WICK_ATTN_FLASH_VARIANT=m2, r2, c128, s2: P
#      rounded once, P in two terms; D 64 in two blocks per SM, with 32 rows per warp, with
#      tiles of 128 keys (these three run D 128 as the default does: repeats that show the
#      spread); two buffers each for K and V, one barrier per tile (D 128: tiles of 32 keys);
#      s2m2: D 64 with two buffers in two blocks per SM);
#   4. compute-sanitizer memcheck and racecheck on test_attn (WICK_TEST_QUICK=1), the default
#      kernels and (racecheck, prefill cases) the p2, m2, r2, c128, s2, s2m2 ones;
#   5. the summary last (also OUTDIR/prefill/summary.txt).
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/prefill
mkdir -p "$O"
B=${WICK_BUILD_DIR:-build-gpu}
S=$O/summary.txt
: >"$S"
step() { printf '%-44s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
if cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF \
     -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$(nproc)" --target test_attn wick_cli wick_gpu_bench_decode \
     >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; grep -E "error|Error" "$O/build.log" | head -30; cat "$S"; exit 1
fi
for v in default WICK_FORCE_RTC=1 WICK_ATTN_FLASH=p2 WICK_ATTN_FLASH=0; do
  if [ $v = default ]; then set --; else set -- "$v"; fi
  env "$@" WICK_TEST_DEVICES=cpu,cuda:0 timeout 300 $B/test_attn >"$O/test_attn_$v.log" 2>&1
  step "test_attn ($v)" "rc=$? $(tail -1 "$O/test_attn_$v.log")"
  grep -m5 FAIL "$O/test_attn_$v.log"
done
timeout 120 $B/wick check --device cuda:0 --op decode_attention -v >"$O/parity.txt" 2>&1
step "wick check --op decode_attention" "rc=$? $(grep summary "$O/parity.txt" | sed 's/.*summary/summary/')"
nvcc -arch=sm_90 -c -std=c++17 -O3 -fmad=false -Xptxas -v -Ikernels -Isrc/core kernels/flash.cu \
  -o "$O/flash_sm90.o" >"$O/flash_ptxas.txt" 2>&1
step "ptxas sm_90 flash (regs, spill bytes)" "$(awk '/Compiling entry/ {n=$7} /spill stores/ {sp=$5} /Used/ {printf "%s %s/%s ", n, $5, sp}' "$O/flash_ptxas.txt" | tr -d "'")"
PV=default,WICK_ATTN_FLASH=p2,WICK_ATTN_FLASH_VARIANT=m2,WICK_ATTN_FLASH_VARIANT=r2
PV=$PV,WICK_ATTN_FLASH_VARIANT=c128,WICK_ATTN_FLASH_VARIANT=s2,WICK_ATTN_FLASH_VARIANT=s2m2
timeout 300 python3 bench/gpu_compare_prefill.py $B/wick_gpu_bench_decode \
  --variants "${PREFILL_VARIANTS:-$PV}" >"$O/bench.txt" 2>&1
step "bench/gpu_compare_prefill.py" "rc=$?"
SAN=$(command -v compute-sanitizer)
if [ -n "$SAN" ]; then
  WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 WICK_GPU_NO_CACHE=1 timeout 200 "$SAN" --tool memcheck \
    --report-api-errors no --error-exitcode 99 $B/test_attn >"$O/memcheck.log" 2>&1
  step "memcheck test_attn (quick)" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck.log" | tail -1)"
  WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 timeout 200 "$SAN" --tool racecheck --error-exitcode 99 \
    $B/test_attn >"$O/racecheck.log" 2>&1
  step "racecheck test_attn (quick)" "rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$O/racecheck.log" | tail -1)"
  for v in WICK_ATTN_FLASH=p2 WICK_ATTN_FLASH_VARIANT=m2 WICK_ATTN_FLASH_VARIANT=r2 \
    WICK_ATTN_FLASH_VARIANT=c128 WICK_ATTN_FLASH_VARIANT=s2 WICK_ATTN_FLASH_VARIANT=s2m2; do
    env $v WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 WICK_TEST_PREFILL=1 timeout 120 "$SAN" \
      --tool racecheck --error-exitcode 99 $B/test_attn >"$O/racecheck_$v.log" 2>&1
    step "racecheck prefill cases ($v)" "rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$O/racecheck_$v.log" | tail -1)"
  done
else
  step "compute-sanitizer" "not found"
fi
echo; cat "$S"; echo; cat "$O/bench.txt"
