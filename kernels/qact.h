/* qact.h: the int8 activations' rule on the GPU (wick.h "Int8 activations"; the CPU's twin is
 * src/cpu/cpu_qdot.c quant_block): one aligned team of 8 lanes per block of 32 elements, used by
 * the quantization kernel (qmv.cu qmvq_<dt>), the one-row chunks matvec that quantizes its own
 * x, and the norm that writes the activations of its output (norm.cu norm_add_rms_act_*). */
#ifndef WK_QACT_H
#define WK_QACT_H
#include "quant.h"

/* One lane of an aligned team of 8 (lanes 8j .. 8j + 7 of a warp: the same on waves of 32 and
 * 64) holding elements 4 lane .. 4 lane + 3 of a 32-element block in v: word = its 4 int8 codes
 * (element 4 lane + e in byte e), d = the block's scale (NaN when the block holds a NaN or an
 * infinity), hs = the two halves' int8 sums (int16 each, low half first). Every lane of the
 * team must call it (shuffles). */
WK_DEV void wk_qmvq_team(const float (&v)[4], uint32_t &word, float &d, uint32_t &hs)
{
    float amax = 0.0f;
    int bad = 0;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const float a = fabsf(v[e]);
        bad |= !(a <= 3.40282347e38f); /* NaN and infinities */
        amax = a > amax ? a : amax;
    }
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) {
        const float oa = WK_SHFL_XOR(amax, o);
        amax = oa > amax ? oa : amax;
        bad |= WK_SHFL_XOR(bad, o);
    }
    float sc, id;
    wk_q8_grid(bad ? 0.0f : amax, d, sc, id);
    if (bad)
        d = __int_as_float(0x7fc00000);
    word = 0;
    int sum = 0;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        float r = roundf(v[e] * sc * id);
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        word |= ((uint32_t)(int)r & 0xFFu) << (8 * e);
        sum += (int)r;
    }
    /* half sums: lanes 0-3 hold elements 0..15, lanes 4-7 elements 16..31 */
    sum += WK_SHFL_XOR(sum, 1);
    sum += WK_SHFL_XOR(sum, 2);
    const int other = WK_SHFL_XOR(sum, 4);
    const int lo = (threadIdx.x & 4) ? other : sum, hi = (threadIdx.x & 4) ? sum : other;
    hs = ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
}

#endif /* WK_QACT_H */
