#!/bin/sh
# deps.sh: make sure the Debian packages wick's build needs are present. As root, installs the
# missing ones with apt-get; otherwise prints the one command to run. Used by the Makefile.
#   required: a C compiler, make, cmake, pkg-config, binutils, OpenBLAS (OpenMP comes with gcc)
#   optional: hipcc + libamdhip64-dev + rocm-device-libs (the AMD code objects; WICK_DEPS_HIP=1
#             installs them), nvcc (the NVIDIA code objects; from the CUDA toolkit, not Debian)
set -u
need=""
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need="$need gcc"
command -v make >/dev/null 2>&1 || need="$need make"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v readelf >/dev/null 2>&1 || need="$need binutils"
[ -f /usr/include/x86_64-linux-gnu/cblas.h ] || ls /usr/include/*/openblas*/cblas.h >/dev/null 2>&1 || \
  [ -f /usr/include/cblas.h ] || need="$need libopenblas-dev"
if [ "${WICK_DEPS_HIP:-0}" = 1 ]; then
  command -v hipcc >/dev/null 2>&1 || need="$need hipcc"
  [ -f /usr/include/hip/hip_runtime_api.h ] || need="$need libamdhip64-dev"
  ls /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc >/dev/null 2>&1 || need="$need rocm-device-libs"
fi
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing$need"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends $need >/dev/null || {
    echo "deps: apt-get install failed"; exit 1; }
else
  echo "deps: missing packages; run as root:  apt-get install -y$need"
  exit 1
fi
