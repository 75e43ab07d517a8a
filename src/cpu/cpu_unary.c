/* cpu_unary.c: the CPU unary ops (exp .. sigmoid), affine, powf and elu, every dtype that
 * docs/semantics.md defines, and the gated binary ops (act(a) * b) that share their math. Floats: f32/f64 natively, bf16/f16/f8e4m3 through f32 with one
 * rounding on store. Integers: wrapping in an unsigned type; affine in f64, then saturated.
 * One row function per dtype switches on the op once per row; each case is a tight loop. The
 * transcendental ops and their compositions (exp log sin cos tanh erf gelu gelu_erf silu sigmoid
 * powf elu) go through the vector math of cpu_vmath.h (SLEEF) in blocks: f32/f64 rows of unit
 * stride directly, other rows (strided, or bf16/f16/f8e4m3 converted to f32) through a small
 * buffer on the stack. The rest are exactly rounded and stay scalar loops (they vectorise). */
#include "cpu_elem.h"
#include "cpu_vmath.h"
#include <math.h>

/* The vector math function of a float op, or -1 for the ops computed inline. */
static int vm_of(wk_op op)
{
    switch (op) {
    case WK_OP_EXP: return WK_VM_EXP;
    case WK_OP_LOG: return WK_VM_LOG;
    case WK_OP_SIN: return WK_VM_SIN;
    case WK_OP_COS: return WK_VM_COS;
    case WK_OP_TANH: return WK_VM_TANH;
    case WK_OP_ERF: return WK_VM_ERF;
    case WK_OP_GELU: return WK_VM_GELU;
    case WK_OP_GELU_ERF: return WK_VM_GELU_ERF;
    case WK_OP_SILU: return WK_VM_SILU;
    case WK_OP_SIGMOID: return WK_VM_SIGMOID;
    case WK_OP_POWF: return WK_VM_POW;
    case WK_OP_ELU: return WK_VM_ELU;
    default: return -1;
    }
}

/* y = f(x) over a row of n elements at xs (stride sx) into o, through wk_vm_f32/f64: a contiguous
 * row of the compute type in place, any other in blocks of VM_BLOCK through buf. */
#define VM_BLOCK 512
#define VMF_float wk_vm_f32
#define VMF_double wk_vm_f64
#define VM_DIRECT_bf16 0
#define VM_DIRECT_f16 0
#define VM_DIRECT_f32 1
#define VM_DIRECT_f64 1
#define VM_DIRECT_f8e4m3 0
#define VM_BF16_bf16 1
#define VM_TAB_bf16 0 /* wk_vm_table16's f16 argument, -1: no table */
#define VM_TAB_f16 1
#define VM_TAB_f32 (-1)
#define VM_TAB_f64 (-1)
#define VM_TAB_f8e4m3 (-1)
#define VM_BF16_f16 0
#define VM_BF16_f32 0
#define VM_BF16_f64 0
#define VM_BF16_f8e4m3 0
/* The conversions of a block to and from the compute type, compiled also for AVX2 and AVX-512
 * (WK_CPU_CLONES: the library's baseline SSE2 has no vector bf16/f16 rounding). */
#define DEF_VM_CONV(E, s, T, CT)                                                                \
    WK_CPU_CLONES static void vm_ld_##s(CT *restrict buf, const T *restrict x, int64_t sx,     \
                                        int64_t n)                                              \
    {                                                                                           \
        if (sx == 1) {                                                                          \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) buf[i] = wk_cpu_ld_##s(x[i]);   \
        } else {                                                                                \
            for (int64_t i = 0; i < n; i++)                                                     \
                buf[i] = wk_cpu_ld_##s(x[i * sx]);                                              \
        }                                                                                       \
    }                                                                                           \
    WK_CPU_CLONES static void vm_st_##s(T *restrict o, const CT *restrict buf, int64_t n)      \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = wk_cpu_st_##s(buf[i]);       \
    }
WK_CPU_FLOAT_TYPES(DEF_VM_CONV)

#define DEF_UN_VM(E, s, T, CT)                                                                  \
    static void unary_vm_##s(T *o, const T *xs, int64_t sx, int64_t n, wk_vm_fn f, CT p)       \
    {                                                                                           \
        if (VM_DIRECT_##s && sx == 1) {                                                         \
            VMF_##CT(f, (CT *)(void *)o, (const CT *)(const void *)xs, n, p);                   \
            return;                                                                             \
        }                                                                                       \
        const uint16_t *tab16 = VM_TAB_##s >= 0 ? wk_vm_table16(f, VM_TAB_##s) : NULL;          \
        if (tab16) { /* a 16-bit type: one table lookup an element (the same bits) */          \
            const uint16_t *xh = (const uint16_t *)(const void *)xs;                            \
            uint16_t *oh = (uint16_t *)(void *)o;                                               \
            for (int64_t i = 0; i < n; i++)                                                     \
                oh[i] = tab16[xh[i * sx]];                                                      \
            return;                                                                             \
        }                                                                                       \
        if (VM_BF16_##s && sx == 1) { /* converted in registers: one pass over memory */       \
            wk_vm_bf16(f, (uint16_t *)(void *)o, (const uint16_t *)(const void *)xs, n, (float)p); \
            return;                                                                             \
        }                                                                                       \
        CT buf[VM_BLOCK];                                                                       \
        for (int64_t b = 0; b < n; b += VM_BLOCK) {                                             \
            const int64_t cnt = n - b < VM_BLOCK ? n - b : VM_BLOCK;                            \
            vm_ld_##s(buf, xs + b * sx, sx, cnt);                                               \
            VMF_##CT(f, buf, buf, cnt, p);                                                      \
            vm_st_##s(o + b, buf, cnt);                                                         \
        }                                                                                       \
    }
