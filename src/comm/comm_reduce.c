/* comm_reduce.c: the element operations of the CPU transport's reductions. The transport folds
 * the ranks in order (acc = rank 0's data, then acc = acc op rank 1's, ...), so a result is a
 * pure function of the inputs: bit-identical run to run, whatever the threads do.
 *   - integers wrap (two's complement) on sum and prod; min/max compare with the sign;
 *   - f32, f64: IEEE operations in the dtype; min/max return NaN if either operand is NaN;
 *   - bf16, f16, f8e4m3: each step in f32 on the widened values, rounded to the dtype (round to
 *     nearest even), as NCCL's ring rounds at each hop;
 *   - avg: the sum as above, then divided by the number of ranks (integers: truncated toward
 *     zero; floats: one rounding in f32, or in f64 for f64). */
#include "comm_impl.h"
#include <math.h>

bool wk_comm_reducible(wk_dtype dt) { return wk_dtype_valid(dt) && dt != WK_DTYPE_I16; }

#define INT_LOOP(T, U)                                                              \
    do {                                                                            \
        T *a = acc;                                                                 \
        const T *b = x;                                                             \
        switch (op) {                                                               \
        case WK_REDUCE_SUM:                                                         \
        case WK_REDUCE_AVG:                                                         \
            for (size_t i = 0; i < n; i++)                                          \
                a[i] = (T)(U)((U)a[i] + (U)b[i]);                                   \
            break;                                                                  \
        case WK_REDUCE_PROD:                                                        \
            for (size_t i = 0; i < n; i++)                                          \
                a[i] = (T)(U)((U)a[i] * (U)b[i]);                                   \
            break;                                                                  \
        case WK_REDUCE_MIN:                                                         \
            for (size_t i = 0; i < n; i++)                                          \
                a[i] = b[i] < a[i] ? b[i] : a[i];                                   \
            break;                                                                  \
        case WK_REDUCE_MAX:                                                         \
            for (size_t i = 0; i < n; i++)                                          \
                a[i] = b[i] > a[i] ? b[i] : a[i];                                   \
            break;                                                                  \
        }                                                                           \
    } while (0)

/* One step of op in T: fstep (double: f64 and the narrow floats, widened), fstepf (f32). */
#define DEF_FSTEP(NAME, T)                                                          \
    static inline T NAME(T a, T b, wk_reduce_op op)                                 \
    {                                                                               \
        switch (op) {                                                               \
        case WK_REDUCE_SUM:                                                         \
        case WK_REDUCE_AVG: return a + b;                                           \
        case WK_REDUCE_PROD: return a * b;                                          \
        case WK_REDUCE_MIN: return isnan(a) || isnan(b) ? (T)NAN : b < a ? b : a;   \
        case WK_REDUCE_MAX: return isnan(a) || isnan(b) ? (T)NAN : b > a ? b : a;   \
        }                                                                           \
        return a;                                                                   \
    }
DEF_FSTEP(fstep, double)
DEF_FSTEP(fstepf, float)
#undef DEF_FSTEP

#define NARROW_LOOP(T, TO_F32, FROM_F32)                                            \
    do {                                                                            \
        T *a = acc;                                                                 \
        const T *b = x;                                                             \
        for (size_t i = 0; i < n; i++)                                              \
            a[i] = FROM_F32(fstepf(TO_F32(a[i]), TO_F32(b[i]), op));                \
    } while (0)

void wk_comm_reduce_into(void *acc, const void *x, size_t n, wk_dtype dt, wk_reduce_op op)
{
    switch (dt) {
    case WK_DTYPE_U8: INT_LOOP(uint8_t, uint8_t); break;
    case WK_DTYPE_U32: INT_LOOP(uint32_t, uint32_t); break;
    case WK_DTYPE_I16: INT_LOOP(int16_t, uint16_t); break; /* not reached: no NCCL type */
    case WK_DTYPE_I32: INT_LOOP(int32_t, uint32_t); break;
    case WK_DTYPE_I64: INT_LOOP(int64_t, uint64_t); break;
    case WK_DTYPE_F32: {
        float *a = acc;
        const float *b = x;
        for (size_t i = 0; i < n; i++)
            a[i] = fstepf(a[i], b[i], op);
        break;
    }
    case WK_DTYPE_F64: {
        double *a = acc;
        const double *b = x;
        for (size_t i = 0; i < n; i++)
            a[i] = fstep(a[i], b[i], op);
        break;
    }
    case WK_DTYPE_BF16: NARROW_LOOP(uint16_t, wk_fp_bf16_to_f32, wk_fp_f32_to_bf16); break;
    case WK_DTYPE_F16: NARROW_LOOP(uint16_t, wk_fp_f16_to_f32, wk_fp_f32_to_f16); break;
    case WK_DTYPE_F8E4M3: NARROW_LOOP(uint8_t, wk_fp_f8e4m3_to_f32, wk_fp_f32_to_f8e4m3); break;
    }
}

#define DIV_LOOP(T)                                                                 \
    do {                                                                            \
        T *a = acc;                                                                 \
        for (size_t i = 0; i < n; i++)                                              \
            a[i] = (T)(a[i] / (T)nranks);                                           \
    } while (0)
#define NARROW_DIV(T, TO_F32, FROM_F32)                                             \
    do {                                                                            \
        T *a = acc;                                                                 \
        for (size_t i = 0; i < n; i++)                                              \
            a[i] = FROM_F32(TO_F32(a[i]) / (float)nranks);                          \
    } while (0)

void wk_comm_avg_finish(void *acc, size_t n, wk_dtype dt, int nranks)
{
    switch (dt) {
    case WK_DTYPE_U8: DIV_LOOP(uint8_t); break;
    case WK_DTYPE_U32: DIV_LOOP(uint32_t); break;
    case WK_DTYPE_I16: DIV_LOOP(int16_t); break;
    case WK_DTYPE_I32: DIV_LOOP(int32_t); break;
    case WK_DTYPE_I64: DIV_LOOP(int64_t); break;
    case WK_DTYPE_F32: DIV_LOOP(float); break;
    case WK_DTYPE_F64: DIV_LOOP(double); break;
    case WK_DTYPE_BF16: NARROW_DIV(uint16_t, wk_fp_bf16_to_f32, wk_fp_f32_to_bf16); break;
    case WK_DTYPE_F16: NARROW_DIV(uint16_t, wk_fp_f16_to_f32, wk_fp_f32_to_f16); break;
    case WK_DTYPE_F8E4M3: NARROW_DIV(uint8_t, wk_fp_f8e4m3_to_f32, wk_fp_f32_to_f8e4m3); break;
    }
}
