/* ref_conv.c: reference convolutions, straight from the definitions (PyTorch's / Candle's):
 *   conv:           out[n, o, y, x] = sum_{c in group(o), i, j} in[n, c, y*s - p + i*d,
 *                                     x*s - p + j*d] * w[o, c - c0, i, j]  (outside: 0)
 *   conv_transpose: out[n, o, y, x] = sum_{c in group(o), i, j} in[n, c, h, w] *
 *                                     w[c, o - o0, i, j] over h*s - p + i*d = y (same for x)
 * in f64, rounded once. The 1-D ops are the 2-D ones with a height of 1. conv_transpose is
 * written as a gather over output pixels, not as the library's scatter. */
#include "ref.h"

/* Geometry of a case, 2-D (1-D: H = KH = OH = 1, parameters [0] act on W). */
typedef struct rc_geom {
    int64_t n, ci, h, w, co, kh, kw, oh, ow, g;
    int64_t s[2], p[2], d[2];
    int64_t xs[4], ws[4], xo, wo; /* strides of x and w as (N, C, H, W), offsets */
} rc_geom;

static int is_transposed(wk_op op) { return op == WK_OP_CONV_TRANSPOSE1D || op == WK_OP_CONV_TRANSPOSE2D; }

/* Checks the case the way docs/semantics.md says and fills g. Returns the status. */
static wk_status rc_setup(rc_geom *q, wk_op op, const wk_layout *lx, const wk_layout *lw,
                          const wk_conv_params *p)
{
    const int one = op == WK_OP_CONV1D || op == WK_OP_CONV_TRANSPOSE1D;
    const int tr = is_transposed(op);
    const int nsp = one ? 1 : 2;
    for (int i = 0; i < nsp; i++) {
        if (p->stride[i] < 1 || p->dilation[i] < 1 || p->padding[i] < 0)
            return WK_ERR_INVALID_ARGUMENT;
        int64_t lim = p->stride[i] > p->dilation[i] ? p->stride[i] : p->dilation[i];
        if (tr && (p->output_padding[i] < 0 || p->output_padding[i] >= lim))
            return WK_ERR_INVALID_ARGUMENT;
    }
    if (p->groups < 1)
        return WK_ERR_INVALID_ARGUMENT;
    if (lx->rank != 2 + nsp || lw->rank != 2 + nsp)
        return WK_ERR_SHAPE;
    q->g = p->groups;
    q->n = lx->dims[0];
    q->ci = lx->dims[1];
    q->xs[0] = lx->strides[0];
    q->xs[1] = lx->strides[1];
    q->ws[0] = lw->strides[0];
    q->ws[1] = lw->strides[1];
    q->xo = lx->offset;
    q->wo = lw->offset;
    if (one) {
        q->h = 1, q->kh = 1, q->xs[2] = 0, q->ws[2] = 0;
        q->w = lx->dims[2], q->kw = lw->dims[2], q->xs[3] = lx->strides[2], q->ws[3] = lw->strides[2];
        q->s[0] = 1, q->p[0] = 0, q->d[0] = 1;
        q->s[1] = p->stride[0], q->p[1] = p->padding[0], q->d[1] = p->dilation[0];
    } else {
        q->h = lx->dims[2], q->w = lx->dims[3], q->kh = lw->dims[2], q->kw = lw->dims[3];
        for (int k = 2; k < 4; k++)
            q->xs[k] = lx->strides[k], q->ws[k] = lw->strides[k];
        for (int i = 0; i < 2; i++)
            q->s[i] = p->stride[i], q->p[i] = p->padding[i], q->d[i] = p->dilation[i];
    }
    if (q->ci % q->g)
        return WK_ERR_INVALID_ARGUMENT;
    if (tr) {
        if (lw->dims[0] != q->ci)
            return WK_ERR_SHAPE;
        q->co = lw->dims[1] * q->g;
    } else {
        q->co = lw->dims[0];
        if (q->co % q->g)
            return WK_ERR_INVALID_ARGUMENT;
        if (lw->dims[1] != q->ci / q->g)
            return WK_ERR_SHAPE;
    }
    if (q->kh < 1 || q->kw < 1)
        return WK_ERR_SHAPE;
    const int64_t in[2] = {q->h, q->w}, k[2] = {q->kh, q->kw};
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        const int64_t op_ = one ? (i == 1 ? p->output_padding[0] : 0) : p->output_padding[i];
        if (tr) {
            o[i] = (in[i] - 1) * q->s[i] - 2 * q->p[i] + q->d[i] * (k[i] - 1) + op_ + 1;
            if (o[i] <= 0)
                return WK_ERR_SHAPE;
        } else {
            const int64_t num = in[i] + 2 * q->p[i] - q->d[i] * (k[i] - 1) - 1;
            if (num < 0)
                return WK_ERR_SHAPE;
            o[i] = num / q->s[i] + 1;
        }
    }
    q->oh = o[0];
    q->ow = o[1];
    return WK_OK;
}

