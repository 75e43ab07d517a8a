/* gpu_attn.c: decode attention on the GPU through kernels/attn.cu (its header comment describes
 * the kernels). Here: the query set per block, the tile (keys per tile, lanes per key, pipeline
 * stages) from the row's 16-byte chunks, the split count (planned for Lk; the kernels cut each
 * entry's actual count into that many spans), the alignment test for 16-byte copies, the
 * scratch for the partial results, and the launch (the merge of the splits fused into it
 * through the device's completion counters, or a second launch of the combine kernel).
 * Benchmark knobs (environment): WICK_ATTN_BPS (blocks per multiprocessor the split aims at,
 * default 2), WICK_ATTN_NCH=1 (half tiles, twice the stages in the same bytes, for the kernels
 * of two chunks per thread), WICK_ATTN_KB (KiB of pipeline stages per block, at most the
 * default: 64 on sm_80 / sm_90+, else 32), WICK_ATTN_COMBINE=1 (the separate combine kernel),
 * WICK_ATTN_DIAG (a mask of kernel parts to skip, for timing them: kernels/attn.cu; the results
 * are then wrong). */
#include "gpu_ops.h"
#include <stdlib.h>
#include <string.h>

#define ATTN_MAXSPLIT 256 /* kernels/attn.cu: the merge's weights in shared memory */
#define ATTN_MAXST 8      /* kernels/attn.cu: pipeline stages at most */

/* Mirrors struct attn_geom of kernels/attn.cu field for field (all int64: no padding). */
typedef struct attn_geom {
    int64_t nb, hq, hkv, lq, lk, d;
    int64_t qs[3], ks[3], vs[3];
    int64_t nsplit;
    int64_t tk, tpk, nst;
    int64_t nq;
    int64_t qb;
    int64_t causal, vec;
    int64_t lstride; /* elements between entries of lens (when given) */
    int64_t diag;    /* WICK_ATTN_DIAG (benchmarks only: parts of the kernel skipped) */
} attn_geom;
_Static_assert(sizeof(attn_geom) == 25 * 8, "attn_geom layout");

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

/* Whether a block may have 64 KiB of dynamic shared memory with a second one beside it on a
 * multiprocessor: NVIDIA sm_80 (164 KiB per SM) and sm_90 or later (228 KiB), not sm_86 / sm_87
 * / sm_89 (100 KiB) nor AMD (64 KiB per workgroup); the simt device (64 KiB of dynamic shared
 * memory per launch) too, so that its tests run the deep pipelines. */
