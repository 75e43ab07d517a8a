#!/usr/bin/env python3
"""family_ref.py: independent references for the Qwen2, Qwen3, Gemma 2 and Gemma 3 families of
examples/llama.c (python3 + numpy + gguf-py), as llama_ref.py is for Llama.

  family_ref.py test --bin build/wick_llama --dir build/models/family [--device cpu|simt:1]
                     [--models qwen2_f32,gemma2_q4_0,...]

For each family a small model with random weights from a fixed seed, defined the Hugging Face
way (Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM), written as
llama.cpp's converter writes that architecture (conversion/qwen.py, conversion/gemma.py, 0c1e570):
  - no row permutation of Wq/Wk (NEOX rope: rotate halves, as Hugging Face);
  - Gemma's norm weights w written as w + 1 (Gemma's RMSNorm multiplies by 1 + w);
  - only the metadata keys that converter writes (Gemma 2: no rope.freq_base, softcapping and
    sliding_window keys; Gemma 3: rope.freq_base of the global blocks, rope.freq_base_swa,
    linear rope scaling, sliding_window; Qwen3 and Gemma: key_length);
  - Gemma 2 without `output` (llama.cpp always uses token_embd), Qwen2 and Gemma 3 tied too.
Two files per family: f32, and one with block-type weights (q8_0, q4_0, or "mixed": Q4_0 with a
Q8_0 attn_v, so Wq/Wk/Wv are not stacked and Qwen2's biases take the unstacked path; the Gemma 3
q8_0 file carries its sliding-window pattern as a per-block bool array). The reference forward is
this file's own float64 numpy code on the weights as gguf-py decodes them; it never calls wick.
Logits of a 32-token prompt and 16 teacher-forced steps (48 rows); the Gemma files also run a
6-token prompt (within the window of 8) and 10 steps, the first 16 rows of the same reference.

Every run asks for the exact path (--gemm-dtype f32 --kv-dtype f32, llama_ref.EXACT: the
defaults on GPU devices differ) but check_kv16's, which runs Qwen3 and the Gemma f32 files with
an f16 cache against the reference with the same rounding.
Error measure and bounds: llama_ref.py and docs/llama.md ("Bounds"); the same rules apply. The
test also checks that it can fail: for every feature of a family, the reference computed without
it must move the logits by more than 100 times the f32 bound (printed as "sensitivity").
"""
import argparse
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref as lr  # noqa: E402  (exits 77 without numpy/gguf)

np, gguf = lr.np, lr.gguf

N_PROMPT, N_FORCE = 32, 16
SHORT_PROMPT, SHORT_FORCE = 6, 10
BASE = dict(dim=128, n_head=4, n_kv=2, ffn=256, vocab=512, ctx=64, seed=20261205)
FAMILIES = {
    "qwen2": dict(BASE, arch="qwen2", n_layer=2, hd=32, eps=1e-6, rope_base=1e6, tied=True,
                  qkv_bias=True),
    "qwen3": dict(BASE, arch="qwen3", n_layer=2, hd=64, eps=1e-6, rope_base=1e6, tied=False,
                  qk_norm=True),
    "gemma2": dict(BASE, arch="gemma2", n_layer=4, hd=64, eps=1e-6, rope_base=10000.0,
                   tied=True, gemma=True, attn_softcap=4.0, final_softcap=8.0, window=8,
                   pattern=2),
    "gemma3": dict(BASE, arch="gemma3", n_layer=6, hd=64, eps=1e-6, rope_base=1e6,
                   rope_local=10000.0, rope_linear=8.0, tied=True, gemma=True, qk_norm=True,
                   window=8, pattern=6),
}
# the files: family_type; "mixed" = q4_0 with attn_v in q8_0 (Wq/Wk/Wv unstacked)
MODELS = ["qwen2_f32", "qwen2_mixed", "qwen3_f32", "qwen3_q8_0", "gemma2_f32", "gemma2_q4_0",
          "gemma3_f32", "gemma3_q8_0"]
PATTERN_ARRAY = {"gemma3_q8_0": [True, False, True, True, True, False]}


def tensor_type(t, key):
    if t == "mixed":
        return "q8_0" if key == "attn_v" else "q4_0"
    return t


