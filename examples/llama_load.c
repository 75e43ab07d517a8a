/* llama_load.c: reads a GGUF of the Llama family (llama, qwen2, qwen3, gemma2, gemma3;
 * llama_arch.c) into one model per device (examples/llama_model.h): the whole network on one
 * device, or rank r's share of it under tensor parallelism (--devices). Weights stay in their
 * file type as raw bytes; a share of a matrix is a range of its rows (any row
 * count: rows of a block type are independent) and of its columns (whole blocks only). */
#include "llama_model.h"
#include "llama_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The part of one 2-D tensor a rank loads: rows [r0, r0 + nr), columns [c0, c0 + nc). */
typedef struct slice {
    int64_t r0, nr, c0, nc;
} slice;

/* Checks that tensor `name` is (n, k) and that s cuts it at whole blocks; returns its index. */
static int64_t check_tensor(const wk_gguf *g, const char *name, int64_t n, int64_t k, slice s,
                            wk_gguf_tensor_info *ti)
{
    const int64_t t = find_tensor(g, name, 1);
    CK(wk_gguf_tensor_info_get(ti, g, t));
    if (ti->n_dims != 2 || ti->dims[0] != n || ti->dims[1] != k)
        die("tensor %s: expected (%lld, %lld), the file has %d dims (%lld, %lld)", name,
            (long long)n, (long long)k, ti->n_dims, (long long)ti->dims[0],
            (long long)ti->dims[1]);
    const int64_t be = wk_qtype_block_elems(ti->qtype);
    if (be <= 0 || s.c0 % be != 0 || s.nc % be != 0)
        die("tensor %s is %s, stored in blocks of %lld columns: this device's columns [%lld, "
            "%lld) do not start and end on a block boundary, so the matrix cannot be split this "
            "many ways (use fewer devices)",
            name, wk_qtype_name(ti->qtype), (long long)be, (long long)s.c0,
            (long long)(s.c0 + s.nc));
    return t;
}

/* Copies slice s of tensor t (k columns) to dst: nr rows of the slice's bytes each. */
static size_t copy_slice(unsigned char *dst, const wk_gguf *g, int64_t t,
                         const wk_gguf_tensor_info *ti, int64_t k, slice s)
{
    const int64_t be = wk_qtype_block_elems(ti->qtype), bb = wk_qtype_block_bytes(ti->qtype);
    const size_t row = (size_t)(k / be * bb), off = (size_t)(s.c0 / be * bb);
    const size_t len = (size_t)(s.nc / be * bb);
    const unsigned char *src = wk_gguf_tensor_data(g, t);
    for (int64_t i = 0; i < s.nr; i++)
        memcpy(dst + (size_t)i * len, src + (size_t)(s.r0 + i) * row + off, len);
    return len * (size_t)s.nr;
}

static wk_storage *upload(const model *m, const char *name, wk_qtype qt, const void *p,
                          size_t bytes)
{
    if (!wk_device_supports_quant(m->dev, WK_OP_QMATMUL, qt, WK_DTYPE_F32))
        die("tensor %s: %s does not run qmatmul on %s weights", name, wk_device_name(m->dev),
            wk_qtype_name(qt));
    wk_storage *s = NULL;
    CK(wk_storage_from_host(&s, m->dev, WK_DTYPE_U8, p, bytes));
    return s;
}

/* W[s] of tensor `name`, expected (n, k), as its raw bytes on m's device. */
static qweight load_qweight(model *m, const wk_gguf *g, const char *name, int64_t n, int64_t k,
                            slice s)
{
    wk_gguf_tensor_info ti;
    const int64_t t = check_tensor(g, name, n, k, s, &ti);
    qweight q = {NULL, ti.qtype, s.nr, s.nc};
    if (s.nr == n && s.nc == k) { /* the whole tensor: no copy */
        q.w = upload(m, name, ti.qtype, wk_gguf_tensor_data(g, t), ti.nbytes);
        return q;
    }
    unsigned char *buf = malloc(ti.nbytes);
    if (!buf)
        die("out of memory");
    const size_t bytes = copy_slice(buf, g, t, &ti, k, s);
    q.w = upload(m, name, ti.qtype, buf, bytes);
    free(buf);
    return q;
}

