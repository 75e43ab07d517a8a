/* gpu_quant.c: the GPU quantized ops (GGML blocks: Q4_0 .. Q8_K) through kernels/quant.cu,
 * whose header comment describes the kernels:
 *   - dequantize: one thread per 16 bytes of output (dequant_<q>_<dt>);
 *   - qembedding: one thread per output sub-block, ids through the strided layout argument,
 *     out-of-range ids recorded in the device error record (qembed_<q>_<dt>);
 *   - qmatmul, rows <= 8 (decode): the activations quantized once to int8 blocks of 32 with
 *     half sums in scratch (kernels/qmv.cu qmvq_<dt>), then integer dot products against the
 *     weight blocks by the kernel qmv_pick names (qmv<R>_<kernel>_<q>: the measurements each
 *     rests on are cited there; WICK_QMV forces one, for benchmarks); the one-row chunks kernel
 *     quantizes x itself by the same rule (one launch, no scratch);
 *   - int8 activations (wick.h): wk_quantize_act is qmvq into the caller's storage; qmatmul_act
 *     at rows <= 8 runs qmv with them in place of its own quantization (chunks copies them),
 *     elsewhere decodes them to dt (act_decode_<dt>) and runs qmatmul;
 *   - F32/F16/BF16 weights, rows <= 8: pmv<R>_<w>_<x> (one row and few weight rows:
 *     pmv1_k<P>_<w>_<x>, pmv_split), W read once in its own type;
 *   - qmatmul, rows > 8: W dequantized to dt in chunks of weight rows (bounded scratch) and
 *     multiplied by the GEMM of gpu_matmul.c: out[:, c0:c0+cn] = x @ Wc^T.
 * The float side is f32, f16 or bf16. The F32/F16/BF16 "block" types (blocks of one element)
 * go through the float ops instead: to_dtype, index_select and the GEMM (plain_*). */
#include "gpu_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QMV_MAX_ROWS 8                    /* the vector path's largest row count */
#define QMAT_CHUNK_MIB 256 /* dequantized-weight scratch of the batched path (qmm) */

/* The block types with kernels. */
static bool q_has_kernels(wk_qtype qt)
{
    switch (qt) {
    case WK_QTYPE_Q4_0: case WK_QTYPE_Q4_1: case WK_QTYPE_Q5_0: case WK_QTYPE_Q5_1:
    case WK_QTYPE_Q8_0: case WK_QTYPE_Q8_1: case WK_QTYPE_Q2_K: case WK_QTYPE_Q3_K:
    case WK_QTYPE_Q4_K: case WK_QTYPE_Q5_K: case WK_QTYPE_Q6_K: case WK_QTYPE_Q8_K:
        return true;
    default:
        return false;
    }
}

/* The dtype of a one-element "block" type, or -1. */
static int q_plain(wk_qtype qt)
{
    switch (qt) {
    case WK_QTYPE_F32: return WK_DTYPE_F32;
    case WK_QTYPE_F16: return WK_DTYPE_F16;
    case WK_QTYPE_BF16: return WK_DTYPE_BF16;
    default: return -1;
    }
}

static bool q_float(wk_dtype dt)
{
    return dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16;
}

bool wk_gpu_supports_q(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt)
{
    (void)dev;
    return (op == WK_OP_DEQUANTIZE || op == WK_OP_QMATMUL || op == WK_OP_QEMBEDDING ||
            op == WK_OP_QMATMUL_ACT) &&
           (q_has_kernels(qt) || q_plain(qt) >= 0) && q_float(dt);
}

/* ---- the one-element "block" types: W is a plain (rows, k) matrix of dtype q_plain(qt) */
static wk_layout plain_layout(int64_t rows, int64_t k)
{
    wk_layout l;
    const int64_t dims[2] = {rows, k};
    wk_layout_contiguous(&l, 2, dims);
    return l;
}

static wk_status plain_dequantize(wk_device *dev, wk_dtype from, wk_dtype dt, void *out,
                                  const void *q, int64_t n)
{
    const wk_layout l = plain_layout(1, n);
    if (from == dt)
        return n ? dev->be->copy(dev, out, q, (size_t)n * wk_dtype_size(dt)) : WK_OK;
    return wk_gpu_to_dtype(dev, from, dt, out, q, &l);
}

