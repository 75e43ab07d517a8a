/* ref_binary.c: reference of the binary ops (add sub mul div maximum minimum; the gated swiglu
 * geglu geglu_erf = act(a) * b with ref_unary's activation) and the comparisons (eq ne lt le gt
 * ge -> u8). Floats in f64, rounded once; integers exact and wrapped
 * (div truncates, x / 0 = 0, MIN / -1 = MIN). */
#include "ref.h"
#include <math.h>

static double binary_f64(wk_op op, double a, double b)
{
    switch (op) {
    case WK_OP_ADD: return a + b;
    case WK_OP_SUB: return a - b;
    case WK_OP_MUL: return a * b;
    case WK_OP_DIV: return a / b;
    case WK_OP_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case WK_OP_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case WK_OP_SWIGLU: return ref_unary_f64(WK_OP_SILU, a, 0) * b;
    case WK_OP_GEGLU: return ref_unary_f64(WK_OP_GELU, a, 0) * b;
    case WK_OP_GEGLU_ERF: return ref_unary_f64(WK_OP_GELU_ERF, a, 0) * b;
    default: return NAN;
    }
}

static int64_t binary_int(wk_op op, wk_dtype dt, int64_t a, int64_t b)
{
    switch (op) {
    case WK_OP_ADD: return ref_wrap(dt, (uint64_t)a + (uint64_t)b);
    case WK_OP_SUB: return ref_wrap(dt, (uint64_t)a - (uint64_t)b);
    case WK_OP_MUL: return ref_wrap(dt, (uint64_t)a * (uint64_t)b);
    case WK_OP_DIV:
        if (b == 0)
            return 0;
        if (a == INT64_MIN && b == -1) /* only i64 overflows int64_t here */
            return INT64_MIN;
        return ref_wrap(dt, (uint64_t)(a / b)); /* i16/i32 MIN / -1 wraps back to MIN */
    case WK_OP_MAXIMUM: return a > b ? a : b;
    case WK_OP_MINIMUM: return a < b ? a : b;
    default: return 0;
    }
}

/* IEEE comparisons (false with NaN, except ne) on f64 values; exact on integers. */
static int cmp_f64(wk_op op, double a, double b)
{
    switch (op) {
    case WK_OP_EQ: return a == b;
    case WK_OP_NE: return !(a == b);
    case WK_OP_LT: return a < b;
    case WK_OP_LE: return a <= b;
    case WK_OP_GT: return a > b;
    case WK_OP_GE: return a >= b;
    default: return 0;
    }
}

static int cmp_int(wk_op op, int64_t a, int64_t b)
{
    switch (op) {
    case WK_OP_EQ: return a == b;
    case WK_OP_NE: return a != b;
    case WK_OP_LT: return a < b;
    case WK_OP_LE: return a <= b;
    case WK_OP_GT: return a > b;
    case WK_OP_GE: return a >= b;
    default: return 0;
    }
}

wk_status ref_binary(void *out, wk_op op, wk_dtype dt, const void *a, const wk_layout *la,
                     const void *b, const wk_layout *lb)
{
    if (!ref_op_defined(op, dt))
        return WK_ERR_DTYPE;
    if (la->rank != lb->rank)
        return WK_ERR_SHAPE;
    for (int k = 0; k < la->rank; k++)
        if (la->dims[k] != lb->dims[k])
            return WK_ERR_SHAPE;
    int is_cmp = op >= WK_OP_EQ && op <= WK_OP_GE;
    int64_t n = ref_count(la);
    for (int64_t i = 0; i < n; i++) {
        int64_t oa = ref_offset(la, i), ob = ref_offset(lb, i);
        if (ref_is_float(dt)) {
            double x = ref_load_f(dt, a, oa), y = ref_load_f(dt, b, ob);
            if (is_cmp)
                ref_store_i(WK_DTYPE_U8, out, i, cmp_f64(op, x, y));
            else
                ref_store_f(dt, out, i, binary_f64(op, x, y));
        } else {
            int64_t x = ref_load_i(dt, a, oa), y = ref_load_i(dt, b, ob);
            if (is_cmp)
                ref_store_i(WK_DTYPE_U8, out, i, cmp_int(op, x, y));
            else
                ref_store_i(dt, out, i, binary_int(op, dt, x, y));
        }
    }
    return WK_OK;
}
