#!/bin/sh
# fetch_llama_vocab.sh DIR: llama.cpp's tokenizer test files (models/ggml-vocab-NAME.gguf with
# .gguf.inp and .gguf.out) into DIR, from the source distribution of PyPI's llama-cpp-python
# 0.3.36 (76 MB; its vendor/llama.cpp is llama.cpp 0c1e570). Only the files the tests read are
# extracted (about 60 MB), then the archive is deleted. Does nothing when DIR is complete.
# WICK_LLAMA_CPP_DIR (environment): a llama.cpp source tree whose models/ to link instead.
# Without network it prints why and exits 0: the vocabulary tests then skip.
set -u
DIR=$1
VERSION=0.3.36
# the vocabularies with test inputs whose kinds the example's tokenizer reads, and bert-bge (a
# WordPiece vocabulary, for the "not supported" test)
NAMES="llama-spm phi-3 gpt-2 llama-bpe qwen2 qwen35 deepseek-llm deepseek-coder falcon command-r
mpt refact starcoder gemma-4 bert-bge"
STAMP=$DIR/.complete-$VERSION
[ -f "$STAMP" ] && { echo "llama-vocab: $DIR ready"; exit 0; }
mkdir -p "$DIR"
if [ -n "${WICK_LLAMA_CPP_DIR:-}" ] && [ -f "$WICK_LLAMA_CPP_DIR/models/ggml-vocab-llama-spm.gguf" ]; then
    for n in $NAMES; do
        for f in "$WICK_LLAMA_CPP_DIR"/models/ggml-vocab-$n.gguf*; do ln -sfn "$f" "$DIR/"; done
    done
    touch "$STAMP" && echo "llama-vocab: linked $WICK_LLAMA_CPP_DIR/models" && exit 0
fi
PY=${PYTHON:-python3}
rm -rf "$DIR/sdist"
t0=$(date +%s)
if ! timeout 600 "$PY" -m pip download --no-deps --no-binary :all: "llama-cpp-python==$VERSION" \
        -d "$DIR/sdist" -q; then
    echo "llama-vocab: skip: 'pip download llama-cpp-python==$VERSION' failed (no network?);" \
         "the vocabulary tests will skip"
    rm -rf "$DIR/sdist"
    exit 0
fi
TGZ=$(ls "$DIR"/sdist/llama_cpp_python-*.tar.gz 2>/dev/null | head -n 1)
[ -n "$TGZ" ] || { echo "llama-vocab: skip: no source archive downloaded"; exit 0; }
PATTERNS=""
for n in $NAMES; do
    PATTERNS="$PATTERNS llama_cpp_python-$VERSION/vendor/llama.cpp/models/ggml-vocab-$n.gguf*"
done
# shellcheck disable=SC2086 # a list of patterns
tar -xzf "$TGZ" -C "$DIR" --wildcards --strip-components=4 $PATTERNS || {
    echo "llama-vocab: extracting from $TGZ failed"; exit 1; }
rm -rf "$DIR/sdist"
touch "$STAMP"
echo "llama-vocab: $DIR <- llama-cpp-python $VERSION ($(ls "$DIR" | wc -l) files, $(($(date +%s) - t0)) s)"