static wk_status plain_qembedding(wk_device *dev, wk_dtype from, wk_dtype dt, void *out,
                                  const void *ids, wk_dtype idt, const wk_layout *li,
                                  const void *w, int64_t rows, int64_t k)
{
    const int64_t nids = wk_layout_elem_count(li);
    if (nids == 0 || k == 0)
        return WK_OK;
    /* ids made a contiguous vector, rows selected in W's dtype, then converted */
    void *cid = NULL, *sel = NULL;
    wk_status s = WK_OK;
    wk_layout lid = plain_layout(1, nids);
    lid.rank = 1;
    lid.dims[0] = nids;
    lid.strides[0] = 1;
    const void *idp = ids;
    if (!wk_layout_is_contiguous(li) || li->offset != 0) {
        s = wk_gpu_scratch_alloc(dev, (size_t)nids * wk_dtype_size(idt), &cid);
        if (s == WK_OK)
            s = wk_gpu_copy_strided(dev, idt, cid, 0, ids, li);
        idp = cid;
    }
    if (s == WK_OK && from != dt)
        s = wk_gpu_scratch_alloc(dev, (size_t)(nids * k) * wk_dtype_size(from), &sel);
    if (s == WK_OK) {
        const wk_layout lw = plain_layout(rows, k);
        const wk_index_args a = {.op = WK_OP_INDEX_SELECT, .dt = from, .idt = idt, .dim = 0,
                                 .out = sel ? sel : out, .src = w, .ls = &lw, .ids = idp,
                                 .li = &lid};
        s = wk_gpu_index(dev, &a);
    }
    if (s == WK_OK && sel) {
        const wk_layout lo = plain_layout(1, nids * k);
        s = wk_gpu_to_dtype(dev, from, dt, out, sel, &lo);
    }
    if (cid)
        wk_gpu_scratch_free(dev, cid);
    if (sel)
        wk_gpu_scratch_free(dev, sel);
    return s;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Warps per pair of weight rows of the one-row float kernels (pmv1, pmv1_k2, pmv1_k4), by the
 * dtype and shape alone (the sums' order, so the result's bits, depend on it): 2 for k >= 2048,
 * 4 for F16 weights with more rows than columns (their longer decode wants more loads in
 * flight), else 1. H100, one row, cold us, pmv / k2 / k4 (docs/performance.md, "Quantized
 * matvec"): F16 4096 x 14336 65.4 / 50.1 / 50.4, 14336 x 4096 50.7 / 48.2 / 45.8, 4096 x 4096
 * 18.3 / 17.3 / 18.1; BF16 46.1 / 41.9 / 43.0, 43.7 / 42.7 / 44.2, 14.8 / 14.4 / 15.8.
 * WICK_QMV=pmv|pmv_k2|pmv_k4 forces one (a benchmarking switch, read per call). */
static int pmv_split(wk_dtype from, int64_t rows, int64_t n, int64_t k)
{
    const char *e = getenv("WICK_QMV");
    if (rows == 1 && e && !strncmp(e, "pmv", 3))
        return !strcmp(e, "pmv_k4") ? 4 : !strcmp(e, "pmv_k2") ? 2 : 1;
    if (rows != 1 || k < 2048)
        return 1;
    return from == WK_DTYPE_F16 && n > k ? 4 : 2;
}

/* rows <= 8: kernels/qmv.cu pmv<R>[_k<P>]_<from>_<dt>, W read once in its own type (no
 * converted copy), f32 products and sums. */
#define PMV_NC 2 /* weight rows per lane group, as in kernels/qmv.cu */
static wk_status plain_qmv(wk_device *dev, wk_dtype from, wk_dtype dt, void *out, const void *x,
                           int64_t rows, const void *w, int64_t n, int64_t k)
{
    const int p = pmv_split(from, rows, n, k);
    const int64_t gx = ceil_div(n, (int64_t)(WK_GPU_BLOCK / (32 * p)) * PMV_NC);
    if (gx > INT32_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "qmatmul: n = %lld is too large", (long long)n);
    const size_t ws = wk_dtype_size(from), xs = wk_dtype_size(dt);
    int vec = (uintptr_t)w % 16 == 0 && (uintptr_t)x % 16 == 0 && (size_t)k * ws % 16 == 0 &&
              (size_t)k * xs % 16 == 0;
    int rowsi = (int)rows;
    const int r = rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8;
    const char head[5] = {'p', 'm', 'v', (char)('0' + r), 0}, split[3] = {'k', (char)('0' + p), 0};
    const char *parts[4] = {head, wk_gpu_dtype_kname(from), wk_gpu_dtype_kname(dt), NULL};
    if (p > 1) /* pmv1_k<P>_<from>_<dt> */
        parts[3] = parts[2], parts[2] = parts[1], parts[1] = split;
    char name[64];
    wk_gpu_kname(name, sizeof name, parts, p > 1 ? 4 : 3);
    void *args[] = {&w, &x, &out, &n, &k, &rowsi, &vec};
    /* launched early: it prefetches its first weight chunks, then waits (kernels/qmv.cu) */
    if (wk_gpu_act_overlaps(dev, w, (size_t)(n * k) * ws))
        return wk_gpu_run(dev, "qmv", name, (unsigned)gx, 1, 1, args);
    return wk_gpu_run_early(dev, "qmv", name, (unsigned)gx, 1, 1, args);
}

static wk_status plain_qmatmul(wk_device *dev, wk_dtype from, wk_dtype dt, void *out,
                               const void *x, int64_t rows, const void *w, int64_t n, int64_t k)
{
    if (rows <= QMV_MAX_ROWS)
        return plain_qmv(dev, from, dt, out, x, rows, w, n, k);
    void *wc = NULL;
    wk_status s = WK_OK;
    if (from != dt) {
        const wk_layout l = plain_layout(n, k);
        s = wk_gpu_scratch_alloc(dev, (size_t)(n * k) * wk_dtype_size(dt), &wc);
        if (s == WK_OK)
            s = wk_gpu_to_dtype(dev, from, dt, wc, w, &l);
    }
    if (s == WK_OK) {
        /* C (rows, n) = x (rows, k) @ B (k, n), B (r, c) = W[c, r] */
        const wk_gpu_gemm_args g = {
            .dt = dt, .batch = 1, .m = rows, .n = n, .k = k,
            .a = x, .a_bs = 0, .a_rs = k, .a_cs = 1,
            .b = wc ? wc : w, .b_bs = 0, .b_rs = 1, .b_cs = k,
            .c = out, .c_bs = 0, .ldc = n,
        };
        s = wk_gpu_gemm(dev, &g);
    }
    if (wc)
        wk_gpu_scratch_free(dev, wc);
    return s;
}

/* The kernels read 32-bit words of the block types whose size is a multiple of 4 (so the
 * quantized buffer must start 4-byte aligned) and store 16 bytes at a time. Device allocations
 * are far more aligned; this guards the assumption. */
static wk_status q_check(const char *op, wk_qtype qt, wk_dtype dt, const void *q, const void *out,
                         int64_t k)
{
    if (!q_has_kernels(qt) || !q_float(dt))
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %s to %s has no GPU kernel", op,
                      wk_qtype_name(qt), wk_dtype_name(dt));
    if ((uintptr_t)q % 4 != 0 || (uintptr_t)out % 16 != 0)
        return wk_err(WK_ERR_NOT_SUPPORTED,
                      "%s: quantized data must be 4-byte aligned and the output 16-byte aligned "
                      "on the GPU", op);
    if (k % wk_qtype_block_elems(qt) != 0)
        return wk_err(WK_ERR_SHAPE, "%s: %lld elements per row is not a multiple of %s's %lld",
                      op, (long long)k, wk_qtype_name(qt),
                      (long long)wk_qtype_block_elems(qt));
    return WK_OK;
}

/* The dequant kernels' work items for nsub sub-blocks of 32 elements: one per 16 bytes of
 * output. */
static int64_t dequant_items(wk_dtype dt, int64_t nsub)
{
    return nsub * 32 * (int64_t)wk_dtype_size(dt) / 16;
}

/* out: n elements of dt = the first n / block_elems blocks at q. */
wk_status wk_gpu_dequantize(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *q,
                            int64_t n)
{
    if (q_plain(qt) >= 0 && q_float(dt))
        return plain_dequantize(dev, (wk_dtype)q_plain(qt), dt, out, q, n);
    wk_status s = q_check("dequantize", qt, dt, q, out, n);
    if (s != WK_OK || n == 0)
        return s;
    int64_t nitems = dequant_items(dt, n / 32);
    char name[64];
    snprintf(name, sizeof name, "dequant_%s_%s", wk_qtype_name(qt), wk_gpu_dtype_kname(dt));
    void *args[] = {&nitems, &q, &out};
    return wk_gpu_run(dev, "quant", name, wk_gpu_blocks(dev, nitems), 1, 1, args);
}

/* The "none" id of an id dtype: its maximum value. */
static int64_t q_sentinel(wk_dtype idt)
{
    switch (idt) {
    case WK_DTYPE_U8: return 0xFF;
    case WK_DTYPE_U32: return 0xFFFFFFFFll;
    default: return INT64_MAX;
    }
}

/* out (elem_count(li), k) of dt: row ids[i] of W (rows, k), decoded. */
wk_status wk_gpu_qembedding(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *ids,
                            wk_dtype idt, const wk_layout *li, const void *w, int64_t rows,
                            int64_t k)
{
    if (q_plain(qt) >= 0 && q_float(dt))
        return plain_qembedding(dev, (wk_dtype)q_plain(qt), dt, out, ids, idt, li, w, rows, k);
    wk_status s = q_check("qembedding", qt, dt, w, out, k);
    if (s != WK_OK)
        return s;
    const int64_t nids = wk_layout_elem_count(li);
    if (nids == 0 || k == 0)
        return WK_OK;
    if (idt != WK_DTYPE_U8 && idt != WK_DTYPE_U32 && idt != WK_DTYPE_I64)
        return wk_err(WK_ERR_DTYPE, "qembedding: ids of dtype %s (u8, u32 or i64 expected)",
                      wk_dtype_name(idt));
    uint32_t *word;
    s = wk_gpu_error_word(dev, &word);
    if (s != WK_OK)
        return s;
    wk_klay1 kl;
    wk_layout col;
    wk_gpu_klay1(&kl, &col, li);
    const void *idp = wk_gpu_at(ids, li->offset, wk_dtype_size(idt));
    int64_t spr = k / 32, nunits = nids * spr, sentinel = q_sentinel(idt);
    int idti = (int)idt;
    char name[64];
    snprintf(name, sizeof name, "qembed_%s_%s", wk_qtype_name(qt), wk_gpu_dtype_kname(dt));
    void *args[] = {&nunits, &spr, &kl, &idp, &idti, &sentinel, &w, &rows, &out, &word};
    return wk_gpu_run(dev, "quant", name, wk_gpu_blocks(dev, nunits), 1, 1, args);
}

/* ---- the decode matvec: the kernels of kernels/qmv.cu, named for how they walk W. A block of
 * WK_GPU_BLOCK threads covers (WK_GPU_BLOCK / g) * nc weight rows (chunks sizes its grid in
 * qmv()); r: the rows of x it is built for (it takes any count up to r). */
typedef struct qmv_kernel {
    const char *name;
    int r, g, nc;
} qmv_kernel;
static const qmv_kernel QMV_KERNELS[] = {
    {"warp", 1, 32, 1},    {"warp2", 1, 64, 1},   {"warp2", 8, 64, 2},   {"warp4", 1, 128, 1},
    {"warp4", 8, 128, 2},  {"split", 1, 64, 2},   {"stream", 1, 32, 1},  {"chunks", 1, 32, 1},
    {"mma", 8, WK_GPU_BLOCK, 16}, {"rowpair", 2, 64, 2}, {"rowpair", 4, 64, 2},
    {"words", 1, 32, 1},   {"words4", 1, 128, 1},
};

/* The types kernels/qmv.cu builds mma for: the 32-element ones with one scale per block. */
static bool qmv_mma_type(wk_qtype qt)
{
    return qt == WK_QTYPE_Q4_0 || qt == WK_QTYPE_Q4_1 || qt == WK_QTYPE_Q5_0 ||
           qt == WK_QTYPE_Q5_1 || qt == WK_QTYPE_Q8_0;
}

/* mma's dynamic shared memory (kernels/qmv.cu wk_qmv_mma): per warp 2 stages of 16-byte words,
 * the 16 weight rows' chunk at an odd stride, 8 rows of x (17 words each), their scales and, for
 * the types with a min, half sums. 0 where mma cannot run: the other types, no matrix units
 * (AMD, NVIDIA before sm_80: not built or no instruction), k not a multiple of 256, W not
 * 16-byte aligned, or more than a block may have (76-106 KiB: on sm_86 / sm_89's 99 KiB all
 * but Q8_0). */
static size_t qmv_mma_shmem(const wk_device *dev, wk_qtype qt, int64_t k, const void *w)
{
    if (!qmv_mma_type(qt) || wk_device_backend(dev) == WK_BACKEND_ROCM ||
        !wk_gpu_matrix_units(dev, WK_DTYPE_F16) || k % 256 != 0 || ((uintptr_t)w & 15) != 0)
        return 0;
    const bool min = qt == WK_QTYPE_Q4_1 || qt == WK_QTYPE_Q5_1;
    const size_t cv = (size_t)(8 * wk_qtype_block_bytes(qt) / 16);
    const size_t st = 16 * (cv | 1) + 8 * 17 + 16 + (min ? 16 : 0);
    const size_t bytes = 16 * (size_t)(WK_GPU_BLOCK / 32) * 2 * st;
    return bytes <= (size_t)wk_gpu_smem_block(dev) ? bytes : 0;
}

/* chunks' dynamic shared memory (kernels/qmv.cu wk_qmv_chunks): the row of activations (21
 * words of 16 bytes per chunk of 256 elements) and 2 stages of 32 chunks (cv words each) per
 * 32-lane group. 0 where chunks cannot run: the types it is not built for, AMD, k not a
 * multiple of 256, W not 16-byte aligned, or more than a block may have on the device (sm_90:
 * 227 KiB, sm_80: 163, sm_86 / sm_89: 99). */
static size_t qmv_chunks_shmem(const wk_device *dev, wk_qtype qt, int64_t k, const void *w)
{
    switch (qt) {
    case WK_QTYPE_Q4_0: case WK_QTYPE_Q8_0: case WK_QTYPE_Q4_K: case WK_QTYPE_Q5_K:
        break; /* the types kernels/qmv.cu builds chunks for */
    default:
        return 0;
    }
    if (wk_device_backend(dev) == WK_BACKEND_ROCM) /* not built for AMD (kernels/qmv.cu) */
        return 0;
    if (k % 256 != 0 || ((uintptr_t)w & 15) != 0)
        return 0;
    const size_t cv = (size_t)(256 / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt) / 16);
    const size_t bytes = 16 * ((size_t)(k / 256) * 21 + 2 * (size_t)WK_GPU_BLOCK * cv);
    return bytes <= (size_t)wk_gpu_smem_block(dev) ? bytes : 0;
}

