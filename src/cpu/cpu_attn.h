/* cpu_attn.h: the two products of the CPU's attention, in plain C (cpu_attn.c, the definition)
 * and on AVX-512 (cpu_attn_avx512.c): the same operations, so the same bits:
 *   scores: S[r][k] = fmaf chain over e = 0..D-1 of Q[r][e] * KT[e][k], from +0
 *           (r < R, k < 64; Q (R, D), KT (D, 64), S (R, 64), row-major)
 *   pv:     O[r][e] = fmaf(P[r][k], V[k][e], O[r][e]) for k = 0 .. nk[r] - 1 in order
 *           (r < R, e < D; P (R, 64), O (R, D), V[k] a row of D floats)
 * Called only when the CPU has AVX-512F (the vector math's choice, cpu_vmath.h). Internal to
 * src/cpu. */
#ifndef WK_CPU_ATTN_H
#define WK_CPU_ATTN_H

#include "cpu_ops.h"

void wk_cpu_attn_scores_c(float *S, const float *Q, const float *KT, int R, int D);
void wk_cpu_attn_pv_c(float *O, const float *P, const float *const *V, const int *nk, int R, int D);
void wk_cpu_attn_scores_avx512(float *S, const float *Q, const float *KT, int R, int D);
void wk_cpu_attn_pv_avx512(float *O, const float *P, const float *const *V, const int *nk, int R,
                           int D);
extern const int wk_cpu_attn_avx512_built;

#endif
