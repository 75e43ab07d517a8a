/* llama.c: a Llama-architecture decoder for GGUF files as llama.cpp writes them, on wick's public
 * API only (include/wick.h). Runs unchanged on the CPU, CUDA and ROCm (--device).
 *
 * Build: with the project (cmake/examples.cmake) -> build/wick_llama.
 * Run:   wick_llama MODEL.gguf --prompt "1 15043 29892" -n 32 [--device cuda:0]
 *                   [--temp 0.8 --top-p 0.95 --seed 7]          (default: greedy)
 *        wick_llama MODEL.gguf --prompt IDS --force IDS --logits OUT.f32
 *                   (the test mode: logits of every prompt position, then of every teacher-forced
 *                    decode step, as raw little-endian f32 rows of the vocabulary size)
 *        wick_llama MODEL.gguf --bench 512,128 [--reps 3]       (prefill / decode tokens/s)
 *
 * The model (llama.cpp's LLM_ARCH_LLAMA):
 *   x = token_embd[ids]
 *   per block: h = rms_norm(x) * attn_norm; q, k, v = h Wq^T, h Wk^T, h Wv^T;
 *              q, k rotated by rope; grouped-query attention over the KV cache (causal);
 *              x += attn Wo^T;  h = rms_norm(x) * ffn_norm;  x += (silu(h Wg^T) * h Wu^T) Wd^T
 *   logits = (rms_norm(x) * output_norm) Wout^T   (Wout = token_embd when `output` is absent)
 * Rope: llama.cpp's converter permutes the rows of Wq and Wk (HF's "rotate halves" layout) so that
 * ggml's NORMAL rope mode applies, which rotates ADJACENT pairs (x[2i], x[2i+1]) by pos * theta_i,
 * theta_i = base^(-2i/head_dim) (divided by rope_freqs[i] when that tensor exists, Llama 3.1;
 * positions divided by llama.rope.scaling.factor under "linear" scaling).
 * That is wick's rope_i (interleaved), not wick_rope (halves): docs/llama.md.
 * Every weight matrix stays in its file type (F32, F16, BF16 or a GGML block type) as raw bytes
 * on the device and is used through wk_qmatmul / wk_qembedding; activations and the KV cache are
 * f32. */
#include "llama_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ the model */
typedef struct qweight {   /* W (n, k) as raw GGUF bytes in a u8 storage */
    wk_storage *w;
    wk_qtype qt;
    int64_t n, k;
} qweight;

typedef struct block {
    wk_storage *attn_norm, *ffn_norm; /* f32 (dim) */
    /* When Wq, Wk, Wv share a type they are stacked into one matrix in wq (rows qd + 2 kvd;
     * wk.w and wv.w NULL), and likewise Wg, Wu into wg (2 ffn rows; wu.w NULL): one qmatmul
     * instead of three (two), whose outputs are read through column views. */
    qweight wq, wk, wv, wo, wg, wu, wd;
    wk_storage *kc, *vc;              /* KV cache: f32 (n_kv, ctx, head_dim) */
} block;

typedef struct model {
    wk_device *dev;
    int64_t dim, n_layer, n_head, n_kv, hd, ffn, vocab, ctx;
    float eps;
    double rope_base, rope_scale;     /* angle = pos * rope_scale * theta_i */
    qweight embd, out;
    wk_storage *out_norm;
    block *b;
    wk_storage *cos, *sin;            /* rope tables: f32 (ctx, hd/2) */
    wk_storage *qcos, *qsin;          /* the same times 1/sqrt(hd): rope(q) / sqrt(hd) at once */
    int64_t pos;                      /* tokens in the KV cache */
    wk_dtype gemm_dt;                 /* --gemm-dtype: f32 (default), f16 or bf16 */
    /* the vocabulary's strings when the file carries tokenizer.ggml.tokens (for printing) */
    const wk_gguf *g;
    int64_t tokens_kv;
} model;

/* The value of an integer metadata key of any integer type; def if absent (required: die). */
/* W (n, k): tensor `name` as its raw bytes on dev, checked against the expected shape. */
static qweight load_qweight(model *m, const wk_gguf *g, const char *name, int64_t n, int64_t k)
{
    wk_gguf_tensor_info ti;
    CK(wk_gguf_tensor_info_get(&ti, g, find_tensor(g, name, 1)));
    if (ti.n_dims != 2 || ti.dims[0] != n || ti.dims[1] != k)
        die("tensor %s: expected (%lld, %lld), the file has %d dims (%lld, %lld)", name,
            (long long)n, (long long)k, ti.n_dims, (long long)ti.dims[0], (long long)ti.dims[1]);
    if (!wk_device_supports_quant(m->dev, WK_OP_QMATMUL, ti.qtype, WK_DTYPE_F32))
        die("tensor %s: %s does not run qmatmul on %s weights", name, wk_device_name(m->dev),
            wk_qtype_name(ti.qtype));
    qweight q = {NULL, ti.qtype, n, k};
    const int64_t i = wk_gguf_find_tensor(g, name);
    CK(wk_storage_from_host(&q.w, m->dev, WK_DTYPE_U8, wk_gguf_tensor_data(g, i), ti.nbytes));
    return q;
}