/* stream reads whole rows in 16-byte loads: W 16-byte aligned, rows a multiple of 16 bytes. */
static bool qmv_stream_ok(wk_qtype qt, int64_t k, const void *w)
{
    return ((uintptr_t)w & 15) == 0 &&
           (k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt)) % 16 == 0;
}

/* words reads GGML's blocks as aligned 32-bit words: Q4_0 or Q8_0, rows of an even number of
 * blocks, W 4-byte aligned (q_check holds that for every quantized matvec). */
static bool qmv_words_ok(wk_qtype qt, int64_t k, const void *w)
{
    return (qt == WK_QTYPE_Q4_0 || qt == WK_QTYPE_Q8_0) && k % 64 == 0 && ((uintptr_t)w & 3) == 0;
}

/* Whether kernel `name` runs r rows (1, 2, 4, 8) of qt against W (n, k) at w on dev. */
static bool qmv_runs(const wk_device *dev, const char *name, int r, wk_qtype qt, int64_t k,
                     const void *w)
{
    if (!strcmp(name, "mma"))
        return qmv_mma_shmem(dev, qt, k, w) > 0;
    if (!strcmp(name, "chunks"))
        return r == 1 && qmv_chunks_shmem(dev, qt, k, w) > 0;
    if (!strcmp(name, "stream"))
        return r == 1 && qmv_stream_ok(qt, k, w);
    if (!strcmp(name, "words") || !strcmp(name, "words4"))
        return r == 1 && qmv_words_ok(qt, k, w);
    for (size_t i = 0; i < sizeof QMV_KERNELS / sizeof QMV_KERNELS[0]; i++)
        if (!strcmp(QMV_KERNELS[i].name, name) && QMV_KERNELS[i].r == r)
            return true;
    return false;
}

