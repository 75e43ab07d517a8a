#!/bin/sh
# llama_text_test.sh BIN MODEL: wick_llama speaking text with a real model, SmolLM2-135M-Instruct
# (Q4_1; tools/fetch_smollm2.sh), on the CPU: a ChatML turn asking for the capital of France,
# tokenized with the file's gpt2/smollm tokenizer (special tokens parsed), greedy, 24 tokens at
# most. The answer must name Paris, and generation must stop by itself at <|im_end|> (the file's
# EOS, id 2) before the 24 tokens. Exit 77 (skip) when the model was not fetched.
set -u
BIN=$1
M=$2
[ -f "$M" ] || { echo "skip: $M is not there (tools/fetch_smollm2.sh; no network?)"; exit 77; }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if ! "$BIN" "$M" --device cpu --chat --prompt "What is the capital of France?" -n 24 \
        >"$out" 2>"$err"; then
    cat "$out" "$err"
    echo "FAIL: wick_llama exited with an error"
    exit 1
fi
cat "$err"
echo "text: $(cat "$out")"
ids=$(sed -n 's/^ids://p' "$err")
n=$(echo $ids | wc -w)
last=$(echo $ids | awk '{print $NF}')
fails=0
if grep -q "Paris" "$out"; then echo "ok: the answer names Paris"; else echo "FAIL: no 'Paris' in the answer"; fails=$((fails + 1)); fi
if [ "$n" -lt 24 ] && [ "$last" = 2 ]; then
    echo "ok: stopped at <|im_end|> (id 2) after $n tokens"
else
    echo "FAIL: did not stop at <|im_end|> (last id $last of $n)"
    fails=$((fails + 1))
fi
if grep -q "chat format chatml" "$err"; then echo "ok: ChatML from the file's template"; else echo "FAIL: no ChatML"; fails=$((fails + 1)); fi
echo "$((3 - fails)) passed, $fails failed"
[ $fails = 0 ]