WK_CPU_FLOAT_TYPES(DEF_UN_VM)

typedef struct unary_ctx {
    wk_op op;
    double p0, p1;
} unary_ctx;

/* Float math per compute type: the float libm functions for f32, the double ones for f64. */
#define FM_float(fn) fn##f
#define FM_double(fn) fn

/* y = EXPR(x) over the row, x loaded by LD, y stored by ST; a unit-stride twin vectorises. */
#define UN_LOOP(LD, ST, EXPR)                              \
    do {                                                   \
        if (sx == 1)                                       \
            for (int64_t i = 0; i < n; i++) {              \
                const C x = LD(xs[i]);                     \
                o[i] = ST(EXPR);                           \
            }                                              \
        else                                               \
            for (int64_t i = 0; i < n; i++) {              \
                const C x = LD(xs[i * sx]);                \
                o[i] = ST(EXPR);                           \
            }                                              \
    } while (0)

#define FL(EXPR) UN_LOOP(LDF, STF, EXPR)

/* ---- float dtypes: C is the compute type (f32, or f64 for f64). */
#define DEF_UN_FLOAT(E, s, T, CT)                                                               \
    static void unary_row_##s(void *out, const void *const *in, const int64_t *step, int64_t n, \
                              const void *ctx_)                                                 \
    {                                                                                           \
        typedef CT C;                                                                           \
        const unary_ctx *ctx = ctx_;                                                            \
        T *o = out;                                                                             \
        const T *xs = in[0];                                                                    \
        const int64_t sx = step[0];                                                             \
        const C p0 = (C)ctx->p0, p1 = (C)ctx->p1;                                               \
        const C one = 1, zero = 0;                                                            \
        const int vf = vm_of(ctx->op);                                                          \
        if (vf >= 0) {                                                                          \
            unary_vm_##s(o, xs, sx, n, (wk_vm_fn)vf, p0);                                       \
            return;                                                                             \
        }                                                                                       \
        switch (ctx->op) {                                                                      \
        case WK_OP_ABS: FL_##s(FM_##CT(fabs)(x)); break;                                        \
        case WK_OP_NEG: FL_##s(-x); break;                                                      \
        case WK_OP_RECIP: FL_##s(one / x); break;                                               \
        case WK_OP_SQR: FL_##s(x * x); break;                                                   \
        case WK_OP_SQRT: FL_##s(FM_##CT(sqrt)(x)); break;                                       \
        /* relu: max(x, 0) as in Candle (NaN -> 0, -0 -> +0) */                                 \
        case WK_OP_RELU: FL_##s(x > zero ? x : zero); break;                                    \
        case WK_OP_FLOOR: FL_##s(FM_##CT(floor)(x)); break;                                     \
        case WK_OP_CEIL: FL_##s(FM_##CT(ceil)(x)); break;                                       \
        case WK_OP_ROUND: FL_##s(FM_##CT(round)(x)); break; /* half away from zero */           \
        /* sign(+-0) = +0, sign(NaN) = NaN */                                                   \
        case WK_OP_SIGN: FL_##s(x > zero ? one : x < zero ? -one : x == zero ? zero : x); break; \
        case WK_OP_AFFINE: FL_##s(x * p0 + p1); break; /* two roundings, no FMA */              \
        default: break; /* not reached: wk_cpu_unary checks the op */                           \
        }                                                                                       \
    }

#define FL_bf16(EXPR) UN_LOOP(wk_cpu_ld_bf16, wk_cpu_st_bf16, EXPR)
#define FL_f16(EXPR) UN_LOOP(wk_cpu_ld_f16, wk_cpu_st_f16, EXPR)
#define FL_f32(EXPR) UN_LOOP(wk_cpu_ld_f32, wk_cpu_st_f32, EXPR)
#define FL_f64(EXPR) UN_LOOP(wk_cpu_ld_f64, wk_cpu_st_f64, EXPR)
#define FL_f8e4m3(EXPR) UN_LOOP(wk_cpu_ld_f8e4m3, wk_cpu_st_f8e4m3, EXPR)
WK_CPU_FLOAT_TYPES(DEF_UN_FLOAT)

/* ---- integer dtypes: C is the storage type; A an unsigned type for wrapping arithmetic.
 * IS_NEG_<signed>(x) avoids an always-false `x < 0` on unsigned types. */
