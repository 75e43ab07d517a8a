/* gpu_attn.c: decode attention on the GPU through kernels/attn.h (its header comment describes the
 * kernels; modules attn_f32, attn_f16, attn_bf16 by the query dtype). Here: the split of the
 * sequence (planned for Lk; with lens the kernels read each entry's count and the blocks past it
 * store empty partials), the query set per block, the alignment test for 16-byte loads, the
 * scratch for the partial results, and the launch (the merge of the splits fused into it through
 * the device's completion counters, or a second launch of the combine kernel). */
#include "gpu_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* keys per block step, the unit of a split: attn_part 256 (256 / W warps of W keys), attn_mma
 * 128 (8 warps of 16-key tiles) */
#define ATTN_CHUNK 256
#define ATTN_MMA_CHUNK 128

/* Mirrors struct attn_geom of kernels/attn.h field for field (all int64: no padding). */
typedef struct attn_geom {
    int64_t nb, hq, hkv, lq, lk, d;
    int64_t qs[3], ks[3], vs[3];
    int64_t nsplit, span;
    int64_t nq;
    int64_t causal, vec;
    int64_t lstride; /* elements between entries of lens (when given) */
} attn_geom;
_Static_assert(sizeof(attn_geom) == 21 * 8, "attn_geom layout");

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* A small integer from the environment (benchmark knobs), def when unset or out of 1..64. */
static int64_t attn_env(const char *name, int64_t def)
{
    const char *e = getenv(name);
    const long v = e ? strtol(e, NULL, 10) : 0;
    return v >= 1 && v <= 64 ? (int64_t)v : def;
}

/* 16-byte loads of K and V rows: every row start 16-byte aligned and D a multiple of the
 * elements per load. */
static bool attn_vec_ok(const void *p, const wk_layout *l, size_t esz)
{
    return l->dims[3] % (int64_t)(16 / esz) == 0 && wk_gpu_rows_aligned(p, l, esz, 16);
}

/* The decode kernel of a call (kernels/attn.h): its name, the queries each block takes and the
 * resident blocks per multiprocessor the split is planned for. */
typedef struct attn_kernel {
    char name[64];
    int qb;
    int64_t per_sm;
    int64_t chunk; /* keys per block step (a split is whole steps) */
} attn_kernel;

/* The choice (measurements: docs/performance.md, "Decode step", H200, GQA 4:1, D 128):
 *   - attn_mma_<dt>_<D/32> (the matrix units, 8 queries per block, one block per
 *     multiprocessor) for q, k and v of one 16-bit dtype, D a multiple of 32 up to 128, K and V
 *     rows aligned for 16-byte loads, where the 16 x 8 x 16 fragment products run (NVIDIA
 *     sm_80+, the simt device; not compiled for AMD): 41.7 us at 32k keys against 85.8 for the
 *     f32 kernel, and one block per multiprocessor beat two (8k keys 14.6 against 19.6 us);
 *   - else the f32 kernels attn_part_<qd>_<kvd>_<QB>: QB = 1 for one query per kv head (two
 *     blocks per multiprocessor), 4 for 2-4 (one block, K row double-buffered: 90 us at 32k
 *     against 99-140 us for the register-capped kernel it replaced, the llama example's decode
 *     280 against 254 tokens/s), 8 for more (one block).
 * attn_mma's splits are whole 128-key steps (one round of its 8 warps), attn_part's 256-key
 * ones. WICK_ATTN_MMA=0 keeps the f32 kernels, WICK_ATTN_BPS=N plans N blocks per
 * multiprocessor and WICK_ATTN_MMA_CHUNK=256 gives attn_mma 256-key steps (benchmarking
 * switches, read per call). */
static attn_kernel attn_pick(wk_device *dev, const wk_attn_args *a, const attn_geom *g)
{
    attn_kernel k;
    const char *e = getenv("WICK_ATTN_MMA");
    const bool mma = !(e && !strcmp(e, "0")) && a->qdt == a->kvdt &&
                     (a->qdt == WK_DTYPE_F16 || a->qdt == WK_DTYPE_BF16) && g->d % 32 == 0 &&
                     g->d <= 128 && g->vec && wk_gpu_matrix_units(dev, a->qdt);
    k.qb = mma || g->nq > 4 ? 8 : g->nq <= 1 ? 1 : 4;
    k.per_sm = attn_env("WICK_ATTN_BPS", k.qb == 1 ? 2 : 1);
    const char *c = getenv("WICK_ATTN_MMA_CHUNK");
    k.chunk = !mma ? ATTN_CHUNK : c && !strcmp(c, "256") ? 256 : ATTN_MMA_CHUNK;
    if (mma) {
        const char *nd[4] = {"1", "2", "3", "4"};
        const char *parts[4] = {"attn", "mma", wk_gpu_dtype_kname(a->qdt), nd[g->d / 32 - 1]};
        wk_gpu_kname(k.name, sizeof k.name, parts, 4);
    } else {
        const char *parts[5] = {"attn", "part", wk_gpu_dtype_kname(a->qdt),
                                wk_gpu_dtype_kname(a->kvdt),
                                k.qb == 1 ? "1" : k.qb == 8 ? "8" : "4"};
        wk_gpu_kname(k.name, sizeof k.name, parts, 5);
    }
    return k;
}

