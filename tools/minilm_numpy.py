#!/usr/bin/env python3
"""minilm_numpy.py MODEL_DIR OUT: an independent float64 numpy implementation of BERT
(all-MiniLM-L6-v2: embeddings, 6 post-LayerNorm encoder layers, erf GELU, mean pooling over the
attention mask, L2 normalisation), written from the BERT paper and the Hugging Face config, with
no wick code. Tokens from Hugging Face `tokenizers` (tokenizer.json, truncation 256), weights from
the `safetensors` package. Writes OUT in the fixture format of examples/minilm.c --check: per
sentence, its UTF-8 bytes in hex, a tab, 384 numbers. The sentences are those of
tests/models/make_token_fixture.py. Each sentence runs alone (no padding), so the masking path of
wick is checked against unpadded math."""
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "models"))
from make_token_fixture import SENTENCES  # noqa: E402


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu_erf(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def forward(w, cfg, ids):
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    dh, eps, T = H // nh, cfg["layer_norm_eps"], len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        lin = lambda v, n: v @ w[p + n + ".weight"].T + w[p + n + ".bias"]  # noqa: E731
        q = lin(x, "attention.self.query").reshape(T, nh, dh).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(T, nh, dh).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(T, nh, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(T, H)
        x = layer_norm(lin(ctx, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        h = gelu_erf(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                       w[p + "output.LayerNorm.bias"], eps)
    e = x.mean(0)
    return e / np.linalg.norm(e)


def main():
    model, out = sys.argv[1], sys.argv[2]
    w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(model, "model.safetensors")).items()}
    cfg = json.load(open(os.path.join(model, "config.json")))
    tok = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    with open(out, "w") as f:
        f.write("# all-MiniLM-L6-v2 embeddings from tools/minilm_numpy.py (float64 numpy, independent "
                "of wick): an interim reference until sentence-transformers' fixture is committed\n")
        for s in SENTENCES:
            e = forward(w, cfg, tok.encode(s).ids)
            f.write((s.encode("utf-8").hex() or "-") + "\t" + " ".join(f"{v:.9g}" for v in e) + "\n")
    print(f"wrote {len(SENTENCES)} embeddings to {out}")


if __name__ == "__main__":
    main()
