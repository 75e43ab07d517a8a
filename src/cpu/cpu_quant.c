/* cpu_quant.c: the CPU backend's quantized ops: dequantize, qmatmul, qembedding, for every
 * wk_qtype (src/core/quant_blocks.h decodes the blocks) and the float dtypes f32, f16, bf16.
 * Every element decodes to the f32 value of quant_blocks.h and is rounded once to the output.
 * qmatmul with a block-quantized W quantizes x to int8 blocks and runs integer dot products, as
 * ggml does (cpu_qdot.c: decode and prefill, AMX where the CPU has it); with a float W (F32, F16,
 * BF16) it runs cpu_fdot.c (lane sums for a few rows, the gemm for more). WICK_CPU_QDOT=exact
 * dequantizes W row by row into f32 and does not quantize x: products and their sums in f32
 * within a block (runs of 32 for the one-element types), block sums accumulated in f64, the total
 * rounded to f32 then to dt (docs/semantics.md, "Quantized tensors"). */
#include "cpu_ops.h"
#include "cpu_fdot.h"
#include "cpu_qdot.h"
#include "quant_blocks.h"
#include "wk_core.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>

bool wk_cpu_supports_q(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt)
{
    (void)dev;
    return wk_qtype_block_elems(qt) > 0 && wk_op_defined(op, dt) &&
           (op == WK_OP_DEQUANTIZE || op == WK_OP_QMATMUL || op == WK_OP_QEMBEDDING ||
            op == WK_OP_QMATMUL_ACT);
}

/* ---- block decoders, one per type, generated from the block list */
typedef void (*decode_fn)(const uint8_t *b, float *y);
#define WK_QD_DEF(E, n, id, el, by)                          \
    static void decode_##n(const uint8_t *b, float *y)       \
    {                                                        \
        for (int e = 0; e < (el); e++)                       \
            y[e] = wk_qb_##n##_elem(b, e);                   \
    }
WK_QBLOCK_LIST(WK_QD_DEF)
#undef WK_QD_DEF

#define WK_QD_CASE(E, n, id, el, by) case WK_QTYPE_##E: return decode_##n;
static decode_fn decoder(wk_qtype qt)
{
    switch (qt) {
    WK_QBLOCK_LIST(WK_QD_CASE)
    }
    return NULL;
}
#undef WK_QD_CASE

/* y[0..k) <- the k elements (k / be blocks) at q. */
static void decode_row(decode_fn f, int64_t be, int64_t bb, const uint8_t *q, float *y, int64_t k)
{
    for (int64_t i = 0; i < k / be; i++)
        f(q + i * bb, y + i * be);
}

/* out[i0 .. i0+cnt) of dt <- y (f32), one rounding each. */
static void store(wk_dtype dt, void *out, int64_t i0, const float *y, int64_t cnt)
{
    switch (dt) {
    case WK_DTYPE_F16:
        for (int64_t i = 0; i < cnt; i++)
            ((uint16_t *)out)[i0 + i] = wk_fp_f32_to_f16(y[i]);
        break;
    case WK_DTYPE_BF16:
        for (int64_t i = 0; i < cnt; i++)
            ((uint16_t *)out)[i0 + i] = wk_fp_f32_to_bf16(y[i]);
        break;
    default: /* f32 */
        memcpy((float *)out + i0, y, (size_t)cnt * sizeof(float));
        break;
    }
}

/* Zero elements [i0, i0 + cnt) of out. */
static void store_zeros(wk_dtype dt, void *out, int64_t i0, int64_t cnt)
{
    const size_t es = wk_dtype_size(dt);
    memset((char *)out + (size_t)i0 * es, 0, (size_t)cnt * es);
}

/* Elements [i0, i0 + cnt) of the quantized sequence at q (i0, cnt multiples of the block size)
 * into out[o0 ..] of dt, a block at a time through a stack buffer. */
static void dequant_range(wk_qtype qt, wk_dtype dt, void *out, int64_t o0, const uint8_t *q,
                          int64_t i0, int64_t cnt)
{
    const decode_fn f = decoder(qt);
    const int64_t be = wk_qtype_block_elems(qt), bb = wk_qtype_block_bytes(qt);
    float y[256];
    const int64_t step = be == 1 ? 256 : be; /* one-element types: 256 blocks at once */
    for (int64_t i = 0; i < cnt; i += step) {
        const int64_t m = cnt - i < step ? cnt - i : step;
        decode_row(f, be, bb, q + (i0 + i) / be * bb, y, m);
        store(dt, out, o0 + i, y, m);
    }
}

wk_status wk_cpu_dequantize(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *q,
                            int64_t n)
{
    (void)dev;
    const int64_t chunk = 4096; /* a multiple of every block size */
    const int64_t nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (n >= WK_CPU_PAR_THRESHOLD)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t i0 = c * chunk, cnt = n - i0 < chunk ? n - i0 : chunk;
        dequant_range(qt, dt, out, i0, q, i0, cnt);
    }
    return WK_OK;
}

/* x (rows, k) of dt as f32: x itself for f32, else a converted copy in *tmp (wk_free it). */
static wk_status x_as_f32(const float **xf, float **tmp, wk_dtype dt, const void *x, int64_t cnt)
{
    *tmp = NULL;
    if (dt == WK_DTYPE_F32) {
        *xf = x;
        return WK_OK;
    }
    float *t = wk_malloc((size_t)cnt * sizeof *t);
    if (!t)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate %lld f32 for x",
                      (long long)cnt);
    const uint16_t *h = x;
    for (int64_t i = 0; i < cnt; i++)
        t[i] = dt == WK_DTYPE_F16 ? wk_fp_f16_to_f32(h[i]) : wk_fp_bf16_to_f32(h[i]);
    *xf = *tmp = t;
    return WK_OK;
}

