/* mma.h: fragments of the 16 x 8 x 16 matrix-unit products (gpu.h, wk_mma_16816) from tiles
 * staged in shared memory as 16-bit values; kernels/matmul.cu and kernels/flash.cu. A tile is
 * staged [e][k] (KC = 1: rows along the reduction index k) or [k][e] (KC = 0), rows of LD
 * elements; on NVIDIA sm_80+ the fragments come by ldmatrix (plain for [e][k], .trans for
 * [k][e]), elsewhere by plain 16-bit reads: both give the registers of gpu.h's layout. */
#ifndef WK_MMA_H
#define WK_MMA_H

#include "gpu.h"

/* r[0..3] <- four 8 x 8 matrices of a staged tile s (row length LD) in fragment layout: matrix
 * i at e0 + eo_i, k0 + ko_i, with (eo, ko) = (8 (i & 1), 8 (i >> 1)) for an A fragment
 * (AO = 1: a[0..3] of m16 x k16) and (8 (i >> 1), 8 (i & 1)) for two B fragments (AO = 0:
 * b[0..1] of columns e0..e0+7, then of e0+8..e0+15). */
template <int KC, int LD, int AO>
WK_DEV void wk_mma_frag(uint32_t *r, const uint16_t *s, int e0, int k0)
{
    const int l = (int)threadIdx.x & 31;
#if WK_MMA_NATIVE
    const int i = l >> 3;
    const int eo = AO ? (i & 1) * 8 : (i >> 1) * 8, ko = AO ? (i >> 1) * 8 : (i & 1) * 8;
    if (KC)
        wk_ldsm_x4(r, s + (e0 + eo + (l & 7)) * LD + k0 + ko);
    else
        wk_ldsm_x4_t(r, s + (k0 + ko + (l & 7)) * LD + e0 + eo);
#else
    const int g = l >> 2, t = l & 3;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int eo = AO ? (i & 1) * 8 : (i >> 1) * 8, ko = AO ? (i >> 1) * 8 : (i & 1) * 8;
        const int e = e0 + eo + g, k = k0 + ko + 2 * t;
        const uint32_t lo = KC ? s[e * LD + k] : s[k * LD + e];
        const uint32_t hi = KC ? s[e * LD + k + 1] : s[(k + 1) * LD + e];
        r[i] = lo | hi << 16;
    }
#endif
}

#endif
