# lib.sh: what the device scripts of tools/device share (sourced: `. tools/device/lib.sh`).
#   dev_init NAME [OUTDIR]   R = OUTDIR, else $OUT, else ./gpu-out; O = R/NAME (made);
#                            S = O/summary.txt (emptied); B = $WICK_BUILD_DIR, else build-gpu;
#                            t0 = now; CUDA's bin on PATH
#   step LABEL TEXT          one summary line (to the terminal and S)
#   dev_build TARGET...      configure B for CUDA only (code objects for $WICK_CUDA_ARCHS, default
#                            90; no simt; Release; then $WICK_CMAKE_EXTRA) and build the targets;
#                            on failure the errors and the summary are printed and the script ends
#   dev_gpu                  the GPU, driver and commit as a summary line
#   dev_parity LABEL OPS [VAR=VALUE...]   `wick check --device cuda:0 --op OPS -v` with those
#                            variables set, log O/parity_LABEL.txt, its summary as a step and the
#                            first FAIL rows
#   dev_san TOOL LABEL TIMEOUT CMD...   compute-sanitizer --tool TOOL (memcheck: API errors not
#                            reported, the module cache off) on CMD, with WICK_TEST_QUICK=1, log
#                            O/TOOL_LABEL.log, its summary line as a step ("not found" without it)
dev_init() {
  R=${2:-${OUT:-gpu-out}}
  O=$R/$1
  mkdir -p "$O"
  B=${WICK_BUILD_DIR:-build-gpu}
  S=$O/summary.txt
  : >"$S"
  export PATH="$PATH:/usr/local/cuda/bin"
  t0=$(date +%s)
}

step() { printf '%-44s %s\n' "$1" "$2" | tee -a "$S"; }

dev_build() {
  if cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_HIP=OFF -DWICK_SIMT=OFF \
       -DWICK_CUDA_ARCHS="${WICK_CUDA_ARCHS:-90}" ${WICK_CMAKE_EXTRA:-} >"$O/configure.log" 2>&1 &&
     cmake --build "$B" -j"$(nproc)" --target "$@" >"$O/build.log" 2>&1; then
    step build "ok ($(( $(date +%s) - t0 )) s)"
  else
    step build FAIL
    tail -15 "$O/configure.log"
    grep -E "error|Error" "$O/build.log" | head -30
    cat "$S"
    exit 1
  fi
}

dev_gpu() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
  step gpu "$(head -1 "$O/gpu.txt") commit $(git rev-parse --short HEAD 2>/dev/null)"
}

dev_parity() {
  label=$1 ops=$2
  shift 2
  env "$@" timeout 300 $B/wick check --device cuda:0 --op "$ops" -v >"$O/parity_$label.txt" 2>&1
  step "wick check ($label)" "rc=$? $(grep summary "$O/parity_$label.txt" | sed 's/.*summary/summary/')"
  grep -m6 FAIL "$O/parity_$label.txt" | grep -v summary
}

dev_san() {
  tool=$1 label=$2 secs=$3
  shift 3
  san=$(command -v compute-sanitizer)
  if [ -z "$san" ]; then
    step "$tool $label" "compute-sanitizer not found"
    return
  fi
  log="$O/${tool}_$label.log"
  if [ "$tool" = memcheck ]; then
    WICK_TEST_QUICK=1 WICK_GPU_NO_CACHE=1 timeout "$secs" "$san" --tool memcheck \
      --report-api-errors no --error-exitcode 99 "$@" >"$log" 2>&1
  else
    WICK_TEST_QUICK=1 timeout "$secs" "$san" --tool "$tool" --error-exitcode 99 "$@" >"$log" 2>&1
  fi
  step "$tool $label" "rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$log" | tail -1)"
}