#define IS_NEG_0(x) 0
#define IS_NEG_1(x) ((x) < 0)
#define ID(v) (v)
#define IL(EXPR) UN_LOOP(ID, ID, EXPR)

#define DEF_UN_INT(E, s, T, A, S, MIN, MAX)                                                     \
    static void unary_row_##s(void *out, const void *const *in, const int64_t *step, int64_t n, \
                              const void *ctx_)                                                 \
    {                                                                                           \
        typedef T C;                                                                            \
        const unary_ctx *ctx = ctx_;                                                            \
        T *o = out;                                                                             \
        const T *xs = in[0];                                                                    \
        const int64_t sx = step[0];                                                             \
        const double p0 = ctx->p0, p1 = ctx->p1;                                                \
        switch (ctx->op) {                                                                      \
        case WK_OP_ABS: IL(IS_NEG_##S(x) ? (T)((A)0 - (A)x) : x); break; /* abs(MIN) = MIN */   \
        case WK_OP_NEG: IL((T)((A)0 - (A)x)); break;                                            \
        case WK_OP_SQR: IL((T)((A)x * (A)x)); break;                                            \
        case WK_OP_RELU: IL(x > 0 ? x : (T)0); break;                                           \
        case WK_OP_SIGN: IL((T)((x > 0) - IS_NEG_##S(x))); break;                               \
        case WK_OP_FLOOR:                                                                       \
        case WK_OP_CEIL:                                                                        \
        case WK_OP_ROUND: IL(x); break;                                                         \
        case WK_OP_AFFINE: IL(wk_cpu_sat_##s((double)x * p0 + p1)); break;                      \
        default: break; /* not defined for integers: not reached */                             \
        }                                                                                       \
    }
WK_CPU_INT_TYPES(DEF_UN_INT)

#define ROW_ENTRY(E, s, T) [WK_DTYPE_##E] = unary_row_##s,
static const wk_cpu_row_fn unary_rows[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(ROW_ENTRY)};

/* out (contiguous, elem_count(lx) elements of dt) = op(x). */
wk_status wk_cpu_unary(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx)
{
    (void)dev;
    if (op < WK_OP_EXP || op > WK_OP_ELU || !wk_dtype_valid(dt) || !wk_op_defined(op, dt))
        return wk_err(WK_ERR_DTYPE, "cpu unary: op %s not defined for dtype %s", wk_op_name(op),
                      wk_dtype_name(dt));
    const unary_ctx ctx = {op, p ? p->p0 : 0.0, p ? p->p1 : 0.0};
    const size_t sz = wk_dtype_size(dt);
    const void *in[1] = {x};
    const wk_layout *lay[1] = {lx};
    wk_cpu_for_rows(out, sz, 1, in, &sz, lay, unary_rows[dt], &ctx);
    return WK_OK;
}

/* ---- the gated binary ops: o = act(a) * b in the compute type, one rounding. A block of a goes
 * through the vector math in place (the same function per element as wk_cpu_unary: f32 gives
 * unary's bits), then is multiplied by the block of b. ctx: the wk_op (cpu_binary.c's row
 * driver passes it as to every binary row). */
static wk_vm_fn glu_fn(wk_op op)
{
    return op == WK_OP_SWIGLU ? WK_VM_SILU : op == WK_OP_GEGLU ? WK_VM_GELU : WK_VM_GELU_ERF;
}

#define DEF_GLU(E, s, T, CT)                                                                    \
    static void glu_row_##s(void *out, const void *const *in, const int64_t *step, int64_t n,   \
                            const void *ctx)                                                    \
    {                                                                                           \
        const wk_vm_fn f = glu_fn(*(const wk_op *)ctx);                                         \
        T *o = out;                                                                             \
        const T *as = in[0], *bs = in[1];                                                       \
        const int64_t sa = step[0], sb = step[1];                                               \
        CT buf[VM_BLOCK], ub[VM_BLOCK];                                                         \
        for (int64_t b = 0; b < n; b += VM_BLOCK) {                                             \
            const int64_t cnt = n - b < VM_BLOCK ? n - b : VM_BLOCK;                            \
            vm_ld_##s(buf, as + b * sa, sa, cnt);                                               \
            VMF_##CT(f, buf, buf, cnt, 0);                                                      \
            vm_ld_##s(ub, bs + b * sb, sb, cnt);                                                \
            for (int64_t i = 0; i < cnt; i++)                                                   \
                buf[i] = buf[i] * ub[i];                                                        \
            vm_st_##s(o + b, buf, cnt);                                                         \
        }                                                                                       \
    }
WK_CPU_FLOAT_TYPES(DEF_GLU)

#define GLU_ENTRY(E, s, T, CT) [WK_DTYPE_##E] = glu_row_##s,
static const wk_cpu_row_fn glu_rows[WK_DTYPE_COUNT] = {WK_CPU_FLOAT_TYPES(GLU_ENTRY)};

wk_cpu_row_fn wk_cpu_glu_row(wk_dtype dt)
{
    return wk_dtype_valid(dt) ? glu_rows[dt] : NULL;
}
