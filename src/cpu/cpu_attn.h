/* cpu_attn.h: the steps of the CPU's attention (cpu_attn.c has the order of operations), in
 * plain C (cpu_attn.c, the definition) and on AVX-512 (cpu_attn_avx512.c): the same operations,
 * so the same bits. Tiles of 64 keys; row-major arrays:
 *   keys:    KT (D, 64) = the tile's nt key rows (row k at K + k * stride elements of dt) as f32,
 *            transposed; columns nt..63 zero
 *   scores:  S[r][k] = fmaf chain over e = 0..D-1 of Q[r][e] * KT[e][k], from +0
 *            (r < R, k < 64; Q (R, D), S (R, 64))
 *   softmax: per row with nk[r] visible keys: s_k *= scale (k < nk[r]), m' = max(m[r], those),
 *            S[r][k] = s_k - m' (k < nk[r]) or -inf, dm[r] = m[r] - m' (0 when nk[r] = 0),
 *            m[r] = m'
 *   rescale: per row with nk[r] > 0: l[r] = l[r] * c[r] + tree(P row), O row *= c[r]
 *   pv:      O[r][e] = fmaf(P[r][k], V[k][e], O[r][e]) for k = 0 .. nk[r] - 1 in order
 *            (r < R, e < D; P (R, 64), O (R, D), V[k] a row of D floats)
 * Called only when the CPU has AVX-512F (the vector math's choice, cpu_vmath.h). Internal to
 * src/cpu. */
#ifndef WK_CPU_ATTN_H
#define WK_CPU_ATTN_H

#include "cpu_ops.h"

void wk_cpu_attn_keys_c(float *KT, const void *K, int64_t stride, wk_dtype dt, int nt, int D);
void wk_cpu_attn_scores_c(float *S, const float *Q, const float *KT, int R, int D);
void wk_cpu_attn_softmax_c(float *S, int R, const int *nk, float scale, float *m, float *dm);
void wk_cpu_attn_rescale_c(float *O, float *l, const float *P, const float *c, const int *nk,
                           int R, int D);
void wk_cpu_attn_pv_c(float *O, const float *P, const float *const *V, const int *nk, int R, int D);
void wk_cpu_attn_keys_avx512(float *KT, const void *K, int64_t stride, wk_dtype dt, int nt, int D);
void wk_cpu_attn_softmax_avx512(float *S, int R, const int *nk, float scale, float *m, float *dm);
void wk_cpu_attn_rescale_avx512(float *O, float *l, const float *P, const float *c, const int *nk,
                                int R, int D);
void wk_cpu_attn_scores_avx512(float *S, const float *Q, const float *KT, int R, int D);
void wk_cpu_attn_pv_avx512(float *O, const float *P, const float *const *V, const int *nk, int R,
                           int D);
extern const int wk_cpu_attn_avx512_built;

#endif