/* W (sum of n[i], k): the tensors names[0..count) stacked by rows, when they share one type;
 * else w.w is NULL. Rows of a block type are independent, so stacking is byte concatenation. */
static qweight load_stacked(model *m, const wk_gguf *g, const char *const *names,
                            const int64_t *n, int count, int64_t k)
{
    qweight q = {NULL, WK_QTYPE_F32, 0, k};
    size_t bytes = 0;
    for (int i = 0; i < count; i++) {
        wk_gguf_tensor_info ti;
        CK(wk_gguf_tensor_info_get(&ti, g, find_tensor(g, names[i], 1)));
        if (ti.n_dims != 2 || ti.dims[0] != n[i] || ti.dims[1] != k ||
            (i > 0 && ti.qtype != q.qt))
            return q; /* load_qweight reports a bad shape; a mixed type stays unstacked */
        q.qt = ti.qtype;
        q.n += n[i];
        bytes += ti.nbytes;
    }
    unsigned char *buf = malloc(bytes), *p = buf;
    if (!buf)
        die("out of memory");
    for (int i = 0; i < count; i++) {
        wk_gguf_tensor_info ti;
        const int64_t t = wk_gguf_find_tensor(g, names[i]);
        CK(wk_gguf_tensor_info_get(&ti, g, t));
        memcpy(p, wk_gguf_tensor_data(g, t), ti.nbytes);
        p += ti.nbytes;
    }
    if (!wk_device_supports_quant(m->dev, WK_OP_QMATMUL, q.qt, WK_DTYPE_F32))
        die("tensor %s: %s does not run qmatmul on %s weights", names[0], wk_device_name(m->dev),
            wk_qtype_name(q.qt));
    CK(wk_storage_from_host(&q.w, m->dev, WK_DTYPE_U8, buf, bytes));
    free(buf);
    return q;
}

/* A norm weight (dim) as f32 on dev, whatever its float type in the file. */
static wk_storage *load_vector(model *m, const wk_gguf *g, const char *name, int64_t n)
{
    wk_gguf_tensor_info ti;
    const int64_t i = find_tensor(g, name, 1);
    CK(wk_gguf_tensor_info_get(&ti, g, i));
    if (ti.elems != n)
        die("tensor %s: expected %lld elements, the file has %lld", name, (long long)n,
            (long long)ti.elems);
    wk_storage *s = NULL, *f = NULL;
    CK(wk_gguf_load_tensor(&s, g, i, m->dev));
    if (wk_storage_dtype(s) == WK_DTYPE_F32)
        return s;
    if (ti.qtype != WK_QTYPE_F16 && ti.qtype != WK_QTYPE_BF16)
        die("tensor %s: a norm weight must be f32, f16 or bf16, not %s", name,
            wk_qtype_name(ti.qtype));
    const wk_layout l = lay1(n);
    CK(wk_to_dtype(&f, s, &l, WK_DTYPE_F32));
    wk_storage_free(s);
    return f;
}

/* Rope tables for positions [0, ctx): angle(p, i) = p * base^(-2i/hd) / freq_factor[i]. */
static void build_rope(model *m, const wk_gguf *g)
{
    const int64_t half = m->hd / 2;
    float *factors = NULL;
    const int64_t fi = find_tensor(g, "rope_freqs.weight", 0);
    if (fi >= 0) {
        wk_gguf_tensor_info ti;
        CK(wk_gguf_tensor_info_get(&ti, g, fi));
        if (ti.qtype != WK_QTYPE_F32 || ti.elems != half)
            die("rope_freqs.weight: expected %lld f32 values", (long long)half);
        factors = malloc((size_t)half * sizeof *factors);
        if (!factors)
            die("out of memory");
        memcpy(factors, wk_gguf_tensor_data(g, fi), (size_t)half * sizeof *factors);
    }
    float *c = malloc((size_t)(m->ctx * half) * sizeof *c);
    float *s = malloc((size_t)(m->ctx * half) * sizeof *s);
    if (!c || !s)
        die("out of memory");
    for (int64_t p = 0; p < m->ctx; p++)
        for (int64_t i = 0; i < half; i++) {
            double theta = pow(m->rope_base, -2.0 * (double)i / (double)m->hd);
            if (factors)
                theta /= factors[i];
            const double a = (double)p * m->rope_scale * theta;
            c[p * half + i] = (float)cos(a);
            s[p * half + i] = (float)sin(a);
        }
    CK(wk_storage_from_host(&m->cos, m->dev, WK_DTYPE_F32, c, (size_t)(m->ctx * half)));
    CK(wk_storage_from_host(&m->sin, m->dev, WK_DTYPE_F32, s, (size_t)(m->ctx * half)));
    const float scale = (float)(1.0 / sqrt((double)m->hd));
    for (int64_t i = 0; i < m->ctx * half; i++) {
        c[i] *= scale;
        s[i] *= scale;
    }
    CK(wk_storage_from_host(&m->qcos, m->dev, WK_DTYPE_F32, c, (size_t)(m->ctx * half)));
    CK(wk_storage_from_host(&m->qsin, m->dev, WK_DTYPE_F32, s, (size_t)(m->ctx * half)));
    free(c);
    free(s);
    free(factors);
}

