#!/bin/sh
# llama_text_gemma3.sh BIN MODEL: wick_llama with a real Gemma 3 model, gemma-3-270m (the base
# model, Q4_K_M; tools/fetch_gemma3_270m.sh), on the CPU: the gemma3 path of the example (q/k
# norms, post-norms, GEGLU, scaled embeddings, local and global blocks with their own rope bases)
# on Q5_0, Q8_0, Q4_K and Q6_K weights, a text prompt through the file's SentencePiece tokenizer,
# greedy, 12 tokens. The prompt gives one capital and asks for the next: the continuation must
# name Berlin. Exit 77 (skip) when the model was not fetched.
set -u
BIN=$1
M=$2
[ -f "$M" ] || { echo "skip: $M is not there (tools/fetch_gemma3_270m.sh; no network?)"; exit 77; }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if ! "$BIN" "$M" --device cpu --prompt "The capital of France is Paris. The capital of Germany is" \
        -n 12 >"$out" 2>"$err"; then
    cat "$out" "$err"
    echo "FAIL: wick_llama exited with an error"
    exit 1
fi
cat "$err"
echo "text: $(cat "$out")"
fails=0
if grep -q "gemma3, dim 640, 18 blocks" "$err"; then echo "ok: read as gemma3"; else echo "FAIL: not read as gemma3"; fails=$((fails + 1)); fi
if grep -q "Berlin" "$out"; then echo "ok: the continuation names Berlin"; else echo "FAIL: no 'Berlin'"; fails=$((fails + 1)); fi
echo "$((2 - fails)) passed, $fails failed"
[ $fails = 0 ]