wk_status ref_conv_count(int64_t *count, wk_op op, const wk_layout *lx, const wk_layout *lw,
                         const wk_conv_params *p)
{
    rc_geom q;
    wk_status st = rc_setup(&q, op, lx, lw, p);
    *count = st ? 0 : q.n * q.co * q.oh * q.ow;
    return st;
}

static double rc_x(const rc_geom *q, wk_dtype dt, const void *x, int64_t n, int64_t c, int64_t y,
                   int64_t z)
{
    return ref_load_f(dt, x, q->xo + n * q->xs[0] + c * q->xs[1] + y * q->xs[2] + z * q->xs[3]);
}

static double rc_w(const rc_geom *q, wk_dtype dt, const void *w, int64_t a, int64_t b, int64_t y,
                   int64_t z)
{
    return ref_load_f(dt, w, q->wo + a * q->ws[0] + b * q->ws[1] + y * q->ws[2] + z * q->ws[3]);
}

/* One output element of conv. */
static double rc_conv_at(const rc_geom *q, wk_dtype dt, const void *x, const void *w, int64_t n,
                         int64_t o, int64_t oy, int64_t ox)
{
    const int64_t cig = q->ci / q->g, cog = q->co / q->g, c0 = o / cog * cig;
    double s = 0;
    for (int64_t c = 0; c < cig; c++)
        for (int64_t i = 0; i < q->kh; i++)
            for (int64_t j = 0; j < q->kw; j++) {
                const int64_t y = oy * q->s[0] - q->p[0] + i * q->d[0];
                const int64_t z = ox * q->s[1] - q->p[1] + j * q->d[1];
                if (y >= 0 && y < q->h && z >= 0 && z < q->w)
                    s += rc_x(q, dt, x, n, c0 + c, y, z) * rc_w(q, dt, w, o, c, i, j);
            }
    return s;
}

/* One output element of conv_transpose: the input pixels (h, w) with h*s - p + i*d = oy. */
static double rc_convt_at(const rc_geom *q, wk_dtype dt, const void *x, const void *w, int64_t n,
                          int64_t o, int64_t oy, int64_t ox)
{
    const int64_t cig = q->ci / q->g, cog = q->co / q->g, c0 = o / cog * cig, oo = o % cog;
    double s = 0;
    for (int64_t c = 0; c < cig; c++)
        for (int64_t i = 0; i < q->kh; i++)
            for (int64_t j = 0; j < q->kw; j++) {
                const int64_t ny = oy + q->p[0] - i * q->d[0], nz = ox + q->p[1] - j * q->d[1];
                if (ny < 0 || nz < 0 || ny % q->s[0] || nz % q->s[1])
                    continue;
                const int64_t y = ny / q->s[0], z = nz / q->s[1];
                if (y < q->h && z < q->w)
                    s += rc_x(q, dt, x, n, c0 + c, y, z) * rc_w(q, dt, w, c0 + c, oo, i, j);
            }
    return s;
}

wk_status ref_conv(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                   const void *w, const wk_layout *lw, const wk_conv_params *p)
{
    if (!ref_op_defined(op, dt))
        return WK_ERR_DTYPE;
    rc_geom q;
    wk_status st = rc_setup(&q, op, lx, lw, p);
    if (st)
        return st;
    const int tr = is_transposed(op);
    int64_t idx = 0;
    for (int64_t n = 0; n < q.n; n++)
        for (int64_t o = 0; o < q.co; o++)
            for (int64_t oy = 0; oy < q.oh; oy++)
                for (int64_t ox = 0; ox < q.ow; ox++)
                    ref_store_f(dt, out, idx++, tr ? rc_convt_at(&q, dt, x, w, n, o, oy, ox)
                                                   : rc_conv_at(&q, dt, x, w, n, o, oy, ox));
    return WK_OK;
}