/* Reads hyperparameters and weights; ctx <= 0 means llama.context_length (capped at 4096). */
static void model_load(model *m, const wk_gguf *g, wk_device *dev, int64_t ctx)
{
    memset(m, 0, sizeof *m);
    m->gemm_dt = WK_DTYPE_F32;
    m->dev = dev;
    m->g = g;
    const int64_t ai = wk_gguf_find_key(g, "general.architecture");
    if (ai >= 0) {
        wk_gguf_value v;
        const char *s;
        uint64_t len;
        CK(wk_gguf_kv_value(&v, g, ai));
        CK(wk_gguf_get_string(&s, &len, v));
        if (len != 5 || memcmp(s, "llama", 5) != 0)
            die("general.architecture is \"%.*s\", not \"llama\"", (int)len, s);
    }
    m->dim = meta_int(g, "llama.embedding_length", 0, 1);
    m->n_layer = meta_int(g, "llama.block_count", 0, 1);
    m->n_head = meta_int(g, "llama.attention.head_count", 0, 1);
    m->n_kv = meta_int(g, "llama.attention.head_count_kv", m->n_head, 0);
    m->ffn = meta_int(g, "llama.feed_forward_length", 0, 1);
    m->eps = (float)meta_float(g, "llama.attention.layer_norm_rms_epsilon", 1e-5);
    m->rope_base = meta_float(g, "llama.rope.freq_base", 10000.0);
    m->rope_scale = 1.0;
    const int64_t si = wk_gguf_find_key(g, "llama.rope.scaling.type");
    if (si >= 0) { /* "none", or "linear" (positions divided by the factor); YaRN is refused */
        wk_gguf_value v;
        const char *st;
        uint64_t len;
        CK(wk_gguf_kv_value(&v, g, si));
        CK(wk_gguf_get_string(&st, &len, v));
        if (len == 6 && !memcmp(st, "linear", 6))
            m->rope_scale = 1.0 / meta_float(g, "llama.rope.scaling.factor", 1.0);
        else if (!(len == 4 && !memcmp(st, "none", 4)))
            die("rope scaling \"%.*s\" is not supported (only none and linear)", (int)len, st);
    }
    if (m->dim <= 0 || m->n_layer <= 0 || m->n_head <= 0 || m->n_kv <= 0 || m->ffn <= 0 ||
        m->n_head % m->n_kv != 0 || m->dim % m->n_head != 0)
        die("bad hyperparameters: dim %lld, blocks %lld, heads %lld, kv heads %lld, ffn %lld",
            (long long)m->dim, (long long)m->n_layer, (long long)m->n_head, (long long)m->n_kv,
            (long long)m->ffn);
    m->hd = meta_int(g, "llama.attention.key_length", m->dim / m->n_head, 0);
    if (meta_int(g, "llama.attention.value_length", m->hd, 0) != m->hd || m->hd % 2 != 0 ||
        meta_int(g, "llama.rope.dimension_count", m->hd, 0) != m->hd)
        die("head size %lld: partial rope or key/value lengths that differ are not supported",
            (long long)m->hd);
    wk_gguf_tensor_info ti;
    CK(wk_gguf_tensor_info_get(&ti, g, find_tensor(g, "token_embd.weight", 1)));
    m->vocab = ti.dims[0];
    if (meta_int(g, "llama.vocab_size", m->vocab, 0) != m->vocab)
        die("llama.vocab_size disagrees with token_embd.weight (%lld rows)", (long long)m->vocab);
    m->ctx = ctx > 0 ? ctx : meta_int(g, "llama.context_length", 4096, 0);
    if (ctx <= 0 && m->ctx > 4096)
        m->ctx = 4096;

    m->embd = load_qweight(m, g, "token_embd.weight", m->vocab, m->dim);
    if (!wk_device_supports_quant(dev, WK_OP_QEMBEDDING, m->embd.qt, WK_DTYPE_F32))
        die("%s does not run qembedding on %s", wk_device_name(dev), wk_qtype_name(m->embd.qt));
    if (find_tensor(g, "output.weight", 0) >= 0)
        m->out = load_qweight(m, g, "output.weight", m->vocab, m->dim);
    else
        m->out = m->embd; /* tied: shares the storage (freed once) */
    m->out_norm = load_vector(m, g, "output_norm.weight", m->dim);

    const int64_t qd = m->n_head * m->hd, kvd = m->n_kv * m->hd;
    m->b = calloc((size_t)m->n_layer, sizeof *m->b);
    if (!m->b)
        die("out of memory");
    for (int64_t l = 0; l < m->n_layer; l++) {
        block *b = &m->b[l];
        char name[96];
#define NAME(s) (snprintf(name, sizeof name, "blk.%lld." s ".weight", (long long)l), name)
        b->attn_norm = load_vector(m, g, NAME("attn_norm"), m->dim);
        b->ffn_norm = load_vector(m, g, NAME("ffn_norm"), m->dim);
        char qn[96], kn[96], vn[96], gn[96], un[96];
        snprintf(qn, sizeof qn, "%s", NAME("attn_q"));
        snprintf(kn, sizeof kn, "%s", NAME("attn_k"));
        snprintf(vn, sizeof vn, "%s", NAME("attn_v"));
        snprintf(gn, sizeof gn, "%s", NAME("ffn_gate"));
        snprintf(un, sizeof un, "%s", NAME("ffn_up"));
#undef NAME
        const char *qkv[3] = {qn, kn, vn}, *gu[2] = {gn, un};
        const int64_t nqkv[3] = {qd, kvd, kvd}, ngu[2] = {m->ffn, m->ffn};
        b->wq = load_stacked(m, g, qkv, nqkv, 3, m->dim);
        if (!b->wq.w) {
            b->wq = load_qweight(m, g, qn, qd, m->dim);
            b->wk = load_qweight(m, g, kn, kvd, m->dim);
            b->wv = load_qweight(m, g, vn, kvd, m->dim);
        }
        b->wg = load_stacked(m, g, gu, ngu, 2, m->dim);
        if (!b->wg.w) {
            b->wg = load_qweight(m, g, gn, m->ffn, m->dim);
            b->wu = load_qweight(m, g, un, m->ffn, m->dim);
        }
        snprintf(name, sizeof name, "blk.%lld.attn_output.weight", (long long)l);
        b->wo = load_qweight(m, g, name, m->dim, qd);
        snprintf(name, sizeof name, "blk.%lld.ffn_down.weight", (long long)l);
        b->wd = load_qweight(m, g, name, m->dim, m->ffn);
        CK(wk_storage_zeros(&b->kc, dev, WK_DTYPE_F32, (size_t)(m->n_kv * m->ctx * m->hd)));
        CK(wk_storage_zeros(&b->vc, dev, WK_DTYPE_F32, (size_t)(m->n_kv * m->ctx * m->hd)));
    }
    build_rope(m, g);
    m->tokens_kv = wk_gguf_find_key(g, "tokenizer.ggml.tokens");
}