static qweight load_full(model *m, const wk_gguf *g, const char *name, int64_t n, int64_t k)
{
    return load_qweight(m, g, name, n, k, (slice){0, n, 0, k});
}

/* The rows s[i] (all k columns) of the tensors names[i] (n[i], k), i < count, stacked, when they
 * share one type; else w.w is NULL. Rows of a block type are independent, so stacking is byte
 * concatenation. */
static qweight load_stacked(model *m, const wk_gguf *g, const char *const *names,
                            const int64_t *n, const slice *s, int count, int64_t k)
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
        q.n += s[i].nr;
        bytes += ti.nbytes;
    }
    unsigned char *buf = malloc(bytes), *p = buf;
    if (!buf)
        die("out of memory");
    for (int i = 0; i < count; i++) {
        wk_gguf_tensor_info ti;
        const int64_t t = check_tensor(g, names[i], n[i], k, s[i], &ti);
        p += copy_slice(p, g, t, &ti, k, s[i]);
    }
    q.w = upload(m, names[0], q.qt, buf, (size_t)(p - buf));
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

/* Rope tables for positions [0, ctx): angle(p, i) = p * scale * base^(-2i/hd) / factors[i]
 * (factors: NULL, or rope_freqs); *cs, *ss = cos, sin, f32 (ctx, hd/2), row p for position p. */
static void rope_tables(model *m, double base, double scale, const float *factors,
                        wk_storage **cs, wk_storage **ss)
{
    const int64_t half = m->hd / 2;
    float *c = malloc((size_t)(m->ctx * half) * sizeof *c);
    float *s = malloc((size_t)(m->ctx * half) * sizeof *s);
    if (!c || !s)
        die("out of memory");
    for (int64_t p = 0; p < m->ctx; p++)
        for (int64_t i = 0; i < half; i++) {
            double theta = pow(base, -2.0 * (double)i / (double)m->hd);
            if (factors)
                theta /= factors[i];
            const double a = (double)p * scale * theta;
            c[p * half + i] = (float)cos(a);
            s[p * half + i] = (float)sin(a);
        }
    CK(wk_storage_from_host(cs, m->dev, WK_DTYPE_F32, c, (size_t)(m->ctx * half)));
    CK(wk_storage_from_host(ss, m->dev, WK_DTYPE_F32, s, (size_t)(m->ctx * half)));
    free(c);
    free(s);
}

/* The rope tables of every block: rope_base, rope_scale and (Llama only, as llama.cpp) the
 * rope_freqs divisors; a second set for the local blocks when their rope differs. */
static void build_rope(model *m, const wk_gguf *g)
{
    const int64_t half = m->hd / 2;
    float *factors = NULL;
    const int64_t fi = m->fam.id == ARCH_LLAMA ? find_tensor(g, "rope_freqs.weight", 0) : -1;
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
    rope_tables(m, m->rope_base, m->rope_scale, factors, &m->cos, &m->sin);
    int local = 0;
    for (int64_t l = 0; l < m->n_layer; l++)
        local |= m->b[l].swa;
    if (local && (m->lrope_base != m->rope_base || m->lrope_scale != m->rope_scale))
        rope_tables(m, m->lrope_base, m->lrope_scale, NULL, &m->lcos, &m->lsin);
    CK(wk_storage_zeros(&m->step, m->dev, WK_DTYPE_U32, 3));
    free(factors);
}

/* Rank r's part [r * n / R, (r + 1) * n / R) of n units (as even as integers allow). */
static int64_t part_start(int64_t n, int r, int R)
{
    return n * r / R;
}

/* The family's extra weights of block l (llama_model.h): this rank's rows of the q, k, v biases
 * stacked into one vector (qn + 2 kvn; copied on the device, whatever the file's float type), the
 * per-head q/k norms, the post-norms; and whether the block is a local one. */
