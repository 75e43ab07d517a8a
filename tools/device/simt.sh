#!/bin/sh
# tools/device/simt.sh OUTDIR: the GPU half of the simt work, for the device machine. Assumes the
# CUDA build in build-gpu (sh tools/gpu_check.sh "$OUT" build). The only kernel source change of
# the simt branch is the dynamic shared memory of kernels/sort.cu, now declared through gpu.h's
# WK_SHARED_DYN: this re-checks arg_sort on cuda:0 from the embedded fatbin and from NVRTC
# (WICK_FORCE_RTC=1, which compiles the new gpu.h at run time), then runs the whole parity
# matrix on simt:0 and simt:1 on that machine too (the GPU build has the simt device as well).
# Logs in OUTDIR; a summary table is printed last. About 3 minutes.
set -u
R=${1:-${OUT:-simt-out}}
mkdir -p "$R"
B=build-gpu
S=$R/summary.txt
: >"$S"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$S" >/dev/null; }
run() { # name, log, command...
  name=$1; log=$2; shift 2
  t0=$(date +%s)
  if "$@" >"$R/$log" 2>&1; then st=ok; else st=FAIL; fi
  row "$name" "$st ($(( $(date +%s) - t0 )) s): $(tail -n 1 "$R/$log")"
}
[ -x $B/wick ] || { echo "no $B/wick: run sh tools/gpu_check.sh \"\$OUT\" build first"; exit 1; }
$B/wick devices >"$R/devices.txt" 2>&1
run "arg_sort cuda:0 (embedded fatbin)" sort_cuda.log $B/wick check --device cuda:0 --op arg_sort_last_dim
run "arg_sort cuda:0 (NVRTC, WICK_FORCE_RTC=1)" sort_rtc.log env WICK_FORCE_RTC=1 $B/wick check --device cuda:0 --op arg_sort_last_dim
run "parity simt:0 (32 lanes)" simt32.log $B/wick check --device simt:0
run "parity simt:1 (64 lanes)" simt64.log $B/wick check --device simt:1
echo "== simt GPU half ($(git rev-parse --short HEAD 2>/dev/null))"
cat "$S"
