/* cpu_rows.c: the block kernels of cpu_rows.h. Each loop is written lane by lane
 * (acc[k] op= x[i + k] for k < WK_ROWS_LANES) so that it vectorises without reassociation; no
 * contraction (-ffp-contract=off), so every clone computes the same bits. Built with -O3
 * (cmake/cpu.cmake): GCC's -O2 cost model leaves loops that need a remainder scalar. */
#include "cpu_rows.h"
#include "cpu_elem.h"
#include <string.h>

#define L WK_ROWS_LANES

#define DEF_ROWS(CT, s)                                                                          \
    WK_CPU_CLONES void wk_rows_max_##s(CT *acc, const CT *restrict x, int64_t n)                 \
    {                                                                                            \
        CT t[L];                                                                                 \
        memcpy(t, acc, sizeof t);                                                                \
        int64_t i = 0;                                                                           \
        for (; i + L <= n; i += L)                                                               \
            for (int k = 0; k < L; k++)                                                          \
                t[k] = x[i + k] > t[k] ? x[i + k] : t[k];                                        \
        for (; i < n; i++)                                                                       \
            t[i % L] = x[i] > t[i % L] ? x[i] : t[i % L];                                        \
        memcpy(acc, t, sizeof t);                                                                \
    }                                                                                            \
    WK_CPU_CLONES void wk_rows_sum_##s(CT *acc, const CT *restrict x, int64_t n, CT c)           \
    {                                                                                            \
        CT t[L];                                                                                 \
        memcpy(t, acc, sizeof t);                                                                \
        int64_t i = 0;                                                                           \
        for (; i + L <= n; i += L)                                                               \
            for (int k = 0; k < L; k++)                                                          \
                t[k] += x[i + k] - c;                                                            \
        for (; i < n; i++)                                                                       \
            t[i % L] += x[i] - c;                                                                \
        memcpy(acc, t, sizeof t);                                                                \
    }                                                                                            \
    WK_CPU_CLONES void wk_rows_sumsq_##s(CT *acc, const CT *restrict x, int64_t n, CT c)         \
    {                                                                                            \
        CT t[L];                                                                                 \
        memcpy(t, acc, sizeof t);                                                                \
        int64_t i = 0;                                                                           \
        for (; i + L <= n; i += L)                                                               \
            for (int k = 0; k < L; k++) {                                                        \
                const CT v = x[i + k] - c;                                                       \
                t[k] += v * v;                                                                   \
            }                                                                                    \
        for (; i < n; i++) {                                                                     \
            const CT v = x[i] - c;                                                               \
            t[i % L] += v * v;                                                                   \
        }                                                                                        \
        memcpy(acc, t, sizeof t);                                                                \
    }                                                                                            \
    WK_CPU_CLONES void wk_rows_sub_##s(CT *o, const CT *x, int64_t n, CT c)                      \
    {                                                                                            \
        for (int64_t i = 0; i < n; i++)                                                          \
            o[i] = x[i] - c;                                                                     \
    }                                                                                            \
    WK_CPU_CLONES void wk_rows_div_##s(CT *o, const CT *x, int64_t n, CT c)                      \
    {                                                                                            \
        for (int64_t i = 0; i < n; i++)                                                          \
            o[i] = x[i] / c;                                                                     \
    }                                                                                            \
    WK_CPU_CLONES void wk_rows_ln_##s(CT *o, const CT *x, const CT *a, const CT *b, int64_t n,   \
                                      CT m, CT sd)                                               \
    {                                                                                            \
        for (int64_t i = 0; i < n; i++)                                                          \
            o[i] = (x[i] - m) / sd * a[i] + b[i];                                                \
    }                                                                                            \
    WK_CPU_CLONES void wk_rows_rms_##s(CT *o, const CT *x, const CT *a, int64_t n, CT rms)       \
    {                                                                                            \
        for (int64_t i = 0; i < n; i++)                                                          \
            o[i] = x[i] / rms * a[i];                                                            \
    }                                                                                            \
    CT wk_rows_fold_sum_##s(const CT *acc)                                                       \
    {                                                                                            \
        CT t[L];                                                                                 \
        for (int k = 0; k < L; k++)                                                              \
            t[k] = acc[k];                                                                       \
        for (int w = L / 2; w > 0; w /= 2)                                                       \
            for (int k = 0; k < w; k++)                                                          \
                t[k] += t[k + w];                                                                \
        return t[0];                                                                             \
    }                                                                                            \
    CT wk_rows_fold_max_##s(const CT *acc)                                                       \
    {                                                                                            \
        CT m = acc[0];                                                                           \
        for (int k = 1; k < L; k++)                                                              \
            m = acc[k] > m ? acc[k] : m;                                                         \
        return m;                                                                                \
    }
DEF_ROWS(float, f32)
DEF_ROWS(double, f64)
