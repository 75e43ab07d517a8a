#!/bin/sh
# tools/device/rel.sh OUTDIR: the GPU half of issue 18's thread and allocation-failure work.
# Assumes the CUDA build in build-gpu (sh tools/gpu_check.sh "$OUT" build). Runs, on every CUDA
# device: test_threads (threads sharing one device handle, a shared random stream, handles opened
# and closed per thread, per-thread errors on own handles) and test_alloc_fail (host allocation
# failure at every point of every op family and of the GGUF reader, cold and warm module caches),
# then test_threads under compute-sanitizer memcheck. Logs in OUTDIR; a table last.
set -u
O=${1:-${OUT:-gpu-out}}/rel
mkdir -p "$O"
B=build-gpu
export PATH="$PATH:/usr/local/cuda/bin"
S=$O/summary.txt
: >"$S"
row() { printf '%-34s %-8s %s\n' "$1" "$2" "$3" | tee -a "$S" >/dev/null; }
run() { # name, command...
    n=$1
    shift
    t0=$(date +%s)
    "$@" >"$O/$n.log" 2>&1
    rc=$?
    row "$n" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "$(($(date +%s) - t0)) s, $(tail -n 1 "$O/$n.log")"
}
cmake --build "$B" -j"$(nproc)" --target test_threads test_alloc_fail >"$O/build.log" 2>&1 ||
    row build FAIL "see $O/build.log"
run test_threads "$B/test_threads"
run test_alloc_fail "$B/test_alloc_fail"
if command -v compute-sanitizer >/dev/null 2>&1; then
    run memcheck_test_threads compute-sanitizer --tool memcheck --error-exitcode 1 "$B/test_threads"
fi
printf '%-34s %-8s %s\n' check result detail
cat "$S"
