#!/bin/sh
# check_bindings.sh: fails if src/bindings.rs is not what generate.sh makes from today's headers
# (someone changed include/wick.h or include/wick_dlpack.h without regenerating). The ctest
# rust_bindgen_check. A bindgen of another version than the one that made the committed file
# formats differently: that case prints a "skip:" line instead of comparing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v bindgen >/dev/null 2>&1; then
    echo "skip: bindgen not installed (Debian: bindgen)"; exit 0
fi
want=$(head -1 "$here/src/bindings.rs" | sed -n 's/.*rust-bindgen \([0-9.]*\).*/\1/p')
have=$(bindgen --version | sed -n 's/^bindgen \([0-9.]*\).*/\1/p')
if [ "$want" != "$have" ]; then
    echo "skip: bindgen $have here, the committed bindings come from bindgen $want"; exit 0
fi
tmp=$(mktemp "${TMPDIR:-/tmp}/wick-bindings.XXXXXX.rs")
trap 'rm -f "$tmp"' EXIT
sh "$here/generate.sh" "$tmp"
if cmp -s "$tmp" "$here/src/bindings.rs"; then
    echo "bindings.rs matches the headers (bindgen $have)"
else
    diff -u "$here/src/bindings.rs" "$tmp" | head -40
    echo "FAIL: bindings/rust/wick-sys/src/bindings.rs is stale: run sh bindings/rust/wick-sys/generate.sh"
    exit 1
fi
