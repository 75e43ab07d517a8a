/* cpu_upsample.c: the CPU upsampling ops. x (N, C, L) or (N, C, H, W), any layout -> contiguous
 * (N, C, l_out) / (N, C, h_out, w_out).
 * nearest (every dtype, elements copied): Candle's source index min(in - 1, (size_t)(dst *
 * (double)in / (double)out)), computed in f64 exactly like that.
 * bilinear (float dtypes): PyTorch's upsample_bilinear2d. Source coordinate, in the compute type
 * CT (f32, f64 for f64): align_corners: src = dst * ratio, ratio = (in-1)/(out-1) (0 for out = 1);
 * otherwise src = max(0, (dst + 0.5) * ratio - 0.5), ratio = (CT)(1/scale) for a user scale > 0,
 * else in/out. i0 = min(floor(src), in-1), i1 = i0 + (i0 < in-1), l1 = clamp(src - i0, 0, 1),
 * l0 = 1 - l1 (a dim with out = in is copied: i0 = i1 = dst, l1 = 0, as PyTorch's CPU kernel);
 * out = lh0 * (lw0 * x00 + lw1 * x01) + lh1 * (lw0 * x10 + lw1 * x11) in CT, rounded once. A 1-D input is handled as (N, C, 1, L). Parallel over output rows above the threshold. */
#include "cpu_elem.h"

/* ---- nearest */
static int64_t nearest_src(int64_t d, int64_t in, int64_t out)
{
    const double scale = (double)in / (double)out;
    const double v = (double)d * scale; /* >= 0 and < in + 1: the cast is defined */
    const int64_t s = (int64_t)v;
    return s < in - 1 ? s : in - 1;
}

/* Copies by element size: the rows r = (n, c, oh) of the output, columns from the table. */
#define DEF_NEAREST(T)                                                                          \
    static void nearest_##T(T *out, const T *x, const wk_layout *l, const int64_t *hs,          \
                            const int64_t *ws, int64_t OH, int64_t OW)                          \
    {                                                                                           \
        const int64_t C = l->dims[1], rows = l->dims[0] * C * OH;                               \
        _Pragma("omp parallel for schedule(static) if (rows * OW >= WK_CPU_PAR_THRESHOLD)")     \
        for (int64_t r = 0; r < rows; r++) {                                                   \
            const int64_t oh = r % OH, nc = r / OH;                                             \
            const T *row = x + l->offset + (nc / C) * l->strides[0] + (nc % C) * l->strides[1] + \
                           hs[oh] * l->strides[2];                                              \
            T *o = out + r * OW;                                                                \
            for (int64_t ow = 0; ow < OW; ow++)                                                 \
                o[ow] = row[ws[ow] * l->strides[3]];                                            \
        }                                                                                       \
    }
DEF_NEAREST(uint8_t)
DEF_NEAREST(uint16_t)
DEF_NEAREST(uint32_t)
DEF_NEAREST(uint64_t)

/* ---- bilinear: per-dim tables of (i0, i1, l0, l1) in the compute type */
#define DEF_LIN_TABLE(CT, sfx)                                                                  \
    static void lin_table_##sfx(int64_t *i0, int64_t *i1, CT *l0, CT *l1, int64_t in,           \
                                int64_t out, int ac, double scale)                              \
    {                                                                                           \
        CT ratio;                                                                               \
        if (ac)                                                                                 \
            ratio = out > 1 ? (CT)(in - 1) / (CT)(out - 1) : (CT)0;                             \
        else                                                                                    \
            ratio = scale > 0 ? (CT)(1.0 / scale) : (CT)in / (CT)out;                           \
        for (int64_t d = 0; d < out; d++) {                                                     \
            if (out == in) { /* PyTorch's per-dim shortcut: a copy, whatever the scale */       \
                i0[d] = i1[d] = d;                                                              \
                l0[d] = 1;                                                                      \
                l1[d] = 0;                                                                      \
                continue;                                                                       \
            }                                                                                   \
            CT src = ac ? ratio * (CT)d : ratio * ((CT)d + (CT)0.5) - (CT)0.5;                  \
            if (src < 0)                                                                        \
                src = 0;                                                                        \
            /* src may be huge for a tiny scale: compare before converting */                  \
            const int64_t k = src < (CT)(in - 1) ? (int64_t)src : in - 1;                       \
            CT lam = src - (CT)k;                                                               \
            lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;                                              \
            i0[d] = k;                                                                          \
            i1[d] = k + (k < in - 1 ? 1 : 0);                                                   \
            l1[d] = lam;                                                                        \
            l0[d] = (CT)1 - lam;                                                                \
        }                                                                                       \
    }
DEF_LIN_TABLE(float, f)
DEF_LIN_TABLE(double, d)

typedef struct bil_job {
    const wk_layout *l;
    int64_t oh, ow;
    int ac;
    double scale_h, scale_w;
} bil_job;

