/* cpu_vmath_simd.h: the body of one ISA's vector math kernels, included by cpu_vmath_avx512.c and
 * cpu_vmath_avx2.c after they define, for their vector width:
 *   VM_F32, VM_F64, VM_BF16   the names of the three kernels to define
 *   LDB(p), STB(p, v)         WF bf16 values at p as f32 lanes; v rounded to bf16 into p
 *   VF, WF / VD, WD           the vector types and their lane counts
 *   LDF STF SETF ADDF SUBF MULF DIVF GTSELF (and the D twins)   loads, stores, arithmetic, and
 *                             GTSELF(c, a, b) = c > 0 ? a : b per lane (false for NaN)
 *   SLF(fn, ulp) / SLD(fn, ulp)  the SLEEF function of that width and ISA
 *   FMAF(a, b, c) = a b + c rounded once; ABSF(x) = |x|; MINF(k, v) = min(k, v), v when either
 *   is NaN; LTSELF(c, a, b) = c < 0 ? a : b per lane (false for NaN); ROUNDF(v) = v rounded to
 *   an integer, ties to even; SCALEF(v, n) = v 2^n for integral n in [-200, 0], rounded once;
 *   NEGINF_NANF(v, x) = NaN where x is -inf, else v   (f32 gelu_erf only)
 * The formulas, with their operation order, are those of the scalar code in cpu_unary.c (no FMA
 * contraction: -ffp-contract=off). Each element is computed the same way at every position: a
 * tail shorter than a vector is copied into a zero-padded vector, so results never depend on n
 * or on how a caller splits an array. */
#include <string.h>

/* o[0..n) = EXPR(x) for the vector x of each block; V, W, LD, ST name the vector kind and T the
 * stored element (the tail buffer's type). */
#define VM_LOOP(V, W, LD, ST, T, EXPR)                                  \
    do {                                                                \
        int64_t i = 0;                                                  \
        for (; i + (W) <= n; i += (W)) {                                \
            const V x = LD(xs + i);                                     \
            ST(o + i, EXPR);                                            \
        }                                                               \
        if (i < n) {                                                    \
            T t[W];                                                     \
            memset(t, 0, sizeof t);                                     \
            memcpy(t, xs + i, (size_t)(n - i) * sizeof(T));             \
            const V x = LD(t);                                          \
            ST(t, EXPR);                                                \
            memcpy(o + i, t, (size_t)(n - i) * sizeof(T));              \
        }                                                               \
    } while (0)

/* gelu_erf on f32 lanes: x Phi(x), Phi the standard normal CDF, in one pass of FMAs with no
 * library call (SLEEF's erfc costs 3.2 ns an element). With a = min(|x|, 15) (Phi(-15) is below
 * f32's range):
 *   Phi(-a) = 1/2 e^(-a^2/2) E(a),  E(a) = erfc(a/sqrt 2) e^(a^2/2) = t P(t - 9/16),
 * t = 1/(1 + a/2), P of degree 11 fitted for relative error by tools/fit/gelu_erf.py (1.7e-8
 * with these f32 coefficients). a^2 = h + l exactly
 * (FMA), so the rounding of a^2 (2^-24 a^2 relative: 13 ulp at a = 15) is not carried.
 * e^(-a^2/2) = 2^n e^r: n = round(-h/2 log2 e), r = -h/2 - n ln2 (ln2 in two parts; the first
 * product is exact) - l/2, computed as u = -2r = h + 2n ln2 + l; e^r = 1 + r Q(r), Q of degree
 * 5 fitted by tools/fit/gelu_erf.py (0.57 ulp in f32), its coefficients scaled by (-1/2)^k
 * (exact) to take u. The power of two is applied last (SCALEF: one rounding even when the result
 * is subnormal): for x < 0 the result is -(a Phi(-a) / 2^n) 2^n (a, not x: below -15, where the
 * true result is below f32's range, it is -0), for x >= 0 x (1 - Phi(-a)). The coefficients of
 * P are negated and halved (exact), so -Phi(-a) / 2^n comes out of the Horner sum directly.
 * Error bound (all 2^32 inputs): docs/semantics.md. NaN gives NaN, +inf gives +inf, -inf gives
 * NaN (-inf * 0, as 0.5 x erfc(-x/sqrt 2) does: NEGINF_NANF). */
#ifdef FMAF
static inline VF vm_gelu_erf_f32(VF x)
{
    static const float pc[12] = {
        0x1.6dad2ep-1f,  0x1.58f8d8p-1f,  0x1.ef0b2ep-5f,  -0x1.26c7c4p-2f,
        0x1.a88a2cp-5f,  0x1.4d64bap-3f,  -0x1.31de6ep-3f, -0x1.81eae8p-7f,
        0x1.3b553p-3f,   -0x1.13740ap-3f, -0x1.e7c714p-5f, 0x1.12807cp-3f,
    };
    static const float ec[7] = { /* e^r = 1 + r + ... as a polynomial in u = -2r */
        1.0f,
        -0x1p-1f * 0x1p+0f,
        0x1p-2f * 0x1.fffffcp-2f,
        -0x1p-3f * 0x1.55541ap-3f,
        0x1p-4f * 0x1.55580cp-5f,
        -0x1p-5f * 0x1.12674ap-7f,
        0x1p-6f * 0x1.6af7d4p-10f,
    };
    const VF zero = SETF(0.0f), one = SETF(1.0f);
    const VF a = MINF(SETF(15.0f), ABSF(x));
    const VF h = MULF(a, a), l = FMAF(a, a, SUBF(zero, h));
    const VF nf = ROUNDF(MULF(h, SETF(-0.5f * 0x1.715476p+0f))); /* -h/2 log2 e */
    VF u = FMAF(nf, SETF(2 * 0x1.63p-1f), h); /* u = -2r; ln 2 = 0x1.63p-1 - 0x1.bd0106p-13 */
    u = FMAF(nf, SETF(-2 * 0x1.bd0106p-13f), u);
    u = ADDF(u, l);
    VF q = SETF(ec[6]);
    for (int k = 5; k >= 0; k--)
        q = FMAF(q, u, SETF(ec[k]));
    const VF er = q; /* e^(-u/2) = e^(-a^2/2) / 2^n */
    const VF t = DIVF(one, FMAF(SETF(0.5f), a, one));
    const VF sft = SUBF(t, SETF(0.5625f));
    VF p = SETF(-0.5f * pc[11]);
    for (int k = 10; k >= 0; k--)
        p = FMAF(p, sft, SETF(-0.5f * pc[k]));
    const VF mph = MULF(MULF(t, p), er); /* -Phi(-a) / 2^n */
    const VF neg = SCALEF(MULF(a, mph), nf);
    const VF pos = MULF(x, ADDF(one, SCALEF(mph, nf)));
    return NEGINF_NANF(LTSELF(x, neg, pos), x);
}
#define VM_GELU_ERF_F32(x) vm_gelu_erf_f32(x)
#endif