static void load_block_extras(model *m, const wk_gguf *g, int64_t l, int64_t H, int64_t KV)
{
    block *b = &m->b[l];
    const family *f = &m->fam;
    const int64_t hd = m->hd, qn = m->n_head * hd, kvn = m->n_kv * hd;
    char nn[96];
    b->swa = family_block_is_swa(m, g, l);
    if (f->qkv_bias) {
        static const char *const key[3] = {"attn_q", "attn_k", "attn_v"};
        const int64_t n[3] = {H * hd, KV * hd, KV * hd}, mine[3] = {qn, kvn, kvn};
        CK(wk_storage_alloc_uninit(&b->bqkv, m->dev, WK_DTYPE_F32, (size_t)(qn + 2 * kvn)));
        int64_t off = 0;
        for (int i = 0; i < 3; i++) {
            snprintf(nn, sizeof nn, "blk.%lld.%s.bias", (long long)l, key[i]);
            wk_storage *full = load_vector(m, g, nn, n[i]);
            CK(wk_copy2d(b->bqkv, full, 1, (size_t)mine[i], (size_t)n[i], (size_t)mine[i],
                         (size_t)(m->rank * mine[i]), (size_t)off));
            wk_storage_free(full);
            off += mine[i];
        }
    }
    if (f->qk_norm) {
        snprintf(nn, sizeof nn, "blk.%lld.attn_q_norm.weight", (long long)l);
        b->q_norm = load_vector(m, g, nn, hd);
        snprintf(nn, sizeof nn, "blk.%lld.attn_k_norm.weight", (long long)l);
        b->k_norm = load_vector(m, g, nn, hd);
    }
    if (f->post_norms) {
        snprintf(nn, sizeof nn, "blk.%lld.post_attention_norm.weight", (long long)l);
        b->post_attn_norm = load_vector(m, g, nn, m->dim);
        snprintf(nn, sizeof nn, "blk.%lld.post_ffw_norm.weight", (long long)l);
        b->post_ffn_norm = load_vector(m, g, nn, m->dim);
    }
}

/* Block l's weights for this rank: its heads of Wq/Wk/Wv/Wo, its ffn columns of Wg/Wu/Wd. */
static void load_block(model *m, const wk_gguf *g, int64_t l, int64_t H, int64_t KV, int64_t F)
{
    block *b = &m->b[l];
    const int64_t hd = m->hd, qd = H * hd, kvd = KV * hd, dim = m->dim;
    const int64_t qn = m->n_head * hd, kvn = m->n_kv * hd; /* this rank's rows and columns */
    char name[7][96];
    static const char *const key[7] = {"attn_q", "attn_k", "attn_v", "attn_output",
                                       "ffn_gate", "ffn_up", "ffn_down"};
    for (int i = 0; i < 7; i++)
        snprintf(name[i], sizeof name[i], "blk.%lld.%s.weight", (long long)l, key[i]);
    char nn[96];
    snprintf(nn, sizeof nn, "blk.%lld.attn_norm.weight", (long long)l);
    b->attn_norm = load_vector(m, g, nn, dim);
    snprintf(nn, sizeof nn, "blk.%lld.ffn_norm.weight", (long long)l);
    b->ffn_norm = load_vector(m, g, nn, dim);

    /* ffn columns: whole blocks of Wd's type, split as evenly as the blocks allow */
    wk_gguf_tensor_info ti;
    CK(wk_gguf_tensor_info_get(&ti, g, find_tensor(g, name[6], 1)));
    const int64_t be = wk_qtype_block_elems(ti.qtype);
    if (be <= 0 || F % be != 0 || F / be < m->nranks)
        die("tensor %s is %s (blocks of %lld columns): its %lld columns do not split into %d "
            "parts of whole blocks (use fewer devices)", name[6], wk_qtype_name(ti.qtype),
            (long long)be, (long long)F, m->nranks);
    const int64_t f0 = part_start(F / be, m->rank, m->nranks) * be;
    b->ffn = part_start(F / be, m->rank + 1, m->nranks) * be - f0;

    const slice sq = {m->rank * qn, qn, 0, dim}, skv = {m->rank * kvn, kvn, 0, dim};
    const slice sf = {f0, b->ffn, 0, dim};
    const char *qkv[3] = {name[0], name[1], name[2]}, *gu[2] = {name[4], name[5]};
    const int64_t nqkv[3] = {qd, kvd, kvd}, ngu[2] = {F, F};
    const slice sqkv[3] = {sq, skv, skv}, sgu[2] = {sf, sf};
    b->wq = load_stacked(m, g, qkv, nqkv, sqkv, 3, dim);
    if (!b->wq.w) {
        b->wq = load_qweight(m, g, name[0], qd, dim, sq);
        b->wk = load_qweight(m, g, name[1], kvd, dim, skv);
        b->wv = load_qweight(m, g, name[2], kvd, dim, skv);
    }
    b->wg = load_stacked(m, g, gu, ngu, sgu, 2, dim);
    if (!b->wg.w) {
        b->wg = load_qweight(m, g, name[4], F, dim, sf);
        b->wu = load_qweight(m, g, name[5], F, dim, sf);
    }
    b->wo = load_qweight(m, g, name[3], dim, qd, (slice){0, dim, m->rank * qn, qn});
    b->wd = load_qweight(m, g, name[6], dim, F, (slice){0, dim, f0, b->ffn});
    const size_t cache = (size_t)(m->n_kv * m->ctx * hd);
    CK(wk_storage_zeros(&b->kc, m->dev, m->kv_dt, cache));
    CK(wk_storage_zeros(&b->vc, m->dev, m->kv_dt, cache));
    load_block_extras(m, g, l, H, KV);
}

