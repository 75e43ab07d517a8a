/* run_adversarial.c: the adversarial rows of every row reduction (sum, min, max, argmin, argmax
 * over the last dim) and fused row op (softmax_last_dim, rms_norm, layer_norm,
 * arg_sort_last_dim), on every float dtype: the inputs that well-scaled random data never makes
 * (docs/parity.md, "Adversarial rows"). Each case is a [rows, len] tensor, len one of
 * 1, 2, 3, 16, 31, 33, 1023, 1024, 1025, 4096, 65537 (odd lengths take the GPUs' scalar paths,
 * the multiples of 16 their vector and register paths), rows 3 for len <= 33, else 1, with
 *   const        every element of a row equal (3.815, -1e4, 0.1; f8e4m3 -320 for -1e4)
 *   const-bcast  the same through a stride-0 last dim (one stored value per row)
 *   offset       a large offset with a small spread (|mean| / std = kappa of 1e4 in f32, 1e10
 *                in f64, the most the dtype's spacing allows in bf16/f16/f8e4m3)
 *   huge         values near the overflow limit: sum: [max/4, max/2] (same sign, so every
 *                order of addition overflows alike); norms: +-[S/2, S], S = min(max,
 *                sqrt(max_C / len) / 4) where the compute type's sum of squares stays finite
 *                (max_C: f32 for bf16/f16/f32/f8e4m3, f64 for f64; beyond it norms overflow as
 *                PyTorch's and Candle's do, docs/semantics.md); others: +-[max/2, max] and one
 *                exact +-max
 *   subnormal    +-u * (the smallest normal), u in (0, 1)
 *   zeros        +0 and -0 at random
 *   inf@first/middle/last, nan@first/middle/last   one +-inf or NaN in a row of [-4, 4] values
 * Judged against the f64 reference with the row's class bound (tolerance.c), except:
 * layer_norm and softmax of a constant row must be exact (beta exactly; 1/len exactly), and
 * layer_norm of an offset row, whose output moves by kappa * u for a rounding of the mean by u,
 * gets max(bound, ((4 + sqrt(len)) * kappa * u_C)^2), u_C the unit roundoff of the compute type
 * (a one-pass E[x^2] - mean^2 misses this by a factor of kappa). arg_sort stops at len 1025
 * (the reference is an insertion sort); len 65537 runs const, offset, huge@middle, inf@last and
 * nan@middle only (CI time). */
#include "parity_impl.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum adv_pattern {
    AP_CONST, AP_CONST_BCAST, AP_OFFSET, AP_HUGE, AP_SUBNORMAL, AP_ZEROS, AP_INF, AP_NAN, AP_COUNT
} adv_pattern;
static const char *const ap_names[AP_COUNT] = {"const", "const-bcast", "offset", "huge",
                                               "subnormal", "zeros", "inf", "nan"};
static const int64_t adv_lengths[] = {1, 2, 3, 16, 31, 33, 1023, 1024, 1025, 4096, 65537};
#define ADV_NLEN ((int)(sizeof adv_lengths / sizeof adv_lengths[0]))
#define ADV_SORT_MAX 1025
#define ADV_LONG 65537 /* the longest length: a subset of the cases (CI time) */

int pt_has_adversarial(const pt_row *row, wk_dtype dt)
{
    return ref_is_float(dt) && (row->kind == PK_REDUCE || row->kind == PK_SOFTMAX ||
                                row->kind == PK_NORM || row->kind == PK_ARG_SORT);
}

/* The largest finite value, the smallest normal, and the compute type's largest value and unit
 * roundoff (f32 for everything but f64). */
static double dt_max(wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_BF16: return 0x1.fep127;
    case WK_DTYPE_F16: return 65504.0;
    case WK_DTYPE_F8E4M3: return 448.0;
    case WK_DTYPE_F64: return DBL_MAX;
    default: return FLT_MAX;
    }
}
static double dt_min_normal(wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_F16: return 0x1p-14;
    case WK_DTYPE_F8E4M3: return 0x1p-6;
    case WK_DTYPE_F64: return DBL_MIN;
    default: return FLT_MIN; /* f32 and bf16 share the exponent range */
    }
}
static double compute_max(wk_dtype dt) { return dt == WK_DTYPE_F64 ? DBL_MAX : FLT_MAX; }
static double compute_u(wk_dtype dt) { return dt == WK_DTYPE_F64 ? 0x1p-53 : 0x1p-24; }

/* offset and spread (uniform width) of the offset pattern */
static void offset_of(wk_dtype dt, double *off, double *spread)
{
    switch (dt) {
    case WK_DTYPE_F32: *off = 1e4, *spread = 3.4641; break;  /* std 1: kappa 1e4 */
    case WK_DTYPE_F64: *off = 1e8, *spread = 0.034641; break; /* std 1e-2: kappa 1e10 */
    case WK_DTYPE_BF16: *off = 1024, *spread = 64; break;     /* spacing 8 at 1024 */
    case WK_DTYPE_F16: *off = 1024, *spread = 8; break;       /* spacing 1 */
    default: *off = 256, *spread = 128; break;                /* f8e4m3: spacing 32 */
    }
}

