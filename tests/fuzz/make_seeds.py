#!/usr/bin/env python3
"""make_seeds.py: writes the seed corpus of the fuzz harnesses (tests/fuzz/corpus/<name>/seed-*).
Deterministic (fixed seeds); run once, commit the files; never needed by the build.
GGUF seeds come from the `gguf` PyPI package (llama.cpp's own writer, independent of wick's).
Run: python3 tests/fuzz/make_seeds.py"""
import os
import random

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def out(name, fname, data):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data)


def gguf_seeds():
    import gguf
    tmp = "/tmp/wick-seed.gguf"
    # 1: every scalar type, strings, arrays (scalars, strings, nested), three tiny tensors
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_uint8("s.u8", 7)
    w.add_int8("s.i8", -7)
    w.add_uint16("s.u16", 700)
    w.add_int16("s.i16", -700)
    w.add_uint32("s.u32", 70000)
    w.add_int32("s.i32", -70000)
    w.add_float32("s.f32", 1.5)
    w.add_uint64("s.u64", 1 << 40)
    w.add_int64("s.i64", -(1 << 40))
    w.add_float64("s.f64", 2.25)
    w.add_bool("s.bool", True)
    w.add_string("s.str", "wick")
    w.add_array("a.i32", [1, 2, 3])
    w.add_array("a.str", ["a", "bc", ""])
    w.add_array("a.nested", [[1, 2], [3]])
    w.add_tensor("t.f32", np.arange(8, dtype=np.float32).reshape(2, 4))
    w.add_tensor("t.f16", np.arange(4, dtype=np.float16))
    q8 = np.zeros(34, dtype=np.uint8)  # one Q8_0 block: f16 scale + 32 int8
    q8[0:2] = np.frombuffer(np.float16(0.5).tobytes(), dtype=np.uint8)
    q8[2:] = np.arange(32, dtype=np.int8).view(np.uint8)
    w.add_tensor("t.q8_0", q8, raw_shape=(1, 34), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(tmp, "rb") as f:
        out("gguf", "seed-all-types.gguf", f.read())
    # 2: minimal: header only, no kv, no tensors
    w = gguf.GGUFWriter(tmp, "x")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(tmp, "rb") as f:
        out("gguf", "seed-minimal.gguf", f.read())
    # 3: a custom alignment and a K-quant tensor
    w = gguf.GGUFWriter(tmp, "x")
    w.add_custom_alignment(64)
    qk = np.arange(210, dtype=np.uint8)  # one Q6_K block (210 bytes, 256 elements)
    w.add_tensor("t.q6_k", qk, raw_shape=(1, 210), raw_dtype=gguf.GGMLQuantizationType.Q6_K)
    w.add_tensor("t.bf16", np.zeros(4, dtype=np.uint16), raw_shape=(4,),
                 raw_dtype=gguf.GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(tmp, "rb") as f:
        out("gguf", "seed-align64.gguf", f.read())
    os.remove(tmp)


def ops_seeds():
    # fuzz_ops.c reads: 4 pool dims, the op (byte % 40), the dtype, then operands and parameters.
    rng = random.Random(18)
    for op in range(40):
        for dt in (7, 5) if op % 3 == 0 else (7,):  # f32, some bf16
            body = bytes(rng.randrange(256) for _ in range(160))
            out("ops", "seed-op%02d-dt%d" % (op, dt), bytes([2, 3, 4, 1, op, dt]) + body)


def layout_seeds():
    rng = random.Random(19)
    for i in range(12):
        out("layout", "seed-%02d" % i, bytes(rng.randrange(256) for _ in range(96)))


def tokenizer_seeds():
    """Small vocabularies (SentencePiece; BPE with the gpt-2, llama-bpe and qwen2 pre-tokenizers;
    gemma4) written by gguf-py, each after a flags byte, a text length and a text."""
    import struct

    import gguf
    tmp = "/tmp/wick-seed-tok.gguf"
    texts = [b"Hello world", b" a  b\n\n<s>x</s>", "caf\u00e9 \u2581 \U0001f999 3333".encode(),
             b"<|endoftext|>ab c's", b"\xff\xfe a\xe2"]
    ws = ["\u2581", "a", "b", "\u2581a", "ab", "c", "\u2581c", "x"]
    bpe = ["a", "b", "c", "\u0120", "ab", "\u0120a", "\u0120ab", "<|endoftext|>", "'", "s", "\u010a"]
    merges = ["a b", "\u0120 a", "\u0120 ab"]
    vocabs = []
    # SentencePiece: <unk> <s> </s>, 256 byte tokens, pieces
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ws
    types = [2, 3, 3] + [6] * 256 + [1] * len(ws)
    vocabs.append(("llama", None, toks, types, [-float(i) for i in range(len(toks))], None))
    for pre in ("gpt-2", "llama-bpe", "qwen2"):
        vocabs.append(("gpt2", pre, bpe, [1] * 7 + [3] + [1] * 3, None, merges))
    g4 = ["<pad>", "<eos>", "<bos>", "\u2581", "a", "b", "\u2581a", "\n", "\n\n"]
    vocabs.append(("gemma4", None, g4, [3, 3, 3] + [1] * 6, None, ["a b", "\u2581 a", "\n \n"]))
    for i, (model, pre, toks, types, scores, mg) in enumerate(vocabs):
        w = gguf.GGUFWriter(tmp, "llama")
        w.add_tokenizer_model(model)
        if pre:
            w.add_tokenizer_pre(pre)
        w.add_token_list(toks)
        w.add_token_types(types)
        if scores:
            w.add_token_scores(scores)
        if mg:
            w.add_token_merges(mg)
        w.add_bos_token_id(1 if model == "llama" else 2 if model == "gemma4" else 7)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        with open(tmp, "rb") as f:
            body = f.read()
        text = texts[i % len(texts)]
        out("tokenizer", "seed-%d-%s" % (i, pre or model), bytes([i % 4]) + struct.pack("<H", len(text))
            + text + body)
    os.remove(tmp)


if __name__ == "__main__":
    gguf_seeds()
    ops_seeds()
    layout_seeds()
    tokenizer_seeds()
