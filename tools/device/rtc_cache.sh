#!/bin/sh
# rtc_cache.sh OUTDIR: run-time compilation (NVRTC) and the kernel cache on cuda:0 (wick issue
# 42, items 2 to 4): what a GPU that no embedded code object fits waits for, cold and warm.
# From the repository root on a machine with one NVIDIA GPU and CUDA (NVRTC):
#   sh tools/device/rtc_cache.sh OUTDIR
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90; the targets used);
#   2. every module's first use, one after the other, WICK_FORCE_RTC=1 (NVRTC for every module),
#      with an empty cache (cold: compiled and stored) and again in a new process (warm: read
#      from the cache), and with the embedded code objects (no NVRTC) for reference
#      (bench/gpu_rtc_bench.c: ms per module);
#   3. wk_device_warmup on 1, 4 and $(nproc) threads, cold (each with an empty cache) and warm;
#   4. `wick check --device cuda:0` whole: embedded; WICK_FORCE_RTC=1 cold; the same warm;
#   5. the tests' equivalents of Candle's test vectors: the known-answer tests (test_*_kat, one
#      process each, as a test runner starts them) on cuda:0 with WICK_FORCE_RTC=1, cold and
#      warm, and embedded;
#   6. a program that touches 10 ops (wick check --op with 10 rows, cold): which modules it
#      compiled (the cache's entries) and how long it took;
#   7. the cache on the real NVRTC path: every module's entry present after step 2, a flipped
#      byte in one entry discarded and rebuilt (the module compiled again, the others read),
#      WICK_CACHE_DISABLE=1 stores nothing;
#   8. the summary table last (also OUTDIR/rtc_cache/summary.txt), each time in seconds.
# The timing table of docs/performance.md ("Run-time compilation and the kernel cache") is made
# from this summary.
#   RTC_WARMUP_THREADS: the warm-up's thread counts (default "1 4 $(nproc)").
#   RTC_STAGES picks the steps (default "modules warmup check kats ten cache"; "cache" needs
#   "modules" in the same run); the whole list takes longer than one device call of 10 minutes.
set -u
. tools/device/lib.sh
dev_init rtc_cache "${1:-}"
dev_build wick_cli wick_gpu_rtc_bench test_unary_kat test_binary_kat test_reduce_kat \
  test_matmul_kat test_index_kat test_fused_kat test_cast_kat test_copy_kat test_conv_kat \
  test_image_kat test_quant_kat
dev_gpu
C=$O/caches
rm -rf "$C"
mkdir -p "$C"
export WICK_CACHE_MAXSIZE=4294967296 # every entry kept, whatever the default
# NVRTC keeps its own cache since CUDA 12.9 (its user guide, "Caching"): on 2026-12-05 the 10-op
# step compiled in 8.75 s modules that took about 240 s cold earlier in the same run. In case it
# follows the driver's cache variables (not verified), the driver's cache is off and elsewhere.
export CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH=$C/nv
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
ns() { date +%s%N; }
nentries() { ls "$1" 2>/dev/null | grep -c '\.wkrtc$'; }

STAGES=${RTC_STAGES:-modules warmup check kats ten cache}
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- 2. each module's first use
if has modules; then
bench_modules() { # LABEL ENV...
  label=$1
  shift
  env "$@" timeout 900 $B/wick_gpu_rtc_bench cuda:0 modules >"$O/modules_$label.txt" 2>&1
  rc=$?
  step "modules one by one ($label)" "rc=$rc $(awk '/^module/ { s += $3; n++ } END { printf "%d modules, %.1f s", n, s / 1000 }' "$O/modules_$label.txt"); $(grep '^cache' "$O/modules_$label.txt" | cut -d: -f2-)"
}
bench_modules embedded
bench_modules cold WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/modules
bench_modules warm WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/modules
step "per module (ms): cold / warm / embedded" ""
for m in $(awk '/^module/ { print $2 }' "$O/modules_cold.txt"); do
  step "  $m" "$(awk -v m=$m '$1 == "module" && $2 == m { printf "%s", $3 }' "$O/modules_cold.txt") / $(awk -v m=$m '$1 == "module" && $2 == m { printf "%s", $3 }' "$O/modules_warm.txt") / $(awk -v m=$m '$1 == "module" && $2 == m { printf "%s", $3 }' "$O/modules_embedded.txt")"
done

fi