/* The matvec kernel for r rows of x (1, 2, 4 or 8: the row count rounded up), weight type qt
 * and W (n, k) at w. The rules come from the H200 runs beside ggml, warm L2
 * (docs/performance.md, "Quantized matvec": the per-kernel times of each shape and type; the
 * rule picked the fastest kernel or one within 1.08x of it in every case measured):
 *   1 row:   chunks for Q4_K and Q5_K; stream for Q3_K and Q6_K; for Q4_0 and Q8_0 with k a
 *            multiple of 64: words, 32 lanes per row for Q4_0 W with more rows than columns,
 *            else 128 (words4) (H100, cold W, us, the earlier rule's kernel / words / words4:
 *            Q4_0 6144 x 4096 warp4 9.57 / 8.36 / 9.10, 28672 x 4096 warp 28.51 / 26.38 / 29.66,
 *            4096 x 14336 chunks 18.31 / 17.01 / 16.41, 4096 x 4096 warp4 7.60 / 7.00 / 7.25;
 *            Q8_0 warp4 44.34 / 44.21 / 43.11 at 28672 x 4096, words4 the fastest on every
 *            shape; the 8B-shaped model's tg128 Q4_0 +8.6%, Q8_0 +5.7%); otherwise (an odd
 *            number of blocks per row) chunks for Q4_0 at k > 4096,
 *            warp4 for Q8_0 and for Q4_0 W with fewer than twice as many rows as columns (not
 *            "tall"); for the rest warp2, or warp when tall (enough rows to fill the GPU with
 *            one warp each). The Q4_0 and Q8_0 choices from the matvecs of given activations
 *            (qmv(act): a decode step's, whose producers made them; H100, cold W, us, the
 *            earlier rule / now): Q8_0 4096 x 14336 split 31.7 / 29.3, 4096 x 4096 10.8 / 8.4;
 *            Q4_0 4096 x 14336 warp2 19.3 / 16.8, 4096 x 4096 6.5 / 6.0;
 *   2-8 rows of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 where the matrix units run (NVIDIA sm_80+, and the
 *            simt device, which runs their twin): mma;
 *   5-8 rows otherwise: warp2, but warp4 for Q2_K unless tall;
 *   2-4 rows otherwise: rowpair (never measured at 2 and 4 rows: it was the first kernel, which
 *            beat the first lane-group kernel at 1 and 8 rows on the H100).
 * Where the rule's kernel cannot run (alignment, k, shared memory, AMD): warp2 at 1 and 8
 * rows, rowpair at 2 and 4. WICK_QMV=<name> forces a kernel (a benchmarking switch, read per
 * call so that one process can compare them) where it runs, else the same fallback; another
 * value (e.g. "default") leaves the rule. */