static void model_free(model *m)
{
    for (int64_t l = 0; m->b && l < m->n_layer; l++) {
        block *b = &m->b[l];
        wk_storage_free(b->attn_norm);
        wk_storage_free(b->ffn_norm);
        qweight *w[7] = {&b->wq, &b->wk, &b->wv, &b->wo, &b->wg, &b->wu, &b->wd};
        for (int i = 0; i < 7; i++)
            wk_storage_free(w[i]->w);
        wk_storage_free(b->kc);
        wk_storage_free(b->vc);
    }
    free(m->b);
    if (m->out.w != m->embd.w)
        wk_storage_free(m->out.w);
    wk_storage_free(m->embd.w);
    wk_storage_free(m->out_norm);
    wk_storage_free(m->cos);
    wk_storage_free(m->sin);
    wk_storage_free(m->qcos);
    wk_storage_free(m->qsin);
}

/* ------------------------------------------------------------------ the forward pass */
/* out (rows, W.n) = x (rows, W.k) @ W^T; lx may be any layout of x. */
/* With --gemm-dtype f16/bf16, products of more than 8 rows (prefill) read x rounded to that type
 * and round their output to it: on a GPU the weights are then dequantized to it and the GEMM runs
 * on its tensor cores. */
static wk_storage *linear(const model *m, const wk_storage *x, const wk_layout *lx,
                          const qweight *w)
{
    wk_storage *out = NULL, *xc = NULL, *oc = NULL;
    const int64_t rows = wk_layout_elem_count(lx) / w->k;
    if (m->gemm_dt == WK_DTYPE_F32 || rows <= 8) {
        CK(wk_qmatmul(&out, x, lx, w->w, w->qt, w->n, w->k));
        return out;
    }
    const wk_layout lc = lay(lx->rank, lx->dims), lo = lay2(rows, w->n);
    CK(wk_to_dtype(&xc, x, lx, m->gemm_dt));
    CK(wk_qmatmul(&oc, xc, &lc, w->w, w->qt, w->n, w->k));
    wk_storage_free(xc);
    CK(wk_to_dtype(&out, oc, &lo, WK_DTYPE_F32));
    wk_storage_free(oc);
    return out;
}

static wk_storage *rmsnorm(const wk_storage *x, const wk_layout *lx, const wk_storage *alpha,
                           int64_t dim, float eps)
{
    wk_storage *out = NULL;
    const wk_layout la = lay1(dim);
    CK(wk_rms_norm(&out, x, lx, alpha, &la, eps));
    return out;
}

static wk_storage *binary(wk_op op, const wk_storage *a, const wk_storage *b, const wk_layout *l)
{
    wk_storage *out = NULL;
    CK(wk_binary(&out, op, a, l, b, l));
    return out;
}

/* Columns [off, off + width) of a row-major (T, stride) activation: a view, no copy. */
typedef struct cols {
    const wk_storage *s;
    int64_t off, stride;
} cols;

