#!/bin/sh
# attn.sh OUTDIR: decode attention on cuda:0 (issue 10, item 4: wk_decode_attention_lens and
# the flash-decoding kernels of kernels/attn.h). From the repository root, on a machine with one
# NVIDIA GPU, CUDA, PyTorch and compute-sanitizer:
#   sh tools/device/attn.sh [OUTDIR]          (OUTDIR default: $OUT, else ./gpu-out)
#   0. configure build-gpu (CUDA only, sm_90 unless WICK_CUDA_ARCHS says otherwise, no simt)
#      and build the targets below;
#   1. tests on cuda:0 (and the CPU): test_attn (also with WICK_ATTN_MMA=0, the f32 kernels
#      for 16-bit caches too, WICK_FORCE_RTC=1, the kernels compiled by NVRTC, and
#      WICK_ATTN_COMBINE=1, the separate combine kernel), test_bad_attn,
#      test_graph (the lens variant captured once and replayed with new counts); the
#      decode_attention and decode_attention_lens parity rows (embedded and NVRTC);
#   2. compute-sanitizer memcheck (test_attn quick, test_bad_attn: a count past the cache must
#      not be read) and racecheck (test_attn quick);
#   3. bench/gpu_compare_decode.py: wick (eager and as a graph replay) beside torch sdpa
#      (enable_gqa=True) for f16, bf16, f32 at L 8192 and 32768, the lens variant at 32768;
#   4. the knob sweep: wick_gpu_bench_decode --attn-only under WICK_ATTN_MMA (1: the matrix-unit
#      kernel attn_mma_* for 16-bit caches, the default; 0: the f32 kernels) x WICK_ATTN_BPS
#      (blocks per SM the split aims at) 1 2 4 8, graph-replay % of copy bandwidth per case;
#      then the default knobs with the separate combine kernel (WICK_ATTN_COMBINE=1);
#   5. the summary last.
# Logs under OUTDIR/attn. Budget: about 3 minutes after the build.
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/attn
mkdir -p "$O"
B=${WICK_BUILD_DIR:-build-gpu}
S=$O/summary.txt
: >"$S"
step() { printf '%-46s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
TARGETS="wick_cli test_attn test_bad_attn test_graph wick_gpu_bench_decode"
t0=$(date +%s)

# ---- 0. build
if cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF \
     -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$(nproc)" --target $TARGETS >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; tail -15 "$O/configure.log"; grep -E "error|Error" "$O/build.log" | head -30
  cat "$S"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
step gpu "$(head -1 "$O/gpu.txt") commit $(git rev-parse --short HEAD 2>/dev/null)"
t1=$(date +%s)

# ---- 1. tests and parity
run_test() { # name env... -- binary
  n=$1; shift
  env "$@" >"$O/$n.log" 2>&1
  step "$n" "rc=$? $(tail -1 "$O/$n.log")"
  grep -m5 FAIL "$O/$n.log"
}
export WICK_TEST_DEVICES=cpu,cuda:0
run_test test_attn timeout 300 $B/test_attn
run_test test_attn_f32k WICK_ATTN_MMA=0 WICK_TEST_DEVICES=cuda:0 timeout 300 $B/test_attn
run_test test_attn_rtc WICK_FORCE_RTC=1 WICK_TEST_DEVICES=cuda:0 timeout 300 $B/test_attn
run_test test_attn_combine WICK_ATTN_COMBINE=1 WICK_TEST_DEVICES=cuda:0 timeout 300 $B/test_attn
run_test test_bad_attn timeout 120 $B/test_bad_attn
run_test test_graph WICK_TEST_DEVICES=cuda:0 timeout 120 $B/test_graph
for mode in embedded rtc; do
  if [ $mode = rtc ]; then export WICK_FORCE_RTC=1; else unset WICK_FORCE_RTC; fi
  timeout 200 $B/wick check --device cuda:0 --op decode_attention -v >"$O/parity_$mode.txt" 2>&1
  step "wick check --op decode_attention ($mode)" "rc=$? $(grep summary "$O/parity_$mode.txt" | sed 's/.*summary/summary/')"
  grep -m5 'FAIL' "$O/parity_$mode.txt" | grep -v summary
done
unset WICK_FORCE_RTC

# ---- 2. sanitizers
SAN=$(command -v compute-sanitizer)
if [ -n "$SAN" ]; then
  WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 WICK_GPU_NO_CACHE=1 timeout 90 "$SAN" --tool memcheck \
    --report-api-errors no --error-exitcode 99 $B/test_attn >"$O/memcheck_test_attn.log" 2>&1
  step "memcheck test_attn (quick)" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_test_attn.log" | tail -1)"
  WICK_TEST_DEVICES=cuda:0 WICK_GPU_NO_CACHE=1 timeout 60 "$SAN" --tool memcheck \
    --report-api-errors no --error-exitcode 99 $B/test_bad_attn >"$O/memcheck_test_bad_attn.log" 2>&1
  step "memcheck test_bad_attn" "rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_test_bad_attn.log" | tail -1)"
  WICK_TEST_DEVICES=cuda:0 WICK_TEST_QUICK=1 timeout 120 "$SAN" --tool racecheck --error-exitcode 99 \
    $B/test_attn >"$O/racecheck_test_attn.log" 2>&1
  step "racecheck test_attn (quick)" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/racecheck_test_attn.log" | tail -1)"