def is_local(cfg, l, model=None):
    if "window" not in cfg:
        return False
    if model in PATTERN_ARRAY:
        return PATTERN_ARRAY[model][l]
    n = cfg["pattern"]
    return l % n < n - 1


# ----------------------------------------------------------------------------- the HF model
def hf_model(cfg):
    """Float weights in Hugging Face layout (Gemma norms as HF stores them: around 0)."""
    rng = np.random.default_rng(cfg["seed"] + sum(map(ord, cfg["arch"])))
    d, f, v, hd = cfg["dim"], cfg["ffn"], cfg["vocab"], cfg["hd"]
    qd, kvd = cfg["n_head"] * hd, cfg["n_kv"] * hd
    gemma = cfg.get("gemma", False)

    def lin(n, k):
        return (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)

    def norm(n=d):
        w = 0.1 * rng.standard_normal(n)
        return (w if gemma else 1.0 + w).astype(np.float32)
    emb_std = 1.0 / np.sqrt(d) if gemma else 1.0  # Gemma scales the embeddings by sqrt(dim)
    m = {"token_embd": (emb_std * rng.standard_normal((v, d))).astype(np.float32),
         "output_norm": norm(), "blocks": []}
    if not cfg["tied"]:
        m["output"] = 4.0 * lin(v, d)
    for _ in range(cfg["n_layer"]):
        b = {"attn_norm": norm(), "ffn_norm": norm(), "attn_q": lin(qd, d), "attn_k": lin(kvd, d),
             "attn_v": lin(kvd, d), "attn_output": lin(d, qd), "ffn_gate": lin(f, d),
             "ffn_up": lin(f, d), "ffn_down": lin(d, f)}
        if cfg.get("qkv_bias"):
            b["attn_q.bias"] = (0.5 * rng.standard_normal(qd)).astype(np.float32)
            b["attn_k.bias"] = (0.5 * rng.standard_normal(kvd)).astype(np.float32)
            b["attn_v.bias"] = (0.5 * rng.standard_normal(kvd)).astype(np.float32)
        if cfg.get("qk_norm"):
            b["attn_q_norm"], b["attn_k_norm"] = norm(hd), norm(hd)
        if gemma:
            b["post_attention_norm"], b["post_ffw_norm"] = norm(), norm()
        m["blocks"].append(b)
    return m


