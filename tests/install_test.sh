#!/bin/sh
# install_test.sh BUILD_DIR SOURCE_DIR: checks that an installed wick can be used.
# Installs BUILD_DIR into a temporary prefix (cmake --install), then builds and runs
# tests/install/hello.c against it twice: with `$CC hello.c $(pkg-config --cflags --libs wick)`
# and as a CMake project using find_package(wick REQUIRED) + wick::wick. Also checks that the
# shared library has no load-time dependency on a GPU library. Exits non-zero on any failure.
# CC defaults to cc. Run by ctest as install_pkgconfig.
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
CC=${CC:-cc}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wick-install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
PREFIX=$TMP/prefix

fail() {
    echo "FAIL: $*"
    exit 1
}

echo "check: cmake --install $BUILD --prefix $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 || {
    cat "$TMP/install.log"
    fail "cmake --install"
}

# GNUInstallDirs may choose lib, lib64 or lib/<multiarch>: find what was installed.
PC=$(find "$PREFIX" -path '*/pkgconfig/wick.pc' | head -n 1)
[ -n "$PC" ] || fail "no pkgconfig/wick.pc under $PREFIX"
PCDIR=$(dirname "$PC")
LIBDIR=$(dirname "$PCDIR")
echo "check: installed files (libdir ${LIBDIR#"$PREFIX"/})"
[ -f "$PREFIX/include/wick.h" ] || fail "include/wick.h not installed"
ls "$LIBDIR"/libwick.so* >/dev/null 2>&1 || fail "libwick.so not installed in $LIBDIR"
[ -f "$LIBDIR/libwick.a" ] || fail "libwick.a not installed in $LIBDIR"
CFG=$(find "$PREFIX" -name wickConfig.cmake | head -n 1)
[ -n "$CFG" ] || fail "wickConfig.cmake not installed"
echo "  ok: wick.h, libwick.so, libwick.a, wick.pc, wickConfig.cmake"

# No load-time dependency on GPU libraries (they are dlopen'ed at first use).
if command -v readelf >/dev/null 2>&1; then
    SO=$(ls "$LIBDIR"/libwick.so* | head -n 1)
    NEEDED=$(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    echo "check: NEEDED of $(basename "$SO"): $NEEDED"
    case " $NEEDED " in
    *libcuda* | *libcudart* | *libcublas* | *libnvrtc* | *libamdhip* | *libhiprtc* | *librocblas*)
        fail "libwick.so links a GPU library at load time: $NEEDED" ;;
    esac
    echo "  ok: no GPU library among them"
fi

# Size: the embedded code objects (every ahead-of-time CUDA and AMD target) must keep the shared
# library under 40 MB (the AMD bundles are zstd-compressed, see cmake/gpu.cmake; the debug info is
# zlib-compressed by the linker, see CMakeLists.txt).
SO=$(ls "$LIBDIR"/libwick.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$SO" ] || SO=$(ls "$LIBDIR"/libwick.so* | head -n 1)
BYTES=$(wc -c <"$SO")
echo "check: size of $(basename "$SO"): $BYTES bytes"
[ "$BYTES" -lt 40000000 ] || fail "libwick.so is $BYTES bytes, over the 40 MB limit"
echo "  ok: under 40 MB"

echo "check: pkg-config"
FLAGS=$(PKG_CONFIG_PATH="$PCDIR" pkg-config --cflags --libs wick) || fail "pkg-config --cflags --libs wick"
echo "  flags: $FLAGS"
# The .pc file must describe where it was installed, not the configured CMAKE_INSTALL_PREFIX.
case "$FLAGS" in
*"$PREFIX"*) ;;
*) fail "pkg-config flags do not point into the install prefix $PREFIX (wick.pc is not relocatable)" ;;
esac
# shellcheck disable=SC2086 # FLAGS is a list of flags
"$CC" -std=c11 -Wall -Wextra -o "$TMP/hello_pc" "$SRC/tests/install/hello.c" $FLAGS ||
    fail "compiling hello.c with pkg-config flags"
LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$TMP/hello_pc" || fail "hello (pkg-config) failed"
echo "  ok: built and ran with pkg-config"

echo "check: CMake find_package(wick)"
mkdir -p "$TMP/consumer"
cp "$SRC/tests/install/hello.c" "$TMP/consumer/hello.c"
cat >"$TMP/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(wick_consumer C)
find_package(wick REQUIRED)
add_executable(x hello.c)
target_link_libraries(x wick::wick)
CMAKE
cmake -S "$TMP/consumer" -B "$TMP/consumer/build" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_C_COMPILER="$CC" >"$TMP/consumer.log" 2>&1 &&
    cmake --build "$TMP/consumer/build" >>"$TMP/consumer.log" 2>&1 || {
    cat "$TMP/consumer.log"
    fail "building the find_package(wick) project"
}
LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$TMP/consumer/build/x" ||
    fail "hello (CMake) failed"
echo "  ok: built and ran with find_package(wick) and wick::wick"
echo "install test passed"