static const char *qmv_pick(const wk_device *dev, int r, wk_qtype qt, int64_t n, int64_t k,
                            const void *w)
{
    const char *fallback = r == 2 || r == 4 ? "rowpair" : "warp2";
    const char *e = getenv("WICK_QMV");
    for (size_t i = 0; e && i < sizeof QMV_KERNELS / sizeof QMV_KERNELS[0]; i++)
        if (!strcmp(e, QMV_KERNELS[i].name))
            return qmv_runs(dev, e, r, qt, k, w) ? e : fallback;
    const bool tall = n >= 2 * k;
    const char *pick;
    if (r > 1)
        pick = qmv_mma_type(qt) ? "mma"
               : r < 8          ? "rowpair"
               : qt == WK_QTYPE_Q2_K && !tall ? "warp4" : "warp2";
    else if (qt == WK_QTYPE_Q4_K || qt == WK_QTYPE_Q5_K)
        pick = "chunks";
    else if (qt == WK_QTYPE_Q3_K || qt == WK_QTYPE_Q6_K)
        pick = "stream";
    else if (qmv_words_ok(qt, k, w))
        pick = qt == WK_QTYPE_Q4_0 && n > k ? "words" : "words4";
    else if (qt == WK_QTYPE_Q8_0)
        pick = "warp4";
    else if (qt == WK_QTYPE_Q4_0 && k > 4096)
        pick = "chunks";
    else if (qt == WK_QTYPE_Q4_0 && !tall)
        pick = "warp4";
    else
        pick = tall ? "warp" : "warp2";
    return qmv_runs(dev, pick, r, qt, k, w) ? pick : fallback;
}

