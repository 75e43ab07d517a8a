#!/bin/sh
# llama_tp_gpu.sh: the tensor-parallel llama example (wick_llama --devices cuda:0,cuda:1) on a
# machine with 2 NVIDIA GPUs (issue 16, item 4). From the repository root:
#   sh tools/llama_tp_gpu.sh            (logs under $OUT when set, else ./llama-tp-out)
# Steps, each logged, with a summary and the tokens/s table printed last:
#   1. configure + build only wick_llama with nvcc for sm_90 only (WICK_CUDA_ARCHS=90; override
#      in the environment), simt off, in build-tp;
#   2. NCCL: WICK_NCCL_LIB if set, else the lib directory of PyTorch's pip package
#      nvidia-nccl-cu12 (python3 -c "import nvidia.nccl"), else the loader's search path;
#   3. tests/models/llama_tp.py on the small TP-shaped model: cuda:0 vs cuda:0,cuda:1 (logits of
#      48 rows and 16 greedy tokens, 8 weight types; bound LLAMA_TP_BOUND (default 1e-5) + 2 e_q,
#      e_q the measured distance of the one-GPU run to the CPU's with WICK_CPU_QDOT=exact, which does not quantize
#      activations to 8 bits as the GPUs' decode steps do: a reordered sum that moves a value
#      across a step of that grid moves the result by up to a step);
#   4. the Llama-3-8B-shaped Q4_0 GGUF (LLAMA_TP_MODEL if set, else made once by
#      tests/models/llama_ref.py bench-model into LLAMA_TP_DIR, default /tmp/wick_llama_tp,
#      4.3 GiB, kept for the next run): logits of a 32-token prompt and 16 forced steps on 1 GPU
#      and on 2, compared (max over rows of max |a - b| / max |a|, and rows whose argmax differs);
#      On 2 GPUs also with --graph 0 (decode steps issued op by op instead of replayed as one
#      graph per GPU): those logits must be the same bits as the replays';
#   5. wick_llama --bench 512,128 --reps LLAMA_TP_REPS (default 3) on cuda:0 and on cuda:0,cuda:1
#      (graphs, the default), then on 2 GPUs with --graph 0 and with --graph 0 and
#      WICK_NCCL_BLOCKING=0 (non-blocking communicators: the mode before graphs and guarded
#      communicators), then one table: pp512 and tg128 tokens/s on 1 and 2 GPUs and the ratio.
# Needs python3 with numpy and gguf (as tools/device/llama.sh: ./.whl/py is added to PYTHONPATH
# when `import gguf` fails). Knobs: WICK_CMAKE_EXTRA (more configure arguments).
set -u
R=${OUT:-llama-tp-out}
O=$R/logs
mkdir -p "$O"
B=${WICK_BUILD_DIR:-build-tp}
J=$(nproc)
S=$R/summary.txt
: >"$S"
step() { printf '%-40s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
step gpus "$(wc -l <"$O/gpu.txt") x $(head -1 "$O/gpu.txt" | cut -d, -f2)"
git rev-parse --short HEAD >"$O/commit.txt" 2>/dev/null && step commit "$(cat "$O/commit.txt")"
python3 -c "import gguf" 2>/dev/null || export PYTHONPATH="$PWD/.whl/py${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import numpy, gguf" >"$O/python.txt" 2>&1 ||
  { step python "FAIL: no numpy/gguf ($(tail -1 "$O/python.txt"))"; cat "$S"; exit 1; }

# 1. build
t0=$(date +%s)
if cmake -S . -B $B -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF -DCMAKE_BUILD_TYPE=Release \
     -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
   cmake --build $B -j"$J" --target wick_llama >"$O/build.log" 2>&1; then
  step build "ok ($(( $(date +%s) - t0 )) s)"
else
  step build FAIL; tail -15 "$O/configure.log"; grep -E "error|Error" "$O/build.log" | head -30
  cat "$S"; exit 1
fi
BIN=$B/wick_llama

# 2. NCCL
if [ -z "${WICK_NCCL_LIB:-}" ]; then
  d=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null)
  if [ -n "$d" ] && [ -d "$d/lib" ]; then export WICK_NCCL_LIB="$d/lib"; fi
fi
step nccl "${WICK_NCCL_LIB:-<loader search path>}"

# 3. the small model: 1 GPU vs 2
D=${LLAMA_TP_DIR:-/tmp/wick_llama_tp}
mkdir -p "$D"
t0=$(date +%s)
timeout 300 python3 tests/models/llama_tp.py --bin $BIN --dir "$D/small" --devices cuda:0,cuda:1 \
  --single cuda:0 --four none --bound "${LLAMA_TP_BOUND:-1e-5}" --qref cpu >"$O/small.log" 2>&1
step "small model: cuda:0 vs cuda:0,cuda:1" "rc=$? $(tail -1 "$O/small.log") [$(( $(date +%s) - t0 )) s]"
grep -E "^[a-z0-9_]+ +[0-9]" "$O/small.log" | tee -a "$S"

# 4. the 8B-shaped model
M=${LLAMA_TP_MODEL:-$D/llama8b_q4_0.gguf}
if [ ! -s "$M" ]; then
  t0=$(date +%s)
  python3 tests/models/llama_ref.py bench-model --out "$M.tmp" --type q4_0 >"$O/model.log" 2>&1 &&
    mv "$M.tmp" "$M"
  step "8B-shaped q4_0 model" "rc=$? $(tail -1 "$O/model.log") [$(( $(date +%s) - t0 )) s]"