# ----------------------------------------------------------------------------- the reference
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def rope_pairs(x, pos, base):
    """Adjacent-pair rope (what the Llama path would do to these unpermuted rows): the
    sensitivity check of NEOX rope."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = x0 * c - x1 * s, x0 * s + x1 * c
    return out


def forward(m, cfg, ids, model=None, quant_from=None, off=(), kv16=None):
    """float64 logits (T, vocab) of the Hugging Face model (weights m, HF layout) on ids.
    quant_from: rows >= quant_from get llama_ref.act_quant on every linear input.
    kv16 = dt: a 16-bit KV cache, as llama_ref.forward (llama_ref.kv_round).
    off: features switched off (the sensitivity check): bias, qk_norm, neox, post_norms,
    norm_plus1, embd_scale, geglu, attn_softcap, final_softcap, window, rope_local, rope_linear."""
    H, KV, hd, eps = cfg["n_head"], cfg["n_kv"], cfg["hd"], cfg["eps"]
    T = len(ids)
    gemma = cfg.get("gemma", False)
    pos = np.arange(T, dtype=np.float64)

    def lin(x, w, bias=None):
        if quant_from is not None:
            x = x.copy()
            x[quant_from:] = lr.act_quant(x[quant_from:])
        y = x @ w.T
        return y if bias is None or "bias" in off else y + bias

    def norm(x, w):
        if gemma and "norm_plus1" not in off:
            w = 1.0 + w.astype(np.float64)
        return lr.rms_norm(x, w, eps)

    def rope(x, l):
        base, p = cfg["rope_base"], pos
        if cfg.get("rope_local") and is_local(cfg, l, model) and "rope_local" not in off:
            base = cfg["rope_local"]
        elif cfg.get("rope_linear") and "rope_linear" not in off:
            p = pos / cfg["rope_linear"]
        return rope_pairs(x, p, base) if "neox" in off else lr.rope_halves(x, p, base)

    def softcap(x, c):
        return c * np.tanh(x / c)
    x = m["token_embd"][ids].astype(np.float64)
    if gemma and "embd_scale" not in off:
        x = x * np.sqrt(cfg["dim"])
    causal = np.tril(np.ones((T, T), bool))
    back = pos[:, None] - pos[None, :]
    for l, b in enumerate(m["blocks"]):
        h = norm(x, b["attn_norm"])
        q = lin(h, b["attn_q"], b.get("attn_q.bias")).reshape(T, H, hd)
        k = lin(h, b["attn_k"], b.get("attn_k.bias")).reshape(T, KV, hd)
        v = lin(h, b["attn_v"], b.get("attn_v.bias")).reshape(T, KV, hd)
        if cfg.get("qk_norm") and "qk_norm" not in off:
            q, k = norm(q, b["attn_q_norm"]), norm(k, b["attn_k_norm"])
        q, k = rope(q, l), rope(k, l)
        if kv16 is not None:
            q, k, v = lr.kv_round(q, k, v, kv16)
        k, v = np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd)  # query_pre_attn_scalar = hd
        if cfg.get("attn_softcap") and "attn_softcap" not in off:
            s = softcap(s, cfg["attn_softcap"])
        vis = causal
        if is_local(cfg, l, model) and "window" not in off:
            vis = causal & (back < cfg["window"])
        s = np.where(vis[None], s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        a = np.einsum("hts,shd->thd", p, v).reshape(T, H * hd)
        a = lin(a if kv16 is None else lr.round16(a, kv16), b["attn_output"])
        if gemma and "post_norms" not in off:
            a = norm(a, b["post_attention_norm"])
        x = x + a
        h = norm(x, b["ffn_norm"])
        g, u = lin(h, b["ffn_gate"]), lin(h, b["ffn_up"])
        act = gelu_tanh(g) if gemma and "geglu" not in off else g / (1.0 + np.exp(-g))
        y = lin(act * u, b["ffn_down"])
        if gemma and "post_norms" not in off:
            y = norm(y, b["post_ffw_norm"])
        x = x + y
    out = m["token_embd"] if cfg["tied"] else m["output"]
    logits = lin(norm(x, m["output_norm"]), out)
    if cfg.get("final_softcap") and "final_softcap" not in off:
        logits = softcap(logits, cfg["final_softcap"])
    return logits


FEATURES = {"qwen2": ["bias", "neox"], "qwen3": ["qk_norm", "neox"],
            "gemma2": ["neox", "post_norms", "norm_plus1", "embd_scale", "geglu", "attn_softcap",
                       "final_softcap", "window"],
            "gemma3": ["qk_norm", "neox", "post_norms", "norm_plus1", "embd_scale", "geglu",
                       "window", "rope_local", "rope_linear"]}


# ----------------------------------------------------------------------------- GGUF writing
def add_meta(w, cfg, model):
    """The keys llama.cpp's converter writes for this architecture, and a vocabulary."""
    w.add_name(f"wick-test-{model}")
    w.add_context_length(cfg["ctx"])
    w.add_embedding_length(cfg["dim"])
    w.add_block_count(cfg["n_layer"])
    w.add_feed_forward_length(cfg["ffn"])
    w.add_head_count(cfg["n_head"])
    w.add_head_count_kv(cfg["n_kv"])
    w.add_layer_norm_rms_eps(cfg["eps"])
    if cfg["arch"] != "qwen2":  # head_dim in the HF config (Qwen3, Gemma)
        w.add_key_length(cfg["hd"])
        w.add_value_length(cfg["hd"])
    if cfg["arch"] != "gemma2":  # Gemma2Model.set_gguf_parameters writes no rope keys
        w.add_rope_freq_base(cfg["rope_base"])
    if cfg["arch"] == "gemma2":
        w.add_attn_logit_softcapping(cfg["attn_softcap"])
        w.add_final_logit_softcapping(cfg["final_softcap"])
    if cfg["arch"] == "gemma3":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(cfg["rope_linear"])
        w.add_rope_freq_base_swa(cfg["rope_local"])
        if model in PATTERN_ARRAY:
            w.add_sliding_window_pattern(PATTERN_ARRAY[model])
    if "window" in cfg:
        w.add_sliding_window(cfg["window"])
    v = cfg["vocab"]
    toks = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{i:02X}>" for i in range(256)]
    toks += [f"\u2581w{i}" for i in range(len(toks), v)]
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * v)
    w.add_token_types([3, 3, 3, 2] + [6] * 256 + [1] * (v - 260))
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)


