/* unary.cu: elementwise unary ops, affine, powf and elu (module "unary").
 *
 * Kernels (host side: src/gpu/gpu_unary.c):
 *   unary_<op>_<dt>(p0, p1, n, x, y)       contiguous, dt in f32 f16 bf16, op fixed at compile
 *                                          time (the hot paths: vectorised, no switch per element)
 *   unary_float(op, dt, p0, p1, n, L, x, y) any layout; dt in bf16 f16 f32 f8e4m3 (f32 compute)
 *   unary_f64  (op, dt, p0, p1, n, L, x, y) any layout, f64
 *   unary_int  (op, dt, p0, p1, n, L, x, y) any layout; u8 u32 i16 i32 i64 (int64 compute)
 * y is contiguous; x and y already include the layout offset. p0/p1: affine mul/add, powf e,
 * elu alpha (docs/semantics.md: parameters are rounded to the compute type first). */
#include "act.h"

/* The formulas of docs/semantics.md, in the compute type, with the operation order of the CPU
 * backend (src/cpu/cpu_unary.c) so that only libm differences remain. */
WK_DEV float wk_unary_f32(int op, float x, float p0, float p1)
{
    switch (op) {
    case WK_K_EXP: return expf(x);
    case WK_K_LOG: return logf(x);
    case WK_K_SIN: return sinf(x);
    case WK_K_COS: return cosf(x);
    case WK_K_TANH: return tanhf(x);
    case WK_K_ABS: return fabsf(x);
    case WK_K_NEG: return -x;
    case WK_K_RECIP: return 1.0f / x;
    case WK_K_SQR: return x * x;
    case WK_K_SQRT: return sqrtf(x);
    case WK_K_GELU: return wk_gelu(x);
    case WK_K_GELU_ERF: return wk_gelu_erf(x);
    case WK_K_ERF: return erff(x);
    case WK_K_RELU: return x > 0.0f ? x : 0.0f;
    case WK_K_SILU: return wk_silu(x);
    case WK_K_FLOOR: return floorf(x);
    case WK_K_CEIL: return ceilf(x);
    case WK_K_ROUND: return roundf(x);
    case WK_K_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == x ? 0.0f : x;
    case WK_K_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case WK_K_AFFINE: return x * p0 + p1;
    case WK_K_POWF: return powf(x, p0);
    case WK_K_ELU: return x > 0.0f ? x : p0 * (expf(x) - 1.0f);
    default: return x;
    }
}

WK_DEV double wk_unary_f64(int op, double x, double p0, double p1)
{
    switch (op) {
    case WK_K_EXP: return exp(x);
    case WK_K_LOG: return log(x);
    case WK_K_SIN: return sin(x);
    case WK_K_COS: return cos(x);
    case WK_K_TANH: return tanh(x);
    case WK_K_ABS: return fabs(x);
    case WK_K_NEG: return -x;
    case WK_K_RECIP: return 1.0 / x;
    case WK_K_SQR: return x * x;
    case WK_K_SQRT: return sqrt(x);
    case WK_K_GELU: return wk_gelu(x);
    case WK_K_GELU_ERF: return wk_gelu_erf(x);
    case WK_K_ERF: return erf(x);
    case WK_K_RELU: return x > 0.0 ? x : 0.0;
    case WK_K_SILU: return wk_silu(x);
    case WK_K_FLOOR: return floor(x);
    case WK_K_CEIL: return ceil(x);
    case WK_K_ROUND: return round(x);
    case WK_K_SIGN: return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x == x ? 0.0 : x;
    case WK_K_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case WK_K_AFFINE: return x * p0 + p1;
    case WK_K_POWF: return pow(x, p0);
    case WK_K_ELU: return x > 0.0 ? x : p0 * (exp(x) - 1.0);
    default: return x;
    }
}

/* Integer ops on the sign- or zero-extended value; wrapping in uint64_t, truncated on store
 * (the same as wrapping at the dtype's width). abs(MIN) = MIN and -MIN = MIN fall out of it. */
WK_DEV int64_t wk_unary_int(int op, int dt, int64_t x, double p0, double p1)
{
    switch (op) {
    case WK_K_ABS: return x < 0 ? (int64_t)(0ull - (uint64_t)x) : x;
    case WK_K_NEG: return (int64_t)(0ull - (uint64_t)x);
    case WK_K_SQR: return (int64_t)((uint64_t)x * (uint64_t)x);
    case WK_K_RELU: return x > 0 ? x : 0;
    case WK_K_SIGN: return (int64_t)(x > 0) - (int64_t)(x < 0);
    case WK_K_AFFINE: return wk_sat_dt(dt, (double)x * p0 + p1);
    default: return x; /* floor, ceil, round: identity */
    }
}

