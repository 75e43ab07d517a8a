/* cpu_conv.h: what the CPU convolutions share: the geometry of one conv (cpu_conv.c) and the
 * AVX-512F direct f32 conv (cpu_conv_avx512.c) that cpu_conv.c calls where the CPU has it. */
#ifndef WK_CPU_CONV_H
#define WK_CPU_CONV_H

#include "wk_core.h"

/* The geometry in 2-D terms (1-D: H = KH = Ho = 1). */
typedef struct wk_conv_geom {
    int64_t n, ci, h, w;   /* input */
    int64_t co, kh, kw;    /* output channels, kernel */
    int64_t ho, wo;        /* output */
    int64_t g;             /* groups */
    int64_t sh, sw, ph, pw, dh, dw;
} wk_conv_geom;

/* out [n, co, ho, wo] = conv(x [n, ci, h, w], w [co, ci/g, kh, kw]) in f32, every buffer
 * contiguous; q is a forward conv with ci/g > 0 and ho*wo > 0. Runs only on a CPU with
 * AVX-512F (the caller checks); the result does not depend on the number of threads. */
wk_status wk_cpu_conv_avx512(float *out, const float *x, const float *w, const wk_conv_geom *q);

/* The weights w [g*cog][nk] packed for the AVX-512 micro-kernel: wk [g][ncb][nk][8] (blocks
 * of 8 output channels, those past cog zero); ncb = ceil(cog / 8). */
void wk_cpu_conv_pack_weights(float *wk, const float *w, int64_t g, int64_t cog, int64_t ncb,
                              int64_t nk);

/* 1 when wk_cpu_conv_avx512_direct takes q (stride 1, wo <= w, few lanes dropped). */
int wk_cpu_conv_direct_fits(const wk_conv_geom *q);
/* The same conv as wk_cpu_conv_avx512, reading x in place (cpu_conv_avx512_direct.c); only
 * where wk_cpu_conv_direct_fits(q). wk_cpu_conv_avx512 calls it where it fits, unless
 * WICK_CPU_CONV=padded. */
wk_status wk_cpu_conv_avx512_direct(float *out, const float *x, const float *w,
                                    const wk_conv_geom *q);

#endif