/* out (1, H, T, hd) = rope_i of x (T, H * hd) read as (1, H, T, hd), positions pos..pos+T-1,
 * with the tables c, s. */
static wk_storage *rope(const model *m, cols x, int64_t T, int64_t H, const wk_storage *c,
                        const wk_storage *s)
{
    const int64_t hd = m->hd, half = hd / 2;
    const int64_t xd[4] = {1, H, T, hd}, xs[4] = {T * x.stride, hd, x.stride, 1};
    const int64_t cd[2] = {T, half}, cs[2] = {half, 1};
    const wk_layout lx = view(4, xd, xs, x.off);
    const wk_layout lc = view(2, cd, cs, m->pos * half);
    wk_storage *out = NULL;
    CK(wk_rope_i(&out, x.s, &lx, c, &lc, s, &lc));
    return out;
}

/* The attention of T new queries (qr (H, T, hd), rotated and scaled) over the first L rows of
 * block b's cache, composed of matmul + mask + softmax + matmul (prefill); (H, T, hd). */
static wk_storage *attention_composed(model *m, block *b, wk_storage *qr, int64_t T, int64_t L)
{
    const int64_t KV = m->n_kv, hd = m->hd, G = m->n_head / KV, ctx = m->ctx;
    /* scores (KV, G*T, L) = q (KV, G*T, hd) @ K^T (KV, hd, L) */
    const wk_layout lq = lay3(KV, G * T, hd);
    const int64_t kd[3] = {KV, hd, L}, ks[3] = {ctx * hd, 1, hd};
    const wk_layout lkt = view(3, kd, ks, 0);
    wk_storage *sc = NULL, *p = NULL, *o = NULL;
    CK(wk_matmul(&sc, qr, &lq, b->kc, &lkt));
    wk_storage_free(qr);
    const wk_layout ls = lay3(KV, G * T, L);
    if (T > 1) { /* causal mask: query t (position pos+t) sees keys j <= pos+t */
        float *mask = malloc((size_t)(T * L) * sizeof *mask);
        wk_storage *ms = NULL, *masked = NULL;
        if (!mask)
            die("out of memory");
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < L; j++)
                mask[t * L + j] = j <= m->pos + t ? 0.0f : -INFINITY;
        CK(wk_storage_from_host(&ms, m->dev, WK_DTYPE_F32, mask, (size_t)(T * L)));
        free(mask);
        const int64_t d4[4] = {KV, G, T, L}, s4[4] = {0, 0, L, 1};
        const wk_layout l4 = lay(4, d4), lm = view(4, d4, s4, 0);
        CK(wk_binary(&masked, WK_OP_ADD, sc, &l4, ms, &lm));
        wk_storage_free(ms);
        wk_storage_free(sc);
        sc = masked;
    }
    CK(wk_softmax_last_dim(&p, sc, &ls));
    wk_storage_free(sc);
    /* o (KV, G*T, hd) = p (KV, G*T, L) @ V (KV, L, hd) */
    const int64_t vd[3] = {KV, L, hd}, vs[3] = {ctx * hd, hd, 1};
    const wk_layout lvv = view(3, vd, vs, 0);
    CK(wk_matmul(&o, p, &ls, b->vc, &lvv));
    wk_storage_free(p);
    return o;
}

/* Steps of at most this many tokens (decode) use the fused wk_decode_attention; longer ones
 * (prefill) the composed attention, whose matmuls use the GEMM for many queries at once. */
#define FUSED_ATTN_MAX_T 16

/* Attention of block b for T new tokens whose q, k, v are (T, H*hd), (T, KV*hd), (T, KV*hd)
 * column views: appends k and v to the cache at m->pos and returns (T, H*hd). */
