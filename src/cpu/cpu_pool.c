/* cpu_pool.c: the CPU 2-D pools (Candle's: no padding): x (N, C, H, W), any layout ->
 * out (N, C, (H - kh)/sh + 1, (W - kw)/sw + 1), contiguous.
 * avg_pool2d (float dtypes): the window sum in f32 (f64 for f64), in row-major window order,
 * divided by kh*kw, rounded once. max_pool2d (every dtype): the largest element, NaN propagates
 * (the first NaN of the window is returned, bit for bit); the element is copied, not recomputed.
 * Parallel over output rows above WK_CPU_PAR_THRESHOLD window reads. */
#include "cpu_elem.h"

typedef struct pool_job {
    const wk_layout *lx;
    int64_t oh, ow, kh, kw, sh, sw;
} pool_job;

/* Loops over output rows r = (n, c, oh); base points at the window row's first element. */
#define POOL_ROWS(T, BODY)                                                                     \
    do {                                                                                       \
        const wk_layout *l = j->lx;                                                            \
        const int64_t C = l->dims[1], OH = j->oh, OW = j->ow;                                  \
        const int64_t s0 = l->strides[0], s1 = l->strides[1], s2 = l->strides[2];              \
        const int64_t s3 = l->strides[3], rows = l->dims[0] * C * OH;                          \
        const int par = rows * OW * j->kh * j->kw >= WK_CPU_PAR_THRESHOLD;                     \
        _Pragma("omp parallel for schedule(static) if (par)") for (int64_t r = 0; r < rows; r++) \
        {                                                                                      \
            const int64_t oh = r % OH, nc = r / OH;                                            \
            const T *base = (const T *)x + l->offset + (nc / C) * s0 + (nc % C) * s1 +         \
                            oh * j->sh * s2;                                                   \
            T *o = (T *)out + r * OW;                                                          \
            for (int64_t ow = 0; ow < OW; ow++) {                                              \
                const T *win = base + ow * j->sw * s3;                                         \
                BODY;                                                                          \
            }                                                                                  \
        }                                                                                      \
    } while (0)

#define DEF_AVG(E, s, T, CT)                                                        \
    static void avg_##s(void *out, const void *x, const pool_job *j)                \
    {                                                                               \
        const CT div = (CT)(j->kh * j->kw);                                         \
        POOL_ROWS(T, {                                                              \
            CT acc = 0;                                                             \
            for (int64_t i = 0; i < j->kh; i++)                                     \
                for (int64_t k = 0; k < j->kw; k++)                                 \
                    acc += wk_cpu_ld_##s(win[i * s2 + k * s3]);                     \
            o[ow] = wk_cpu_st_##s(acc / div);                                       \
        });                                                                         \
    }
WK_CPU_FLOAT_TYPES(DEF_AVG)

/* max: ISNAN is v != v for floats, 0 for integers. Stops at the first NaN. */
#define MAX_BODY(T, CT, LD, ISNAN)                                      \
    {                                                                   \
        T best = win[0];                                                \
        CT bv = LD(best);                                               \
        int nan = ISNAN(bv);                                            \
        for (int64_t i = 0; i < j->kh && !nan; i++)                     \
            for (int64_t k = 0; k < j->kw; k++) {                       \
                const T t = win[i * s2 + k * s3];                       \
                const CT v = LD(t);                                     \
                if (ISNAN(v)) {                                         \
                    best = t;                                           \
                    nan = 1;                                            \
                    break;                                              \
                }                                                       \
                if (v > bv) {                                           \
                    best = t;                                           \
                    bv = v;                                             \
                }                                                       \
            }                                                           \
        o[ow] = best;                                                   \
    }
#define FNAN(v) ((v) != (v))
#define INAN(v) 0
#define DEF_MAX_F(E, s, T, CT)                                                      \
    static void max_##s(void *out, const void *x, const pool_job *j)                \
    {                                                                               \
        POOL_ROWS(T, MAX_BODY(T, CT, wk_cpu_ld_##s, FNAN));                               \
    }
WK_CPU_FLOAT_TYPES(DEF_MAX_F)
#define ID(v) (v)
#define DEF_MAX_I(E, s, T, A, S, MIN, MAX)                                          \
    static void max_##s(void *out, const void *x, const pool_job *j)                \
    {                                                                               \
        POOL_ROWS(T, MAX_BODY(T, T, ID, INAN));                                           \
    }
WK_CPU_INT_TYPES(DEF_MAX_I)

typedef void (*pool_fn)(void *out, const void *x, const pool_job *j);
#define MAX_ENTRY(E, s, T) [WK_DTYPE_##E] = max_##s,
static const pool_fn max_fns[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(MAX_ENTRY)};
#define AVG_ENTRY(E, s, T, CT) [WK_DTYPE_##E] = avg_##s,
static const pool_fn avg_fns[WK_DTYPE_COUNT] = {WK_CPU_FLOAT_TYPES(AVG_ENTRY)};

wk_status wk_cpu_pool2d(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, const wk_pool_params *p)
{
    (void)dev;
    const pool_fn fn = op == WK_OP_AVG_POOL2D ? avg_fns[dt] : op == WK_OP_MAX_POOL2D ? max_fns[dt] : NULL;
    if (!fn || lx->rank != 4)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "cpu pool2d: op %s on %s rank %d", wk_op_name(op),
                      wk_dtype_name(dt), (int)lx->rank);
    const pool_job j = {
        .lx = lx,
        .kh = p->kernel[0], .kw = p->kernel[1], .sh = p->stride[0], .sw = p->stride[1],
        .oh = (lx->dims[2] - p->kernel[0]) / p->stride[0] + 1,
        .ow = (lx->dims[3] - p->kernel[1]) / p->stride[1] + 1,
    };
    fn(out, x, &j);
    return WK_OK;
}
