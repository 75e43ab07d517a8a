/* qact.h: the int8 activations' rule on the GPU (wick.h "Int8 activations"; the CPU's twin is
 * src/cpu/cpu_qdot.c quant_block): one aligned team of 8 lanes per block of 32 elements, used by
 * the quantization kernel (qmv.cu qmvq_<dt>), the one-row chunks matvec that quantizes its own
 * x, and the norm that writes the activations of its output (norm.cu norm_add_rms_act_*). */
#ifndef WK_QACT_H
#define WK_QACT_H
#include "quant.h"

/* One lane of an aligned team of 8 (lanes 8j .. 8j + 7 of a warp: the same on waves of 32 and
 * 64) holding elements 4 lane .. 4 lane + 3 of a 32-element block in v[b], for NV blocks at once
 * (each stage runs for all NV before the next, so their shuffles overlap): word[b] = its 4 int8
 * codes (element 4 lane + e in byte e), d[b] = the block's scale (NaN when the block holds a NaN
 * or an infinity), hs[b] = the two halves' int8 sums (int16 each, low half first). Every lane of
 * the team must call it (shuffles). A NaN or infinity enters the maximum as +inf, so one
 * reduction finds both the maximum and whether the block is bad. */
template <int NV>
WK_DEV void wk_qmvq_teams(const float (&v)[NV][4], uint32_t (&word)[NV], float (&d)[NV],
                          uint32_t (&hs)[NV])
{
    float amax[NV], sc[NV], id[NV];
    int sum[NV];
#pragma unroll
    for (int b = 0; b < NV; b++) {
        amax[b] = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float a = fabsf(v[b][e]);
            a = a <= 3.40282347e38f ? a : __int_as_float(0x7f800000); /* NaN, inf: +inf */
            amax[b] = a > amax[b] ? a : amax[b];
        }
    }
#pragma unroll
    for (int o = 4; o > 0; o >>= 1)
#pragma unroll
        for (int b = 0; b < NV; b++) {
            const float oa = WK_SHFL_XOR(amax[b], o);
            amax[b] = oa > amax[b] ? oa : amax[b];
        }
#pragma unroll
    for (int b = 0; b < NV; b++) {
        const bool bad = !(amax[b] <= 3.40282347e38f);
        wk_q8_grid(bad ? 0.0f : amax[b], d[b], sc[b], id[b]);
        if (bad)
            d[b] = __int_as_float(0x7fc00000);
        word[b] = 0;
        sum[b] = 0;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float r = roundf(v[b][e] * sc[b] * id[b]);
            r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
            word[b] |= ((uint32_t)(int)r & 0xFFu) << (8 * e);
            sum[b] += (int)r;
        }
    }
    /* half sums: lanes 0-3 hold elements 0..15, lanes 4-7 elements 16..31 */
#pragma unroll
    for (int o = 1; o < 4; o <<= 1)
#pragma unroll
        for (int b = 0; b < NV; b++)
            sum[b] += WK_SHFL_XOR(sum[b], o);
#pragma unroll
    for (int b = 0; b < NV; b++) {
        const int other = WK_SHFL_XOR(sum[b], 4);
        const int lo = (threadIdx.x & 4) ? other : sum[b], hi = (threadIdx.x & 4) ? sum[b] : other;
        hs[b] = ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
    }
}

/* One block (wk_qmvq_teams with NV = 1). */
WK_DEV void wk_qmvq_team(const float (&v)[4], uint32_t &word, float &d, uint32_t &hs)
{
    float vv[1][4] = {{v[0], v[1], v[2], v[3]}};
    uint32_t w1[1], h1[1];
    float d1[1];
    wk_qmvq_teams<1>(vv, w1, d1, h1);
    word = w1[0], d = d1[0], hs = h1[0];
}

#endif /* WK_QACT_H */