void model_load(model *m, const wk_gguf *g, wk_device *dev, int64_t ctx, int rank, int nranks,
                int kv_dt)
{
    memset(m, 0, sizeof *m);
    m->gemm_dt = WK_DTYPE_F32;
    m->dev = dev;
    m->rank = rank;
    m->nranks = nranks;
    family_read(m, g);
    /* A 16-bit cache halves the cache's memory and the bytes each attention reads; Gemma's
     * composed attention (soft-capping, windows) would convert its rows to f32 at every step. */
    if (kv_dt >= 0)
        m->kv_dt = (wk_dtype)kv_dt;
    else
        m->kv_dt = wk_device_backend(dev) == WK_BACKEND_CPU || m->fam.host_pos ? WK_DTYPE_F32
                                                                              : WK_DTYPE_F16;
    m->dim = meta_int(g, arch_key(m, "embedding_length"), 0, 1);
    m->n_layer = meta_int(g, arch_key(m, "block_count"), 0, 1);
    m->n_head = meta_int(g, arch_key(m, "attention.head_count"), 0, 1);
    m->n_kv = meta_int(g, arch_key(m, "attention.head_count_kv"), m->n_head, 0);
    const int64_t ffn = meta_int(g, arch_key(m, "feed_forward_length"), 0, 1);
    m->eps = (float)meta_float(g, arch_key(m, "attention.layer_norm_rms_epsilon"), 1e-5);
    m->rope_base = meta_float(g, arch_key(m, "rope.freq_base"), 10000.0);
    m->rope_scale = 1.0;
    const int64_t si = wk_gguf_find_key(g, arch_key(m, "rope.scaling.type"));
    if (si >= 0) { /* "none", or "linear" (positions divided by the factor); YaRN is refused */
        wk_gguf_value v;
        const char *st;
        uint64_t len;
        CK(wk_gguf_kv_value(&v, g, si));
        CK(wk_gguf_get_string(&st, &len, v));
        if (len == 6 && !memcmp(st, "linear", 6))
            m->rope_scale = 1.0 / meta_float(g, arch_key(m, "rope.scaling.factor"), 1.0);
        else if (!(len == 4 && !memcmp(st, "none", 4)))
            die("rope scaling \"%.*s\" is not supported (only none and linear)", (int)len, st);
    }
    if (m->dim <= 0 || m->n_layer <= 0 || m->n_head <= 0 || m->n_kv <= 0 || ffn <= 0 ||
        m->n_head % m->n_kv != 0 ||
        (wk_gguf_find_key(g, arch_key(m, "attention.key_length")) < 0 && m->dim % m->n_head))
        die("bad hyperparameters: dim %lld, blocks %lld, heads %lld, kv heads %lld, ffn %lld",
            (long long)m->dim, (long long)m->n_layer, (long long)m->n_head, (long long)m->n_kv,
            (long long)ffn);
    m->hd = meta_int(g, arch_key(m, "attention.key_length"), m->dim / m->n_head, 0);
    if (meta_int(g, arch_key(m, "attention.value_length"), m->hd, 0) != m->hd || m->hd % 2 != 0 ||
        meta_int(g, arch_key(m, "rope.dimension_count"), m->hd, 0) != m->hd)
        die("head size %lld: partial rope or key/value lengths that differ are not supported",
            (long long)m->hd);
    m->n_ff = ffn;
    family_finish(m, g);
    wk_gguf_tensor_info ti;
    CK(wk_gguf_tensor_info_get(&ti, g, find_tensor(g, "token_embd.weight", 1)));
    m->vocab = ti.dims[0];
    if (meta_int(g, arch_key(m, "vocab_size"), m->vocab, 0) != m->vocab)
        die("%s disagrees with token_embd.weight (%lld rows)", arch_key(m, "vocab_size"),
            (long long)m->vocab);
    m->ctx = ctx > 0 ? ctx : meta_int(g, arch_key(m, "context_length"), 4096, 0);
    if (ctx <= 0 && m->ctx > 4096)
        m->ctx = 4096;

    /* this rank's heads: whole kv groups, the same number on every rank */
    const int64_t H = m->n_head, KV = m->n_kv;
    if (KV % nranks != 0)
        die("%d devices: the model's %lld kv heads (%lld query heads) do not split evenly "
            "(tensor parallelism gives every device the same number of kv heads: use a number "
            "of devices that divides %lld)",
            nranks, (long long)KV, (long long)H, (long long)KV);
    m->n_head = H / nranks;
    m->n_kv = KV / nranks;

    /* replicated: the embedding and the norms; the output matrix: a range of vocabulary rows */
    m->embd = load_full(m, g, "token_embd.weight", m->vocab, m->dim);
    if (!wk_device_supports_quant(dev, WK_OP_QEMBEDDING, m->embd.qt, WK_DTYPE_F32))
        die("%s does not run qembedding on %s", wk_device_name(dev), wk_qtype_name(m->embd.qt));
    m->v0 = part_start(m->vocab, rank, nranks);
    const slice sv = {m->v0, part_start(m->vocab, rank + 1, nranks) - m->v0, 0, m->dim};
    const int tied = m->fam.tied || find_tensor(g, "output.weight", 0) < 0;
    if (tied && nranks == 1)
        m->out = m->embd; /* shares the storage (freed once) */
    else
        m->out = load_qweight(m, g, tied ? "token_embd.weight" : "output.weight", m->vocab,
                              m->dim, sv);
    m->out_norm = load_vector(m, g, "output_norm.weight", m->dim);

    m->b = calloc((size_t)m->n_layer, sizeof *m->b);
    if (!m->b)
        die("out of memory");
    for (int64_t l = 0; l < m->n_layer; l++)
        load_block(m, g, l, H, KV, ffn);
    build_rope(m, g);
}

