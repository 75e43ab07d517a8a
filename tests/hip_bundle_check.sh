#!/bin/sh
# hip_bundle_check.sh: proves the AMD code objects of a build (ctest hip_bundle_check; cmake/gpu.cmake
# adds it when the build has them). For every module's offload bundle (GEN/<module>.hsaco):
#   - its entries are exactly the expected targets, each an ELF code object for that gfx target
#     (the machine in its ELF header), of code object version 4 or later;
#   - every kernel the source defines for AMD is in every target: the kernel descriptors
#     (<name>.kd symbols) of each entry equal the kernels that the host C++ preprocessor finds in
#     kernels/<module>.cu read as the simt device reads it, with the AMD side of its #ifs for
#     that target (-DWK_SIMT -DWK_HIP -D__gfx90a__: WK_KERNEL becomes "wk_simt_kvoid NAME(", see
#     cmake/simt_table.cmake; the matrix-core GEMMs exist only on gfx908/90a/94x);
#     without a C++ compiler, every entry has the same non-empty set as the first.
# usage: hip_bundle_check.sh SRC GEN BUNDLER READELF TARGETS [CXX]
#   SRC the source tree, GEN the build's gen/, TARGETS gfx900,gfx906,..., CXX the host C++ compiler
set -u
export LC_ALL=C
src=$1 gen=$2 bundler=$3 readelf=$4 targets=$5 cxx=${6:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-bundle.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
want=$(printf '%s\n' "$targets" | tr ',' '\n' | sed 's/:.*//' | sort -u)
pass=0 fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
# The gfx macros the sources test: a target that none of them names preprocesses as any other
# such target does, so each module is preprocessed once per named target and once for the rest.
named=$(grep -rhoE '__gfx[0-9a-z]+__' "$src/kernels" "$src/src/core" "$src/src/simt" \
          "$src/include" 2>/dev/null | sort -u)
for b in "$gen"/*.hsaco; do
    [ -f "$b" ] || continue
    mod=$(basename "$b" .hsaco)
    ids=$("$bundler" --list --type=o --input="$b") || { bad "$mod: not a bundle"; continue; }
    got=$(printf '%s\n' "$ids" | sed -n 's/^hipv4-amdgcn-amd-amdhsa--//p' | sed 's/:.*//' | sort -u)
    if [ "$got" != "$want" ]; then
        bad "$mod: targets $(echo $got) != expected $(echo $want)"
        continue
    fi
    first="" n=0 ok=1
    hip_ids=$(printf '%s\n' "$ids" | grep '^hipv4-')
    outs="" # every entry unbundled in one call
    for id in $hip_ids; do outs="$outs --output=$tmp/$mod.${id#hipv4-amdgcn-amd-amdhsa--}.co"; done
    # shellcheck disable=SC2086
    "$bundler" --unbundle --type=o --targets="$(echo $hip_ids | tr ' ' ',')" --input="$b" $outs || {
        bad "$mod: cannot unbundle"; continue; }
    for id in $hip_ids; do
        t=${id#hipv4-amdgcn-amd-amdhsa--}
        co="$tmp/$mod.$t.co"
        elf=$("$readelf" -h --syms "$co" 2>/dev/null)
        mach=$(printf '%s\n' "$elf" | sed -n 's/^ *Flags: *0x[0-9a-fA-F]*, *\([a-z0-9]*\).*/\1/p')
        abi=$(printf '%s\n' "$elf" | sed -n 's/^ *ABI Version: *\([0-9]*\)/\1/p')
        if [ "$mach" != "${t%%:*}" ]; then
            bad "$mod $t: the code object is for '$mach'"; ok=0
        fi
        if [ -z "$abi" ] || [ "$abi" -lt 2 ]; then # ELFABIVERSION_AMDGPU_HSA_V4 = 2
            bad "$mod $t: code object ABI version '$abi' (older than v4)"; ok=0
        fi
        ks=$(printf '%s\n' "$elf" | awk '$NF ~ /\.kd$/ { sub(/\.kd$/, "", $NF); print $NF }' | sort -u)
        ref=""
        if [ -n "$cxx" ] && [ -f "$src/kernels/$mod.cu" ]; then # as clang sees it for this target
            key=other
            printf '%s\n' "$named" | grep -qx "__${t%%:*}__" && key=${t%%:*}
            [ -f "$tmp/ref.$mod.$key" ] ||
                "$cxx" -x c++ -std=c++17 -E -DWK_SIMT -DWK_HIP "-D__${t%%:*}__" -I"$src/kernels" \
                    -I"$src/src/core" -I"$src/src/simt" -I"$src/include" "$src/kernels/$mod.cu" \
                    2>/dev/null | grep -oE 'wk_simt_kvoid[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' |
                  sed -E 's/wk_simt_kvoid[[:space:]]+//; s/[[:space:]]*\($//' | sort -u >"$tmp/ref.$mod.$key"
            ref=$(cat "$tmp/ref.$mod.$key")
            [ -n "$ref" ] || { bad "$mod $t: the preprocessor found no kernel in kernels/$mod.cu"; ok=0; continue; }
        fi
        if [ -z "$ks" ]; then
            bad "$mod $t: no kernel"; ok=0; continue
        fi
        if [ -n "$ref" ]; then
            printf '%s\n' "$ks" > "$tmp/ks"
            missing=$(comm -23 "$tmp/ref.$mod.$key" "$tmp/ks")
            extra=$(comm -13 "$tmp/ref.$mod.$key" "$tmp/ks")
            [ -z "$missing" ] || { bad "$mod $t: kernels missing: $(echo $missing | cut -c1-300)"; ok=0; }
            [ -z "$extra" ] || { bad "$mod $t: kernels the source does not define: $(echo $extra | cut -c1-300)"; ok=0; }
        elif [ -z "$first" ]; then
            first=$ks
        elif [ "$ks" != "$first" ]; then
            bad "$mod $t: another kernel set than the first target's"; ok=0
        fi
        n=$(printf '%s\n' "$ks" | wc -l)
        rm -f "$co"
    done
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "ok   $mod: $(echo $want | wc -w) targets, $n kernels in the last$([ -n "$cxx" ] && echo ', each target as the source defines for it')"
    fi
done
[ $((pass + fail)) -gt 0 ] || bad "no bundle in $gen"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
