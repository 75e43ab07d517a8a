/* ref_unary.c: reference of the unary ops (exp .. sigmoid), affine, powf and elu.
 * Floats: the formula of docs/semantics.md in f64, rounded once to the dtype (affine keeps its two
 * roundings in the compute type, as specified). Integers: exact 64-bit arithmetic, wrapped. */
#include "ref.h"
#include <math.h>

double ref_unary_f64(wk_op op, double x, double p0)
{
    const double pi = 3.14159265358979323846;
    switch (op) {
    case WK_OP_EXP: return exp(x);
    case WK_OP_LOG: return log(x);
    case WK_OP_SIN: return sin(x);
    case WK_OP_COS: return cos(x);
    case WK_OP_TANH: return tanh(x);
    case WK_OP_ABS: return fabs(x);
    case WK_OP_NEG: return -x;
    case WK_OP_RECIP: return 1.0 / x;
    case WK_OP_SQR: return x * x;
    case WK_OP_SQRT: return sqrt(x);
    case WK_OP_GELU: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
    case WK_OP_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case WK_OP_ERF: return erf(x);
    case WK_OP_RELU: return x > 0 ? x : 0.0;
    case WK_OP_SILU: return x / (1.0 + exp(-x));
    case WK_OP_FLOOR: return floor(x);
    case WK_OP_CEIL: return ceil(x);
    case WK_OP_ROUND: return round(x); /* C round: half away from zero */
    case WK_OP_SIGN:
        if (isnan(x))
            return x;
        return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case WK_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case WK_OP_POWF: return pow(x, p0);
    case WK_OP_ELU: return x > 0 ? x : p0 * (exp(x) - 1.0);
    default: return NAN;
    }
}

/* affine on floats: x * (T)mul + (T)add in the compute type T (f64 for f64, f32 otherwise), each
 * operation rounded to T, no fused multiply-add. */
static double affine_f(wk_dtype dt, double x, double mul, double add)
{
    wk_dtype t = dt == WK_DTYPE_F64 ? WK_DTYPE_F64 : WK_DTYPE_F32;
    double m = ref_round(t, mul), a = ref_round(t, add);
    double prod = ref_round(t, x * m); /* x * m is exact in f64 for f32 operands */
    return ref_round(t, prod + a);
}

/* The integer rules (value already wrapped to dt; returns the wrapped result). */
static int64_t unary_int(wk_op op, wk_dtype dt, int64_t v, double p0, double p1)
{
    switch (op) {
    case WK_OP_ABS: return v < 0 ? ref_wrap(dt, 0 - (uint64_t)v) : v;
    case WK_OP_NEG: return ref_wrap(dt, 0 - (uint64_t)v);
    case WK_OP_SQR: return ref_wrap(dt, (uint64_t)v * (uint64_t)v);
    case WK_OP_RELU: return v < 0 ? 0 : v;
    case WK_OP_SIGN: return (v > 0) - (v < 0);
    case WK_OP_FLOOR: case WK_OP_CEIL: case WK_OP_ROUND: return v;
    case WK_OP_AFFINE: /* in f64, then the float -> integer rule */
        return ref_float_to_int(dt, ref_int_to_float(WK_DTYPE_F64, v) * p0 + p1);
    default: return 0;
    }
}

wk_status ref_unary(void *out, wk_op op, wk_dtype dt, double p0, double p1, const void *x,
                    const wk_layout *lx)
{
    if (!ref_op_defined(op, dt))
        return WK_ERR_DTYPE;
    int64_t n = ref_count(lx);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = ref_offset(lx, i);
        if (ref_is_float(dt)) {
            double v = ref_load_f(dt, x, off);
            double y = op == WK_OP_AFFINE ? affine_f(dt, v, p0, p1) : ref_unary_f64(op, v, p0);
            ref_store_f(dt, out, i, y);
        } else {
            ref_store_i(dt, out, i, unary_int(op, dt, ref_load_i(dt, x, off), p0, p1));
        }
    }
    return WK_OK;
}
