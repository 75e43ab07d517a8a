#!/bin/sh
# decode.sh OUTDIR: the GPU half of issue 10 (decode speed) on cuda:0. Assumes the CUDA build in
# build-gpu (sh tools/gpu_check.sh "$OUT" build); builds the targets added since, then:
#   1. tests: test_qmv (every block type, rows 1..8, every matvec kernel of kernels/qmv.cu
#      forced in turn, then the default choice), test_attn, test_bad_attn, test_graph,
#      test_quant_kat, test_bad_quant,
#      the qmatmul parity rows (wick check --op qmatmul) under each matvec kernel, the
#      decode_attention parity row;
#   2. compute-sanitizer memcheck and racecheck on test_qmv (rows 1, 3, 8), test_attn, test_graph;
#   3. bench: build-gpu/wick_gpu_bench_quant (every kernel, every type, 3 shapes, m = 1 and 8,
#      cold and warm L2, % of copy bandwidth); bench/gpu_compare_decode.py (decode attention at
#      8k and 32k beside torch sdpa, 1000 small adds beside torch); wick_gpu_bench_host (the
#      host path of one small add, step by step);
#   4. ggml beside it when GGML_TBO names llama.cpp's test-backend-ops binary:
#      $GGML_TBO perf -o MUL_MAT -b CUDA0, joined with wick on the shapes both ran;
#   5. the summary table last.
# Knobs: QMV_VARIANTS (default: the default choice and every kernel), QMV_ROWS (default 1,8),
# QMV_TYPES (default all).
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/decode
mkdir -p "$O"
B=build-gpu
S=$O/summary.txt
: >"$S"
step() { printf '%-44s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)

if cmake -S . -B $B >"$O/configure.log" 2>&1 && cmake --build $B -j"$(nproc)" >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; grep -E "error|Error" "$O/build.log" | head -30; cat "$S"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
step gpu "$(head -1 "$O/gpu.txt") commit $(git rev-parse --short HEAD 2>/dev/null)"

# ---- 1. tests
for t in test_qmv test_attn test_bad_attn test_graph test_quant_kat test_bad_quant; do
  [ -x $B/$t ] || { step "$t" "missing"; continue; }
  timeout 600 $B/$t >"$O/$t.log" 2>&1
  step "$t" "rc=$? $(tail -1 "$O/$t.log")"
  grep -m5 FAIL "$O/$t.log"
done
for v in default warp warp2 warp4 split stream chunks mma rowpair words words4; do
  WICK_QMV=$v timeout 300 $B/wick check --device cuda:0 --op qmatmul >"$O/parity_qmatmul_$v.txt" 2>&1
  step "wick check --op qmatmul (WICK_QMV=$v)" "rc=$? $(grep summary "$O/parity_qmatmul_$v.txt" | sed 's/.*summary/summary/')"
  grep -m5 'FAIL' "$O/parity_qmatmul_$v.txt" | grep -v summary
done

timeout 300 $B/wick check --device cuda:0 --op decode_attention -v >"$O/parity_decode_attention.txt" 2>&1
step "wick check --op decode_attention" "rc=$? $(grep summary "$O/parity_decode_attention.txt" | sed 's/.*summary/summary/')"
grep -m5 'FAIL' "$O/parity_decode_attention.txt" | grep -v summary

# ---- 2. sanitizers
SAN=$(command -v compute-sanitizer)
if [ -n "$SAN" ]; then
  for t in test_qmv test_attn test_graph; do
    WICK_TEST_QUICK=1 WICK_GPU_NO_CACHE=1 timeout 400 "$SAN" --tool memcheck --report-api-errors no --error-exitcode 99 $B/$t >"$O/memcheck_$t.log" 2>&1
    step "memcheck $t" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_$t.log" | tail -1)"
    WICK_TEST_QUICK=1 timeout 400 "$SAN" --tool racecheck --error-exitcode 99 $B/$t >"$O/racecheck_$t.log" 2>&1
    step "racecheck $t" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/racecheck_$t.log" | tail -1)"
  done
else
  step "compute-sanitizer" "not found"
fi

# ---- 3. wick benchmarks
timeout 900 $B/wick_gpu_bench_quant --variants "${QMV_VARIANTS:-default,warp,warp2,warp4,split,stream,chunks,mma,rowpair,words,words4}" \
  --rows "${QMV_ROWS:-1,8}" --types "${QMV_TYPES:-all}" >"$O/bench_quant.log" 2>&1
step "wick_gpu_bench_quant" "rc=$?"
timeout 120 $B/wick_gpu_bench_host >"$O/bench_host.log" 2>&1
step "wick_gpu_bench_host" "rc=$?"
timeout 600 python3 bench/gpu_compare_decode.py $B/wick_gpu_bench_decode >"$O/bench_decode.log" 2>&1
step "gpu_compare_decode.py" "rc=$?"

# ---- 4. ggml
if [ -n "${GGML_TBO:-}" ] && [ -x "$GGML_TBO" ]; then
  timeout 300 "$GGML_TBO" perf -o MUL_MAT -b CUDA0 >"$O/ggml_mul_mat.log" 2>&1
  step "ggml test-backend-ops perf MUL_MAT" "rc=$? $(grep -c 'us/run' "$O/ggml_mul_mat.log") rows"
else
  step "ggml" "GGML_TBO not set: wick only"
fi

# ---- 5. summary
echo
echo "== decode (issue 10) $(date -u +%FT%TZ), $(head -1 "$O/gpu.txt")"
grep -E '^(copy bandwidth|device)' "$O/bench_quant.log"
python3 tools/device/decode_join.py "$O/bench_quant.log" "$O/ggml_mul_mat.log" | tee "$O/qmv_table.txt"
sed -n '/^== decode beside/,$p' "$O/bench_decode.log"
sed -n '/^== host path/,$p' "$O/bench_host.log"
echo
cat "$S"