def write_model(path, hf, cfg, model, t, rng):
    """Writes the GGUF; returns the decoded weights in HF layout (Gemma norms as HF's w)."""
    w = gguf.GGUFWriter(path, cfg["arch"])
    add_meta(w, cfg, model)
    gemma = cfg.get("gemma", False)
    shift = 1.0 if gemma else 0.0  # the converter's w + 1 for Gemma's norms
    dec = {"blocks": []}
    tt = tensor_type(t, "token_embd")
    data, dec["token_embd"] = lr.encode(hf["token_embd"], tt, rng)
    lr.add_weight(w, "token_embd.weight", data, tt)
    w.add_tensor("output_norm.weight", (hf["output_norm"] + shift).astype(np.float32))
    dec["output_norm"] = hf["output_norm"]
    if not cfg["tied"]:
        tt = tensor_type(t, "output")
        data, dec["output"] = lr.encode(hf["output"], tt, rng)
        lr.add_weight(w, "output.weight", data, tt)
    for i, b in enumerate(hf["blocks"]):
        db = {}
        for key, val in b.items():
            name = f"blk.{i}.{key}" + ("" if key.endswith(".bias") else ".weight")
            if val.ndim == 1:
                norm = not key.endswith(".bias")
                w.add_tensor(name, (val + (shift if norm else 0.0)).astype(np.float32))
                db[key] = val
                continue
            tt = tensor_type(t, key)
            data, db[key] = lr.encode(val, tt, rng)
            lr.add_weight(w, name, data, tt)
        dec["blocks"].append(db)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dec


def script_hash():
    h = hashlib.sha256()
    for f in (__file__, lr.__file__):
        with open(f, "rb") as fp:
            h.update(fp.read())
    return h.hexdigest()[:16]


def is_block_type(t):
    return t != "f32"


def generate(d, models):
    """Writes d/<model>.gguf and its references (ref_, refq_ and refqa_ as llama_ref.py), and the
    sensitivity of each feature (sens_<family>.npy), once per script version."""
    os.makedirs(d, exist_ok=True)
    stamp = os.path.join(d, "stamp")
    h = script_hash()
    have = open(stamp).read().strip() if os.path.exists(stamp) else ""
    if have == h and all(os.path.exists(os.path.join(d, f"ref_{m}.npy")) for m in models):
        return
    rng = np.random.default_rng(BASE["seed"] + 1)
    ids = rng.integers(4, BASE["vocab"], N_PROMPT + N_FORCE)
    np.save(os.path.join(d, "ids.npy"), ids)
    for i, model in enumerate(MODELS):
        fam, t = model.split("_", 1)
        cfg = FAMILIES[fam]
        hf = hf_model(cfg)
        dec = write_model(os.path.join(d, f"{model}.gguf"), hf, cfg, model, t,
                          np.random.default_rng(BASE["seed"] + 100 + i))
        ref = forward(dec, cfg, ids, model)
        np.save(os.path.join(d, f"ref_{model}.npy"), ref)
        if is_block_type(t):
            np.save(os.path.join(d, f"refq_{model}.npy"),
                    forward(dec, cfg, ids, model, quant_from=N_PROMPT))
            np.save(os.path.join(d, f"refqa_{model}.npy"), forward(dec, cfg, ids, model, quant_from=0))
        if t == "f32":
            sens = [lr.row_err(forward(dec, cfg, ids, model, off=(f,)), ref) for f in FEATURES[fam]]
            np.save(os.path.join(d, f"sens_{fam}.npy"), np.array(sens))
    with open(stamp, "w") as f:
        f.write(h + "\n")


# ----------------------------------------------------------------------------- the test
def bound(d, model, device):
    """llama_ref.py's rule: 1e-4, plus twice the measured effect of the activation rounding where
    the device applies it (block types: the CPU on every row, GPUs on the decode steps)."""
    t = model.split("_", 1)[1]
    if not is_block_type(t) or not lr.device_quantizes(device):
        return lr.BOUND_F32, float("nan")
    ref = np.load(os.path.join(d, f"ref_{model}.npy"))
    q = np.load(os.path.join(d, ("refqa_" if device == "cpu" else "refq_") + f"{model}.npy"))
    e = lr.row_err(q, ref)
    return lr.BOUND_F32 + 2.0 * e, e


