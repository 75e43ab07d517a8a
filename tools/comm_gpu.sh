#!/bin/sh
# comm_gpu.sh: the communicator checks and benchmark on a machine with 2 (or more) NVIDIA GPUs
# (issue 16). From the repository root:
#   bash tools/comm_gpu.sh            (logs under $OUT when set, else ./comm-out)
# Steps, each logged, with a summary and the side-by-side bandwidth table printed last:
#   1. configure + build only test_comm and wick_comm_bench with nvcc for sm_90 only
#      (WICK_CUDA_ARCHS=90; override in the environment), simt off;
#   2. find NCCL: WICK_NCCL_LIB if set, else the lib directory of PyTorch's pip package
#      nvidia-nccl-cu12 (python3 -c "import nvidia.nccl"), else the loader's search path;
#   3. test_comm (CPU ranks) and test_comm --device cuda (cuda:0..N-1 through NCCL: threads with
#      init_rank and a shared id, init_all with groups, bad input, the failure injection);
#   4. wick_comm_bench (all_reduce f32 sum, 1 MiB .. 1 GiB, 2 GPUs) and bench/comm_torch.py
#      (torch.distributed NCCL, 2 processes), then one table: bus bandwidth of both and the ratio.
# Knobs: WICK_CMAKE_EXTRA (more configure arguments), COMM_MAX_MIB (default 1024).
set -u
R=${OUT:-comm-out}
O=$R/logs
mkdir -p "$O"
B=${WICK_BUILD_DIR:-build-comm}
J=$(nproc)
S=$R/summary.txt
: >"$S"
step() { printf '%-34s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
step gpus "$(wc -l <"$O/gpu.txt") x $(head -1 "$O/gpu.txt" | cut -d, -f2)"
git rev-parse --short HEAD >"$O/commit.txt" 2>/dev/null && step commit "$(cat "$O/commit.txt")"

t0=$(date +%s)
if cmake -S . -B $B -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF \
     -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$J" --target test_comm wick_comm_bench >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; tail -15 "$O/configure.log"; grep -E "error|Error" "$O/build.log" | head -30
  cat "$S"; exit 1
fi

if [ -z "${WICK_NCCL_LIB:-}" ]; then
  d=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null)
  if [ -n "$d" ] && [ -d "$d/lib" ]; then export WICK_NCCL_LIB="$d/lib"; fi
fi
step nccl "${WICK_NCCL_LIB:-<loader search path>}"

timeout 120 $B/test_comm >"$O/test_comm_cpu.log" 2>&1
step "test_comm (cpu ranks)" "rc=$? $(tail -1 "$O/test_comm_cpu.log")"
t0=$(date +%s)
timeout 400 $B/test_comm --device cuda >"$O/test_comm_cuda.log" 2>&1
rc=$?
step "test_comm --device cuda" "rc=$rc $(tail -1 "$O/test_comm_cuda.log") [$(( $(date +%s) - t0 )) s]"
grep -E "^(FAIL|skip|failure|transport|collectives)" "$O/test_comm_cuda.log" | head -30
t0=$(date +%s)
WICK_NCCL_BLOCKING=0 timeout 400 $B/test_comm --device cuda >"$O/test_comm_cuda_nb.log" 2>&1
step "test_comm --device cuda, non-blocking" "rc=$? $(tail -1 "$O/test_comm_cuda_nb.log") [$(( $(date +%s) - t0 )) s]"
grep -E "^(FAIL|failure)" "$O/test_comm_cuda_nb.log" | head -10

MAX=${COMM_MAX_MIB:-1024}
timeout 300 $B/wick_comm_bench --ranks 2 --max-mib "$MAX" >"$O/bench_wick.log" 2>&1
step "wick_comm_bench" "rc=$?"
WICK_NCCL_BLOCKING=0 timeout 300 $B/wick_comm_bench --ranks 2 --max-mib "${COMM_NB_MAX_MIB:-64}" >"$O/bench_wick_nb.log" 2>&1
step "wick_comm_bench, non-blocking" "rc=$?"
PYTHONUNBUFFERED=1 timeout 300 python3 bench/comm_torch.py --ranks 2 --max-mib "$MAX" >"$O/bench_torch.log" 2>&1
step "comm_torch.py" "rc=$?"

{
  echo
  grep -m1 "^wick" "$O/bench_wick.log"
  grep -v '^RESULT' "$O/bench_torch.log" | grep -m1 '^torch'
  printf '%12s %12s %12s %12s %12s %8s\n' bytes wick_b2b_us torch_b2b_us wick_busbw torch_busbw ratio
  awk '$1 == "RESULT" { key = $3; if ($2 == "wick") { w[key] = $5; wb[key] = $6 } else { t[key] = $5; tb[key] = $6 } ; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
       END { for (i = 1; i <= n; i++) { k = order[i];
               printf "%12s %12s %12s %12s %12s %8s\n", k, (k in w) ? w[k] : "-", (k in t) ? t[k] : "-",
                      (k in wb) ? wb[k] : "-", (k in tb) ? tb[k] : "-",
                      ((k in wb) && (k in tb) && tb[k] > 0) ? sprintf("%.2f", wb[k] / tb[k]) : "-" } }' \
      "$O/bench_wick.log" "$O/bench_torch.log"
  echo "non-blocking communicators (WICK_NCCL_BLOCKING=0), wick b2b us:"
  awk '$1 == "RESULT" { printf "  %s %s", $3, $5 } END { print "" }' "$O/bench_wick_nb.log"
  echo "(b2b: the mean of back-to-back calls with one synchronize, as nccl-tests; busbw in GB/s = algbw * 2(n-1)/n from it; ratio = wick / torch)"
} >"$R/comm_table.txt"
cp "$O/test_comm_cuda.log" "$O/bench_wick.log" "$O/bench_torch.log" "$R/" 2>/dev/null
echo; cat "$S"; cat "$R/comm_table.txt"