static wk_storage *attention(model *m, block *b, cols q, cols k, cols v, int64_t T)
{
    const int64_t H = m->n_head, KV = m->n_kv, hd = m->hd, ctx = m->ctx;
    const int64_t L = m->pos + T; /* keys after this step */
    /* (1, H, T, hd), heads of a kv group adjacent; already scaled by 1/sqrt(hd) */
    wk_storage *qr = rope(m, q, T, H, m->qcos, m->qsin);
    wk_storage *kr = rope(m, k, T, KV, m->cos, m->sin); /* (KV, T, hd) */
    /* the cache is (KV, ctx, hd): rows [pos, pos+T) of every kv head */
    CK(wk_copy2d(b->kc, kr, (size_t)KV, (size_t)(T * hd), (size_t)(T * hd), (size_t)(ctx * hd),
                 0, (size_t)(m->pos * hd)));
    wk_storage_free(kr);
    if (T == 1) { /* v's one row is (KV, 1, hd) already */
        CK(wk_copy2d(b->vc, v.s, (size_t)KV, (size_t)hd, (size_t)hd, (size_t)(ctx * hd),
                     (size_t)v.off, (size_t)(m->pos * hd)));
    } else {
        wk_storage *vt = NULL; /* v as (KV, T, hd) */
        const int64_t d[3] = {KV, T, hd}, s[3] = {hd, v.stride, 1};
        const wk_layout lv = view(3, d, s, v.off);
        CK(wk_storage_alloc_uninit(&vt, m->dev, WK_DTYPE_F32, (size_t)(KV * T * hd)));
        CK(wk_copy_strided_src(vt, 0, v.s, &lv));
        CK(wk_copy2d(b->vc, vt, (size_t)KV, (size_t)(T * hd), (size_t)(T * hd),
                     (size_t)(ctx * hd), 0, (size_t)(m->pos * hd)));
        wk_storage_free(vt);
    }

    wk_storage *o = NULL, *ot = NULL;
    if (T <= FUSED_ATTN_MAX_T) { /* decode: the fused op over the cache's first L rows */
        const int64_t qd4[4] = {1, H, T, hd}, cd4[4] = {1, KV, L, hd};
        const int64_t cs4[4] = {KV * ctx * hd, ctx * hd, hd, 1};
        const wk_layout lq4 = lay(4, qd4), lc4 = view(4, cd4, cs4, 0);
        CK(wk_decode_attention(&o, qr, &lq4, b->kc, &lc4, b->vc, &lc4, 1.0f, 1));
        wk_storage_free(qr);
    } else {
        o = attention_composed(m, b, qr, T, L);
    }
    if (T == 1) /* (H, 1, hd) is (1, H*hd) already */
        return o;
    /* (H, T, hd) -> (T, H, hd) */
    const int64_t od[3] = {T, H, hd}, os[3] = {hd, T * hd, 1};
    const wk_layout lo = view(3, od, os, 0);
    CK(wk_storage_alloc_uninit(&ot, m->dev, WK_DTYPE_F32, (size_t)(T * H * hd)));
    CK(wk_copy_strided_src(ot, 0, o, &lo));
    wk_storage_free(o);
    return ot;
}

/* One transformer block on x (T, dim), in place (x is replaced). */
static void block_forward(model *m, block *b, wk_storage **x, int64_t T)
{
    const int64_t qd = m->n_head * m->hd, kvd = m->n_kv * m->hd, F = m->ffn;
    const wk_layout lx = lay2(T, m->dim);
    wk_storage *h = rmsnorm(*x, &lx, b->attn_norm, m->dim, m->eps);
    wk_storage *q = linear(m, h, &lx, &b->wq), *k = NULL, *v = NULL;
    cols cq = {q, 0, qd}, ck_ = {q, qd, qd + 2 * kvd}, cv = {q, qd + kvd, qd + 2 * kvd};
    if (b->wk.w) { /* not stacked */
        k = linear(m, h, &lx, &b->wk);
        v = linear(m, h, &lx, &b->wv);
        ck_ = (cols){k, 0, kvd};
        cv = (cols){v, 0, kvd};
    } else {
        cq.stride = qd + 2 * kvd;
    }
    wk_storage_free(h);
    wk_storage *a = attention(m, b, cq, ck_, cv, T);
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    const wk_layout la = lay2(T, qd);
    wk_storage *o = linear(m, a, &la, &b->wo);
    wk_storage_free(a);
    wk_storage *x1 = binary(WK_OP_ADD, *x, o, &lx);
    wk_storage_free(o);
    wk_storage_free(*x);

    /* x = x1 + (silu(h Wg^T) * h Wu^T) Wd^T */
    h = rmsnorm(x1, &lx, b->ffn_norm, m->dim, m->eps);
    wk_storage *g = linear(m, h, &lx, &b->wg), *u = NULL, *sg = NULL, *gu = NULL;
    const int64_t gd[2] = {T, F}, gs[2] = {b->wu.w ? F : 2 * F, 1};
    const wk_layout lg = view(2, gd, gs, 0), lu = view(2, gd, gs, b->wu.w ? 0 : F);
    if (b->wu.w)
        u = linear(m, h, &lx, &b->wu);
    wk_storage_free(h);
    const wk_layout lf = lay2(T, F);
    CK(wk_unary(&sg, WK_OP_SILU, g, &lg));
    CK(wk_binary(&gu, WK_OP_MUL, sg, &lf, u ? u : g, &lu));
    wk_storage_free(sg);
    wk_storage_free(g);
    wk_storage_free(u);
    wk_storage *d = linear(m, gu, &lf, &b->wd);
    wk_storage_free(gu);
    *x = binary(WK_OP_ADD, x1, d, &lx);
    wk_storage_free(x1);
    wk_storage_free(d);
}

/* Feeds T tokens at positions pos..pos+T-1 and returns their logits on the host: all T rows
 * (all_rows) or the last row only; (rows * vocab) floats, malloc'ed. */
