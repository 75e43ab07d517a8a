#!/usr/bin/env python3
"""llama_ref.py: an independent reference for examples/llama.c (python3 + numpy + gguf-py).

  llama_ref.py test   --bin build/wick_llama --dir build/models/llama [--device cpu] [--types ..]
  llama_ref.py greedy --bin build/wick_llama --dir build/models/llama [--device cuda:0]
  llama_ref.py bench-model --out FILE.gguf --type q4_0 [--arch qwen3]   (8B-shaped random model)

`test` builds (once; cached in --dir by this script's hash) a small Llama model with random
weights from a fixed seed: dim 256, 3 blocks, 4 heads of 64, 2 KV heads (GQA), ffn 512, vocabulary
1024. The model is defined the Hugging Face way (rotate-halves rope) and written as llama.cpp's
converter writes it: Wq and Wk rows permuted (convert_hf_to_gguf.py's `permute`) so that ggml's
NORMAL (adjacent-pair) rope applies. One GGUF per weight type (every 2-D weight in that type,
norms f32; seven of the types tie `output` to `token_embd`: tied_output; the f16 file carries
Llama 3.1's rope_freqs divisors, the bf16 file linear rope scaling by 4). Weights:
  - F32, F16: the float weights cast;
  - BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: quantized by gguf-py (gguf.quants.quantize);
  - Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K: gguf-py 0.19 cannot quantize these, so their blocks
    are random bytes with the scale fields set to give the target spread (valid blocks by
    construction: every bit pattern of codes and sub-block scales is legal).
The reference forward is this file's own float64 numpy code on the weights as gguf-py
dequantizes them (Q8_1 and Q8_K, which gguf-py does not decode, by d * q here), un-permuted back
to the HF layout; it never calls wick. It gives the logits of a 32-token prompt at every position
and of 16 teacher-forced decode steps (48 rows), which wick_llama --logits must reproduce.
Those runs ask for the exact path (--gemm-dtype f32 --kv-dtype f32: the defaults on GPU devices
are f16 prefill products and an f16 KV cache); the 16-bit paths are checked on the f32 model
against the reference with the same roundings applied (check_gemm16, check_kv16,
check_defaults).

Error measure, per logits row r: err = max_j |wick_j - ref_j| / max_j |ref_j|; the test reports
the largest over the 48 rows. Bounds and how they follow from the arithmetic: docs/llama.md.
"""
import argparse
import hashlib
import os
import subprocess
import sys

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as QT
except ImportError as e:  # CI without the Python packages: skip, saying why
    print(f"SKIP: llama_ref.py needs numpy and gguf (pip install numpy gguf): {e}")
    sys.exit(77)

SKIP = 77

# ----------------------------------------------------------------------------- the test model
CFG = dict(dim=256, n_layer=3, n_head=4, n_kv=2, ffn=512, vocab=1024, ctx=128,
           eps=1e-5, rope_base=10000.0, seed=20261124)
