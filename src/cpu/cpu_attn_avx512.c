/* cpu_attn_avx512.c: the two products of the CPU's attention on AVX-512F (contract: cpu_attn.h).
 * scores: 4 query rows x the 64 keys of a tile in 16 accumulators, one FMA chain over e per
 * (row, key) lane; pv: 4 rows x 64 elements of o in 16 accumulators while the keys that all 4
 * rows see pass (each v row read once for the 4), the rest of each row's keys after, in order.
 * Compiled with -mavx512f (cmake/cpu.cmake). */
#include "cpu_attn.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

const int wk_cpu_attn_avx512_built = 1;

void wk_cpu_attn_scores_avx512(float *S, const float *Q, const float *KT, int R, int D)
{
    int r = 0;
    for (; r + 4 <= R; r += 4) {
        __m512 acc[4][4];
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 4; c++)
                acc[i][c] = _mm512_setzero_ps();
        for (int e = 0; e < D; e++) {
            const float *kt = KT + 64 * e;
            const __m512 k0 = _mm512_loadu_ps(kt), k1 = _mm512_loadu_ps(kt + 16);
            const __m512 k2 = _mm512_loadu_ps(kt + 32), k3 = _mm512_loadu_ps(kt + 48);
            for (int i = 0; i < 4; i++) {
                const __m512 q = _mm512_set1_ps(Q[(r + i) * D + e]);
                acc[i][0] = _mm512_fmadd_ps(q, k0, acc[i][0]);
                acc[i][1] = _mm512_fmadd_ps(q, k1, acc[i][1]);
                acc[i][2] = _mm512_fmadd_ps(q, k2, acc[i][2]);
                acc[i][3] = _mm512_fmadd_ps(q, k3, acc[i][3]);
            }
        }
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 4; c++)
                _mm512_storeu_ps(S + (r + i) * 64 + 16 * c, acc[i][c]);
    }
    for (; r < R; r++) {
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                         _mm512_setzero_ps()};
        for (int e = 0; e < D; e++) {
            const __m512 q = _mm512_set1_ps(Q[r * D + e]);
            for (int c = 0; c < 4; c++)
                acc[c] = _mm512_fmadd_ps(q, _mm512_loadu_ps(KT + 64 * e + 16 * c), acc[c]);
        }
        for (int c = 0; c < 4; c++)
            _mm512_storeu_ps(S + r * 64 + 16 * c, acc[c]);
    }
}

/* rows r..r+n-1 (n <= 4), elements [e0, e0 + 64) masked to D, keys [k0, k1) for all n rows */
static inline __attribute__((always_inline)) void pv_block(float *O, const float *P,
                                                            const float *const *V, int r, int n,
                                                            int e0, int D, int k0, int k1)
{
    __mmask16 m[4];
    for (int c = 0; c < 4; c++) {
        const int w = D - e0 - 16 * c;
        m[c] = (__mmask16)(w >= 16 ? 0xFFFF : w <= 0 ? 0 : (1u << w) - 1u);
    }
    __m512 acc[4][4];
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 4; c++)
            acc[i][c] = _mm512_maskz_loadu_ps(m[c], O + (r + i) * D + e0 + 16 * c);
    for (int k = k0; k < k1; k++) {
        const float *v = V[k] + e0;
        __m512 vv[4];
        for (int c = 0; c < 4; c++)
            vv[c] = _mm512_maskz_loadu_ps(m[c], v + 16 * c);
        for (int i = 0; i < n; i++) {
            const __m512 p = _mm512_set1_ps(P[(r + i) * 64 + k]);
            for (int c = 0; c < 4; c++)
                acc[i][c] = _mm512_fmadd_ps(p, vv[c], acc[i][c]);
        }
    }
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 4; c++)
            _mm512_mask_storeu_ps(O + (r + i) * D + e0 + 16 * c, m[c], acc[i][c]);
}

void wk_cpu_attn_pv_avx512(float *O, const float *P, const float *const *V, const int *nk, int R,
                           int D)
{
    for (int r = 0; r < R; r += 4) {
        const int n = R - r < 4 ? R - r : 4;
        int lo = nk[r];
        for (int i = 1; i < n; i++)
            lo = nk[r + i] < lo ? nk[r + i] : lo;
        for (int e0 = 0; e0 < D; e0 += 64) {
            pv_block(O, P, V, r, n, e0, D, 0, lo);
            for (int i = 0; i < n; i++) /* each row's own further keys, in order */
                if (nk[r + i] > lo)
                    pv_block(O, P, V, r + i, 1, e0, D, lo, nk[r + i]);
        }
    }
}
#else
const int wk_cpu_attn_avx512_built = 0;
void wk_cpu_attn_scores_avx512(float *S, const float *Q, const float *KT, int R, int D)
{
    (void)S, (void)Q, (void)KT, (void)R, (void)D;
}
void wk_cpu_attn_pv_avx512(float *O, const float *P, const float *const *V, const int *nk, int R,
                           int D)
{
    (void)O, (void)P, (void)V, (void)nk, (void)R, (void)D;
}
#endif