else
  step "compute-sanitizer" "not found"
fi
t2=$(date +%s)

# ---- 3. beside PyTorch
timeout 300 python3 bench/gpu_compare_decode.py $B/wick_gpu_bench_decode >"$O/bench_decode.log" 2>&1
step "gpu_compare_decode.py" "rc=$?"

# ---- 4. knob sweep (graph-replay % of copy bandwidth)
: >"$O/sweep.txt"
for mma in 1 0; do # WICK_ATTN_MMA
  for bps in 1 2 4 8; do
    WICK_ATTN_MMA=$mma WICK_ATTN_BPS=$bps timeout 120 $B/wick_gpu_bench_decode --attn-only \
      >"$O/sweep_occ${mma}_bps$bps.log" 2>&1
    grep '^ATTN' "$O/sweep_occ${mma}_bps$bps.log" | sed "s/^/mma $mma bps $bps /" >>"$O/sweep.txt"
  done
done
WICK_ATTN_COMBINE=1 timeout 120 $B/wick_gpu_bench_decode --attn-only >"$O/sweep_combine.log" 2>&1
step "sweep (mma 1 0 x bps 1 2 4 8)" "$(wc -l <"$O/sweep.txt") rows"
t3=$(date +%s)
step "time: tests+sanitizers, benches" "$(( t2 - t1 )) s, $(( t3 - t2 )) s"

# ---- 5. summary
echo
echo "== decode attention $(date -u +%FT%TZ), $(head -1 "$O/gpu.txt"), commit $(git rev-parse --short HEAD 2>/dev/null)"
sed -n '/^== decode beside/,$p' "$O/bench_decode.log"
echo
echo "== knob sweep: graph-replay us and % of copy bandwidth (eager % in brackets)"
printf '%-30s' "case \\ mma,bps"
for mma in 1 0; do for bps in 1 2 4 8; do printf '%13s' "$mma,$bps"; done; done; echo
# rows: mma M bps P ATTN qdt kvdt L len eus epct gus gpct
awk '{ key = $6 "/" $7 " L" $8 ($9 != "0" ? " lens " $9 : "");
       if (!(key in seen)) { seen[key] = 1; order[n++] = key }
       cell[key, $2 "," $4] = sprintf("%6.1f %3.0f%%", $12, $13) }
     END { for (i = 0; i < n; i++) { k = order[i]; printf "%-30s", k;
             split("1,1 1,2 1,4 1,8 0,1 0,2 0,4 0,8", cols, " ");
             for (c = 1; c <= 8; c++) printf "%13s", ((k, cols[c]) in cell) ? cell[k, cols[c]] : "-";
             printf "\n" } }' "$O/sweep.txt"
echo
echo "== the separate combine kernel (WICK_ATTN_COMBINE=1, default knobs): eager us, %, graph us, %"
grep '^ATTN' "$O/sweep_combine.log" | awk '{ printf "%-30s %9s %5s%% %9s %5s%%\n", $2 "/" $3 " L" $4 ($5 != "0" ? " lens " $5 : ""), $6, $7, $8, $9 }'
echo
cat "$S"