# ---- 3. the warm-up on several threads
if has warmup; then
for th in ${RTC_WARMUP_THREADS:-1 4 $(nproc)}; do
  WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/warmup$th timeout 900 $B/wick_gpu_rtc_bench cuda:0 warmup $th \
    >"$O/warmup_cold_$th.txt" 2>&1
  step "wk_device_warmup cold, $th threads" "rc=$? $(awk '/^warmup/ { printf "%.1f s", $2 / 1000 } /^total/ { printf " (process %.1f s)", $2 / 1000 }' "$O/warmup_cold_$th.txt")"
done
WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/warmup$(nproc) timeout 900 $B/wick_gpu_rtc_bench cuda:0 warmup 0 \
  >"$O/warmup_warm.txt" 2>&1
step "wk_device_warmup warm" "rc=$? $(awk '/^warmup/ { printf "%.2f s", $2 / 1000 } /^total/ { printf " (process %.2f s)", $2 / 1000 }' "$O/warmup_warm.txt")"

fi

# ---- 4. wick check whole
check() { # LABEL ENV...
  label=$1
  shift
  t=$(ns)
  env "$@" timeout 1800 $B/wick check --device cuda:0 >"$O/check_$label.txt" 2>&1
  rc=$?
  step "wick check --device cuda:0 ($label)" "rc=$rc $(secs $t $(ns)) s $(grep summary "$O/check_$label.txt" | sed 's/.*summary/summary/')"
}
if has check; then
check embedded
check rtc_cold WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/check
check rtc_warm WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/check
step "  cache entries after wick check" "$(nentries $C/check)"
fi

# ---- 5. the known-answer tests, one process each
kats() { # LABEL ENV...
  label=$1
  shift
  t=$(ns)
  fails=0
  for k in test_unary_kat test_binary_kat test_reduce_kat test_matmul_kat test_index_kat \
      test_fused_kat test_cast_kat test_copy_kat test_conv_kat test_image_kat test_quant_kat; do
    env WICK_TEST_DEVICES=cuda:0 "$@" timeout 900 $B/$k >"$O/kat_${label}_$k.log" 2>&1 ||
      fails=$((fails + 1))
  done
  step "11 KAT programs on cuda:0 ($label)" "$(secs $t $(ns)) s, $fails failed"
}
if has kats; then
kats embedded
kats rtc_cold WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/kat
kats rtc_warm WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/kat
fi

# ---- 6. ten ops
if has ten; then
OPS=add,mul,exp,sum,matmul,softmax_last_dim,rms_norm,rope,index_select,to_dtype
t=$(ns)
WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/ten timeout 900 $B/wick check --device cuda:0 --op $OPS \
  >"$O/check_ten.txt" 2>&1
step "wick check --op (10 ops), cold" "rc=$? $(secs $t $(ns)) s, modules compiled: $(ls $C/ten | sed -n 's/-sm_.*//p' | tr '\n' ' ')"

fi

# ---- 7. the cache on the real NVRTC path
if has cache; then
n=$(nentries $C/modules)
step "entries after the modules run" "$n (of $(grep -c '^module' "$O/modules_cold.txt") modules)"
e=$(ls $C/modules/*.wkrtc | head -1)
python3 - "$e" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[len(b) // 2] ^= 0x40
open(p, 'wb').write(b)
EOF
WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/modules timeout 900 $B/wick_gpu_rtc_bench cuda:0 modules \
  >"$O/modules_corrupt.txt" 2>&1
step "one entry flipped ($(basename "$e" | cut -d- -f1))" "rc=$? compiled again: $(awk '$4 == "compiled" { printf "%s ", $2 }' "$O/modules_corrupt.txt"); $(grep '^cache' "$O/modules_corrupt.txt" | cut -d: -f2-)"
WICK_CACHE_DISABLE=1 WICK_FORCE_RTC=1 WICK_CACHE_DIR=$C/off timeout 900 $B/wick_gpu_rtc_bench \
  cuda:0 modules >"$O/modules_off.txt" 2>&1
step "WICK_CACHE_DISABLE=1" "rc=$? entries $(nentries $C/off), $(grep '^cache' "$O/modules_off.txt")"
fi
$B/wick devices >"$O/devices.txt" 2>&1
WICK_FORCE_RTC=1 $B/wick devices >"$O/devices_rtc.txt" 2>&1
step "wick devices" "$(grep -A1 'cuda:0' "$O/devices.txt" | tail -1 | sed 's/^ *//')"
step "wick devices (WICK_FORCE_RTC=1)" "$(grep -A1 'cuda:0' "$O/devices_rtc.txt" | tail -1 | sed 's/^ *//')"
step "kernel cache line" "$(grep '^kernel cache' "$O/devices.txt")"
step total "$(( $(date +%s) - t0 )) s"
echo
cat "$S"