/* ---- contiguous, op and dtype fixed at compile time */
template <int OP, int DT> struct wk_unary_fn {
    float p0, p1;
    __device__ __forceinline__ typename wk_t<DT>::S operator()(typename wk_t<DT>::S v) const
    {
        return wk_t<DT>::st(wk_unary_f32(OP, wk_t<DT>::ld(v), p0, p1));
    }
};

#define WK_UNARY_HOT(name, OP, dtn, DT)                                                        \
    WK_KERNEL unary_##name##_##dtn(double p0, double p1, int64_t n, const void *x, void *y)   \
    {                                                                                          \
        wk_unary_fn<OP, DT> f;                                                                 \
        f.p0 = (float)p0;                                                                      \
        f.p1 = (float)p1;                                                                      \
        wk_map1(n, (const wk_t<DT>::S *)x, (wk_t<DT>::S *)y, f);                               \
    }

#define WK_UNARY_OPS(X, dtn, DT)                                                               \
    X(exp, WK_K_EXP, dtn, DT) X(log, WK_K_LOG, dtn, DT) X(sin, WK_K_SIN, dtn, DT)              \
    X(cos, WK_K_COS, dtn, DT) X(tanh, WK_K_TANH, dtn, DT) X(abs, WK_K_ABS, dtn, DT)            \
    X(neg, WK_K_NEG, dtn, DT) X(recip, WK_K_RECIP, dtn, DT) X(sqr, WK_K_SQR, dtn, DT)          \
    X(sqrt, WK_K_SQRT, dtn, DT) X(gelu, WK_K_GELU, dtn, DT)                                    \
    X(gelu_erf, WK_K_GELU_ERF, dtn, DT) X(erf, WK_K_ERF, dtn, DT) X(relu, WK_K_RELU, dtn, DT)  \
    X(silu, WK_K_SILU, dtn, DT) X(floor, WK_K_FLOOR, dtn, DT) X(ceil, WK_K_CEIL, dtn, DT)      \
    X(round, WK_K_ROUND, dtn, DT) X(sign, WK_K_SIGN, dtn, DT)                                  \
    X(sigmoid, WK_K_SIGMOID, dtn, DT) X(affine, WK_K_AFFINE, dtn, DT)                          \
    X(powf, WK_K_POWF, dtn, DT) X(elu, WK_K_ELU, dtn, DT)

WK_UNARY_OPS(WK_UNARY_HOT, f32, WK_DT_F32)
WK_UNARY_OPS(WK_UNARY_HOT, f16, WK_DT_F16)
WK_UNARY_OPS(WK_UNARY_HOT, bf16, WK_DT_BF16)

/* ---- any layout, op and dtype at run time (one kernel per compute class) */
struct wk_unary_float_el {
    int op, dt;
    float q0, q1;
    const void *x;
    void *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        wk_stf(y, i, dt, wk_unary_f32(op, wk_ldf(x, off[0], dt), q0, q1));
    }
};
WK_KERNEL unary_float(int op, int dt, double p0, double p1, int64_t n, wk_klay<1> L,
                      const void *x, void *y)
{
    const wk_unary_float_el e = {op, dt, (float)p0, (float)p1, x, y};
    wk_strided_each(n, L, e);
}

struct wk_unary_f64_el {
    int op;
    double p0, p1;
    const double *x;
    double *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        y[i] = wk_unary_f64(op, x[off[0]], p0, p1);
    }
};
WK_KERNEL unary_f64(int op, int dt, double p0, double p1, int64_t n, wk_klay<1> L,
                    const void *x, void *y)
{
    (void)dt; /* f64: the signature of the other classes */
    const wk_unary_f64_el e = {op, p0, p1, (const double *)x, (double *)y};
    wk_strided_each(n, L, e);
}

struct wk_unary_int_el {
    int op, dt;
    double p0, p1;
    const void *x;
    void *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        wk_sti(y, i, dt, wk_unary_int(op, dt, wk_ldi(x, off[0], dt), p0, p1));
    }
};
WK_KERNEL unary_int(int op, int dt, double p0, double p1, int64_t n, wk_klay<1> L,
                    const void *x, void *y)
{
    const wk_unary_int_el e = {op, dt, p0, p1, x, y};
    wk_strided_each(n, L, e);
}