N_PROMPT, N_FORCE = 32, 16
LONG_PROMPT, LONG_FORCE = 80, 8  # check_defaults on GPUs: a prefill of 64 queries or more
TYPES = ["f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1",
         "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "mixed"]
# "mixed": types per tensor as llama.cpp's Q4_K_M mixes them (Q4_K, with Q6_K for attn_v,
# ffn_down and output, token_embd F16 here): Wq/Wk/Wv and Wg/Wu then differ in type, which takes
# the example's unstacked path.
MIXED = {"attn_v": "q6_k", "ffn_down": "q6_k", "output": "q6_k", "token_embd": "f16"}


def tensor_type(tname, key):
    return MIXED.get(key, "q4_k") if tname == "mixed" else tname
GGUF_QUANTIZES = {"bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}  # gguf.quants.quantize
# Bounds on err (see the module doc and docs/llama.md for the derivation).
BOUND_F32 = 1e-4
# wick_llama's exact path: every product and the KV cache in f32. Its defaults differ on GPU
# devices (f16 prefill products, f16 cache), so every check whose bound assumes the exact path
# asks for it; check_kv16 and check_defaults bound the 16-bit paths by emulating them.
EXACT = ["--gemm-dtype", "f32", "--kv-dtype", "f32"]

# Block facts for the random-block generator: (elements, bytes, d offset, d type,
# min offset or None, min/d ratio that centres the values on 0).
BLOCKS = {
    "q4_0": (32, 18, 0, np.float16, None, 0.0),
    "q4_1": (32, 20, 0, np.float16, 2, -7.5),
    "q5_0": (32, 22, 0, np.float16, None, 0.0),
    "q5_1": (32, 24, 0, np.float16, 2, -15.5),
    "q8_0": (32, 34, 0, np.float16, None, 0.0),
    "q8_1": (32, 36, 0, np.float16, None, 0.0),
    "q2_k": (256, 84, 80, np.float16, 82, 1.5),
    "q3_k": (256, 110, 108, np.float16, None, 0.0),
    "q4_k": (256, 144, 0, np.float16, 2, 7.5),
    "q5_k": (256, 176, 0, np.float16, 2, 15.5),
    "q6_k": (256, 210, 208, np.float16, None, 0.0),
    "q8_k": (256, 292, 0, np.float32, None, 0.0),
}


def qtype(name):
    return QT[name.upper()]


def dequantize(data, name, k):
    """data (n, row bytes) uint8 (or float rows) -> (n, k) float32, by gguf-py where it can."""
    if name == "f32":
        return np.asarray(data, np.float32)
    if name == "f16":
        return np.asarray(data).astype(np.float32)
    if name in ("q8_1", "q8_k"):  # gguf-py has no decoder for these: d * q
        el, bb, _, dt, _, _ = BLOCKS[name]
        b = data.reshape(-1, bb)
        hd = 4 if name == "q8_1" else 4
        d = b[:, :dt().itemsize].copy().view(dt).astype(np.float32)
        q = b[:, hd:hd + el].copy().view(np.int8).astype(np.float32)
        return (d * q).reshape(data.shape[0], k)
    return gguf.quants.dequantize(data, qtype(name)).reshape(data.shape[0], k)


def rand_bytes(rng, n):
    """n random bytes (the bit generator's raw words: several times faster than rng.bytes)."""
    return rng.bit_generator.random_raw((n + 7) // 8).view(np.uint8)[:n]


def random_blocks(name, n, k, std, rng, unit_std=None):
    """(n, k / el * bytes) uint8: random valid blocks whose decoded values have about `std`
    spread. The scale fields of every block get d = s * u (u uniform in [0.5, 1.5)), s chosen
    from the decoded spread of the same blocks at s = 1 (or unit_std when given: the bench)."""
    el, bb, doff, dt, moff, ratio = BLOCKS[name]
    nb = n * (k // el)
    raw = rand_bytes(rng, nb * bb).reshape(nb, bb)
    u = rng.uniform(0.5, 1.5, nb).astype(np.float32)

    def set_scales(s):
        raw[:, doff:doff + dt().itemsize] = (u * s).astype(dt).view(np.uint8).reshape(nb, -1)
        if moff is not None:
            raw[:, moff:moff + 2] = (u * s * ratio).astype(np.float16).view(np.uint8).reshape(nb, -1)
    if unit_std is None:
        set_scales(1.0)
        unit_std = float(dequantize(raw.reshape(n, -1), name, k).std())
    set_scales(std / unit_std)
    if name == "q8_1":  # s = d * sum(q) (not read by wick; set as ggml does)
        d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)[:, 0]
        q = raw[:, 4:36].view(np.int8).astype(np.float32)
        raw[:, 2:4] = (d * q.sum(1)).astype(np.float16).view(np.uint8).reshape(nb, 2)
    if name == "q8_k":  # bsums: sums of 16 codes (not read by wick)
        q = raw[:, 4:260].view(np.int8).astype(np.int16).reshape(nb, 16, 16)
        raw[:, 260:292] = q.sum(2).astype(np.int16).view(np.uint8).reshape(nb, 32)
    return raw.reshape(n, -1), unit_std


def encode(w, name, rng):
    """w (n, k) float32 in GGUF row order -> (data for the writer, decoded (n, k) float32)."""
    n, k = w.shape
    if name == "f32":
        data = w.astype(np.float32)
    elif name == "f16":
        data = w.astype(np.float16)
    elif name in GGUF_QUANTIZES:
        data = gguf.quants.quantize(w.astype(np.float32), qtype(name))
        data = np.ascontiguousarray(data).view(np.uint8).reshape(n, -1)
    else:
        data, _ = random_blocks(name, n, k, float(w.std()), rng)
    return data, dequantize(data, name, k)


def permute(w, n_head):
    """llama.cpp's converter: HF rows (rotate halves) -> GGUF rows (adjacent pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_model(cfg):
    """The float weights in Hugging Face layout, numpy float32."""
    rng = np.random.default_rng(cfg["seed"])
    d, f, v = cfg["dim"], cfg["ffn"], cfg["vocab"]
    hd = d // cfg["n_head"]
    qd, kvd = cfg["n_head"] * hd, cfg["n_kv"] * hd

    def lin(n, k):
        return (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)

    def norm():
        return (1.0 + 0.1 * rng.standard_normal(d)).astype(np.float32)
    m = {"token_embd": rng.standard_normal((v, d)).astype(np.float32),
         "output": 4.0 * lin(v, d), "output_norm": norm(), "blocks": []}
    for _ in range(cfg["n_layer"]):
        m["blocks"].append({"attn_norm": norm(), "ffn_norm": norm(), "attn_q": lin(qd, d),
                            "attn_k": lin(kvd, d), "attn_v": lin(kvd, d), "attn_output": lin(d, qd),
                            "ffn_gate": lin(f, d), "ffn_up": lin(f, d), "ffn_down": lin(d, f)})
    return m


# ----------------------------------------------------------------------------- the reference
def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_halves(x, pos, base, factors=None):
    """HF's rotate_half rope on x (T, H, hd): pairs (i, i + hd/2), angle pos * base^(-2i/hd)
    (divided by factors[i]: Llama 3.1's rope_freqs)."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    if factors is not None:
        inv = inv / factors
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def act_quant(x):
    """The decode path's activation rounding (docs/semantics.md, qmatmul; GPUs, and the CPU unless
    WICK_CPU_QDOT=exact): int8 blocks of 32,
    step amax/127, round half away from zero."""
    b = x.reshape(*x.shape[:-1], -1, 32)
    d = np.abs(b).max(-1, keepdims=True) / 127.0
    d32 = d.astype(np.float32).astype(np.float64)
    q = np.where(d32 > 0, np.sign(b) * np.floor(np.abs(b) / np.where(d32 > 0, d32, 1) + 0.5), 0)
    return (q * d32).reshape(x.shape)


def round16(x, dt):
    """x rounded to f16 or bf16 (nearest even), back in float64."""
    if dt == "f16":
        return x.astype(np.float16).astype(np.float64)
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def kv_round(q, k, v, dt):
    """What a 16-bit KV cache (wick_llama --kv-dtype dt) does to rope(q), rope(k), v (T, heads,
    hd): the cache holds k and v rounded to dt, and wk_rope_kv_append returns rope(q) in the
    cache's dtype too (the attention's query; its output then comes in that dtype as well:
    round16 of it, in forward)."""
    return round16(q, dt), round16(k, dt), round16(v, dt)


def forward(m, cfg, ids, quant_from=None, gemm16=None, kv16=None):
    """float64 logits (T, vocab) of the causal model on token ids (T,) with weights m (HF layout).
    quant_from: rows >= quant_from get act_quant on every linear input (the decode steps).
    gemm16 = (dt, rows): with wick_llama --gemm-dtype dt, every linear of more than 8 rows (the
    prefill of `rows` tokens) reads its input rounded to dt and rounds its output to dt.
    kv16 = dt: with wick_llama --kv-dtype dt, rope(q), rope(k), v and the attention's output are
    rounded to dt (kv_round)."""
    H, KV, eps, base = cfg["n_head"], cfg["n_kv"], cfg["eps"], cfg["rope_base"]
    T = len(ids)
    hd = cfg["dim"] // H
    pos = np.arange(T, dtype=np.float64) / m.get("rope_linear", 1.0)
    fac = m.get("rope_freqs")

    def lin(x, w):
        if quant_from is not None:
            x = x.copy()
            x[quant_from:] = act_quant(x[quant_from:])
        if gemm16 is not None:
            dt, r = gemm16
            y = round16(x[:r], dt) @ w.T
            return np.concatenate([round16(y, dt), x[r:] @ w.T])
        return x @ w.T
    x = m["token_embd"][ids].astype(np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for b in m["blocks"]:
        h = rms_norm(x, b["attn_norm"], eps)
        q = rope_halves(lin(h, b["attn_q"]).reshape(T, H, hd), pos, base, fac)
        k = rope_halves(lin(h, b["attn_k"]).reshape(T, KV, hd), pos, base, fac)
        v = lin(h, b["attn_v"]).reshape(T, KV, hd)
        if kv16 is not None:
            q, k, v = kv_round(q, k, v, kv16)
        k, v = np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        a = np.einsum("hts,shd->thd", p, v).reshape(T, H * hd)
        if kv16 is not None:
            a = round16(a, kv16)
        x = x + lin(a, b["attn_output"])
        h = rms_norm(x, b["ffn_norm"], eps)
        g, u = lin(h, b["ffn_gate"]), lin(h, b["ffn_up"])
        x = x + lin(g / (1.0 + np.exp(-g)) * u, b["ffn_down"])
    return lin(rms_norm(x, m["output_norm"], eps), m["output"])


# ----------------------------------------------------------------------------- GGUF writing
def tied_output(i):
    """Type i of TYPES ties output to token_embd: bf16 q4_1 q5_1 q8_1 q3_k q5_k q8_k. (A tied
    random model mostly repeats the current token under greedy decoding: the residual stream is
    dominated by its own embedding. So the greedy test uses the untied types.)"""
    return i > 0 and i % 2 == 0


def add_meta(w, cfg, name):
    hd = cfg.get("hd", cfg["dim"] // cfg["n_head"])
    w.add_name(f"wick-test-llama-{name}")
    w.add_context_length(cfg["ctx"])
    w.add_embedding_length(cfg["dim"])
    w.add_block_count(cfg["n_layer"])
    w.add_feed_forward_length(cfg["ffn"])
    w.add_head_count(cfg["n_head"])
    w.add_head_count_kv(cfg["n_kv"])
    w.add_rope_freq_base(cfg["rope_base"])
    w.add_layer_norm_rms_eps(cfg["eps"])
    w.add_rope_dimension_count(hd)
    w.add_vocab_size(cfg["vocab"])
    # a SentencePiece-style vocabulary (llama.cpp needs one to load the file)
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    toks += [f"\u2581w{i}" for i in range(len(toks), cfg["vocab"])]
    types = [2, 3, 3] + [6] * 256 + [1] * (cfg["vocab"] - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * cfg["vocab"])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def add_weight(w, name, data, tname):
    if tname in ("f32", "f16"):
        w.add_tensor(name, data)
    elif tname == "q8_1":
        # gguf-py 0.19 sizes Q8_1 blocks at 40 bytes (ggml's old f32 d and s); ggml's block_q8_1
        # is 36 (two f16), as wick's. Passing the bytes as int8 with the element shape skips
        # gguf-py's byte-shape conversion; the tensor's byte count is still the array's.
        w.add_tensor(name, data.view(np.int8), raw_shape=(data.shape[0], data.shape[1] // 36 * 32),
                     raw_dtype=qtype(tname))
    else:
        w.add_tensor(name, data, raw_dtype=qtype(tname))


def write_model(path, hf, cfg, tname, tied, rng):
    """Writes the GGUF of hf in type tname; returns the decoded weights in HF layout."""
    H, KV = cfg["n_head"], cfg["n_kv"]
    w = gguf.GGUFWriter(path, "llama")
    add_meta(w, cfg, tname)
    dec = {"blocks": []}
    if tname == "f16":  # Llama 3.1's per-frequency divisors
        hd = cfg["dim"] // H
        dec["rope_freqs"] = np.linspace(1.0, 8.0, hd // 2).astype(np.float32)
        w.add_tensor("rope_freqs.weight", dec["rope_freqs"])
    if tname == "bf16":  # linear rope scaling: positions / 4
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(4.0)
        dec["rope_linear"] = 4.0
    tt = tensor_type(tname, "token_embd")
    data, e = encode(hf["token_embd"], tt, rng)
    add_weight(w, "token_embd.weight", data, tt)
    dec["token_embd"] = e
    w.add_tensor("output_norm.weight", hf["output_norm"])
    dec["output_norm"] = hf["output_norm"]
    if tied:
        dec["output"] = e
    else:
        tt = tensor_type(tname, "output")
        data, dec["output"] = encode(hf["output"], tt, rng)
        add_weight(w, "output.weight", data, tt)
    for i, b in enumerate(hf["blocks"]):
        db = {}
        for key, val in b.items():
            name = f"blk.{i}.{key}.weight"
            if val.ndim == 1:
                w.add_tensor(name, val)
                db[key] = val
                continue
            heads = H if key == "attn_q" else KV if key == "attn_k" else None
            g = permute(val, heads) if heads else val
            tt = tensor_type(tname, key)
            data, e = encode(g, tt, rng)
            add_weight(w, name, data, tt)
            db[key] = unpermute(e, heads) if heads else e
        dec["blocks"].append(db)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dec


def script_hash():
    with open(__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def generate(d, types):
    """Writes d/llama_<type>.gguf, d/ref_<type>.npy (and for the block types refq_, the decode
    rows' activations rounded, and refqa_, every row's), once."""
    os.makedirs(d, exist_ok=True)
    stamp = os.path.join(d, "stamp")
    h = script_hash()
    have = open(stamp).read().strip() if os.path.exists(stamp) else ""
    if have == h and all(os.path.exists(os.path.join(d, f"ref_{t}.npy")) for t in types):
        return
    cfg = CFG
    hf = hf_model(cfg)
    rng = np.random.default_rng(cfg["seed"] + 1)
    ids = rng.integers(0, cfg["vocab"], N_PROMPT + N_FORCE)
    np.save(os.path.join(d, "ids.npy"), ids)
    for i, t in enumerate(TYPES):
        if t not in types:
            continue
        dec = write_model(os.path.join(d, f"llama_{t}.gguf"), hf, cfg, t, tied=tied_output(i),
                          rng=np.random.default_rng(cfg["seed"] + 100 + i))
        np.save(os.path.join(d, f"ref_{t}.npy"), forward(dec, cfg, ids))
        if t in BLOCKS or t == "mixed":
            np.save(os.path.join(d, f"refq_{t}.npy"), forward(dec, cfg, ids, quant_from=N_PROMPT))
            np.save(os.path.join(d, f"refqa_{t}.npy"), forward(dec, cfg, ids, quant_from=0))
    with open(stamp, "w") as f:
        f.write(h + "\n")


# ----------------------------------------------------------------------------- running wick
def run_wick(args, gguf_path, extra):
    cmd = [args.bin, gguf_path, "--device", args.device] + extra
    r = subprocess.run(cmd, capture_output=True, text=True,
                       errors="replace")  # generated text: any bytes
    if r.returncode != 0:
        if "WK_ERR_NO_DEVICE" in r.stderr:
            print(f"SKIP: no device {args.device}: {r.stderr.strip()}")
            sys.exit(SKIP)
        print(" ".join(cmd))
        print(r.stdout + r.stderr)
        sys.exit(1)
    return r.stdout + r.stderr  # generated text on stdout; ids and speeds on stderr


def row_err(a, r):
    return float((np.abs(a - r).max(1) / np.abs(r).max(1)).max())


def cmd_test(args):
    types = args.types.split(",") if args.types else TYPES
    generate(args.dir, types)
    ids = np.load(os.path.join(args.dir, "ids.npy"))
    prompt = " ".join(map(str, ids[:N_PROMPT]))
    force = " ".join(map(str, ids[N_PROMPT:]))
    quantizes = device_quantizes(args.device)
    print(f"{'type':6} {'err':>10} {'bound':>10} {'quant-act err':>14}  device {args.device}")
    fails = 0
    for t in types:
        out = os.path.join(args.dir, f"logits_{t}_{args.device.replace(':', '')}.f32")
        run_wick(args, os.path.join(args.dir, f"llama_{t}.gguf"),
                 ["--prompt-ids", prompt, "--force", force, "--logits", out] + EXACT)
        ref = np.load(os.path.join(args.dir, f"ref_{t}.npy"))
        got = np.fromfile(out, np.float32).reshape(ref.shape).astype(np.float64)
        err = row_err(got, ref)
        bound, qerr = BOUND_F32, float("nan")
        if quantizes and (t in BLOCKS or t == "mixed"):
            # decode steps quantize the activations (GPUs, and the CPU unless
            # WICK_CPU_QDOT=exact; the CPU's prefill too): the expected deviation is the measured
            # effect of that rounding on the reference (refq / refqa vs ref); allow twice it.
            qerr = row_err(np.load(quant_ref(args.dir, t, args.device)), ref)
            bound = BOUND_F32 + 2.0 * qerr
        ok = np.isfinite(got).all() and err <= bound
        # --logits-prompt last: the prefill of generation and --bench, whose last block runs its
        # MLP and the logits on the prompt's last row only; the same rows of the reference
        out1 = out[:-4] + "_last.f32"
        run_wick(args, os.path.join(args.dir, f"llama_{t}.gguf"),
                 ["--prompt-ids", prompt, "--force", force, "--logits", out1,
                  "--logits-prompt", "last"] + EXACT)
        got1 = np.fromfile(out1, np.float32).astype(np.float64)
        ref1 = ref[N_PROMPT - 1:]
        err1 = row_err(got1.reshape(ref1.shape), ref1) if got1.size == ref1.size else float("inf")
        ok = ok and np.isfinite(got1).all() and err1 <= bound
        fails += not ok
        print(f"{t:6} {err:10.3e} {bound:10.3e} {qerr:14.3e}  last row only {err1:10.3e}  "
              f"{'ok' if ok else 'FAIL'}")
    print(f"llama logits: {len(types) - fails} of {len(types)} types within bounds on {args.device}")
    if "f32" in types:
        fails += not check_sampling(args)
        fails += not check_gemm16(args, ids, prompt, force)
        fails += not check_kv16(args, ids, prompt, force)
        fails += not check_defaults(args, ids, prompt, force)
    fails += not check_graph(args, types, prompt, force)
    return 1 if fails else 0


def same_bytes(p, q):
    """Whether files p and q hold the same bytes (and as many)."""
    a, b = np.fromfile(p, np.uint8), np.fromfile(q, np.uint8)
    return a.shape == b.shape and bool((a == b).all())


def check_graph(args, types, prompt, force):
    """On one GPU the decode steps replay a captured graph (the default); --graph 0 issues the
    same ops one by one. A replay must write exactly what eager execution writes: the logits
    files of both runs must be equal byte for byte. (The CPU has no graphs: nothing to do.)"""
    if args.device == "cpu":
        return True
    ok = True
    for t in [t for t in ("f32", "q4_0", "mixed") if t in types]:
        dev = args.device.replace(":", "")
        graph = os.path.join(args.dir, f"logits_{t}_{dev}.f32")
        eager = os.path.join(args.dir, f"logits_{t}_{dev}_eager.f32")
        run_wick(args, os.path.join(args.dir, f"llama_{t}.gguf"),
                 ["--prompt-ids", prompt, "--force", force, "--logits", eager, "--graph", "0"] + EXACT)
        same = same_bytes(graph, eager)
        ok &= same
        print(f"{t}: decode as graph replays vs eager: {'identical' if same else 'DIFFERENT'}")
    return ok


def check_gemm16(args, ids, prompt, force):
    """--gemm-dtype f16 / bf16 on the f32 model: the prefill's products round x and their output
    to that type. As for the GPU's activation rounding, the reference applies exactly that
    rounding itself; e16 = its effect on the reference, and wick must lie within 1e-4 + 2 e16.
    And --fuse 0 (each op alone; gate and up widened to f32 before the silu and the product; q, k
    and v widened to f32 before the rope) must write the same bytes as the fused run (the gated op
    on gate and up kept in dt; with a cache of dt, the rope + cache op on q, k and v kept in dt),
    with an f32 cache and with a cache of dt."""
    ok = True
    ref = np.load(os.path.join(args.dir, "ref_f32.npy"))
    gguf_f32 = os.path.join(args.dir, "llama_f32.gguf")
    for dt in ("f16", "bf16"):
        emu = forward(hf_model(CFG), CFG, ids, gemm16=(dt, N_PROMPT))
        flags = ["--gemm-dtype", dt, "--kv-dtype", "f32"]
        ok &= check_emulated(args, prompt, force, ref, emu, f"logits_f32_{dt}gemm.f32", flags,
                             f"--gemm-dtype {dt}")
        for kv in ("f32", dt):
            flags = ["--gemm-dtype", dt, "--kv-dtype", kv]
            outs = [os.path.join(args.dir, f"logits_f32_{dt}gemm_{kv}kv_fuse{f}.f32")
                    for f in (1, 0)]
            if kv == "f32":  # the fused run is check_emulated's
                outs[0] = os.path.join(args.dir, f"logits_f32_{dt}gemm.f32")
            for out, f in zip(outs, ("1", "0")):
                if not (kv == "f32" and f == "1"):
                    run_wick(args, gguf_f32, ["--prompt-ids", prompt, "--force", force,
                                              "--logits", out, "--fuse", f] + flags)
            same = same_bytes(*outs)
            ok &= same
            print(f"--gemm-dtype {dt} --kv-dtype {kv}: --fuse 0 vs fused: "
                  f"{'identical' if same else 'DIFFERENT'}")
    return ok


def check_emulated(args, prompt, force, ref, emu, name, flags, label):
    """wick_llama with flags on the f32 model against the reference ref, where emu is the
    reference with the rounding those flags add: e = row_err(emu, ref) is that rounding's effect,
    and wick must lie within 1e-4 + 2 e of ref."""
    out = os.path.join(args.dir, name)
    run_wick(args, os.path.join(args.dir, "llama_f32.gguf"),
             ["--prompt-ids", prompt, "--force", force, "--logits", out] + flags)
    got = np.fromfile(out, np.float32).reshape(ref.shape).astype(np.float64)
    e16, err = row_err(emu, ref), row_err(got, ref)
    bound = BOUND_F32 + 2.0 * e16
    print(f"{label}: err {err:.3e} (against the emulation {row_err(got, emu):.3e}), "
          f"bound {bound:.3e}: {'ok' if err <= bound else 'FAIL'}")
    return bool(err <= bound)


def check_kv16(args, ids, prompt, force):
    """--kv-dtype f16 / bf16 (products f32) on the f32 model: the cache holds rope(k) and v rounded
    to that type, and the attention's query rope(q) and its output are in that type too
    (kv_round). As check_gemm16: e16 = the effect of that rounding on the reference, and wick
    must lie within 1e-4 + 2 e16."""
    ok = True
    ref = np.load(os.path.join(args.dir, "ref_f32.npy"))
    for dt in ("f16", "bf16"):
        emu = forward(hf_model(CFG), CFG, ids, kv16=dt)
        ok &= check_emulated(args, prompt, force, ref, emu, f"logits_f32_{dt}kv.f32",
                             ["--gemm-dtype", "f32", "--kv-dtype", dt], f"--kv-dtype {dt}")
    return ok


def check_defaults(args, ids, prompt, force):
    """wick_llama without precision flags on the f32 model. On GPU devices (simt included) the
    defaults are f16 products for more than 8 rows and an f16 cache: the reference emulates both
    (gemm16 and kv16 together), and wick must lie within 1e-4 + 2 e, e their effect on the
    reference; for the test's 32 + 16 rows and for a prompt of LONG_PROMPT tokens (the prefill's
    attention then takes wk_decode_attention's flash kernel: f16 operands, head size 64, 64
    queries or more); and with --graph 0 the same bytes as the graph replays (check_graph's rule
    on the 16-bit path). On the CPU the defaults are the exact path: the same bytes as with
    EXACT."""
    path = os.path.join(args.dir, "llama_f32.gguf")
    dev = args.device.replace(":", "")
    out = os.path.join(args.dir, f"logits_f32_{dev}_defaults.f32")
    run_wick(args, path, ["--prompt-ids", prompt, "--force", force, "--logits", out])
    if args.device == "cpu":
        exact = os.path.join(args.dir, "logits_f32_cpu.f32")
        same = same_bytes(out, exact)
        print(f"defaults on cpu (f32 products and cache): {'identical to' if same else 'DIFFER from'} "
              f"--gemm-dtype f32 --kv-dtype f32")
        return same
    eager = os.path.join(args.dir, f"logits_f32_{dev}_defaults_eager.f32")
    run_wick(args, path, ["--prompt-ids", prompt, "--force", force, "--logits", eager, "--graph", "0"])
    same = same_bytes(out, eager)
    print(f"defaults on {args.device}: decode as graph replays vs eager: "
          f"{'identical' if same else 'DIFFERENT'}")
    hf = hf_model(CFG)
    long_ids = np.random.default_rng(CFG["seed"] + 2).integers(0, CFG["vocab"], LONG_PROMPT + LONG_FORCE)
    out_long = os.path.join(args.dir, f"logits_f32_{dev}_defaults_long.f32")
    run_wick(args, path, ["--prompt-ids", " ".join(map(str, long_ids[:LONG_PROMPT])),
                          "--force", " ".join(map(str, long_ids[LONG_PROMPT:])), "--logits", out_long])
    cases = [(ids, N_PROMPT, out, np.load(os.path.join(args.dir, "ref_f32.npy"))),
             (long_ids, LONG_PROMPT, out_long, forward(hf, CFG, long_ids))]
    ok = same
    for seq, npr, path_out, ref in cases:
        emu = forward(hf, CFG, seq, gemm16=("f16", npr), kv16="f16")
        got = np.fromfile(path_out, np.float32).reshape(ref.shape).astype(np.float64)
        e, err = row_err(emu, ref), row_err(got, ref)
        bound = BOUND_F32 + 2.0 * e
        ok &= bool(err <= bound)
        print(f"defaults on {args.device} (f16 products, f16 cache), {npr}+{len(seq) - npr} rows: "
              f"err {err:.3e} (against the emulation {row_err(got, emu):.3e}), bound {bound:.3e}: "
              f"{'ok' if err <= bound else 'FAIL'}")
    return ok


def check_sampling(args):
    """Seeded temperature / top-p sampling on the f32 model: the same seed gives the same tokens;
    another seed at a high temperature other tokens; top-p 1e-9 is greedy; and every token drawn
    at temperature 0.8, top-p 0.5 lies in the nucleus of the numpy reference's distribution at
    that step (the smallest set of most likely tokens whose probability reaches 0.5; a token at
    the set's edge is accepted within 1e-3 of probability, the logits' error bound's effect)."""
    path = os.path.join(args.dir, "llama_f32.gguf")
    prompt = "1 17 300 511 42 1000 7 256"

    def ids(*extra):
        out = run_wick(args, path, ["--prompt-ids", prompt, "-n", "16", "--ignore-eos"] + EXACT +
                       list(extra))
        return [int(t) for t in [x for x in out.splitlines() if x.startswith("ids:")][0][4:].split()]
    a = ids("--temp", "0.8", "--top-p", "0.5", "--seed", "5")
    same = a == ids("--temp", "0.8", "--top-p", "0.5", "--seed", "5")
    other = ids("--temp", "2", "--seed", "6") != ids("--temp", "2", "--seed", "7")
    greedy = ids("--temp", "1", "--top-p", "1e-9", "--seed", "3") == ids()
    seq = [int(t) for t in prompt.split()] + a
    lg = forward(hf_model(CFG), CFG, np.array(seq))[len(prompt.split()) - 1:-1] / 0.8
    inside = True
    for row, tok in zip(lg, a):
        p = np.exp(row - row.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        before = p[order][:list(order).index(tok)].sum()  # probability ranked above tok
        inside &= before < 0.5 + 1e-3
    ok = same and other and greedy and inside
    print(f"sampling: same seed same tokens {same}; other seeds differ {other}; top-p 1e-9 is "
          f"greedy {greedy}; top-p 0.5 draws inside the reference nucleus {inside}: "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def greedy_tokens(args, path, n):
    """Greedy ids on args.device, on the exact path (the bounds of cmd_greedy's tie rule)."""
    out = run_wick(args, path, ["--prompt-ids", args.prompt, "-n", str(n), "--ignore-eos"] + EXACT)
    line = [s for s in out.splitlines() if s.startswith("ids:")][0]
    return [int(tok) for tok in line[len("ids:"):].split()]


def device_quantizes(device):
    """Whether device's decode steps (x of at most 8 rows) quantize the activations to int8 blocks
    (docs/semantics.md, wk_qmatmul): GPUs always, the CPU unless WICK_CPU_QDOT=exact."""
    return device != "cpu" or os.environ.get("WICK_CPU_QDOT") != "exact"


def quant_ref(d, t, device):
    """The reference with the activation rounding device applies: the CPU (unless
    WICK_CPU_QDOT=exact) quantizes the activations of every row, prefill too (refqa); GPUs only
    those of the decode steps (refq: products of more than 8 rows dequantize W instead)."""
    return os.path.join(d, f"refqa_{t}.npy" if device == "cpu" else f"refq_{t}.npy")


def gpu_bound(d, t, device="cuda"):
    """The error bound of type t on device (cmd_test's rule)."""
    if not device_quantizes(device) or (t not in BLOCKS and t != "mixed"):
        return BOUND_F32
    return BOUND_F32 + 2.0 * row_err(np.load(quant_ref(d, t, device)),
                                     np.load(os.path.join(d, f"ref_{t}.npy")))


def cmd_greedy(args):
    """Greedy tokens of the same GGUF on the CPU and on args.device (both with EXACT: f32 products
    and cache) must agree. Where they part, both devices' logits are within their bounds of the
    reference (cmd_test), so the two can only pick different tokens when the reference's top-2
    gap (relative to max |logit|, as err) is at most 2 * (cpu bound + gpu bound): such a near tie
    passes, saying so; a wider gap fails."""
    types = args.types.split(",") if args.types else ["f32", "f16", "q8_0", "q4_0", "q5_0",
                                                      "q2_k", "q4_k", "q6_k", "mixed"]
    generate(args.dir, TYPES)
    run_wick(args, os.path.join(args.dir, "llama_f32.gguf"), ["--prompt-ids", "1", "-n", "1"])
    cpu_args = argparse.Namespace(**{**vars(args), "device": "cpu"})
    fails = 0
    for t in types:
        path = os.path.join(args.dir, f"llama_{t}.gguf")
        a = greedy_tokens(cpu_args, path, args.n)
        b = greedy_tokens(args, path, args.n)
        same = next((i for i in range(args.n) if a[i] != b[i]), args.n)
        ok = same == args.n
        verdict = "same tokens" if ok else f"part at step {same}"
        if not ok:
            lg = reference_logits(args.dir, t, [int(s) for s in args.prompt.split()] + a[:same])
            top = np.sort(lg)[-2:]
            gap = (top[1] - top[0]) / np.abs(lg).max()
            tie = 2.0 * (gpu_bound(args.dir, t, "cpu") + gpu_bound(args.dir, t, args.device))
            ok = gap <= tie
            verdict += f" (reference top-2 gap {gap:.2e}, tie below {tie:.2e}: " \
                       f"{'near tie, ok' if ok else 'FAIL'})"
        fails += not ok
        print(f"{t:6} cpu vs {args.device}: {verdict}  {' '.join(map(str, a[:10]))} ...")
    print(f"llama greedy: {len(types) - fails} of {len(types)} types agree (cpu vs {args.device})")
    return 1 if fails else 0


def reference_logits(d, t, seq):
    """The numpy reference's last-row logits for seq, rebuilding the decoded weights of type t
    exactly as generate() did."""
    cfg = CFG
    hf = hf_model(cfg)
    i = TYPES.index(t)
    dec = write_model(os.path.join(d, f"tmp_{t}.gguf"), hf, cfg, t, tied=tied_output(i),
                      rng=np.random.default_rng(cfg["seed"] + 100 + i))
    os.remove(os.path.join(d, f"tmp_{t}.gguf"))
    return forward(dec, cfg, np.array(seq))[-1]


# ----------------------------------------------------------------------------- the 8B bench model
SHAPE_8B = dict(dim=4096, n_layer=32, n_head=32, n_kv=8, ffn=14336, vocab=128256, ctx=8192,
                eps=1e-5, rope_base=500000.0)
# The 8B-class shapes of the other families (their Hugging Face configs): hd = head_dim.
BENCH_SHAPES = {
    "llama": SHAPE_8B,  # Llama-3-8B
    "qwen2": dict(dim=3584, n_layer=28, n_head=28, n_kv=4, ffn=18944, vocab=152064, ctx=32768,
                  eps=1e-6, rope_base=1e6),  # Qwen2.5-7B (q/k/v biases, untied)
    "qwen3": dict(dim=4096, n_layer=36, n_head=32, n_kv=8, hd=128, ffn=12288, vocab=151936,
                  ctx=40960, eps=1e-6, rope_base=1e6),  # Qwen3-8B (q/k norms, untied)
    "gemma2": dict(dim=3584, n_layer=42, n_head=16, n_kv=8, hd=256, ffn=14336, vocab=256000,
                   ctx=8192, eps=1e-6, rope_base=10000.0, window=4096, attn_softcap=50.0,
                   final_softcap=30.0),  # Gemma-2-9B (tied)
    "gemma3": dict(dim=2560, n_layer=34, n_head=8, n_kv=4, hd=256, ffn=10240, vocab=262144,
                   ctx=131072, eps=1e-6, rope_base=1e6, rope_local=10000.0, rope_linear=8.0,
                   window=1024),  # Gemma-3-4B (tied; q/k norms; 5 local blocks of every 6)
}
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9,
             "q2_k": 10, "q3_k": 12, "q4_k": 15, "q5_k": 17, "q6_k": 18, "bf16": 32}


def random_f16(n, k, rng):
    """(n, k) f16 with random sign and mantissa and magnitudes in [2^-7, 2^-5) (spread about
    0.02, near 1/sqrt(4096)): random bits with the exponent forced to 8 or 9, in place."""
    r = rand_bytes(rng, n * k * 2).view(np.uint16).reshape(n, k)
    r &= 0x87FF
    r |= 0x2000
    return r.view(np.float16)


def add_family_meta(w, cfg, arch):
    """The keys llama.cpp's converter writes for the other families (family_ref.py)."""
    if "hd" in cfg:
        w.add_key_length(cfg["hd"])
        w.add_value_length(cfg["hd"])
    if "attn_softcap" in cfg:
        w.add_attn_logit_softcapping(cfg["attn_softcap"])
        w.add_final_logit_softcapping(cfg["final_softcap"])
    if "window" in cfg:
        w.add_sliding_window(cfg["window"])
    if "rope_local" in cfg:
        w.add_rope_freq_base_swa(cfg["rope_local"])
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(cfg["rope_linear"])


def cmd_bench_model(args):
    """An 8B-class GGUF of one family (--arch; Llama-3-8B by default) with random weights of one
    type. Quantized types: random valid blocks (scales from a small calibration, codes random
    bytes); f16: random bits. No 8B float matrix is ever quantized, so generation takes seconds,
    not hours. Norm weights are ones (Gemma's: the file's 1 + w with w = 0), biases zeros."""
    arch, t = args.arch, args.type
    cfg = dict(BENCH_SHAPES[arch])
    if args.n_layer:
        cfg["n_layer"] = args.n_layer
    rng = np.random.default_rng(args.seed)
    d, f, v = cfg["dim"], cfg["ffn"], cfg["vocab"]
    hd = cfg.get("hd", d // cfg["n_head"])
    qd, kvd = cfg["n_head"] * hd, cfg["n_kv"] * hd
    w = gguf.GGUFWriter(args.out, arch)
    add_meta(w, cfg, t)
    add_family_meta(w, cfg, arch)
    if t in FILE_TYPE:
        w.add_file_type(FILE_TYPE[t])
    unit = {}

    def weight(name, n, k, std):
        if t == "f16":
            w.add_tensor(name, random_f16(n, k, rng))
            return
        if t not in unit:
            unit[t] = random_blocks(t, 64, 1024, 1.0, rng)[1]
        data, _ = random_blocks(t, n, k, std, rng, unit_std=unit[t])
        w.add_tensor(name, data, raw_dtype=qtype(t))
    ones = np.ones(d, np.float32)
    weight("token_embd.weight", v, d, 1.0)
    w.add_tensor("output_norm.weight", ones)
    if arch in ("llama", "qwen2", "qwen3"):  # Gemma ties the output to token_embd
        weight("output.weight", v, d, 1.0 / np.sqrt(d))
    for i in range(cfg["n_layer"]):
        w.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        for name, n, k in (("attn_q", qd, d), ("attn_k", kvd, d), ("attn_v", kvd, d),
                           ("attn_output", d, qd), ("ffn_gate", f, d), ("ffn_up", f, d),
                           ("ffn_down", d, f)):
            weight(f"blk.{i}.{name}.weight", n, k, 1.0 / np.sqrt(k))
        if arch == "qwen2":
            for name, n in (("attn_q", qd), ("attn_k", kvd), ("attn_v", kvd)):
                w.add_tensor(f"blk.{i}.{name}.bias", np.zeros(n, np.float32))
        if arch in ("qwen3", "gemma3"):
            w.add_tensor(f"blk.{i}.attn_q_norm.weight", np.ones(hd, np.float32))
            w.add_tensor(f"blk.{i}.attn_k_norm.weight", np.ones(hd, np.float32))
        if arch in ("gemma2", "gemma3"):
            w.add_tensor(f"blk.{i}.post_attention_norm.weight", ones)
            w.add_tensor(f"blk.{i}.post_ffw_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 2**30:.2f} GiB, {arch} {t})")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("test", "greedy"):
        s = sub.add_parser(name)
        s.add_argument("--bin", required=True)
        s.add_argument("--dir", required=True)
        s.add_argument("--device", default="cpu" if name == "test" else "cuda:0")
        s.add_argument("--types", default="")
        if name == "greedy":
            s.add_argument("-n", type=int, default=24)
            s.add_argument("--prompt", default="1 17 300 511 42 1000 7 256")
    s = sub.add_parser("bench-model")
    s.add_argument("--out", required=True)
    s.add_argument("--type", required=True, choices=["f16"] + sorted(BLOCKS))
    s.add_argument("--seed", type=int, default=8)
    s.add_argument("--n-layer", type=int, default=0, help="fewer blocks (a quick check)")
    s.add_argument("--arch", default="llama", choices=sorted(BENCH_SHAPES),
                   help="the family's 8B-class shape (Llama-3-8B, Qwen2.5-7B, Qwen3-8B, "
                        "Gemma-2-9B, Gemma-3-4B)")
    a = p.parse_args()
    return {"test": cmd_test, "greedy": cmd_greedy, "bench-model": cmd_bench_model}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