void model_free(model *m)
{
    wk_graph_free(m->graph); /* waits for its replays, before the storages they touch go */
    wk_storage_free(m->glogits);
    wk_storage_free(m->gtoken);
    for (int64_t l = 0; m->b && l < m->n_layer; l++) {
        block *b = &m->b[l];
        wk_storage_free(b->attn_norm);
        wk_storage_free(b->ffn_norm);
        qweight *w[7] = {&b->wq, &b->wk, &b->wv, &b->wo, &b->wg, &b->wu, &b->wd};
        for (int i = 0; i < 7; i++)
            wk_storage_free(w[i]->w);
        wk_storage_free(b->kc);
        wk_storage_free(b->vc);
        wk_storage *extra[5] = {b->bqkv, b->q_norm, b->k_norm, b->post_attn_norm, b->post_ffn_norm};
        for (int i = 0; i < 5; i++)
            wk_storage_free(extra[i]);
    }
    free(m->b);
    if (m->out.w != m->embd.w)
        wk_storage_free(m->out.w);
    wk_storage_free(m->embd.w);
    wk_storage_free(m->out_norm);
    wk_storage_free(m->cos);
    wk_storage_free(m->sin);
    wk_storage_free(m->lcos);
    wk_storage_free(m->lsin);
    wk_storage_free(m->step);
}

