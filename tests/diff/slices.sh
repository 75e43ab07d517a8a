#!/bin/sh
# slices.sh LIB DEVICE LOGDIR: tests/diff/torch_diff.py against PyTorch on DEVICE, one seeded run
# of DIFF_CASES cases (default 60000) cut into DIFF_JOBS (default 8) slices run in parallel
# (seed DIFF_SEED, default 13; a slice's cases are the same as in one long run). Logs
# LOGDIR/diff_<j>.txt; prints the first failures, then one line:
#   torch_diff DEVICE (seed S): N cases, F FAIL, B slices without a summary
# and exits 1 when F or B is not 0 (or no case ran). Used by tools/gpu_check.sh (stage diff)
# and tools/device/numerics.sh.
set -u
LIB=${1:?usage: slices.sh LIB DEVICE LOGDIR}
DEV=${2:?usage: slices.sh LIB DEVICE LOGDIR}
O=${3:?usage: slices.sh LIB DEVICE LOGDIR}
PY=${PYTHON:-python3}
N=${DIFF_CASES:-60000}
J=${DIFF_JOBS:-8}
SEED=${DIFF_SEED:-13}
HERE=$(dirname "$0")
mkdir -p "$O"
per=$(( (N + J - 1) / J ))
j=0
while [ $j -lt $J ]; do
  PYTHONUNBUFFERED=1 $PY "$HERE/torch_diff.py" --lib "$LIB" --device "$DEV" --seed $SEED \
      --first $(( j * per )) --cases $per >"$O/diff_$j.txt" 2>&1 &
  j=$(( j + 1 ))
done
wait
cases=0; fails=0; bad=0
j=0
while [ $j -lt $J ]; do
  line=$(grep '^summary' "$O/diff_$j.txt")
  [ -n "$line" ] || bad=$(( bad + 1 ))
  c=$(echo "$line" | sed -n 's/^summary: \([0-9]*\) cases.*/\1/p'); cases=$(( cases + ${c:-0} ))
  f=$(echo "$line" | sed -n 's/.* \([0-9]*\) FAIL.*/\1/p'); fails=$(( fails + ${f:-0} ))
  j=$(( j + 1 ))
done
cat "$O"/diff_*.txt | grep -A1 '^FAIL' | head -24
echo "torch_diff $DEV (seed $SEED): $cases cases, $fails FAIL, $bad slices without a summary"
[ "$fails" = 0 ] && [ "$bad" = 0 ] && [ "$cases" -gt 0 ]