def cmd_test(args):
    models = args.models.split(",") if args.models else MODELS
    generate(args.dir, models)
    ids = np.load(os.path.join(args.dir, "ids.npy"))
    dev = args.device.replace(":", "")
    print(f"{'model':12} {'rows':>5} {'err':>10} {'bound':>10} {'quant-act err':>14}  device {args.device}")
    fails = runs = 0
    for model in models:
        ref = np.load(os.path.join(args.dir, f"ref_{model}.npy"))
        b, qerr = bound(args.dir, model, args.device)
        cases = [(N_PROMPT, N_FORCE)]
        if model.startswith("gemma") and model.endswith("f32"):
            cases.append((SHORT_PROMPT, SHORT_FORCE))  # a prompt within the window
        for npr, nf in cases:
            out = os.path.join(args.dir, f"logits_{model}_{npr}_{dev}.f32")
            lr.run_wick(args, os.path.join(args.dir, f"{model}.gguf"),
                        ["--prompt-ids", " ".join(map(str, ids[:npr])),
                         "--force", " ".join(map(str, ids[npr:npr + nf])), "--logits", out]
                        + lr.EXACT)
            r = ref[:npr + nf]
            got = np.fromfile(out, np.float32).reshape(r.shape).astype(np.float64)
            err = lr.row_err(got, r)
            ok = bool(np.isfinite(got).all() and err <= b)
            fails += not ok
            runs += 1
            print(f"{model:12} {npr:2}+{nf:<2} {err:10.3e} {b:10.3e} {qerr:14.3e}  "
                  f"{'ok' if ok else 'FAIL'}")
    kv = [m for m in ("qwen3_f32", "gemma2_f32", "gemma3_f32") if m in models]
    if kv:
        fails += not check_kv16(args, ids, kv)
        runs += 1
    if args.device == "cpu" and not args.models:
        fails += not check_bad_files(args)
        fails += not check_tensor_parallel(args, ids)
        runs += 2
    for fam in sorted({m.split('_')[0] for m in models}):
        sens = np.load(os.path.join(args.dir, f"sens_{fam}.npy"))
        low = [f for f, s in zip(FEATURES[fam], sens) if s <= 100 * lr.BOUND_F32]
        fails += bool(low)
        runs += 1
        print(f"sensitivity {fam}: " + ", ".join(f"{f} {s:.2g}" for f, s in zip(FEATURES[fam], sens))
              + (f"  FAIL: {low} within 100x the bound" if low else "  ok"))
    print(f"family logits: {runs - fails} passed, {fails} failed on {args.device}")
    return 1 if fails else 0


def check_kv16(args, ids, models):
    """--kv-dtype f16 (products f32) on f32 files: Qwen3's attention is the fused op's (as
    Llama's); Gemma 2's capped scores and Gemma 3's windows over the 32-token prompt take the
    composed attention, which converts q and the cache's rows to f32 for its matmuls. The
    reference rounds rope(q), rope(k), v and the attention's output to f16 (llama_ref.kv_round),
    as the fused op's steps do; the composed steps leave their output in f32, so for them the
    emulation's effect overstates wick's a little (a wider bound, not a narrower one). wick
    within 1e-4 + 2 e16, e16 the effect on the reference (llama_ref.py's check_kv16)."""
    ok = True
    dev = args.device.replace(":", "")
    for model in models:
        cfg = FAMILIES[model.split("_")[0]]
        emu = forward(hf_model(cfg), cfg, ids, model, kv16="f16")
        ref = np.load(os.path.join(args.dir, f"ref_{model}.npy"))
        out = os.path.join(args.dir, f"logits_{model}_f16kv_{dev}.f32")
        lr.run_wick(args, os.path.join(args.dir, f"{model}.gguf"),
                    ["--prompt-ids", " ".join(map(str, ids[:N_PROMPT])),
                     "--force", " ".join(map(str, ids[N_PROMPT:])), "--logits", out,
                     "--gemm-dtype", "f32", "--kv-dtype", "f16"])
        got = np.fromfile(out, np.float32).reshape(ref.shape).astype(np.float64)
        e16, err = lr.row_err(emu, ref), lr.row_err(got, ref)
        bound = lr.BOUND_F32 + 2.0 * e16
        good = bool(np.isfinite(got).all() and err <= bound)
        ok &= good
        print(f"{model:12} --kv-dtype f16: err {err:.3e} (against the emulation "
              f"{lr.row_err(got, emu):.3e}), bound {bound:.3e}: {'ok' if good else 'FAIL'}")
    return ok


