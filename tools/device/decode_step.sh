#!/bin/sh
# decode_step.sh OUTDIR: the GPU decode step of the llama example (issue 41) on cuda:0: the fused
# rope + KV-cache append (wk_rope_kv_append), the int8 activations made by the norm
# (wk_add_rms_norm_act, wk_qmatmul_act), the 16-bit KV cache and the fast defaults, what they
# give a whole model, and the kernels of one step before and after. From the repository root on
# a machine with one NVIDIA GPU, CUDA, ncu and compute-sanitizer:
#   sh tools/device/decode_step.sh OUTDIR
# Environment:
#   DSTEP_STAGES   default "test san logits bench prof"; also "types" (q4_k, q8_0, f16 rows)
#   BEFORE_SRC     a folder with an older tree's examples/llama*.[ch] (e.g. `git show
#                  REV:examples/llama.c`): built against this library as the "before" binary,
#                  measured in the same run (its flags: the defaults of that tree)
#   LLAMA_BENCH    llama.cpp's llama-bench (built beside the project, never by it): beside wick
#   DSTEP_TYPES    the types of the "types" stage (default q4_k,q8_0,f16)
# Stages:
#   test    test_rope_kv, test_qact and test_add_norm_mixed on cpu and cuda:0; the parity rows of
#           rope_kv_append, rope, rope_i, decode attention, qmatmul_act, add_rms_norm and
#           add_layer_norm, embedded code objects and NVRTC
#   san     compute-sanitizer memcheck and racecheck on test_rope_kv, test_qact and
#           test_add_norm_mixed (cuda:0)
#   logits  tests/models/llama_ref.py test and greedy on cuda:0 (logits against the numpy
#           reference; the defaults' 16-bit cache and products against their emulation)
#   bench   the 8B-shaped Q4_0 model: before and after, pp512 / tg128 and tg128 at a 4096-token
#           context, beside llama-bench (-p 512 -n 128, and -d 4096)
#   prof    ncu over single-token steps (--bench 1,2 --reps 1 --graph 0: 6 steps), before and
#           after: kernels per step and the sum of their times, by kernel
#   types   bench for the other types
#   qact    the 8B-shaped Q4_0 model's tg128 (--bench 64,128) with the example's --qact none,
#           attn, all, between two runs of "before" (the drift between repeats shows beside)
# Logs go to OUTDIR/dstep; the summary table is printed last.
set -u
. tools/device/lib.sh
dev_init dstep "${1:-}"
STAGES=${DSTEP_STAGES:-"test san logits bench prof"}
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
python3 -c "import gguf" 2>/dev/null || export PYTHONPATH="$PWD/.whl/py${PYTHONPATH:+:$PYTHONPATH}"
dev_build wick_llama test_rope_kv test_qact test_add_norm_mixed wick_cli
dev_gpu
BEFORE=""
if [ -n "${BEFORE_SRC:-}" ] && [ -d "$BEFORE_SRC" ]; then
  BEFORE=/tmp/wick_llama_before
  pcre=$(sed -n 's/^WICK_PCRE2_LIBRARY:[A-Z]*=//p' $B/CMakeCache.txt) # the build's PCRE2
  if cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Iexamples "$BEFORE_SRC"/llama*.c \
       $B/libwick_tokenizer.a -L$B -lwick ${pcre:--lpcre2-8} -lm -Wl,-rpath,"$PWD/$B" -o $BEFORE \
       >"$O/before_build.log" 2>&1; then
    step "before binary" "ok ($BEFORE_SRC)"
  else
    step "before binary" "FAIL"; tail -5 "$O/before_build.log"; BEFORE=""
  fi
fi
M=${LLAMA_MODEL_DIR:-/tmp/wick_llama_models}
mkdir -p "$M"
model() { [ -f "$M/$1.gguf" ] || python3 tests/models/llama_ref.py bench-model --out "$M/$1.gguf" --type "$1" >"$O/model_$1.log" 2>&1; echo "$M/$1.gguf"; }

if has test; then
  WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 $B/test_rope_kv >"$O/test_rope_kv.log" 2>&1
  step "test_rope_kv (cpu, cuda:0)" "rc=$? $(tail -1 "$O/test_rope_kv.log")"
  grep -m5 FAIL "$O/test_rope_kv.log"
  WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 $B/test_qact >"$O/test_qact.log" 2>&1
  step "test_qact (cpu, cuda:0)" "rc=$? $(tail -1 "$O/test_qact.log")"
  grep -m5 FAIL "$O/test_qact.log"
  WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 $B/test_add_norm_mixed >"$O/test_add_norm_mixed.log" 2>&1
  step "test_add_norm_mixed (cpu, cuda:0)" "rc=$? $(tail -1 "$O/test_add_norm_mixed.log")"
  grep -m5 FAIL "$O/test_add_norm_mixed.log"
  OPS=rope_kv_append,rope,rope_i,decode_attention,decode_attention_lens,qmatmul_act,add_rms_norm
  OPS=$OPS,add_layer_norm
  dev_parity embedded $OPS
  dev_parity rtc $OPS WICK_FORCE_RTC=1
fi
if has san; then
  dev_san memcheck test_rope_kv 200 env WICK_TEST_DEVICES=cuda:0 $B/test_rope_kv
  dev_san racecheck test_rope_kv 200 env WICK_TEST_DEVICES=cuda:0 $B/test_rope_kv
  dev_san memcheck test_qact 200 env WICK_TEST_DEVICES=cuda:0 $B/test_qact
  dev_san racecheck test_qact 200 env WICK_TEST_DEVICES=cuda:0 $B/test_qact
  dev_san memcheck test_add_norm_mixed 200 env WICK_TEST_DEVICES=cuda:0 $B/test_add_norm_mixed
  dev_san racecheck test_add_norm_mixed 200 env WICK_TEST_DEVICES=cuda:0 $B/test_add_norm_mixed