/* A qmv kernel with dynamic shared memory (chunks, mma), launched early unless !early. */
static wk_status qmv_launch_smem(wk_device *dev, const char *name, int64_t gx, size_t shmem,
                                 void **args, bool early)
{
    wk_gpu_fn fn;
    wk_status s = wk_gpu_function(&fn, dev, "qmv", name);
    if (s == WK_OK)
        s = wk_gpu_launch_ex(dev, fn, (unsigned)gx, 1, 1, WK_GPU_BLOCK, 1, 1, (unsigned)shmem, args,
                             early ? WK_LAUNCH_EARLY : 0);
    return s;
}

/* The activations' parts in wick.h's layout at p (rows x k): codes, scales, half sums. */
static void act_parts(const void *p, int64_t rows, int64_t k, const void **xq, const void **xd,
                      const void **xs)
{
    *xq = p;
    *xd = wk_gpu_at(p, rows * k, 1);
    *xs = wk_gpu_at(*xd, rows * k / 32, 4);
}

/* qmvq_<dt>: x (rows, k) to the activations at act (wick.h's layout), launched early. */
static wk_status qmvq(wk_device *dev, wk_dtype dt, void *act, const void *x, int64_t rows,
                      int64_t k)
{
    int64_t nblk = rows * k / 32;
    const void *xq, *xd, *xs;
    act_parts(act, rows, k, &xq, &xd, &xs);
    char name[32];
    const char *qparts[2] = {"qmvq", wk_gpu_dtype_kname(dt)};
    wk_gpu_kname(name, sizeof name, qparts, 2);
    void *qargs[] = {&nblk, &x, &xq, &xd, &xs};
    wk_gpu_act_written(dev, act, (size_t)(rows * k + rows * k / 32 * 8));
    return wk_gpu_run_early(dev, "qmv", name, wk_gpu_blocks(dev, nblk * 8), 1, 1, qargs);
}

/* rows <= 8: quantize x to int8 blocks (scratch), then the integer dot product kernel; chunks
 * (one row) of Q4_K and Q5_K quantizes x itself: one kernel, no scratch. act (x NULL): the
 * activations given, no quantization. The kernel does not depend on whether they are given, so
 * wk_qmatmul_act(wk_quantize_act(x)) and wk_qmatmul(x) are the same bits. */
