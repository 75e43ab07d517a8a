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

#endif
