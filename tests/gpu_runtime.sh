#!/bin/sh
# gpu_runtime.sh: every check of the GPU runtime half in one run, for a machine with a GPU.
#   sh tests/gpu_runtime.sh [BUILD_DIR]        (from the repository root; default build-gpu)
# Configures and builds BUILD_DIR if it has no test_gpu_runtime yet (WICK_HIP=OFF there: the AMD
# code objects are not needed to test on NVIDIA), then runs:
#   1. `wick devices` (what the library sees, and why a backend is unavailable);
#   2. test_gpu_runtime: no GPU library in DT_NEEDED, the embedded targets, NVRTC of every kernel
#      source, and on every device: memory, the caching allocator, 16 threads' first call at once,
#      out-of-memory and recovery, WICK_FORCE_RTC=1 bit-identical results, WICK_GPU_NO_CACHE=1;
#   3. the same test with WICK_GPU_NO_CACHE=1 under compute-sanitizer memcheck (if installed), so
#      every buffer has its true bounds.
# Prints one line per step and exits non-zero if any step failed (no usable GPU is a failure here).
set -u
BUILD=${1:-build-gpu}
JOBS=$(nproc 2>/dev/null || echo 2)
status=0

if [ ! -x "$BUILD/test_gpu_runtime" ]; then
  echo "== build $BUILD"
  cmake -S . -B "$BUILD" -DWICK_HIP=OFF >"$BUILD.configure.log" 2>&1 &&
    cmake --build "$BUILD" -j"$JOBS" >"$BUILD.build.log" 2>&1 || {
      echo "FAIL: build (see $BUILD.configure.log, $BUILD.build.log)"; tail -20 "$BUILD.build.log"; exit 1; }
fi

echo "== wick devices"
if [ -x "$BUILD/wick" ]; then
  "$BUILD/wick" devices || { echo "FAIL: wick devices"; status=1; }
else
  echo "skip: $BUILD/wick not built"
fi

echo "== test_gpu_runtime"
WICK_TEST_REQUIRE_GPU=1 "$BUILD/test_gpu_runtime" || { echo "FAIL: test_gpu_runtime"; status=1; }

SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
echo "== test_gpu_runtime under compute-sanitizer memcheck, WICK_GPU_NO_CACHE=1"
if [ -n "$SAN" ]; then
  WICK_TEST_REQUIRE_GPU=1 WICK_GPU_NO_CACHE=1 WICK_TEST_NO_RTC=1 "$SAN" --tool memcheck --error-exitcode 99 \
    --leak-check full "$BUILD/test_gpu_runtime" >"$BUILD/gpu_runtime_memcheck.log" 2>&1
  rc=$?
  tail -5 "$BUILD/gpu_runtime_memcheck.log"
  [ $rc -eq 0 ] || { echo "FAIL: memcheck (rc $rc, see $BUILD/gpu_runtime_memcheck.log)"; status=1; }
else
  echo "skip: compute-sanitizer not found"
fi

[ $status -eq 0 ] && echo "gpu_runtime.sh: all steps passed" || echo "gpu_runtime.sh: FAILED"
exit $status
