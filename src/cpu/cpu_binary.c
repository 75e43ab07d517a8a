/* cpu_binary.c: the CPU binary ops: add sub mul div maximum minimum (output dtype = input dtype;
 * the gated swiglu geglu geglu_erf by cpu_unary.c's row function) and the comparisons eq ne lt le gt ge (output u8), every dtype. Floats compute in f32 (f64 for
 * f64) and round once; maximum/minimum propagate NaN; comparisons are IEEE. Integers: wrapping
 * add/sub/mul in an unsigned type, div truncates with x/0 = 0 and MIN/-1 = MIN.
 * One row function per dtype switches on the op once per row; each case is a tight loop. */
#include "cpu_elem.h"

/* o[i] = EXPR(x, y) over the row. The unit-stride and scalar-b twins vectorise; the general
 * loop serves strided and broadcast rows. */
#define BIN_LOOP(OT, LD, ST, EXPR)                                     \
    do {                                                               \
        OT *o = out;                                                   \
        if (sa == 1 && sb == 1)                                        \
            for (int64_t i = 0; i < n; i++) {                          \
                const C x = LD(as[i]), y = LD(bs[i]);                  \
                o[i] = ST(EXPR);                                       \
            }                                                          \
        else if (sa == 1 && sb == 0) {                                 \
            const C y = LD(bs[0]);                                     \
            for (int64_t i = 0; i < n; i++) {                          \
                const C x = LD(as[i]);                                 \
                o[i] = ST(EXPR);                                       \
            }                                                          \
        } else                                                         \
            for (int64_t i = 0; i < n; i++) {                          \
                const C x = LD(as[i * sa]), y = LD(bs[i * sb]);        \
                o[i] = ST(EXPR);                                       \
            }                                                          \
    } while (0)

#define ID(v) (v)
#define U8(v) ((uint8_t)(v))
/* A comparison: u8 out, operands loaded exactly. */
#define CMP(LD, EXPR) BIN_LOOP(uint8_t, LD, U8, EXPR)

/* Row prologue shared by every dtype. */
#define BIN_PROLOGUE(T)                    \
    const wk_op op = *(const wk_op *)ctx;  \
    const T *as = in[0], *bs = in[1];      \
    const int64_t sa = step[0], sb = step[1]