static bool attn_big_smem(const wk_device *dev)
{
    const char *arch = wk_gpu_arch(dev);
    if (arch && strncmp(arch, "simt", 4) == 0)
        return true;
    if (!arch || strncmp(arch, "sm_", 3) != 0)
        return false;
    const long v = strtol(arch + 3, NULL, 10);
    return v == 80 || v >= 90;
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
        .diag = attn_env("WICK_ATTN_DIAG", 0),
    };
    /* lens: the kernels read L_b from device memory (NULL: Lk for every entry) and cut it into
     * the nsplit spans planned below for Lk (graph replays see new counts) */
    const uint32_t *lens = a->lens ? wk_gpu_at(a->lens, a->ll->offset, sizeof(uint32_t)) : NULL;
    uint32_t *word = NULL;
    if (lens) {
        wk_status wst = wk_gpu_error_word(dev, &word);
        if (wst != WK_OK)
            return wst;
    }
    g.nq = g.hq / g.hkv * g.lq;
    g.vec = attn_vec_ok(k, lk, ksz) && attn_vec_ok(v, lv, ksz);
    /* the row as C 16-byte chunks; queries per block: 1, 4 or 8 (8 keeps one chunk per thread
     * and matrix, so only rows of at most 32 chunks: longer ones go 4 at a time) */
    const int64_t C = cdiv(g.d, (int64_t)(16 / ksz));
    const int64_t qb = g.nq <= 1 ? 1 : g.nq <= 4 || C > 32 ? 4 : 8;
    g.qb = qb;
    /* the tile: TPK lanes per key (a power of two covering the chunks at nch per thread, at
     * most 32), 256 / TPK keys; as many stages as the kernel's buffer (2 full tiles) holds,
     * at most 4 */
    const int64_t nchk = qb == 8 ? 1 : 2;
    const int64_t nche = attn_env("WICK_ATTN_NCH", nchk);
    const int64_t nch = nche < nchk && C <= 32 * nche ? nche : nchk; /* TPK <= 32 */
    g.tpk = 1;
    while (g.tpk * nch < C)
        g.tpk <<= 1;
    g.tk = WK_GPU_BLOCK / g.tpk;
    /* stages: as many as the stage budget holds (2 to ATTN_MAXST); the budget is 64 KiB where
     * a block may have that much dynamic shared memory with a second block beside it (NVIDIA
     * sm_80 and sm_90 and later: 164 / 228 KiB per SM), else 32 KiB (sm_86 / sm_89: 100 KiB
     * per SM; AMD: 64 KiB per workgroup; the simt device: 64 KiB). WICK_ATTN_KB overrides it
     * (KiB, at most the 64 or 32) */
    const int64_t stage = 2 * g.tk * C * 16, cap = attn_big_smem(dev) ? 64 : 32;
    int64_t kb = attn_env("WICK_ATTN_KB", cap);
    kb = kb < cap ? kb : cap;
    g.nst = kb * 1024 / stage;
    g.nst = g.nst < 2 ? 2 : g.nst > ATTN_MAXST ? ATTN_MAXST : g.nst;
    /* the dynamic shared memory: the stages, and at least the end's merge buffers */
    int64_t shm = g.nst * stage;
    const int64_t merge = 4 * (qb * (ATTN_MAXSPLIT + 1) > 8 * 256 ? qb * (ATTN_MAXSPLIT + 1)
                                                                    : 8 * 256);
    shm = shm > merge ? shm : merge;
    const int64_t nz = cdiv(g.nq, qb), tiles = cdiv(g.lk, g.tk);
    /* splits: as many blocks as are resident at once (2 per multiprocessor: one wave, every
     * block streaming), whole tiles per split; WICK_ATTN_BPS overrides the blocks per SM */
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    int64_t want = attn_env("WICK_ATTN_BPS", 2) * sm / (g.nb * g.hkv * nz);
    if (want > tiles)
        want = tiles;
    if (want > ATTN_MAXSPLIT)
        want = ATTN_MAXSPLIT;
    if (want < 1)
        want = 1;
    g.nsplit = want;
    if (g.nb * g.hkv > 65535 || nz > 65535 || g.lk > INT32_MAX / 2)
        return wk_err(WK_ERR_NOT_SUPPORTED, "decode_attention: grid too large (B * Hkv = %lld, "
                      "Lk = %lld)", (long long)(g.nb * g.hkv), (long long)g.lk);
    /* partials: po (bh, s, gq, D), pm and pl (bh, s, gq) */
    const size_t np = (size_t)(g.nb * g.hkv * g.nsplit * g.nq);
    void *scr;
    wk_status st = wk_gpu_scratch_alloc(dev, np * (size_t)(g.d + 2) * sizeof(float), &scr);
    if (st != WK_OK)
        return st;
    float *po = scr, *pm = po + np * (size_t)g.d, *pl = pm + np;
    float scale = a->scale;
    char name[64];
    const char *parts[5] = {"attn", "part", wk_gpu_dtype_kname(a->qdt),
                            wk_gpu_dtype_kname(a->kvdt),
                            qb == 1 ? "1" : qb == 8 ? "8" : "4"};
    wk_gpu_kname(name, sizeof name, parts, 5);
    /* the merge of the splits fused into the part kernel (its last block per kv head and query
     * set, through the device's completion counters); WICK_ATTN_COMBINE=1 or more sets than
     * counters: the separate combine kernel */
    uint32_t *ctr = NULL;
    void *out = a->out;
    if (g.nb * g.hkv * nz <= WK_GPU_COUNTERS && !getenv("WICK_ATTN_COMBINE") &&
        (st = wk_gpu_counters(dev, &ctr)) != WK_OK) {
        wk_gpu_scratch_free(dev, scr);
        return st;
    }
    void *args[] = {&q, &k, &v, &po, &pm, &pl, &g, &scale, &lens, &word, &out, &ctr};
    wk_gpu_fn fn;
    st = wk_gpu_function(&fn, dev, "attn", name);
    if (st == WK_OK)
        st = wk_gpu_launch(dev, fn, (unsigned)g.nsplit, (unsigned)(g.nb * g.hkv), (unsigned)nz,
                           WK_GPU_BLOCK, 1, 1, (unsigned)shm, args);
    if (st == WK_OK && !ctr) {
        const char *cparts[3] = {"attn", "combine", wk_gpu_dtype_kname(a->qdt)};
        wk_gpu_kname(name, sizeof name, cparts, 3);
        void *cargs[] = {&po, &pm, &pl, &out, &g};
        st = wk_gpu_run(dev, "attn", name, (unsigned)nz, (unsigned)(g.nb * g.hkv), 1, cargs);
    }
    wk_gpu_scratch_free(dev, scr); /* stream-ordered: after the kernels that use it */
    return st;
}
