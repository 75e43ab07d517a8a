#!/bin/sh
# generate.sh: regenerates src/bindings.rs from include/wick_dlpack.h (which includes wick.h) with
# Debian's bindgen. The output is committed; ctest's rust_bindgen_check runs this into a temporary
# file and fails if it differs from the committed one (same bindgen version; another version is
# reported as skipped, since bindgen's formatting changes between releases).
#   sh bindings/rust/wick-sys/generate.sh [OUT]      (OUT default: src/bindings.rs beside this)
# Choices: enums as newtypes (a value the C side adds later is representable, never UB), size_t as
# usize, bindgen's own layout tests kept (size, alignment and every field offset of every struct).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$here/src/bindings.rs}
bindgen "$root/include/wick_dlpack.h" \
    --allowlist-function 'wk_.*' --allowlist-type 'wk_.*|DL.*' \
    --allowlist-var 'WK_.*|DLPACK_.*' \
    --default-enum-style newtype --size_t-is-usize --no-doc-comments \
    -o "$out" -- -I"$root/include"