static float *forward(model *m, const uint32_t *ids, int64_t T, int all_rows)
{
    if (T <= 0 || m->pos + T > m->ctx)
        die("context full: %lld + %lld tokens > %lld (raise --ctx)", (long long)m->pos,
            (long long)T, (long long)m->ctx);
    for (int64_t t = 0; t < T; t++)
        if ((int64_t)ids[t] >= m->vocab)
            die("token id %u is outside the vocabulary (%lld)", ids[t], (long long)m->vocab);
    wk_storage *sid = NULL, *x = NULL;
    CK(wk_storage_from_host(&sid, m->dev, WK_DTYPE_U32, ids, (size_t)T));
    const wk_layout li = lay1(T);
    CK(wk_qembedding(&x, WK_DTYPE_F32, sid, &li, m->embd.w, m->embd.qt, m->vocab, m->dim));
    wk_storage_free(sid);
    for (int64_t l = 0; l < m->n_layer; l++)
        block_forward(m, &m->b[l], &x, T);
    m->pos += T;
    const int64_t rows = all_rows ? T : 1;
    const int64_t d[2] = {rows, m->dim}, s[2] = {m->dim, 1};
    const wk_layout lx = view(2, d, s, (T - rows) * m->dim);
    wk_storage *h = rmsnorm(x, &lx, m->out_norm, m->dim, m->eps);
    wk_storage_free(x);
    const wk_layout lh = lay2(rows, m->dim);
    wk_storage *lg = linear(m, h, &lh, &m->out);
    wk_storage_free(h);
    float *logits = malloc((size_t)(rows * m->vocab) * sizeof *logits);
    if (!logits)
        die("out of memory");
    CK(wk_storage_to_host(logits, (size_t)(rows * m->vocab), lg));
    wk_storage_free(lg);
    return logits;
}

typedef struct opts {
    const char *path, *device, *prompt, *force, *logits;
    int64_t n_gen, ctx, bench_pp, bench_tg, reps;
    wk_dtype gemm_dt;
    double temp, top_p;
    uint64_t seed;
} opts;

static void usage(void)
{
    fprintf(stderr,
            "usage: wick_llama MODEL.gguf [--device cpu|cuda:N|rocm:N] [--prompt IDS] [-n N]\n"
            "                  [--temp T] [--top-p P] [--seed S] [--ctx N]\n"
            "                  [--force IDS --logits FILE]   teacher-forced logits (tests)\n"
            "                  [--bench PP,TG] [--reps R]    prefill/decode tokens/s\n"
            "                  [--gemm-dtype f32|f16|bf16]   the type of prefill's products\n"
            "IDS: token ids separated by spaces or commas. Default: greedy, 32 tokens, cpu.\n");
    exit(2);
}

static opts parse_args(int argc, char **argv)
{
    opts o = {NULL, "cpu", "1", NULL, NULL, 32, 0, 0, 0, 3, WK_DTYPE_F32, 0.0, 1.0, 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            o.path = a;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--device")) o.device = v;
        else if (!strcmp(a, "--prompt")) o.prompt = v;
        else if (!strcmp(a, "--force")) o.force = v;
        else if (!strcmp(a, "--logits")) o.logits = v;
        else if (!strcmp(a, "-n")) o.n_gen = atoll(v);
        else if (!strcmp(a, "--ctx")) o.ctx = atoll(v);
        else if (!strcmp(a, "--temp")) o.temp = atof(v);
        else if (!strcmp(a, "--top-p")) o.top_p = atof(v);
        else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--reps")) o.reps = atoll(v);
        else if (!strcmp(a, "--gemm-dtype")) {
            if (!strcmp(v, "f16")) o.gemm_dt = WK_DTYPE_F16;
            else if (!strcmp(v, "bf16")) o.gemm_dt = WK_DTYPE_BF16;
            else if (!strcmp(v, "f32")) o.gemm_dt = WK_DTYPE_F32;
            else usage();
        }
        else if (!strcmp(a, "--bench")) {
            long long pp = 0, tg = 0;
            if (sscanf(v, "%lld,%lld", &pp, &tg) != 2 || pp <= 0 || tg <= 0)
                usage();
            o.bench_pp = pp;
            o.bench_tg = tg;
        } else
            usage();
    }
    if (!o.path || o.n_gen < 0 || o.reps <= 0 || o.top_p <= 0 || o.top_p > 1)
        usage();
    return o;
}

/* ------------------------------------------------------------------ modes */
/* Test mode: logits of every prompt position, then of each forced token in turn. */
static void run_logits(model *m, const opts *o)
{
    int64_t np = 0, nf = 0;
    uint32_t *p = parse_ids(o->prompt, &np), *f = parse_ids(o->force ? o->force : "", &nf);
    FILE *fp = fopen(o->logits, "wb");
    if (!fp)
        die("cannot write %s", o->logits);
    float *lg = forward(m, p, np, 1);
    if (fwrite(lg, sizeof *lg, (size_t)(np * m->vocab), fp) != (size_t)(np * m->vocab))
        die("write failed: %s", o->logits);
    free(lg);
    for (int64_t i = 0; i < nf; i++) {
        lg = forward(m, &f[i], 1, 0);
        if (fwrite(lg, sizeof *lg, (size_t)m->vocab, fp) != (size_t)m->vocab)
            die("write failed: %s", o->logits);
        free(lg);
    }
    if (fclose(fp) != 0)
        die("write failed: %s", o->logits);
    printf("wrote %lld x %lld logits to %s\n", (long long)(np + nf), (long long)m->vocab,
           o->logits);
    free(p);
    free(f);
}

