/* cpu_vmath_simd.h: the body of one ISA's vector math kernels, included by cpu_vmath_avx512.c and
 * cpu_vmath_avx2.c after they define, for their vector width:
 *   VM_F32, VM_F64            the names of the two kernels to define
 *   VF, WF / VD, WD           the vector types and their lane counts
 *   LDF STF SETF ADDF SUBF MULF DIVF GTSELF (and the D twins)   loads, stores, arithmetic, and
 *                             GTSELF(c, a, b) = c > 0 ? a : b per lane (false for NaN)
 *   SLF(fn, ulp) / SLD(fn, ulp)  the SLEEF function of that width and ISA
 * The formulas, with their operation order, are those of the scalar code in cpu_unary.c (no FMA
 * contraction: -ffp-contract=off). Each element is computed the same way at every position: a
 * tail shorter than a vector is copied into a zero-padded vector, so results never depend on n
 * or on how a caller splits an array. */
#include <string.h>

/* o[0..n) = EXPR(x) for the vector x of each block; V, W, LD, ST, T name the element kind. */
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

/* The body for one element kind: P is the prefix of its macros (F or D), S of SLEEF (SLF/SLD). */
#define VM_BODY(V, W, T, LD, ST, SET, ADD, SUB, MUL, DIV, GTSEL, SL)                              \
    {                                                                                             \
        const V one = SET((T)1), half = SET((T)0.5), nz = SET((T)-0.0), zero = SET((T)0);         \
        const V k_gelu = SET((T)0.79788456080286535588), k_cub = SET((T)0.044715);                \
        const V sqrt2 = SET((T)1.41421356237309504880), vp = SET(p);                              \
        (void)zero;                                                                               \
        switch (f) {                                                                              \
        case WK_VM_EXP: VM_LOOP(V, W, LD, ST, T, SL(exp, u10)(x)); break;                         \
        case WK_VM_LOG: VM_LOOP(V, W, LD, ST, T, SL(log, u10)(x)); break;                         \
        case WK_VM_SIN: VM_LOOP(V, W, LD, ST, T, SL(sin, u10)(x)); break;                         \
        case WK_VM_COS: VM_LOOP(V, W, LD, ST, T, SL(cos, u10)(x)); break;                         \
        case WK_VM_TANH: VM_LOOP(V, W, LD, ST, T, SL(tanh, u10)(x)); break;                       \
        case WK_VM_ERF: VM_LOOP(V, W, LD, ST, T, SL(erf, u10)(x)); break;                         \
        case WK_VM_GELU:                                                                          \
            VM_LOOP(V, W, LD, ST, T,                                                              \
                    MUL(MUL(half, x),                                                             \
                        ADD(one, SL(tanh, u10)(MUL(k_gelu, ADD(x, MUL(k_cub, MUL(MUL(x, x), x)))))))); \
            break;                                                                                \
        case WK_VM_GELU_ERF:                                                                      \
            VM_LOOP(V, W, LD, ST, T, MUL(MUL(half, x), SL(erfc, u15)(DIV(SUB(nz, x), sqrt2))));  \
            break;                                                                                \
        case WK_VM_SILU: VM_LOOP(V, W, LD, ST, T, DIV(x, ADD(one, SL(exp, u10)(SUB(nz, x))))); break; \
        case WK_VM_SIGMOID:                                                                       \
            VM_LOOP(V, W, LD, ST, T, DIV(one, ADD(one, SL(exp, u10)(SUB(nz, x)))));               \
            break;                                                                                \
        case WK_VM_POW: VM_LOOP(V, W, LD, ST, T, SL(pow, u10)(x, vp)); break;                     \
        case WK_VM_ELU:                                                                           \
            VM_LOOP(V, W, LD, ST, T, GTSEL(x, x, MUL(vp, SUB(SL(exp, u10)(x), one))));            \
            break;                                                                                \
        default: break;                                                                           \
        }                                                                                         \
    }

void VM_F32(wk_vm_fn f, float *o, const float *xs, int64_t n, float p)
VM_BODY(VF, WF, float, LDF, STF, SETF, ADDF, SUBF, MULF, DIVF, GTSELF, SLF)

void VM_F64(wk_vm_fn f, double *o, const double *xs, int64_t n, double p)
VM_BODY(VD, WD, double, LDD, STD, SETD, ADDD, SUBD, MULD, DIVD, GTSELD, SLD)