wk_status wk_gpu_attention(wk_device *dev, const wk_attn_args *a)
{
    if (wk_gpu_flash_fits(a))
        return wk_gpu_flash(dev, a);
    const wk_layout *lq = a->lq, *lk = a->lk, *lv = a->lv;
    const size_t qsz = wk_dtype_size(a->qdt), ksz = wk_dtype_size(a->kvdt);
    const void *q = wk_gpu_at(a->q, lq->offset, qsz);
    const void *k = wk_gpu_at(a->k, lk->offset, ksz), *v = wk_gpu_at(a->v, lv->offset, ksz);
    attn_geom g = {
        .nb = lq->dims[0], .hq = lq->dims[1], .hkv = lk->dims[1], .lq = lq->dims[2],
        .lk = lk->dims[2], .d = lq->dims[3],
        .qs = {lq->strides[0], lq->strides[1], lq->strides[2]},
        .ks = {lk->strides[0], lk->strides[1], lk->strides[2]},
        .vs = {lv->strides[0], lv->strides[1], lv->strides[2]},
        .causal = a->causal != 0,
        .lstride = a->ll ? a->ll->strides[0] : 0,
    };
    /* lens: the kernels read L_b from device memory (NULL: Lk for every entry); the split below
     * covers Lk, blocks whose keys start at or past L_b store an empty partial */
    const uint32_t *lens = a->lens ? wk_gpu_at(a->lens, a->ll->offset, sizeof(uint32_t)) : NULL;
    uint32_t *word = NULL;
    if (lens) {
        wk_status wst = wk_gpu_error_word(dev, &word);
        if (wst != WK_OK)
            return wst;
    }
    g.nq = g.hq / g.hkv * g.lq;
    g.vec = attn_vec_ok(k, lk, ksz) && attn_vec_ok(v, lv, ksz);
    const attn_kernel kern = attn_pick(dev, a, &g);
    char module[16]; /* one module per query dtype: kernels/attn_<qd>.cu */
    snprintf(module, sizeof module, "attn_%s", wk_gpu_dtype_kname(a->qdt));
    const int64_t nz = cdiv(g.nq, kern.qb), chunks = cdiv(g.lk, kern.chunk);
    /* as many blocks as are resident at once (one wave: each block streams its span with every
     * warp busy; more splits only add block prologues and partials), whole block steps per
     * split */
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    int64_t want = kern.per_sm * sm / (g.nb * g.hkv * nz);
    if (want > chunks)
        want = chunks;
    if (want < 1)
        want = 1;
    g.span = cdiv(chunks, want) * kern.chunk;
    g.nsplit = cdiv(g.lk, g.span);
    if (g.nsplit > 65535 || g.nb * g.hkv > 65535 || nz > 65535)
        return wk_err(WK_ERR_NOT_SUPPORTED, "decode_attention: grid too large (B * Hkv = %lld)",
                      (long long)(g.nb * g.hkv));
    /* partials: po (bh, s, gq, D), pm and pl (bh, s, gq) */
    const size_t np = (size_t)(g.nb * g.hkv * g.nsplit * g.nq);
    void *scr;
    wk_status st = wk_gpu_scratch_alloc(dev, np * (size_t)(g.d + 2) * sizeof(float), &scr);
    if (st != WK_OK)
        return st;
    float *po = scr, *pm = po + np * (size_t)g.d, *pl = pm + np;
    float scale = a->scale;
    char name[64];
    /* the merge of the splits fused into the part kernel (its last block per kv head and query
     * set, through the device's completion counters); more sets than counters, or
     * WICK_ATTN_COMBINE=1 (a testing and benchmarking switch): the separate combine kernel */
    uint32_t *ctr = NULL;
    void *out = a->out;
    if (g.nb * g.hkv * nz <= WK_GPU_COUNTERS && !getenv("WICK_ATTN_COMBINE") &&
        (st = wk_gpu_counters(dev, &ctr)) != WK_OK) {
        wk_gpu_scratch_free(dev, scr);
        return st;
    }
    void *args[] = {&q, &k, &v, &po, &pm, &pl, &g, &scale, &lens, &word, &out, &ctr};
    st = wk_gpu_run_early(dev, module, kern.name, (unsigned)g.nsplit, (unsigned)(g.nb * g.hkv),
                          (unsigned)nz, args); /* it waits (kernels/attn.h) */
    if (st == WK_OK && !ctr) {
        const char *cparts[3] = {"attn", "combine", wk_gpu_dtype_kname(a->qdt)};
        wk_gpu_kname(name, sizeof name, cparts, 3);
        void *cargs[] = {&po, &pm, &pl, &out, &g};
        st = wk_gpu_run(dev, module, name, wk_gpu_blocks(dev, g.nb * g.hq * g.lq * g.d), 1, 1,
                        cargs);
    }
    wk_gpu_scratch_free(dev, scr); /* stream-ordered: after the kernels that use it */
    return st;
}
