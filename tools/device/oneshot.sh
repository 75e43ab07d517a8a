#!/bin/sh
# oneshot.sh OUTDIR: the one-shot all-reduce (issue 40: src/comm/comm_oneshot.c, kernels/comm.cu)
# on a machine with two NVIDIA GPUs of one host (the device kind nvidia-h200-x2), CUDA,
# compute-sanitizer, NCCL (PyTorch's pip package nvidia-nccl-cu12 or WICK_NCCL_LIB) and, for
# step 5, python3 with numpy and gguf. From the repository root:
#   sh tools/device/oneshot.sh OUTDIR
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90);
#   2. test_comm_oneshot --device cuda (every float dtype and reduction against the CPU fold, 1000
#      calls back to back, a graph replayed 10,000 times, a rank that never calls) and test_comm
#      --device cuda (the communicator suite, whose init_all all_reduces now take the one-shot),
#      then compute-sanitizer memcheck and racecheck on test_comm_oneshot --device cuda;
#   3. wick_comm_bench from 1 KiB to 4 MiB with the one-shot (the default) and with
#      WICK_COMM_ONESHOT=0 (NCCL alone), one table: back-to-back microseconds of both and the
#      largest size where the one-shot is faster (the switch point, WK_ONESHOT_MAX_BYTES in
#      src/comm/comm_oneshot.h: 256 KiB until this has run);
#   4. bench/comm_torch.py (torch.distributed NCCL) at the same sizes when it runs;
#   5. LLAMA_TP=1 (default): sh tools/llama_tp_gpu.sh (tensor-parallel llama, 1 GPU against 2:
#      logits, pp512 / tg128) with the one-shot and again with WICK_COMM_ONESHOT=0, and tg128 at a
#      4096-token context (wick_llama --bench 512,128 --depth 4096) on 1 and 2 GPUs;
#   6. the summary last (also OUTDIR/oneshot/summary.txt).
set -u
. tools/device/lib.sh
dev_init oneshot "${1:-}"
dev_build test_comm_oneshot test_comm wick_comm_bench wick_llama
dev_gpu
if [ -z "${WICK_NCCL_LIB:-}" ]; then
  d=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null)
  if [ -n "$d" ] && [ -d "$d/lib" ]; then export WICK_NCCL_LIB="$d/lib"; fi
fi
step nccl "${WICK_NCCL_LIB:-<loader search path>}"

# ---- 2. tests
timeout 600 $B/test_comm_oneshot --device cuda >"$O/test_oneshot.log" 2>&1
step "test_comm_oneshot --device cuda" "rc=$? $(tail -1 "$O/test_oneshot.log")"
grep -E "^(FAIL|skip|transport)" "$O/test_oneshot.log" | head -20
timeout 600 $B/test_comm --device cuda >"$O/test_comm.log" 2>&1
step "test_comm --device cuda" "rc=$? $(tail -1 "$O/test_comm.log")"
grep -E "^(FAIL|transport)" "$O/test_comm.log" | head -10
dev_san memcheck oneshot 900 $B/test_comm_oneshot --device cuda
dev_san racecheck oneshot 900 $B/test_comm_oneshot --device cuda

# ---- 3, 4. latency: one-shot against NCCL
timeout 300 $B/wick_comm_bench --ranks 2 --min-bytes 1024 --max-mib 4 >"$O/bench_oneshot.log" 2>&1
step "wick_comm_bench (one-shot)" "rc=$? $(grep -m1 '^wick' "$O/bench_oneshot.log")"
WICK_COMM_ONESHOT=0 timeout 300 $B/wick_comm_bench --ranks 2 --min-bytes 1024 --max-mib 4 \
  >"$O/bench_nccl.log" 2>&1
step "wick_comm_bench (WICK_COMM_ONESHOT=0)" "rc=$?"
PYTHONUNBUFFERED=1 timeout 300 python3 bench/comm_torch.py --ranks 2 --min-bytes 1024 --max-mib 4 \
  >"$O/bench_torch.log" 2>&1
step "comm_torch.py" "rc=$?"
{
  echo
  echo "all_reduce f32 sum, 2 GPUs, back-to-back us (one synchronize per 200 calls):"
  printf '%10s %12s %12s %10s\n' bytes oneshot_us nccl_us nccl/one
  awk 'FNR == 1 { f++ } $1 == "RESULT" { if (f == 1) a[$3] = $5; else b[$3] = $5; if (!($3 in s)) { s[$3] = 1; k[++n] = $3 } }
       END { best = "-"; for (i = 1; i <= n; i++) { z = k[i];
               printf "%10s %12s %12s %10s\n", z, a[z], b[z], (b[z] > 0 && a[z] > 0) ? sprintf("%.2f", b[z] / a[z]) : "-";
               if (a[z] > 0 && b[z] > 0 && a[z] < b[z]) best = z }
             print "largest size where the one-shot is faster: " best " bytes" }' \
      "$O/bench_oneshot.log" "$O/bench_nccl.log"
  echo "torch.distributed (same sizes where it printed them):"
  grep '^RESULT' "$O/bench_torch.log" | awk '{ printf "  %s %s us\n", $3, $5 }'
} >"$O/latency.txt"
cat "$O/latency.txt" | tee -a "$S" >/dev/null

# ---- 5. tensor-parallel llama
if [ "${LLAMA_TP:-1}" = 1 ]; then
  OUT=$O/tp timeout 1500 sh tools/llama_tp_gpu.sh >"$O/tp.log" 2>&1
  step "llama_tp_gpu.sh (one-shot)" "rc=$?"
  tail -8 "$O/tp.log" | tee -a "$S"
  WICK_COMM_ONESHOT=0 LLAMA_TP_REPS=1 OUT=$O/tp_nccl timeout 1500 sh tools/llama_tp_gpu.sh \
    >"$O/tp_nccl.log" 2>&1
  step "llama_tp_gpu.sh (WICK_COMM_ONESHOT=0)" "rc=$?"
  tail -8 "$O/tp_nccl.log" | tee -a "$S"
  M=${LLAMA_TP_MODEL:-${LLAMA_TP_DIR:-/tmp/wick_llama_tp}/llama8b_q4_0.gguf}
  if [ -f "$M" ]; then
    for devs in cuda:0 cuda:0,cuda:1; do
      timeout 600 $B/wick_llama "$M" --devices "$devs" --bench 512,128 --depth 4096 --reps 2 \
        >"$O/depth_$devs.log" 2>&1
      step "depth 4096, $devs" "rc=$? $(grep '^bench:' "$O/depth_$devs.log")"
    done
  else
    step "depth 4096" "no model at $M"
  fi
fi
echo
cat "$S"
