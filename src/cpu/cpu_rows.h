/* cpu_rows.h: vectorisable block kernels of the CPU row ops (softmax, layer_norm, rms_norm), for
 * f32 and f64 arrays. A row is processed in blocks whose starts are multiples of WK_ROWS_LANES;
 * reductions keep WK_ROWS_LANES partial results (element j of the row goes to lane j mod
 * WK_ROWS_LANES) and combine them in a fixed pairwise order (wk_rows_fold_*). The order of every
 * operation is fixed by this code, not by the ISA or the thread count, so results are the same
 * bits on every run, every clone (WK_CPU_CLONES: AVX-512, AVX2, baseline) and any number of
 * threads. Internal to src/cpu. */
#ifndef WK_CPU_ROWS_H
#define WK_CPU_ROWS_H

#include <stdint.h>

#define WK_ROWS_LANES 16
/* Elements per block (a multiple of WK_ROWS_LANES): 8 KiB of f32, kept in L1 between passes. */
#define WK_ROWS_BLOCK 2048

#define WK_ROWS_DECL(CT, s)                                                                      \
    /* acc[j % L] = max(acc[j % L], x[j]) (NaN ignored, as `if (x > m) m = x`) */                \
    void wk_rows_max_##s(CT *acc, const CT *x, int64_t n);                                       \
    /* acc[j % L] += x[j] - c */                                                                 \
    void wk_rows_sum_##s(CT *acc, const CT *x, int64_t n, CT c);                                 \
    /* acc[j % L] += (x[j] - c)^2 */                                                             \
    void wk_rows_sumsq_##s(CT *acc, const CT *x, int64_t n, CT c);                               \
    /* o[j] = x[j] - c */                                                                        \
    void wk_rows_sub_##s(CT *o, const CT *x, int64_t n, CT c);                                   \
    /* o[j] = x[j] / c */                                                                        \
    void wk_rows_div_##s(CT *o, const CT *x, int64_t n, CT c);                                   \
    /* o[j] = (x[j] - m) / sd * a[j] + b[j]   (layer_norm) */                                    \
    void wk_rows_ln_##s(CT *o, const CT *x, const CT *a, const CT *b, int64_t n, CT m, CT sd);    \
    /* o[j] = x[j] / rms * a[j]   (rms_norm) */                                                  \
    void wk_rows_rms_##s(CT *o, const CT *x, const CT *a, int64_t n, CT rms);                    \
    /* the lanes folded pairwise: sum, or max (NaN ignored; -inf for a row of -inf/NaN) */       \
    CT wk_rows_fold_sum_##s(const CT *acc);                                                      \
    CT wk_rows_fold_max_##s(const CT *acc);
WK_ROWS_DECL(float, f32)
WK_ROWS_DECL(double, f64)
#undef WK_ROWS_DECL

#endif
