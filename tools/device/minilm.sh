#!/bin/sh
# tools/device/minilm.sh OUTDIR: the GPU half of the minilm example (issue 14), one command on
# the GPU machine, after `sh tools/gpu_check.sh "$OUT" build` made build-gpu (it builds every
# target, examples/minilm included). Logs under OUTDIR; a summary table last.
#   1. the model: tools/fetch_minilm.sh (pip) into OUTDIR/minilm, or WICK_MINILM_DIR;
#   2. the reference: tests/models/minilm_reference.py (sentence-transformers, float32, CPU)
#      -> OUTDIR/minilm_embeddings_st.txt: commit it as tests/models/minilm_embeddings_st.txt;
#   3. minilm --check on cuda:0 in f32 (cosine >= 0.99999), f16 and bf16 (>= 0.999), and on the
#      CPU in f32, against that fixture; also cuda:0 f32 against the numpy fixture;
#   4. the benchmark: bench/minilm_bench.py (batch 64 x 128 tokens, f16, wick beside PyTorch).
set -u
OUT=${1:?usage: tools/device/minilm.sh OUTDIR}
B=${BUILD:-build-gpu}
mkdir -p "$OUT"
EXE=$B/minilm
[ -x "$EXE" ] || cmake --build "$B" --target minilm >"$OUT/minilm_build.log" 2>&1
sh tools/fetch_minilm.sh "$OUT/minilm" >"$OUT/minilm_fetch.log" 2>&1
M=$OUT/minilm/model
ROWS=""
row() { ROWS="$ROWS$1\n"; }
if python3 tests/models/minilm_reference.py "$M" "$OUT/minilm_embeddings_st.txt" >"$OUT/minilm_reference.log" 2>&1; then
    row "reference (sentence-transformers)    | written: $OUT/minilm_embeddings_st.txt"
    FIX=$OUT/minilm_embeddings_st.txt
else
    row "reference (sentence-transformers)    | FAILED (see minilm_reference.log); checks use the numpy fixture"
    FIX=tests/models/minilm_embeddings_numpy.txt
fi
check() { # name device dtype bound fixture
    if "$EXE" "$M" --device "$2" --dtype "$3" --check "$5" --min-cos "$4" >"$OUT/minilm_$1.log" 2>&1; then r=ok; else r=FAIL; fi
    row "$(printf '%-36s | %s: %s' "$1" "$r" "$(tail -n 1 "$OUT/minilm_$1.log")")"
}
check "cuda:0 f32 vs reference" cuda:0 f32 0.99999 "$FIX"
check "cuda:0 f16 vs reference" cuda:0 f16 0.999 "$FIX"
check "cuda:0 bf16 vs reference" cuda:0 bf16 0.999 "$FIX"
check "cpu f32 vs reference" cpu f32 0.99999 "$FIX"
check "cuda:0 f32 vs numpy" cuda:0 f32 0.99999 tests/models/minilm_embeddings_numpy.txt
python3 bench/minilm_bench.py "$M" "$EXE" >"$OUT/minilm_bench.log" 2>&1 || echo "bench FAILED" >>"$OUT/minilm_bench.log"
echo "== minilm on the GPU (logs in $OUT)"
printf '%b' "$ROWS"
echo "== benchmark"
tail -n 6 "$OUT/minilm_bench.log"