def check_tensor_parallel(args, ids):
    """--devices cpu,cpu (each rank: half the heads, biases and ffn columns; norms replicated;
    Gemma's post-norms after the all_reduce) against the one-device run of the f32 files: within
    llama_tp.py's 1e-5 (only the order of f32 sums changes)."""
    ok = True
    for model in ("qwen2_f32", "qwen3_f32", "gemma2_f32", "gemma3_f32"):
        one = os.path.join(args.dir, f"logits_{model}_{N_PROMPT}_cpu.f32")
        two = os.path.join(args.dir, f"logits_{model}_tp2.f32")
        lr.run_wick(argparse.Namespace(bin=args.bin, device="cpu"),
                    os.path.join(args.dir, f"{model}.gguf"),
                    ["--devices", "cpu,cpu", "--prompt-ids", " ".join(map(str, ids[:N_PROMPT])),
                     "--force", " ".join(map(str, ids[N_PROMPT:])), "--logits", two] + lr.EXACT)
        a = np.fromfile(one, np.float32).astype(np.float64).reshape(N_PROMPT + N_FORCE, -1)
        b = np.fromfile(two, np.float32).astype(np.float64).reshape(a.shape)
        e = lr.row_err(b, a)
        ok &= bool(e <= 1e-5)
        print(f"{model:12} --devices cpu,cpu vs cpu: {e:.2e} (bound 1e-5): "
              f"{'ok' if e <= 1e-5 else 'FAIL'}")
    return ok


def check_bad_files(args):
    """Files that are not what their architecture needs end in exit 1 with a message that says
    what is wrong (never a crash): a missing tensor, a bias of the wrong length, a sliding-window
    pattern of the wrong length, an architecture this example does not run."""
    import copy
    import subprocess
    cases = []
    hf = hf_model(FAMILIES["qwen3"])
    del hf["blocks"][1]["attn_k_norm"]
    cases.append(("qwen3_f32", hf, "missing tensor blk.1.attn_k_norm.weight"))
    hf = hf_model(FAMILIES["qwen2"])
    hf["blocks"][0]["attn_q.bias"] = hf["blocks"][0]["attn_q.bias"][:-1]
    cases.append(("qwen2_f32", hf, "tensor blk.0.attn_q.bias: expected 128 elements"))
    PATTERN_ARRAY["gemma3_badpattern"] = [True, False, True]
    cases.append(("gemma3_badpattern", hf_model(FAMILIES["gemma3"]),
                  "gemma3.attention.sliding_window_pattern: expected 6 bools"))
    cfg = dict(FAMILIES["qwen2"], arch="phi3")
    cases.append(("phi3_f32", hf_model(FAMILIES["qwen2"]), 'general.architecture is "phi3"'))
    ok = True
    for i, (model, hf, want) in enumerate(cases):
        fam = model.split("_")[0]
        c = cfg if fam == "phi3" else FAMILIES[fam]
        path = os.path.join(args.dir, f"bad_{i}.gguf")
        write_model(path, copy.deepcopy(hf), c, model, "f32", np.random.default_rng(i))
        r = subprocess.run([args.bin, path, "--prompt-ids", "5 6 7", "-n", "1"],
                           capture_output=True, text=True, errors="replace")
        good = r.returncode == 1 and want in r.stderr
        ok &= good
        print(f"bad file {i} ({model}): exit {r.returncode}, "
              f"{'says' if good else 'does NOT say'} '{want}': {'ok' if good else 'FAIL'}")
        if not good:
            print(r.stderr.strip()[-400:])
    del PATTERN_ARRAY["gemma3_badpattern"]
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("test")
    s.add_argument("--bin", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--device", default="cpu")
    s.add_argument("--models", default="")
    a = p.parse_args()
    return cmd_test(a)


if __name__ == "__main__":
    sys.exit(main())
