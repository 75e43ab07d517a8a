#!/bin/sh
# faults.sh OUTDIR: the GPU half of wick issue 36 ("Nothing lost": files, long runs, faults) on
# cuda:0. From the repository root on a machine with one NVIDIA GPU and CUDA:
#   sh tools/device/faults.sh OUTDIR
#   1. build (build-gpu: CUDA code objects for WICK_CUDA_ARCHS, default 90; only the targets used
#      here): test_faults, test_atomic_file, wick_soak;
#   2. test_faults on cpu and cuda:0: threads running ops while the handle is closed (twice);
#      1 GiB storages allocated until WK_ERR_OUT_OF_MEMORY, then as many again after freeing; a
#      kernel made to write to the first page (an internal call past the front end's checks):
#      every later call must report the lost context, a second open must be refused, and after
#      every storage and handle is gone a fresh wk_device_open either runs ops again
#      ("recovered" in the log) or fails saying the process must restart ("not recovered"):
#      docs/semantics.md, "Faults", is to record which one this driver gives;
#   3. test_atomic_file (host only; the file half, run here too since it is quick);
#   4. the soak: wick_soak --device cuda:0, one million mixed small ops, a sample every 10,000
#      (RSS, the caching allocator's live and cached bytes, the driver's used memory, driver
#      allocations), table in OUTDIR/faults/soak_cuda.txt; then the short run with --check;
#   5. the summary table last (also OUTDIR/faults/summary.txt). About 2 minutes after the build.
set -u
. tools/device/lib.sh
dev_init faults "${1:-}"
dev_build test_faults test_atomic_file wick_soak
dev_gpu

# ---- 2. faults on cuda:0
WICK_TEST_DEVICES=cpu,cuda:0 timeout 300 $B/test_faults >"$O/test_faults.log" 2>&1
step "test_faults (cpu, cuda:0)" "rc=$? $(tail -1 "$O/test_faults.log")"
grep -m8 FAIL "$O/test_faults.log"
step "cuda:0 out of memory" "$(grep -m1 'cuda:0: full after' "$O/test_faults.log" | cut -c1-150)"
step "cuda:0 after the fault" "$(grep -m1 'cuda:0: after the fault' "$O/test_faults.log" | cut -c1-150)"
step "cuda:0 reopened" "$(grep -m1 -E 'cuda:0: (recovered|not recovered)' "$O/test_faults.log" | cut -c1-150)"

# ---- 3. files
timeout 120 $B/test_atomic_file >"$O/test_atomic_file.log" 2>&1
step "test_atomic_file" "rc=$? $(tail -1 "$O/test_atomic_file.log")"

# ---- 4. the soak
timeout 900 $B/wick_soak --device cuda:0 >"$O/soak_cuda.txt" 2>&1
step "wick_soak cuda:0 (1,000,000 ops)" "rc=$? $(grep summary "$O/soak_cuda.txt")"
grep -E '^  (rss|live|cached|driver|dallocs) ' "$O/soak_cuda.txt" | tee -a "$S"
timeout 120 $B/wick_soak --device cuda:0 --ops 20000 --every 1000 --check >"$O/soak_cuda_check.txt" 2>&1
step "wick_soak cuda:0 --check (20,000 ops)" "rc=$? $(tail -1 "$O/soak_cuda_check.txt" | cut -c1-100)"

echo "== faults GPU half ($(git rev-parse --short HEAD 2>/dev/null), $(( $(date +%s) - t0 )) s)"
cat "$S"