/* sum_i x[i] * w[i] over k elements: f32 within runs of `run`, f64 across runs. */
static float dot_runs(const float *x, const float *w, int64_t k, int64_t run)
{
    double acc = 0.0;
    for (int64_t i = 0; i < k; i += run) {
        const int64_t m = k - i < run ? k - i : run;
        float s = 0.0f;
        for (int64_t e = 0; e < m; e++)
            s += x[i + e] * w[i + e];
        acc += (double)s;
    }
    return (float)acc;
}

wk_status wk_cpu_qmatmul(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                         int64_t rows, const void *w, int64_t n, int64_t k)
{
    (void)dev;
    const int64_t be = wk_qtype_block_elems(qt), bb = wk_qtype_block_bytes(qt);
    const int path = wk_cpu_qdot_path();
    if (path != WK_QDOT_EXACT)
        return be > 1 ? wk_cpu_qdot(path, qt, dt, out, x, rows, w, n, k)
                      : wk_cpu_fmatmul(qt, dt, out, x, rows, w, n, k);
    const decode_fn f = decoder(qt);
    const int64_t run = be == 1 ? 32 : be;
    const int64_t row_bytes = k / be * bb;
    const int par = (double)rows * (double)n * (double)k >= (double)WK_CPU_PAR_THRESHOLD && n > 1;
    const int nt = par ? omp_get_max_threads() : 1;
    const float *xf;
    float *xtmp, *wrows;
    wk_status st = x_as_f32(&xf, &xtmp, dt, x, rows * k);
    if (st)
        return st;
    /* one f32 row of W per thread (W is never dequantized whole: it may be gigabytes) */
    wrows = wk_malloc((size_t)nt * (size_t)k * sizeof *wrows);
    if (!wrows) {
        wk_free(xtmp);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate %d x %lld f32 for rows of W",
                      nt, (long long)k);
    }
#pragma omp parallel num_threads(nt) if (par)
    {
        float *wr = wrows + (size_t)omp_get_thread_num() * (size_t)k;
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            decode_row(f, be, bb, (const uint8_t *)w + j * row_bytes, wr, k);
            for (int64_t r = 0; r < rows; r++) {
                const float v = dot_runs(xf + r * k, wr, k, run);
                store(dt, out, r * n + j, &v, 1);
            }
        }
    }
    wk_free(wrows);
    wk_free(xtmp);
    return WK_OK;
}

/* The id at row-major position p of li, -1 for the sentinel; *bad = 1 if out of [0, rows). */
static int64_t load_id(const void *ids, wk_dtype idt, int64_t off, int64_t rows, int *bad,
                       long long *raw)
{
    int64_t v;
    switch (idt) {
    case WK_DTYPE_U8: {
        const uint8_t u = ((const uint8_t *)ids)[off];
        *raw = u;
        v = u == UINT8_MAX ? -1 : (int64_t)u;
        break;
    }
    case WK_DTYPE_U32: {
        const uint32_t u = ((const uint32_t *)ids)[off];
        *raw = u;
        v = u == UINT32_MAX ? -1 : (int64_t)u;
        break;
    }
    default: {
        const int64_t s = ((const int64_t *)ids)[off];
        *raw = s;
        if (s < 0) {
            *bad = 1;
            return 0;
        }
        v = s == INT64_MAX ? -1 : s;
        break;
    }
    }
    *bad = v >= rows;
    return v;
}

wk_status wk_cpu_qembedding(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *ids,
                            wk_dtype idt, const wk_layout *li, const void *w, int64_t rows,
                            int64_t k)
{
    (void)dev;
    const int64_t nids = wk_layout_elem_count(li);
    const int64_t row_bytes = k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt);
    int64_t *rid = wk_malloc((size_t)nids * sizeof *rid);
    if (!rid)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qembedding: cannot allocate %lld ids", (long long)nids);
    /* every id is checked before the first write */
    wk_walker wk;
    wk_walker_init(&wk, li, 0);
    for (int64_t p = 0; p < nids; p++, wk_walker_next(&wk)) {
        int bad = 0;
        long long raw = 0;
        rid[p] = load_id(ids, idt, wk.off, rows, &bad, &raw);
        if (bad) {
            char pos[160];
            size_t used = (size_t)snprintf(pos, sizeof pos, "[");
            for (int d = 0; d < wk.rank && used < sizeof pos; d++)
                used += (size_t)snprintf(pos + used, sizeof pos - used, "%s%lld", d ? "," : "",
                                         (long long)wk.idx[d]);
            if (used < sizeof pos)
                snprintf(pos + used, sizeof pos - used, "]");
            wk_free(rid);
            return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "qembedding: id %lld (%s) at ids position %s "
                          "is out of range for %lld rows", raw, wk_dtype_name(idt), pos,
                          (long long)rows);
        }
    }
#pragma omp parallel for schedule(static) if (nids * k >= WK_CPU_PAR_THRESHOLD)
    for (int64_t p = 0; p < nids; p++) {
        if (rid[p] < 0)
            store_zeros(dt, out, p * k, k);
        else
            dequant_range(qt, dt, out, p * k, (const uint8_t *)w + rid[p] * row_bytes, 0, k);
    }
    wk_free(rid);
    return WK_OK;
}
