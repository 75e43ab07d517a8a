#!/bin/sh
# prefill.sh OUTDIR: prefill attention on the matrix units (issue 12, item 5: kernels/flash.cu,
# taken by wk_decode_attention for f16/bf16 q, k, v with D 64 or 128 and Lq >= 64). From the
# repository root, on a machine with one NVIDIA GPU, CUDA, PyTorch and compute-sanitizer:
#   sh tools/device/prefill.sh [OUTDIR]        (OUTDIR default: $OUT, else ./gpu-out)
#   0. configure build-gpu (CUDA only, sm_90 unless WICK_CUDA_ARCHS says otherwise, no simt);
#   1. test_attn on cuda:0 and the CPU (its prefill shapes: Lq 64 .. 300 against the float64
#      reference), also with WICK_FORCE_RTC=1 (NVRTC), WICK_ATTN_FLASH=1buf (D 64 on the
#      one-buffer kernel that AMD runs) and WICK_ATTN_FLASH=0 (the decode kernels on the same
#      shapes); the decode_attention parity rows (large_t: 160 tokens), also with 1buf;
#   2. ptxas's registers / spills of kernels/flash.cu for sm_90 (flash_ptxas.txt);
#   3. bench/gpu_compare_prefill.py: wick beside torch sdpa (flash backend), causal, GQA 4:1,
#      D 64 / 128, L 2048 / 4096 / 8192, f16 and bf16, once per variant of PREFILL_VARIANTS
#      (default: default, WICK_ATTN_FLASH=1buf: D 64 with two buffers each for K and V in two
#      blocks per SM, and D 64 on the one-buffer kernel; 1buf runs D 128 as the default does: a
#      repeat that shows the spread);
#   4. compute-sanitizer memcheck and racecheck on test_attn (WICK_TEST_QUICK=1), the default
#      kernels and the one-buffer ones;
#   5. the summary last (also OUTDIR/prefill/summary.txt).
set -u
. tools/device/lib.sh
dev_init prefill "${1:-}"
dev_build test_attn wick_cli wick_gpu_bench_decode
BASE=WICK_ATTN_FLASH=1buf
for v in default WICK_FORCE_RTC=1 $BASE WICK_ATTN_FLASH=0; do
  if [ $v = default ]; then set --; else set -- "$v"; fi
  env "$@" WICK_TEST_DEVICES=cpu,cuda:0 timeout 300 $B/test_attn >"$O/test_attn_$v.log" 2>&1
  step "test_attn ($v)" "rc=$? $(tail -1 "$O/test_attn_$v.log")"
  grep -m5 FAIL "$O/test_attn_$v.log"
done
dev_parity decode_attention decode_attention
dev_parity decode_attention_base decode_attention $BASE
nvcc -arch=sm_90 -c -std=c++17 -O3 -fmad=false -Xptxas -v -Ikernels -Isrc/core kernels/flash.cu \
  -o "$O/flash_sm90.o" >"$O/flash_ptxas.txt" 2>&1
step "ptxas sm_90 flash (regs, spill bytes)" "$(awk '/Compiling entry/ {n=$7} /spill stores/ {sp=$5} /Used/ {printf "%s %s/%s ", n, $5, sp}' "$O/flash_ptxas.txt" | tr -d "'")"
timeout 300 python3 bench/gpu_compare_prefill.py $B/wick_gpu_bench_decode \
  --variants "${PREFILL_VARIANTS:-default,$BASE}" >"$O/bench.txt" 2>&1
step "bench/gpu_compare_prefill.py" "rc=$?"
dev_san memcheck test_attn 200 env WICK_TEST_DEVICES=cuda:0 $B/test_attn
dev_san racecheck test_attn 200 env WICK_TEST_DEVICES=cuda:0 $B/test_attn
dev_san memcheck test_attn_base 200 env $BASE WICK_TEST_DEVICES=cuda:0 $B/test_attn
dev_san racecheck test_attn_base 200 env $BASE WICK_TEST_DEVICES=cuda:0 $B/test_attn
echo; cat "$S"; echo; cat "$O/bench.txt"