static wk_status qmv(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                     const void *act, int64_t rows, const void *w, int64_t n, int64_t k)
{
    const int r = rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8;
    const char *kname = qmv_pick(dev, r, qt, n, k, w);
    const bool chunks = !strcmp(kname, "chunks"), mma = !strcmp(kname, "mma");
    const bool rowpair = !strcmp(kname, "rowpair");
    const int rk = mma ? 8 : r; /* mma's one kernel takes 1..8 rows */
    const qmv_kernel *kern = NULL;
    for (size_t i = 0; i < sizeof QMV_KERNELS / sizeof QMV_KERNELS[0] && !kern; i++)
        if (!strcmp(QMV_KERNELS[i].name, kname) && QMV_KERNELS[i].r == rk)
            kern = &QMV_KERNELS[i];
    const size_t shmem = chunks ? qmv_chunks_shmem(dev, qt, k, w)
                         : mma  ? qmv_mma_shmem(dev, qt, k, w) : 0;
    int64_t gx = ceil_div(n, (int64_t)(WK_GPU_BLOCK / kern->g) * kern->nc);
    const int vp = k <= 16 * 256 ? 2 : 1; /* chunks: rows per unit (kernels/qmv.cu) */
    if (chunks) { /* one pass of blocks over the GPU: activations quantized once per block */
        gx = ceil_div(vp == 2 ? ceil_div(n, 2) : n, WK_GPU_BLOCK / 32); /* units of vp rows */
        const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
        /* blocks per multiprocessor: what its shared memory holds (the block limit stands for
         * the multiprocessor's: 227 of 228 KiB on sm_90) */
        int64_t per = (int64_t)((size_t)wk_gpu_smem_block(dev) / shmem);
        per = per < 1 ? 1 : per > 2 ? 2 : per;
        gx = gx < sm * per ? gx : sm * per;
    }
    if (gx > INT32_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "qmatmul: n = %lld is too large", (long long)n);
    char name[64];
    int dti = (int)dt, rowsi = (int)rows;
    /* W read before the kernel's grid wait: not where the kernel before it may still write W */
    const bool early = !wk_gpu_act_overlaps(
        dev, w, (size_t)(n * (k / wk_qtype_block_elems(qt)) * wk_qtype_block_bytes(qt)));
    const char head[5] = {'q', 'm', 'v', (char)('0' + kern->r), 0};
    const char *parts[3] = {head, chunks && vp == 2 ? "chunks2" : kname, wk_qtype_name(qt)};
    wk_gpu_kname(name, sizeof name, parts, 3);
    /* chunks quantizes x itself for Q4_K and Q5_K (one kernel; other types: qmvq first, which
     * measured faster at k = 14336 on the H100: Q4_0 19.9 against 15.3 us) */
    if (chunks && !act && (qt == WK_QTYPE_Q4_K || qt == WK_QTYPE_Q5_K)) {
        void *args[] = {&w, &x, &act, &out, &dti, &n, &k};
        return qmv_launch_smem(dev, name, gx, shmem, args, early);
    }
    /* the activations (wick.h's layout): given, or quantized here into scratch (xq: rows * k
     * bytes, 16-byte aligned runs of 32 per block; xd: rows k / 32 floats; xs: as many words) */
    void *scr = NULL;
    wk_status s = WK_OK;
    if (!act && (s = wk_gpu_scratch_alloc(dev, (size_t)(rows * k) + (size_t)(rows * k / 32) * 8,
                                          &scr)) == WK_OK)
        s = qmvq(dev, dt, scr, x, rows, k);
    if (s != WK_OK && scr)
        wk_gpu_scratch_free(dev, scr);
    if (s != WK_OK)
        return s;
    const void *xq, *xd, *xs, *xa = act ? act : scr;
    act_parts(xa, rows, k, &xq, &xd, &xs);
    if (chunks) { /* dynamic shared memory; launched early; copies the activations at xa */
        void *args[] = {&w, &x, &xa, &out, &dti, &n, &k};
        s = qmv_launch_smem(dev, name, gx, shmem, args, early);
    } else {
        void *args[] = {&w, &xq, &xd, &xs, &out, &dti, &n, &k, &rowsi};
        if (rowpair) { /* no grid wait in it: launched after the work before it ends */
            s = wk_gpu_run(dev, "qmv", name, (unsigned)gx, 1, 1, args);
        } else if (mma) {
            s = qmv_launch_smem(dev, name, gx, shmem, args, early);
        } else if (early) { /* kernels/qmv.cu: they wait for the work before them */
            s = wk_gpu_run_early(dev, "qmv", name, (unsigned)gx, 1, 1, args);
        } else {
            s = wk_gpu_run(dev, "qmv", name, (unsigned)gx, 1, 1, args);
        }
    }
    if (scr)
        wk_gpu_scratch_free(dev, scr); /* stream-ordered: after the launches that use it */
    return s;
}

/* The cap on qmm's dequantized chunk of W: QMAT_CHUNK_MIB, or WICK_QMM_CHUNK_MIB (read per
 * call; a test and benchmarking switch). */
static size_t qmm_cap(void)
{
    const char *e = getenv("WICK_QMM_CHUNK_MIB");
    const long v = e ? strtol(e, NULL, 10) : 0;
    return (size_t)(v > 0 && v <= 65536 ? v : QMAT_CHUNK_MIB) << 20;
}

/* rows > 8: W dequantized to dt in chunks of cn weight rows, each multiplied by the GEMM: as
 * few chunks as the cap allows, of equal rows rounded up to a multiple of 128 (whole GEMM
 * tiles), or as many rows as fit the cap where 128 do not. */
