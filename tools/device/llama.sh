#!/bin/sh
# llama.sh: the GPU half of the llama example (examples/llama.c), on the device machine.
#   sh tools/device/llama.sh OUTDIR
# Assumes the CUDA build in build-gpu (sh tools/gpu_check.sh "$OUT" build); builds wick_llama
# there if it is missing. Needs python3 with numpy and gguf: when `import gguf` fails, the script
# adds ./.whl/py to PYTHONPATH (make it here with `pip install --no-deps --target .whl/py gguf`
# and carry .whl). Environment:
#   LLAMA_BENCH      path of llama.cpp's llama-bench (built beside the project, never by it);
#                    without it the benchmark prints wick's figures only
#   LLAMA_TYPES      benchmark types (default q4_0,q4_k,q8_0,f16)   LLAMA_REPS (default 2)
#   LLAMA_VARIANTS   wick rows per type (bench/llama_bench.py --variants; default f32,f16)
#   LLAMA_MODEL_DIR  where the 8B-shaped GGUFs are written and deleted (default /tmp/wick_llama_models;
#                    up to 15 GiB at a time)
#   LLAMA_STAGES     default "test greedy bench"
# Stages:
#   test    tests/models/llama_ref.py test on cpu and on cuda:0: wick's logits for a 32-token
#           prompt and 16 teacher-forced steps against the numpy reference, every weight type
#   greedy  the same GGUFs decoded greedily on cpu and cuda:0 give the same tokens
#   bench   bench/llama_bench.py: pp512 / tg128 tokens/s of a Llama-3-8B-shaped model, wick beside
#           llama-bench on the same files
# Logs go to OUTDIR/llama; the summary table is printed last.
set -u
R=${1:-${OUT:-gpu-out}}
O=$R/llama
mkdir -p "$O"
B=build-gpu
S=$O/summary.txt
: >"$S"
STAGES=${LLAMA_STAGES:-"test greedy bench"}
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
step() { printf '%-34s %s\n' "$1" "$2" | tee -a "$S"; }
export PATH="$PATH:/usr/local/cuda/bin"
python3 -c "import gguf" 2>/dev/null || export PYTHONPATH="$PWD/.whl/py${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import numpy, gguf" >"$O/python.txt" 2>&1 || { step python "FAIL: no numpy/gguf ($(tail -1 "$O/python.txt"))"; cat "$S"; exit 1; }
if [ ! -x $B/wick_llama ]; then
  cmake --build $B -j"$(nproc)" --target wick_llama >"$O/build.log" 2>&1 || { step build FAIL; tail -20 "$O/build.log"; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
D=${LLAMA_TEST_DIR:-/tmp/wick_llama_test}

if has test; then
  for dev in cpu cuda:0; do
    f=$O/test_$(echo $dev | tr -d :).log
    python3 tests/models/llama_ref.py test --bin $B/wick_llama --dir "$D" --device $dev >"$f" 2>&1
    step "logits vs numpy ($dev)" "rc=$? $(tail -1 "$f")"
  done
fi
if has greedy; then
  python3 tests/models/llama_ref.py greedy --bin $B/wick_llama --dir "$D" --device cuda:0 >"$O/greedy.log" 2>&1
  step "greedy cpu vs cuda:0" "rc=$? $(tail -1 "$O/greedy.log")"
fi
if has bench; then
  python3 bench/llama_bench.py --wick $B/wick_llama --device cuda:0 --types "${LLAMA_TYPES:-q4_0,q4_k,q8_0,f16}" \
    --reps "${LLAMA_REPS:-2}" --log "$O" ${LLAMA_BENCH:+--llama-bench "$LLAMA_BENCH"} \
    --variants "${LLAMA_VARIANTS:-f32,f16}" >"$O/bench.log" 2>&1
  step "bench (8B-shaped)" "rc=$?"
fi

echo
echo "== llama on $(cat "$O/gpu.txt"), commit $(git rev-parse --short HEAD 2>/dev/null)"
for f in "$O"/test_*.log "$O/greedy.log"; do [ -f "$f" ] && { echo "-- $f"; grep -v '^$' "$f" | tail -20; }; done
[ -f "$O/bench.log" ] && { echo "-- bench"; cat "$O/bench.log"; }
echo
cat "$S"