/* The body for one element kind: P is the prefix of its macros (F or D), S of SLEEF (SLF/SLD). */
#define VM_BODY(V, W, T, S, LD, ST, SET, ADD, SUB, MUL, DIV, GTSEL, SL, GELU_ERF)                 \
    {                                                                                             \
        const V one = SET((T)1), half = SET((T)0.5), nz = SET((T)-0.0), zero = SET((T)0);         \
        const V k_gelu = SET((T)0.79788456080286535588), k_cub = SET((T)0.044715);                \
        const V sqrt2 = SET((T)1.41421356237309504880), vp = SET(p);                              \
        (void)zero, (void)sqrt2;                                                                  \
        switch (f) {                                                                              \
        case WK_VM_EXP: VM_LOOP(V, W, LD, ST, S, SL(exp, u10)(x)); break;                         \
        case WK_VM_LOG: VM_LOOP(V, W, LD, ST, S, SL(log, u10)(x)); break;                         \
        case WK_VM_SIN: VM_LOOP(V, W, LD, ST, S, SL(sin, u10)(x)); break;                         \
        case WK_VM_COS: VM_LOOP(V, W, LD, ST, S, SL(cos, u10)(x)); break;                         \
        case WK_VM_TANH: VM_LOOP(V, W, LD, ST, S, SL(tanh, u10)(x)); break;                       \
        case WK_VM_ERF: VM_LOOP(V, W, LD, ST, S, SL(erf, u10)(x)); break;                         \
        case WK_VM_GELU:                                                                          \
            VM_LOOP(V, W, LD, ST, S,                                                              \
                    MUL(MUL(half, x),                                                             \
                        ADD(one, SL(tanh, u10)(MUL(k_gelu, ADD(x, MUL(k_cub, MUL(MUL(x, x), x)))))))); \
            break;                                                                                \
        case WK_VM_GELU_ERF: VM_LOOP(V, W, LD, ST, S, GELU_ERF(x)); break;                        \
        case WK_VM_SILU: VM_LOOP(V, W, LD, ST, S, DIV(x, ADD(one, SL(exp, u10)(SUB(nz, x))))); break; \
        case WK_VM_SIGMOID:                                                                       \
            VM_LOOP(V, W, LD, ST, S, DIV(one, ADD(one, SL(exp, u10)(SUB(nz, x)))));               \
            break;                                                                                \
        case WK_VM_POW: VM_LOOP(V, W, LD, ST, S, SL(pow, u10)(x, vp)); break;                     \
        case WK_VM_ELU:                                                                           \
            VM_LOOP(V, W, LD, ST, S, GTSEL(x, x, MUL(vp, SUB(SL(exp, u10)(x), one))));            \
            break;                                                                                \
        default: break;                                                                           \
        }                                                                                         \
    }

/* gelu_erf on f64 lanes (and on f32 where no FMA is defined): 0.5 x erfc(-x/sqrt 2), SLEEF's erfc */
#define VM_GELU_ERF_SL(SUB, MUL, DIV, SL, x) MUL(MUL(half, x), SL(erfc, u15)(DIV(SUB(nz, x), sqrt2)))
#ifndef VM_GELU_ERF_F32
#define VM_GELU_ERF_F32(x) VM_GELU_ERF_SL(SUBF, MULF, DIVF, SLF, x)
#endif
#define VM_GELU_ERF_F64(x) VM_GELU_ERF_SL(SUBD, MULD, DIVD, SLD, x)

void VM_F32(wk_vm_fn f, float *o, const float *xs, int64_t n, float p)
VM_BODY(VF, WF, float, float, LDF, STF, SETF, ADDF, SUBF, MULF, DIVF, GTSELF, SLF, VM_GELU_ERF_F32)

void VM_F64(wk_vm_fn f, double *o, const double *xs, int64_t n, double p)
VM_BODY(VD, WD, double, double, LDD, STD, SETD, ADDD, SUBD, MULD, DIVD, GTSELD, SLD, VM_GELU_ERF_F64)

/* bf16 in and out, f32 inside: the f32 kernel's result rounded to bf16 (ties to even, NaN kept
 * quiet), converted in registers so the data passes through memory once. */
void VM_BF16(wk_vm_fn f, uint16_t *o, const uint16_t *xs, int64_t n, float p)
VM_BODY(VF, WF, float, uint16_t, LDB, STB, SETF, ADDF, SUBF, MULF, DIVF, GTSELF, SLF, VM_GELU_ERF_F32)