/* Value j of row r of the pattern (before rounding to dt). */
static double adv_value(pt_rng *r, const pt_ctx *c, adv_pattern p, int64_t row, int64_t j,
                        int64_t len, int64_t pos)
{
    const wk_dtype dt = c->dt;
    const pt_kind kind = c->row->kind;
    const double sgn = pt_rng_unif(r) < 0.5 ? -1.0 : 1.0;
    switch (p) {
    case AP_CONST:
    case AP_CONST_BCAST: {
        const double big = dt == WK_DTYPE_F8E4M3 ? -320.0 : -1e4;
        const double v[3] = {3.815, big, 0.1};
        return v[row % 3];
    }
    case AP_OFFSET: {
        double off, spread;
        offset_of(dt, &off, &spread);
        return (row & 1 ? -off : off) + spread * (pt_rng_unif(r) - 0.5);
    }
    case AP_HUGE: {
        const double mx = dt_max(dt);
        if (kind == PK_REDUCE && c->row->op == WK_OP_SUM)
            return pt_rng_uniform(r, 0.25, 0.5) * mx;
        if (kind == PK_NORM) {
            double s = sqrt(compute_max(dt) / (double)len) / 4;
            s = s < mx ? s : mx;
            return sgn * pt_rng_uniform(r, 0.5, 1.0) * s;
        }
        return j == pos ? sgn * mx : sgn * pt_rng_uniform(r, 0.5, 1.0) * mx;
    }
    case AP_SUBNORMAL: return sgn * pt_rng_unif(r) * dt_min_normal(dt);
    case AP_ZEROS: return sgn * 0.0;
    case AP_INF: return j == pos ? sgn * INFINITY : pt_rng_uniform(r, -4, 4);
    case AP_NAN: return j == pos ? NAN : pt_rng_uniform(r, -4, 4);
    default: return 0;
    }
}

/* max over rows of |mean| / std (0 when a row is constant) of the rounded values. */
static double kappa_of(const pt_tensor *x, wk_dtype dt, int64_t rows, int64_t len)
{
    double k = 0;
    for (int64_t row = 0; row < rows; row++) {
        double s = 0, s2 = 0;
        for (int64_t j = 0; j < len; j++)
            s += ref_load_f(dt, x->host, ref_offset(&x->l, row * len + j));
        const double m = s / (double)len;
        for (int64_t j = 0; j < len; j++) {
            const double d = ref_load_f(dt, x->host, ref_offset(&x->l, row * len + j)) - m;
            s2 += d * d;
        }
        const double sd = sqrt(s2 / (double)len);
        if (sd > 0 && fabs(m) / sd > k)
            k = fabs(m) / sd;
    }
    return k;
}

/* x <- the case's input: [rows, len], contiguous, or [rows, len] / [1, 0] over rows values. */
static int adv_input(pt_ctx *c, pt_tensor *x, pt_rng *r, adv_pattern p, int64_t rows,
                     int64_t len, int64_t pos)
{
    const wk_dtype dt = c->dt;
    wk_layout l = {.rank = 2, .dims = {rows, len}, .strides = {len, 1}};
    size_t n = (size_t)(rows * len);
    if (p == AP_CONST_BCAST) {
        l.strides[0] = 1, l.strides[1] = 0;
        n = (size_t)rows;
    }
    unsigned char *host = pt_alloc(c, n * ref_dtype_size(dt));
    if (!host)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t row = p == AP_CONST_BCAST ? (int64_t)i : (int64_t)i / len;
        const int64_t j = p == AP_CONST_BCAST ? 0 : (int64_t)i % len;
        ref_store_f(dt, host, (int64_t)i, adv_value(r, c, p, row, j, len, pos));
    }
    const int ok = pt_tensor_upload(c, x, dt, n, host, &l);
    free(host);
    return ok;
}

/* A tensor of len values uniform in [lo, hi) (alpha, beta). */
static int adv_vec(pt_ctx *c, pt_tensor *t, pt_rng *r, int64_t len, double lo, double hi)
{
    unsigned char *host = pt_alloc(c, (size_t)len * ref_dtype_size(c->dt));
    if (!host)
        return 0;
    for (int64_t j = 0; j < len; j++)
        ref_store_f(c->dt, host, j, pt_rng_uniform(r, lo, hi));
    const int ok = pt_tensor_upload(c, t, c->dt, (size_t)len, host, NULL);
    free(host);
    return ok;
}

