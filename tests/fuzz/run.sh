#!/bin/sh
# run.sh BUILD SECONDS [NAME...]: fuzzes each harness (default: every fuzz_* in BUILD) for
# SECONDS, starting from the committed seeds, and prints one line per harness and a table.
# The growing corpus lives in BUILD/fuzz-corpus/NAME (kept between runs), crash inputs in
# BUILD/fuzz-artifacts/NAME/. Exit status 1 if any harness found a crash, leak or timeout.
# A crash input goes into tests/fuzz/corpus/NAME/ (named regress-*) with its fix, so the replay
# test keeps it (tests/fuzz/README.md).
set -u
build=$1
secs=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
    set --
    for f in "$build"/fuzz_*; do
        n=$(basename "$f")
        case $n in fuzz_replay_*|*.*) continue ;; esac
        [ -x "$f" ] && set -- "$@" "${n#fuzz_}"
    done
fi
[ $# -gt 0 ] || { echo "run.sh: no fuzz_* programs in $build (build the target wick_fuzzers)"; exit 1; }
# Harnesses run side by side, WICK_FUZZ_JOBS at a time (default: the core count), each on one
# core; the lines and the table keep the order of the names.
jobs=${WICK_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
fuzz_one() { # fuzz_one NAME: runs one harness, writes BUILD/fuzz-NAME.rc
    corpus=$build/fuzz-corpus/$1
    art=$build/fuzz-artifacts/$1
    mkdir -p "$corpus" "$art"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$build/fuzz_$1" -max_total_time="$secs" -timeout=60 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$art/" "$corpus" "$src/corpus/$1" \
        >"$build/fuzz-$1.log" 2>&1
    echo $? >"$build/fuzz-$1.rc"
}
n=0
for name in "$@"; do
    fuzz_one "$name" &
    n=$((n + 1))
    if [ $n -ge "$jobs" ]; then
        wait
        n=0
    fi
done
wait
status=0
table=""
for name in "$@"; do
    log=$build/fuzz-$name.log
    art=$build/fuzz-artifacts/$name
    rc=$(cat "$build/fuzz-$name.rc" 2>/dev/null || echo 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    execs=$(grep 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    if [ "$rc" -eq 0 ]; then res=ok; else res="FOUND (rc $rc, $log, $art)"; status=1; fi
    echo "fuzz_$name: ${execs:-?} executions in ${secs}s, cov ${cov:-?}, ft ${ft:-?}: $res"
    [ "$rc" -eq 0 ] || grep -E 'ERROR|FUZZ_CHECK|runtime error|SUMMARY' "$log" | head -n 5
    table="$table$(printf '%-14s %12s %8s %8s  %s' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$res")
"
done
printf '%-14s %12s %8s %8s  %s\n' harness executions cov ft result
printf '%s' "$table"
exit $status