/* ---- float dtypes */
#define DEF_BIN_FLOAT(E, s, T, CT)                                                              \
    static void binary_row_##s(void *out, const void *const *in, const int64_t *step, int64_t n, \
                               const void *ctx)                                                 \
    {                                                                                           \
        typedef CT C;                                                                           \
        BIN_PROLOGUE(T);                                                                        \
        switch (op) {                                                                           \
        case WK_OP_ADD: FB_##s(x + y); break;                                                   \
        case WK_OP_SUB: FB_##s(x - y); break;                                                   \
        case WK_OP_MUL: FB_##s(x * y); break;                                                   \
        case WK_OP_DIV: FB_##s(x / y); break;                                                   \
        /* NaN propagates: x if x is NaN, else y if y is NaN, else the larger/smaller */        \
        case WK_OP_MAXIMUM: FB_##s(x != x ? x : y != y ? y : x > y ? x : y); break;             \
        case WK_OP_MINIMUM: FB_##s(x != x ? x : y != y ? y : x < y ? x : y); break;             \
        case WK_OP_EQ: CMP(wk_cpu_ld_##s, x == y); break;                                       \
        case WK_OP_NE: CMP(wk_cpu_ld_##s, x != y); break;                                       \
        case WK_OP_LT: CMP(wk_cpu_ld_##s, x < y); break;                                        \
        case WK_OP_LE: CMP(wk_cpu_ld_##s, x <= y); break;                                       \
        case WK_OP_GT: CMP(wk_cpu_ld_##s, x > y); break;                                        \
        case WK_OP_GE: CMP(wk_cpu_ld_##s, x >= y); break;                                       \
        default: break; /* not reached: wk_cpu_binary checks the op */                          \
        }                                                                                       \
    }
#define FB_bf16(EXPR) BIN_LOOP(uint16_t, wk_cpu_ld_bf16, wk_cpu_st_bf16, EXPR)
#define FB_f16(EXPR) BIN_LOOP(uint16_t, wk_cpu_ld_f16, wk_cpu_st_f16, EXPR)
#define FB_f32(EXPR) BIN_LOOP(float, wk_cpu_ld_f32, wk_cpu_st_f32, EXPR)
#define FB_f64(EXPR) BIN_LOOP(double, wk_cpu_ld_f64, wk_cpu_st_f64, EXPR)
#define FB_f8e4m3(EXPR) BIN_LOOP(uint8_t, wk_cpu_ld_f8e4m3, wk_cpu_st_f8e4m3, EXPR)
WK_CPU_FLOAT_TYPES(DEF_BIN_FLOAT)

/* ---- integer dtypes: A is an unsigned type for wrapping arithmetic. Division: x/0 = 0, and
 * MIN/-1 (which overflows, UB in C) is MIN; IS_MINDIV_<signed> is 0 for unsigned types. */
#define IS_MINDIV_0(x, y, MIN) 0
#define IS_MINDIV_1(x, y, MIN) ((x) == (MIN) && (y) == -1)

#define DEF_BIN_INT(E, s, T, A, S, MIN, MAX)                                                    \
    static void binary_row_##s(void *out, const void *const *in, const int64_t *step, int64_t n, \
                               const void *ctx)                                                 \
    {                                                                                           \
        typedef T C;                                                                            \
        BIN_PROLOGUE(T);                                                                        \
        switch (op) {                                                                           \
        case WK_OP_ADD: BIN_LOOP(T, ID, ID, (T)((A)x + (A)y)); break;                           \
        case WK_OP_SUB: BIN_LOOP(T, ID, ID, (T)((A)x - (A)y)); break;                           \
        case WK_OP_MUL: BIN_LOOP(T, ID, ID, (T)((A)x * (A)y)); break;                           \
        case WK_OP_DIV:                                                                         \
            BIN_LOOP(T, ID, ID, y == 0 ? (T)0 : IS_MINDIV_##S(x, y, MIN) ? x : (T)(x / y));     \
            break;                                                                              \
        case WK_OP_MAXIMUM: BIN_LOOP(T, ID, ID, x > y ? x : y); break;                          \
        case WK_OP_MINIMUM: BIN_LOOP(T, ID, ID, x < y ? x : y); break;                          \
        case WK_OP_EQ: CMP(ID, x == y); break;                                                  \
        case WK_OP_NE: CMP(ID, x != y); break;                                                  \
        case WK_OP_LT: CMP(ID, x < y); break;                                                   \
        case WK_OP_LE: CMP(ID, x <= y); break;                                                  \
        case WK_OP_GT: CMP(ID, x > y); break;                                                   \
        case WK_OP_GE: CMP(ID, x >= y); break;                                                  \
        default: break;                                                                         \
        }                                                                                       \
    }
WK_CPU_INT_TYPES(DEF_BIN_INT)

#define ROW_ENTRY(E, s, T) [WK_DTYPE_##E] = binary_row_##s,
static const wk_cpu_row_fn binary_rows[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(ROW_ENTRY)};

/* out (contiguous, elem_count(la) elements; dtype dt, or u8 for a comparison) = a op b. */
wk_status wk_cpu_binary(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb)
{
    (void)dev;
    const bool arith = op >= WK_OP_ADD && op <= WK_OP_MINIMUM;
    const bool glu = op >= WK_OP_SWIGLU && op <= WK_OP_GEGLU_ERF;
    const bool cmp = op >= WK_OP_EQ && op <= WK_OP_GE;
    if (!(arith || glu || cmp) || !wk_dtype_valid(dt) || !wk_op_defined(op, dt) ||
        (glu && !wk_cpu_glu_row(dt)))
        return wk_err(WK_ERR_DTYPE, "cpu binary: op %s not defined for dtype %s", wk_op_name(op),
                      wk_dtype_name(dt));
    const size_t sz = wk_dtype_size(dt);
    const size_t isz[2] = {sz, sz};
    const void *in[2] = {a, b};
    const wk_layout *lay[2] = {la, lb};
    wk_cpu_for_rows(out, cmp ? 1 : sz, 2, in, isz, lay, glu ? wk_cpu_glu_row(dt) : binary_rows[dt],
                    &op);
    return WK_OK;
}