static wk_status qmm(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                     int64_t rows, const void *w, int64_t n, int64_t k)
{
    const size_t esz = wk_dtype_size(dt), cap = qmm_cap(), row_bytes = (size_t)k * esz;
    const int64_t rowq = k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt);
    const int64_t nch = ceil_div((int64_t)((size_t)n * row_bytes), (int64_t)cap);
    int64_t cn = ceil_div(ceil_div(n, nch), 128) * 128;
    if (128 * row_bytes > cap)
        cn = cap / row_bytes > 0 ? (int64_t)(cap / row_bytes) : 1;
    if (cn > n)
        cn = n;
    void *scr;
    wk_status s = wk_gpu_scratch_alloc(dev, (size_t)(cn * k) * esz, &scr);
    if (s != WK_OK)
        return s;
    char name[64];
    snprintf(name, sizeof name, "dequant_%s_%s", wk_qtype_name(qt), wk_gpu_dtype_kname(dt));
    for (int64_t c0 = 0; c0 < n && s == WK_OK; c0 += cn) {
        const int64_t cc = n - c0 < cn ? n - c0 : cn;
        int64_t nitems = dequant_items(dt, cc * k / 32);
        const void *qp = wk_gpu_at(w, c0 * rowq, 1);
        void *args[] = {&nitems, &qp, &scr};
        s = wk_gpu_run(dev, "quant", name, wk_gpu_blocks(dev, nitems), 1, 1, args);
        if (s != WK_OK)
            break;
        /* C (rows, cc) at out + c0, row stride n = A (rows, k) @ B (k, cc), B (r, c) = Wc[c, r] */
        const wk_gpu_gemm_args g = {
            .dt = dt, .batch = 1, .m = rows, .n = cc, .k = k,
            .a = x, .a_bs = 0, .a_rs = k, .a_cs = 1,
            .b = scr, .b_bs = 0, .b_rs = 1, .b_cs = k,
            .c = wk_gpu_at(out, c0, esz), .c_bs = 0, .ldc = n,
        };
        s = wk_gpu_gemm(dev, &g);
    }
    wk_gpu_scratch_free(dev, scr);
    return s;
}

/* out (rows, n) of dt = x (rows, k) of dt, contiguous, @ W^T, W (n, k) quantized. */
wk_status wk_gpu_qmatmul(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                         int64_t rows, const void *w, int64_t n, int64_t k)
{
    const bool plain = q_plain(qt) >= 0 && q_float(dt);
    wk_status s = plain ? WK_OK : q_check("qmatmul", qt, dt, w, out, k);
    if (s != WK_OK || rows == 0 || n == 0)
        return s;
    if (k == 0) /* empty sums */
        return dev->be->memset_zero(dev, out, (size_t)(rows * n) * wk_dtype_size(dt));
    if (plain)
        return plain_qmatmul(dev, (wk_dtype)q_plain(qt), dt, out, x, rows, w, n, k);
    if (rows <= QMV_MAX_ROWS)
        return qmv(dev, qt, dt, out, x, NULL, rows, w, n, k);
    return qmm(dev, qt, dt, out, x, rows, w, n, k);
}

/* ---- the int8 activations (wick.h's layout) */
wk_status wk_gpu_quantize_act(wk_device *dev, wk_dtype dt, void *act, const void *x, int64_t m,
                              int64_t k)
{
    if (!q_float(dt) || k % 32 != 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu quantize_act: bad call (%s, k = %lld)",
                      wk_dtype_name(dt), (long long)k);
    return m * k > 0 ? qmvq(dev, dt, act, x, m, k) : WK_OK;
}

/* out (m, n) of dt = act @ W^T: the integer kernels of qmv at m <= 8 for the block types;
 * elsewhere (float W, m > 8) act decoded to dt (act_decode_<dt>, scratch), then wk_gpu_qmatmul. */
wk_status wk_gpu_qmatmul_act(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                             int64_t m, const void *w, int64_t n, int64_t k)
{
    const bool plain = q_plain(qt) >= 0 && q_float(dt);
    wk_status s = plain ? WK_OK : q_check("qmatmul_act", qt, dt, w, out, k);
    if (s != WK_OK || m == 0 || n == 0)
        return s;
    if (k == 0)
        return dev->be->memset_zero(dev, out, (size_t)(m * n) * wk_dtype_size(dt));
    if (!plain && m <= QMV_MAX_ROWS)
        return qmv(dev, qt, dt, out, NULL, act, m, w, n, k);
    void *x;
    if ((s = wk_gpu_scratch_alloc(dev, (size_t)(m * k) * wk_dtype_size(dt), &x)) != WK_OK)
        return s;
    int64_t cnt = m * k;
    char name[32];
    const char *parts[2] = {"act_decode", wk_gpu_dtype_kname(dt)};
    wk_gpu_kname(name, sizeof name, parts, 2);
    void *args[] = {&cnt, &act, &x};
    s = wk_gpu_run(dev, "qmv", name, wk_gpu_blocks(dev, cnt), 1, 1, args);
    if (s == WK_OK)
        s = wk_gpu_qmatmul(dev, qt, dt, out, x, m, w, n, k);
    wk_gpu_scratch_free(dev, x);
    return s;
}