#define DEF_BIL(E, s, T, CT)                                                                     \
    static wk_status bil_##s(void *out, const void *x, const bil_job *j)                        \
    {                                                                                            \
        const wk_layout *l = j->l;                                                               \
        const int64_t OH = j->oh, OW = j->ow, C = l->dims[1], rows = l->dims[0] * C * OH;        \
        const int64_t s0 = l->strides[0], s1 = l->strides[1], s2 = l->strides[2];                \
        const int64_t s3 = l->strides[3];                                                        \
        const size_t nt = (size_t)(OH + OW);                                                     \
        int64_t *idx = wk_malloc(2 * nt * sizeof *idx);                                          \
        CT *lam = wk_malloc(2 * nt * sizeof *lam);                                               \
        if (!idx || !lam) {                                                                      \
            wk_free(idx);                                                                        \
            wk_free(lam);                                                                        \
            return wk_err(WK_ERR_OUT_OF_MEMORY, "upsample_bilinear2d: no memory for tables");   \
        }                                                                                        \
        int64_t *h0 = idx, *h1 = idx + OH, *w0 = idx + 2 * OH, *w1 = w0 + OW;                    \
        CT *hl0 = lam, *hl1 = lam + OH, *wl0 = lam + 2 * OH, *wl1 = wl0 + OW;                    \
        LIN_##CT(h0, h1, hl0, hl1, l->dims[2], OH, j->ac, j->scale_h);                          \
        LIN_##CT(w0, w1, wl0, wl1, l->dims[3], OW, j->ac, j->scale_w);                          \
        const T *xs = x;                                                                         \
        _Pragma("omp parallel for schedule(static) if (rows * OW >= WK_CPU_PAR_THRESHOLD)")      \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            const int64_t oh = r % OH, nc = r / OH;                                              \
            const T *p = xs + l->offset + (nc / C) * s0 + (nc % C) * s1;                         \
            const T *r0 = p + h0[oh] * s2, *r1 = p + h1[oh] * s2;                                \
            T *o = (T *)out + r * OW;                                                            \
            for (int64_t ow = 0; ow < OW; ow++) {                                                \
                const int64_t a = w0[ow] * s3, b = w1[ow] * s3;                                  \
                const CT top = wl0[ow] * wk_cpu_ld_##s(r0[a]) + wl1[ow] * wk_cpu_ld_##s(r0[b]);  \
                const CT bot = wl0[ow] * wk_cpu_ld_##s(r1[a]) + wl1[ow] * wk_cpu_ld_##s(r1[b]);  \
                o[ow] = wk_cpu_st_##s(hl0[oh] * top + hl1[oh] * bot);                            \
            }                                                                                    \
        }                                                                                        \
        wk_free(idx);                                                                            \
        wk_free(lam);                                                                            \
        return WK_OK;                                                                            \
    }
#define LIN_float lin_table_f
#define LIN_double lin_table_d
WK_CPU_FLOAT_TYPES(DEF_BIL)
typedef wk_status (*bil_fn)(void *out, const void *x, const bil_job *j);
#define BIL_ENTRY(E, s, T, CT) [WK_DTYPE_##E] = bil_##s,
static const bil_fn bil_fns[WK_DTYPE_COUNT] = {WK_CPU_FLOAT_TYPES(BIL_ENTRY)};

/* The input as rank 4: a 1-D input (N, C, L) becomes (N, C, 1, L). */
static wk_layout as_4d(const wk_layout *lx)
{
    if (lx->rank == 4)
        return *lx;
    wk_layout l = {.rank = 4, .offset = lx->offset};
    l.dims[0] = lx->dims[0];
    l.dims[1] = lx->dims[1];
    l.dims[2] = 1;
    l.dims[3] = lx->dims[2];
    l.strides[0] = lx->strides[0];
    l.strides[1] = lx->strides[1];
    l.strides[2] = 0;
    l.strides[3] = lx->strides[2];
    return l;
}

static wk_status nearest(wk_dtype dt, void *out, const void *x, const wk_layout *l, int64_t OH,
                         int64_t OW)
{
    int64_t *t = wk_malloc((size_t)(OH + OW) * sizeof *t);
    if (!t)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "upsample_nearest: no memory for index tables");
    for (int64_t d = 0; d < OH; d++)
        t[d] = nearest_src(d, l->dims[2], OH);
    for (int64_t d = 0; d < OW; d++)
        t[OH + d] = nearest_src(d, l->dims[3], OW);
    switch (wk_dtype_size(dt)) {
    case 1: nearest_uint8_t(out, x, l, t, t + OH, OH, OW); break;
    case 2: nearest_uint16_t(out, x, l, t, t + OH, OH, OW); break;
    case 4: nearest_uint32_t(out, x, l, t, t + OH, OH, OW); break;
    default: nearest_uint64_t(out, x, l, t, t + OH, OH, OW); break;
    }
    wk_free(t);
    return WK_OK;
}

wk_status wk_cpu_upsample(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, const int64_t *out_dims, int align_corners,
                          double scale_h, double scale_w)
{
    (void)dev;
    const wk_layout l = as_4d(lx);
    const int64_t OH = op == WK_OP_UPSAMPLE_NEAREST1D ? 1 : out_dims[0];
    const int64_t OW = op == WK_OP_UPSAMPLE_NEAREST1D ? out_dims[0] : out_dims[1];
    if (l.dims[0] * l.dims[1] * OH * OW == 0)
        return WK_OK;
    switch (op) {
    case WK_OP_UPSAMPLE_NEAREST1D:
    case WK_OP_UPSAMPLE_NEAREST2D:
        return nearest(dt, out, x, &l, OH, OW);
    case WK_OP_UPSAMPLE_BILINEAR2D:
        if (bil_fns[dt]) {
            const bil_job j = {.l = &l, .oh = OH, .ow = OW, .ac = align_corners,
                               .scale_h = scale_h, .scale_w = scale_w};
            return bil_fns[dt](out, x, &j);
        }
        break;
    default:
        break;
    }
    return wk_err(WK_ERR_INVALID_ARGUMENT, "cpu upsample: op %s on %s", wk_op_name(op), wk_dtype_name(dt));
}
