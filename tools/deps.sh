#!/bin/sh
# deps.sh: make sure the Debian packages wick's build needs are present. As root, installs the
# missing ones with apt-get; otherwise prints the one command to run. Used by the Makefile.
#   tools:     a C compiler, a C++ compiler (the simt device's kernels), make, cmake, pkg-config,
#              binutils, python3 with venv (found by command name and module)
#   libraries: OpenMP, OpenBLAS, SLEEF, jansson, PCRE2 and zstd, decided by the same CMake code the
#              build runs (cmake/deps.cmake through cmake/probe), so a look-alike package cannot
#              fool it
#   optional:  WICK_DEPS_CLANG=1 adds clang with libFuzzer and libomp (make fuzz, make tsan);
#              WICK_DEPS_HIP=1 adds hipcc, libamdhip64-dev, rocm-device-libs (proven by compiling
#              a kernel) and clang-19, lld-19, llvm-19 (cmake/hip_clang.cmake: the AMD code
#              objects of every target); nvcc (the NVIDIA code objects) comes from the CUDA
#              toolkit, not Debian, and is used when found
set -u
here=$(cd "$(dirname "$0")/.." && pwd)

# install PKG...: apt-get as root, else print the command and fail.
install() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "deps: installing $*"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } || {
            echo "deps: apt-get install $* failed"; exit 1; }
    else
        echo "deps: missing packages; run as root:  apt-get install -y $*"
        exit 1
    fi
}

# 1. tools, by the commands the build runs
need=""
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need="$need gcc"
command -v make >/dev/null 2>&1 || need="$need make"
# the simt device compiles the GPU kernels as C++ (cmake/simt.cmake)
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v readelf >/dev/null 2>&1 || need="$need binutils"
# python3 with venv/ensurepip: the test suite's environment (tools/pydeps.sh)
if ! command -v python3 >/dev/null 2>&1; then
    need="$need python3 python3-venv"
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    need="$need python3-venv"
fi
# WICK_DEPS_CLANG=1 (make fuzz, make tsan): clang with libFuzzer and its OpenMP runtime, proven by
# building a fuzzer and an OpenMP program (clang, libclang-rt-14-dev, libomp-14-dev)
if [ "${WICK_DEPS_CLANG:-0}" = 1 ]; then
    command -v clang >/dev/null 2>&1 || need="$need clang"
    if command -v clang >/dev/null 2>&1; then
        t=$(mktemp -d "${TMPDIR:-/tmp}/wick-clang.XXXXXX") || exit 1
        printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$t/f.c"
        clang -fsanitize=fuzzer "$t/f.c" -o "$t/f" >/dev/null 2>&1 || need="$need libclang-rt-14-dev"
        printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n' >"$t/o.c"
        clang -fopenmp "$t/o.c" -o "$t/o" >/dev/null 2>&1 || need="$need libomp-14-dev"
        rm -rf "$t"
    else
        need="$need libclang-rt-14-dev libomp-14-dev"
    fi
fi
# shellcheck disable=SC2086 # a list of package names
[ -z "$need" ] || install $need

# 2. libraries, by what CMake finds (cmake/deps.cmake)
probe() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-deps.XXXXXX") || exit 1
    hip=OFF
    [ "${WICK_DEPS_HIP:-0}" = 1 ] && hip=ON
    if ! cmake -S "$here/cmake/probe" -B "$tmp" -DWICK_DEPS_OUT="$tmp/missing" \
            -DWICK_DEPS_HIP=$hip >"$tmp/log" 2>&1; then
        cat "$tmp/log"
        rm -rf "$tmp"
        echo "deps: the dependency probe (cmake/probe) failed"
        exit 1
    fi
    missing=$(cat "$tmp/missing")
    rm -rf "$tmp"
}
# A found tool can reveal what it needs in turn (hipcc: the device libraries), so probe again
# after each install, until nothing is missing or a round installs nothing new.
last=""
while probe; [ -n "$missing" ]; do
    [ "$missing" = "$last" ] && { echo "deps: still missing after installing: $missing"; exit 1; }
    # shellcheck disable=SC2086
    install $missing
    last=$missing
done
exit 0