/* One case: the op of c->row on x, checked against the reference. */
static void adv_case(pt_ctx *c, pt_rng *r, adv_pattern p, int64_t rows, int64_t len,
                     int64_t pos)
{
    const pt_row *row = c->row;
    const wk_dtype dt = c->dt;
    const int64_t n = rows * len;
    pt_tensor x = {0}, a = {0}, b = {0};
    for (int asc = 1; asc >= (row->kind == PK_ARG_SORT ? 0 : 1); asc--) {
        pt_case_begin(c);
        const int at = p == AP_INF || p == AP_NAN || p == AP_HUGE;
        snprintf(c->sub, sizeof c->sub, "%s%s%s len %lld rows %lld%s", ap_names[p], at ? "@" : "",
                 !at ? "" : pos == 0 ? "first" : pos == len - 1 ? "last" : "middle",
                 (long long)len, (long long)rows,
                 row->kind == PK_ARG_SORT ? (asc ? " ascending" : " descending") : "");
        if (!x.s && !adv_input(c, &x, r, p, rows, len, pos))
            break;
        wk_storage *out = NULL;
        wk_status st = WK_OK, rst = WK_OK;
        wk_dtype odt = dt;
        double bound = pt_bound(row->tol, dt);
        const int64_t nout = row->kind == PK_REDUCE ? rows : n;
        void *want = NULL;
        if (row->kind == PK_REDUCE) {
            const int32_t dim = 1;
            if (row->op == WK_OP_ARGMIN || row->op == WK_OP_ARGMAX)
                odt = WK_DTYPE_U32;
            st = wk_reduce(&out, row->op, x.s, &x.l, &dim, 1);
            want = pt_alloc(c, (size_t)nout * ref_dtype_size(odt));
            if (want)
                rst = ref_reduce(want, row->op, dt, x.host, &x.l, &dim, 1);
        } else if (row->kind == PK_SOFTMAX) {
            st = wk_softmax_last_dim(&out, x.s, &x.l);
            want = pt_alloc(c, (size_t)n * ref_dtype_size(dt));
            if (want)
                rst = ref_softmax_last_dim(want, dt, x.host, &x.l);
            if (p == AP_CONST || p == AP_CONST_BCAST)
                bound = 0; /* exp(0) = 1, a sum of ones, 1/len: each exact or correctly rounded */
        } else if (row->kind == PK_NORM) {
            const int layer = row->op == WK_OP_LAYER_NORM;
            const float eps = 1e-5f;
            if (!a.s && (!adv_vec(c, &a, r, len, 0.5, 1.5) ||
                         (layer && !adv_vec(c, &b, r, len, -1, 1))))
                break;
            st = layer ? wk_layer_norm(&out, x.s, &x.l, a.s, &a.l, b.s, &b.l, eps)
                       : wk_rms_norm(&out, x.s, &x.l, a.s, &a.l, eps);
            want = pt_alloc(c, (size_t)n * ref_dtype_size(dt));
            if (want)
                rst = layer ? ref_layer_norm(want, dt, x.host, &x.l, a.host, &a.l, b.host, &b.l, eps)
                            : ref_rms_norm(want, dt, x.host, &x.l, a.host, &a.l, eps);
            if (layer && (p == AP_CONST || p == AP_CONST_BCAST))
                bound = 0; /* the mean is the value exactly: out = beta exactly */
            if (layer && p == AP_OFFSET) {
                const double e = (4 + sqrt((double)len)) * kappa_of(&x, dt, rows, len) * compute_u(dt);
                bound = bound > e * e ? bound : e * e;
            }
        } else { /* PK_ARG_SORT */
            odt = WK_DTYPE_U32;
            st = wk_arg_sort_last_dim(&out, x.s, &x.l, asc);
            want = pt_alloc(c, (size_t)n * sizeof(uint32_t));
            if (want)
                rst = ref_arg_sort(want, dt, x.host, &x.l, asc);
        }
        if (want && pt_check_status(c, st, rst, row->name) && st == WK_OK)
            pt_check_output_bound(c, out, odt, want, nout, row->tol, bound);
        pt_tensor_unchanged(c, &x, "x");
        free(want);
        wk_storage_free(out);
    }
    pt_tensor_free(&x);
    pt_tensor_free(&a);
    pt_tensor_free(&b);
}

/* The cases run at ADV_LONG: const, offset, huge@middle, inf@last, nan@middle. */
static int long_case(adv_pattern p, int pv)
{
    return p == AP_CONST || p == AP_OFFSET || (p == AP_HUGE && pv == 1) || (p == AP_INF && pv == 2) ||
           (p == AP_NAN && pv == 1);
}

void pt_run_adversarial(pt_ctx *c)
{
    for (int p = 0; p < AP_COUNT; p++)
        for (int li = 0; li < ADV_NLEN; li++) {
            const int64_t len = adv_lengths[li];
            if (c->row->kind == PK_ARG_SORT && len > ADV_SORT_MAX)
                continue;
            const int nposv = p == AP_INF || p == AP_NAN || p == AP_HUGE ? 3 : 1;
            for (int pv = 0; pv < nposv; pv++) {
                if (len >= ADV_LONG && !long_case((adv_pattern)p, pv))
                    continue;
                const int64_t pos = pv == 0 ? 0 : pv == 1 ? len / 2 : len - 1;
                pt_rng r;
                c->seed = pt_mix(0x61647673ULL ^ pt_hash(c->row->name) ^ ((uint64_t)c->dt << 40) ^
                                 ((uint64_t)p << 48) ^ ((uint64_t)li << 32) ^ ((uint64_t)pv << 56));
                pt_rng_seed(&r, c->seed);
                adv_case(c, &r, (adv_pattern)p, len <= 33 ? 3 : 1, len, pos);
            }
        }
}