else
  step "8B-shaped model" "$M (kept)"
fi
IDS=$(python3 -c "import random; r = random.Random(7); print(' '.join(str(r.randrange(128256)) for _ in range(48)))")
P=$(echo "$IDS" | cut -d' ' -f1-32)
F=$(echo "$IDS" | cut -d' ' -f33-48)
timeout 200 $BIN "$M" --ctx 256 --gemm-dtype f32 --kv-dtype f32 --device cuda:0 --prompt-ids "$P" --force "$F" --logits "$O/logits_1.f32" \
  >"$O/logits_1.log" 2>&1
r1=$?
timeout 200 $BIN "$M" --ctx 256 --gemm-dtype f32 --kv-dtype f32 --devices cuda:0,cuda:1 --prompt-ids "$P" --force "$F" --logits "$O/logits_2.f32" \
  >"$O/logits_2.log" 2>&1
r2=$?
timeout 200 $BIN "$M" --ctx 256 --gemm-dtype f32 --kv-dtype f32 --devices cuda:0,cuda:1 --graph 0 --prompt-ids "$P" --force "$F" \
  --logits "$O/logits_2e.f32" >"$O/logits_2e.log" 2>&1
if [ $? = 0 ] && cmp -s "$O/logits_2.f32" "$O/logits_2e.f32"; then
  step "8B 2 GPUs: graph vs --graph 0" "same bits ($(grep -o 'decode [a-z ]*' "$O/logits_2.log" | head -1))"
else
  step "8B 2 GPUs: graph vs --graph 0" "FAIL: differ or rc != 0 ($(tail -1 "$O/logits_2e.log"))"
fi
if [ $r1 = 0 ] && [ $r2 = 0 ]; then
  python3 - "$O/logits_1.f32" "$O/logits_2.f32" >"$O/logits_cmp.txt" 2>&1 <<'EOF'
import sys
import numpy as np
a = np.fromfile(sys.argv[1], np.float32).reshape(48, -1).astype(np.float64)
b = np.fromfile(sys.argv[2], np.float32).reshape(48, -1).astype(np.float64)
err = np.abs(a - b).max(1) / np.abs(a).max(1)
arg = int((a.argmax(1) != b.argmax(1)).sum())
print(f"err max {err.max():.3e} (prefill rows {err[:32].max():.3e}, decode rows {err[32:].max():.3e}),"
      f" argmax differs in {arg} of 48 rows")
EOF
  step "8B logits 1 GPU vs 2" "$(cat "$O/logits_cmp.txt")"
else
  step "8B logits 1 GPU vs 2" "FAIL: rc $r1 / $r2 ($(tail -1 "$O/logits_2.log"))"
fi

# 5. tokens/s
REPS=${LLAMA_TP_REPS:-3}
timeout 240 $BIN "$M" --bench 512,128 --reps "$REPS" --device cuda:0 >"$O/bench_1.log" 2>&1
step "bench 1 GPU" "rc=$? $(grep '^bench' "$O/bench_1.log")"
timeout 240 $BIN "$M" --bench 512,128 --reps "$REPS" --devices cuda:0,cuda:1 >"$O/bench_2.log" 2>&1
step "bench 2 GPUs" "rc=$? $(grep '^bench' "$O/bench_2.log")"
timeout 240 $BIN "$M" --bench 512,128 --reps "$REPS" --devices cuda:0,cuda:1 --graph 0 >"$O/bench_2e.log" 2>&1
step "bench 2 GPUs, --graph 0" "rc=$? $(grep '^bench' "$O/bench_2e.log")"
WICK_NCCL_BLOCKING=0 timeout 240 $BIN "$M" --bench 512,128 --reps "$REPS" --devices cuda:0,cuda:1 --graph 0 \
  >"$O/bench_2n.log" 2>&1
step "bench 2 GPUs, --graph 0, non-blocking" "rc=$? $(grep '^bench' "$O/bench_2n.log")"
{
  echo
  echo "wick_llama, Llama-3-8B-shaped Q4_0, $(head -1 "$O/gpu.txt" | cut -d, -f2 | sed 's/^ //'), commit $(cat "$O/commit.txt" 2>/dev/null)"
  printf '%-8s %12s %12s %7s %14s %7s %18s %7s\n' test "1 GPU" "2 GPUs" ratio "2, --graph 0" ratio "2, g0 non-blocking" ratio
  for t in pp512 tg128; do
    v() { sed -n "s/.* $t \([0-9.]*\) .*/\1/p" "$1"; }
    a=$(v "$O/bench_1.log"); b=$(v "$O/bench_2.log"); c=$(v "$O/bench_2e.log"); d=$(v "$O/bench_2n.log")
    awk -v t=$t -v a="${a:-0}" -v b="${b:-0}" -v c="${c:-0}" -v d="${d:-0}" 'function r(x) { return (a > 0 && x > 0) ? sprintf("%.2f", x / a) : "-" }
      BEGIN { printf "%-8s %12.2f %12.2f %7s %14.2f %7s %18.2f %7s\n", t, a, b, r(b), c, r(c), d, r(d) }'
  done
  echo "(--bench 512,128: pp512 one 512-token prefill, tg128 128 single-token steps, each from an"
  echo " empty cache, mean of $REPS reps after a warm-up; tokens/s; 2 GPUs: one host thread issues both ranks' ops;"
  echo " decode steps replay one graph per GPU unless --graph 0)"
} >"$R/llama_tp_table.txt"
echo; cat "$S"; cat "$R/llama_tp_table.txt"