fi
if has logits; then
  D=/tmp/wick_llama_test
  python3 tests/models/llama_ref.py test --bin $B/wick_llama --dir $D --device cuda:0 >"$O/logits.log" 2>&1
  step "llama logits vs numpy (cuda:0)" "rc=$? $(grep 'types within' "$O/logits.log" | tail -1)"
  python3 tests/models/llama_ref.py greedy --bin $B/wick_llama --dir $D --device cuda:0 >"$O/greedy.log" 2>&1
  step "greedy cpu vs cuda:0" "rc=$? $(tail -1 "$O/greedy.log")"
fi

# wick's rows for one type: before and after at pp512 / tg128, after at depth 4096
bench_type() {
  t=$1 f=$(model "$1")
  if [ -n "$BEFORE" ]; then
    timeout 200 $BEFORE "$f" --device cuda:0 --bench 512,128 --reps 3 >"$O/before_$t.log" 2>&1
    step "before $t" "$(grep '^bench:' "$O/before_$t.log" || tail -1 "$O/before_$t.log")"
  fi
  timeout 200 $B/wick_llama "$f" --device cuda:0 --bench 512,128 --reps 3 >"$O/after_$t.log" 2>&1
  step "after $t" "$(grep '^bench:' "$O/after_$t.log" || tail -1 "$O/after_$t.log")"
  timeout 200 $B/wick_llama "$f" --device cuda:0 --bench 512,128 --depth 4096 --reps 3 >"$O/after_d4096_$t.log" 2>&1
  step "after $t depth 4096" "$(grep '^bench:' "$O/after_d4096_$t.log" || tail -1 "$O/after_d4096_$t.log")"
  if [ -n "${LLAMA_BENCH:-}" ]; then
    timeout 300 "$LLAMA_BENCH" -m "$f" -p 512 -n 128 -ngl 99 -r 3 >"$O/llamacpp_$t.log" 2>&1
    step "llama.cpp $t" "rc=$? $(grep -E 'pp512|tg128' "$O/llamacpp_$t.log" | awk -F'|' '{printf "%s %s; ", $(NF-2), $(NF-1)}')"
    timeout 300 "$LLAMA_BENCH" -m "$f" -p 0 -n 128 -d 4096 -ngl 99 -r 3 >"$O/llamacpp_d4096_$t.log" 2>&1
    step "llama.cpp $t depth 4096" "rc=$? $(grep -E 'tg128' "$O/llamacpp_d4096_$t.log" | awk -F'|' '{printf "%s %s; ", $(NF-2), $(NF-1)}')"
  fi
}
has bench && bench_type q4_0

# kernels per single-token step under ncu: count and the sum of durations, by kernel name
prof_one() {
  label=$1 bin=$2 f=$(model q4_0)
  timeout 400 ncu --metrics gpu__time_duration.sum --clock-control none --cache-control none --csv \
    "$bin" "$f" --device cuda:0 --bench 1,2 --reps 1 --graph 0 >"$O/ncu_$label.csv" 2>"$O/ncu_$label.err"
  python3 - "$O/ncu_$label.csv" "$label" >"$O/prof_$label.txt" <<'EOF'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ui = h.index("Metric Unit")
t = collections.defaultdict(float); n = collections.Counter()
for r in rows[1:]:
    v = float(r[vi].replace(",", "")) * {"nsecond": 1e-3, "ns": 1e-3, "msecond": 1e3, "ms": 1e3}.get(r[ui], 1.0)
    name = r[ki].split("(")[0]; t[name] += v; n[name] += 1
steps = 6  # --bench 1,2 --reps 1: a warm-up and one timed run of 1 + 2 single-token steps
tot = sum(t.values()); cnt = sum(n.values())
print(f"{sys.argv[2]}: {cnt / steps:.1f} kernels per step, {tot / steps:.1f} us of kernel time per step")
for k in sorted(t, key=t.get, reverse=True)[:25]:
    print(f"  {k:48s} {n[k] / steps:7.1f} per step {t[k] / steps:9.1f} us  {t[k] / n[k]:7.2f} us each  {100 * t[k] / tot:5.1f}%")
EOF
  step "ncu $label" "$(head -1 "$O/prof_$label.txt")"
}
if has prof && command -v ncu >/dev/null 2>&1; then
  [ -n "$BEFORE" ] && prof_one before $BEFORE
  prof_one after $B/wick_llama
fi
if has qact; then
  f=$(model q4_0)
  qrun() { echo "$($@ "$f" --device cuda:0 --bench 64,128 --reps 3 2>&1 | grep '^bench:' | sed 's/ (3 reps.*//')"; }
  [ -n "$BEFORE" ] && step "qact: before" "$(qrun $BEFORE)"
  for q in none attn all; do step "qact: $q" "$(qrun $B/wick_llama --qact $q)"; done
  [ -n "$BEFORE" ] && step "qact: before again" "$(qrun $BEFORE)"
fi
if has types; then
  for t in $(echo "${DSTEP_TYPES:-q4_k,q8_0,f16}" | tr , ' '); do bench_type "$t"; rm -f "$M/$t.gguf"; done
fi

echo
echo "== decode step on $(cat "$O/gpu.txt"), commit $(git rev-parse --short HEAD 2>/dev/null)"
for f in "$O"/prof_*.txt; do [ -f "$f" ] && cat "$f"; done
[ -f "$O/logits.log" ] && { echo "-- logits"; grep -v '^$' "$O/logits.log" | tail -25; }
echo
cat "$S"