static void generate(model *m, const opts *o)
{
    int64_t np = 0;
    uint32_t *p = parse_ids(o->prompt, &np);
    if (np == 0)
        die("empty prompt");
    uint64_t rng = o->seed;
    printf("prompt:");
    for (int64_t i = 0; i < np; i++) {
        putchar(' ');
        print_token(m->g, m->tokens_kv, p[i]);
    }
    printf("\noutput:");
    double t0 = now_s();
    float *lg = forward(m, p, np, 0);
    const double t_pre = now_s() - t0;
    double t_dec = 0;
    uint32_t *out = malloc((size_t)(o->n_gen + 1) * sizeof *out);
    if (!out)
        die("out of memory");
    for (int64_t i = 0; i < o->n_gen; i++) {
        uint32_t id = sample(lg, m->vocab, o->temp, o->top_p, &rng);
        out[i] = id;
        free(lg);
        putchar(' ');
        print_token(m->g, m->tokens_kv, id);
        fflush(stdout);
        if (i + 1 == o->n_gen) {
            lg = NULL;
            break;
        }
        t0 = now_s();
        lg = forward(m, &id, 1, 0);
        t_dec += now_s() - t0;
    }
    free(lg);
    printf("\nids:");
    for (int64_t i = 0; i < o->n_gen; i++)
        printf(" %u", out[i]);
    free(out);
    printf("\nprefill: %lld tokens in %.1f ms (%.1f tokens/s)\n", (long long)np, 1e3 * t_pre,
           (double)np / t_pre);
    if (o->n_gen > 1)
        printf("decode: %lld tokens in %.1f ms (%.2f tokens/s)\n", (long long)(o->n_gen - 1),
               1e3 * t_dec, (double)(o->n_gen - 1) / t_dec);
    free(p);
}

/* Bench mode, measured as llama-bench does: prefill of PP random tokens into an empty cache
 * (pp) and TG single-token steps from an empty cache (tg), each after one warm-up run;
 * the mean over --reps repetitions. */
static void bench(model *m, const opts *o)
{
    uint64_t rng = o->seed;
    uint32_t *ids = malloc((size_t)o->bench_pp * sizeof *ids);
    if (!ids)
        die("out of memory");
    for (int64_t i = 0; i < o->bench_pp; i++)
        ids[i] = (uint32_t)(rng_next(&rng) % (uint64_t)m->vocab);
    double pp = 0, tg = 0, pp2 = 0, tg2 = 0;
    for (int64_t r = -1; r < o->reps; r++) { /* r = -1: warm-up */
        m->pos = 0;
        double t0 = now_s();
        free(forward(m, ids, o->bench_pp, 0));
        const double tp = (double)o->bench_pp / (now_s() - t0);
        m->pos = 0;
        uint32_t id = ids[0];
        t0 = now_s();
        for (int64_t i = 0; i < o->bench_tg; i++) {
            float *lg = forward(m, &id, 1, 0);
            id = argmax(lg, m->vocab);
            free(lg);
        }
        const double tt = (double)o->bench_tg / (now_s() - t0);
        if (r >= 0) {
            pp += tp;
            pp2 += tp * tp;
            tg += tt;
            tg2 += tt * tt;
        }
    }
    const double n = (double)o->reps;
    pp /= n;
    tg /= n;
    printf("bench: pp%lld %.2f ± %.2f tokens/s, tg%lld %.2f ± %.2f tokens/s (%lld reps, %s)\n",
           (long long)o->bench_pp, pp, sqrt(fmax(0.0, pp2 / n - pp * pp)), (long long)o->bench_tg,
           tg, sqrt(fmax(0.0, tg2 / n - tg * tg)), (long long)o->reps, wk_device_name(m->dev));
    free(ids);
}

int main(int argc, char **argv)
{
    const opts o = parse_args(argc, argv);
    wk_device *dev = NULL;
    wk_gguf *g = NULL;
    model m;
    CK(wk_device_open(&dev, o.device));
    CK(wk_gguf_open(&g, o.path));
    int64_t ctx = o.ctx;
    if (ctx <= 0 && o.bench_pp > 0)
        ctx = o.bench_pp > o.bench_tg ? o.bench_pp : o.bench_tg;
    const double t0 = now_s();
    model_load(&m, g, dev, ctx);
    m.gemm_dt = o.gemm_dt;
    fprintf(stderr,
            "llama: %s on %s: dim %lld, %lld blocks, %lld heads (%lld kv), ffn %lld, vocab %lld, "
            "ctx %lld, weights %s, loaded in %.2f s\n",
            o.path, wk_device_name(dev), (long long)m.dim, (long long)m.n_layer,
            (long long)m.n_head, (long long)m.n_kv, (long long)m.ffn, (long long)m.vocab,
            (long long)m.ctx, wk_qtype_name(m.b[0].wq.qt), now_s() - t0);
    if (o.bench_pp > 0)
        bench(&m, &o);
    else if (o.logits)
        run_logits(&m, &o);
    else
        generate(&m, &o);
    model_free(&m);
    wk_gguf_close(g);
    wk_device_close(dev);
    return 0;
}
