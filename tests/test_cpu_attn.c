/* test_cpu_attn.c: the CPU attention's promises beyond its accuracy (which tests/test_attn.c
 * checks against the float64 reference): docs/semantics.md, "Decode attention", the CPU's order.
 *   1. The steps (src/cpu/cpu_attn.h: keys, scores, softmax, rescale, pv) give the same bits in
 *      plain C and on AVX-512 (when this CPU has it): row counts 1..9 (the 4-row blocks and their
 *      tail), D 7, 64, 128, 200 (masked lanes), per-row key counts that differ inside a block and
 *      rows with none, a NaN score, values with inf and NaN in keys a row does not see (they must
 *      not be read for it), a key tile cut short.
 *   2. wk_decode_attention on the CPU gives the same bits on 1 and 2 threads, and a causal
 *      prefill's row i (Lq = Lk = L, grouped-query 8 on 2 heads, L = 150 and 1000: several key
 *      tiles, several query items) equals the one-query call on the first i + 1 keys: a row does
 *      not depend on the other queries of the call.
 * Run: ctest -R test_cpu_attn (seconds) */
#include "cpu/cpu_attn.h"
#include "testlib.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rs = 12345u;
static float urand(void)
{
    rs = rs * 1664525u + 1013904223u;
    return (float)((double)(rs >> 8) / 16777216.0 * 2.0 - 1.0);
}

static int same_bits(const float *a, const float *b, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof *a) && !(isnan(a[i]) && isnan(b[i]))) {
            *at = i;
            return 0;
        }
    return 1;
}

static void products(void)
{
    if (!wk_cpu_attn_avx512_built || !__builtin_cpu_supports("avx512f")) {
        printf("skip: the AVX-512 products (not built or not on this CPU)\n");
        return;
    }
    static const int DS[] = {7, 64, 128, 200};
    for (int di = 0; di < 4; di++)
        for (int R = 1; R <= 9; R++) {
            const int D = DS[di];
            float *Q = malloc(sizeof(float) * (size_t)(R * D)), *KT = malloc(sizeof(float) * (size_t)(D * 64));
            float *S1 = malloc(sizeof(float) * (size_t)(R * 64)), *S2 = malloc(sizeof(float) * (size_t)(R * 64));
            float *Vb = malloc(sizeof(float) * (size_t)(64 * D));
            float *O1 = malloc(sizeof(float) * (size_t)(R * D)), *O2 = malloc(sizeof(float) * (size_t)(R * D));
            const float *V[64];
            int nk[9];
            if (!TEST_CHECK(Q && KT && S1 && S2 && Vb && O1 && O2, "out of memory"))
                return;
            for (int i = 0; i < R * D; i++)
                Q[i] = urand();
            for (int i = 0; i < D * 64; i++)
                KT[i] = urand();
            for (int r = 0; r < R; r++)
                nk[r] = 64 - 7 * ((r * 5 + D) % 9); /* differ inside a block of 4 */
            int nmax = 0;
            for (int r = 0; r < R; r++)
                nmax = nk[r] > nmax ? nk[r] : nmax;
            for (int k = 0; k < 64; k++) {
                for (int e = 0; e < D; e++)
                    Vb[k * D + e] = k < nmax ? urand() : (k % 2 ? INFINITY : NAN);
                V[k] = Vb + k * D;
            }
            wk_cpu_attn_scores_c(S1, Q, KT, R, D);
            wk_cpu_attn_scores_avx512(S2, Q, KT, R, D);
            size_t at = 0;
            TEST_CHECK(same_bits(S1, S2, (size_t)(R * 64), &at), "scores R=%d D=%d: [%zu] %a vs %a",
                       R, D, at, (double)S1[at], (double)S2[at]);
            for (int i = 0; i < R * 64; i++) /* weights in [0, 1] */
                S1[i] = 0.5f * (urand() + 1.0f);
            for (int i = 0; i < R * D; i++)
                O1[i] = O2[i] = urand();
            /* keys past a row's count hold inf / NaN only beyond every row's count (nmax) */
            wk_cpu_attn_pv_c(O1, S1, V, nk, R, D);
            wk_cpu_attn_pv_avx512(O2, S1, V, nk, R, D);
            TEST_CHECK(same_bits(O1, O2, (size_t)(R * D), &at), "pv R=%d D=%d: [%zu] %a vs %a", R, D,
                       at, (double)O1[at], (double)O2[at]);
            for (int i = 0; i < R * D; i++)
                TEST_CHECK(isfinite(O1[i]), "pv R=%d D=%d: O[%d] = %g read a key past its count",
                           R, D, i, (double)O1[i]);
            /* keys: f32 rows of stride D + 3, the tile cut at nt = 64 - 5 R */
            {
                const int nt = 64 - 5 * R;
                float *K = malloc(sizeof(float) * (size_t)(64 * (D + 3)));
                float *T1 = malloc(sizeof(float) * (size_t)(D * 64)), *T2 = malloc(sizeof(float) * (size_t)(D * 64));
                if (!TEST_CHECK(K && T1 && T2, "out of memory"))
                    return;
                for (int i = 0; i < 64 * (D + 3); i++)
                    K[i] = urand();
                for (int i = 0; i < D * 64; i++)
                    T1[i] = T2[i] = NAN;
                wk_cpu_attn_keys_c(T1, K, D + 3, WK_DTYPE_F32, nt, D);
                wk_cpu_attn_keys_avx512(T2, K, D + 3, WK_DTYPE_F32, nt, D);
                TEST_CHECK(same_bits(T1, T2, (size_t)(D * 64), &at), "keys R=%d D=%d: [%zu] %a vs %a",
                           R, D, at, (double)T1[at], (double)T2[at]);
                TEST_CHECK(T1[1] == K[D + 3] && T1[64 + 2] == K[2 * (D + 3) + 1] &&
                           (nt == 64 || T1[63] == 0.0f), "keys R=%d D=%d: not the transpose", R, D);
                free(K), free(T1), free(T2);
            }
            /* softmax and rescale: scores with a NaN and ties, rows without a visible key */
            {
                float m1[9], m2[9], d1[9], d2[9], l1[9], l2[9], c[9];
                for (int i = 0; i < R * 64; i++)
                    S1[i] = S2[i] = 4.0f * urand();
                S1[5] = S2[5] = NAN;
                for (int r = 0; r < R; r++) {
                    nk[r] = (r * 23) % 65;
                    m1[r] = m2[r] = r % 3 ? -INFINITY : urand();
                    l1[r] = l2[r] = urand() + 1.0f;
                    c[r] = 0.5f * (urand() + 1.0f);
                }
                wk_cpu_attn_softmax_c(S1, R, nk, 0.125f, m1, d1);
                wk_cpu_attn_softmax_avx512(S2, R, nk, 0.125f, m2, d2);
                TEST_CHECK(same_bits(S1, S2, (size_t)(R * 64), &at) && same_bits(m1, m2, (size_t)R, &at) &&
                           same_bits(d1, d2, (size_t)R, &at), "softmax R=%d D=%d differs", R, D);
                for (int i = 0; i < R * 64; i++)
                    S1[i] = 0.5f * (urand() + 1.0f);
                for (int i = 0; i < R * D; i++)
                    O1[i] = O2[i] = urand();
                wk_cpu_attn_rescale_c(O1, l1, S1, c, nk, R, D);
                wk_cpu_attn_rescale_avx512(O2, l2, S1, c, nk, R, D);
                TEST_CHECK(same_bits(O1, O2, (size_t)(R * D), &at) && same_bits(l1, l2, (size_t)R, &at),
                           "rescale R=%d D=%d differs", R, D);
            }
            free(Q), free(KT), free(S1), free(S2), free(Vb), free(O1), free(O2);
        }
}

/* out (1, Hq, Lq, D) of the causal attention of q (Lq rows) over the first Lk keys */
static float *attend(wk_device *cpu, const float *q, const float *k, const float *v, int64_t Hq,
                     int64_t Hkv, int64_t Lq, int64_t Lk, int64_t Lmax, int64_t D, int64_t q0)
{
    /* q rows q0 .. q0 + Lq - 1 of a (1, Hq, Lmax, D) tensor; k, v (1, Hkv, Lmax, D) views */
    wk_storage *qs = testlib_upload(cpu, WK_DTYPE_F32, q, (size_t)(Hq * Lmax * D));
    wk_storage *ks = testlib_upload(cpu, WK_DTYPE_F32, k, (size_t)(Hkv * Lmax * D));
    wk_storage *vs = testlib_upload(cpu, WK_DTYPE_F32, v, (size_t)(Hkv * Lmax * D));
    wk_storage *o = NULL;
    float *out = malloc(sizeof(float) * (size_t)(Hq * Lq * D));
    const int64_t qd[4] = {1, Hq, Lq, D}, qst[4] = {Hq * Lmax * D, Lmax * D, D, 1};
    const int64_t kd[4] = {1, Hkv, Lk, D}, kst[4] = {Hkv * Lmax * D, Lmax * D, D, 1};
    wk_layout lq = {.rank = 4, .offset = q0 * D}, lk = {.rank = 4};
    for (int d = 0; d < 4; d++) {
        lq.dims[d] = qd[d], lq.strides[d] = qst[d];
        lk.dims[d] = kd[d], lk.strides[d] = kst[d];
    }
    if (!qs || !ks || !vs || !out ||
        !TEST_EQ_STATUS(wk_decode_attention(&o, qs, &lq, ks, &lk, vs, &lk, 0.088388f, 1), WK_OK) ||
        testlib_download(out, (size_t)(Hq * Lq * D), o)) {
        free(out);
        out = NULL;
    }
    wk_storage_free(qs), wk_storage_free(ks), wk_storage_free(vs), wk_storage_free(o);
    return out;
}

static void invariance(wk_device *cpu, int64_t L)
{
    const int64_t Hq = 8, Hkv = 2, D = 128;
    float *q = malloc(sizeof(float) * (size_t)(Hq * L * D)), *k = malloc(sizeof(float) * (size_t)(Hkv * L * D));
    float *v = malloc(sizeof(float) * (size_t)(Hkv * L * D));
    if (!TEST_CHECK(q && k && v, "out of memory"))
        return;
    for (int64_t i = 0; i < Hq * L * D; i++)
        q[i] = 3.0f * urand();
    for (int64_t i = 0; i < Hkv * L * D; i++)
        k[i] = urand(), v[i] = urand();
    omp_set_num_threads(1);
    float *a1 = attend(cpu, q, k, v, Hq, Hkv, L, L, L, D, 0);
    omp_set_num_threads(2);
    float *a2 = attend(cpu, q, k, v, Hq, Hkv, L, L, L, D, 0);
    size_t at = 0;
    if (a1 && a2)
        TEST_CHECK(same_bits(a1, a2, (size_t)(Hq * L * D), &at),
                   "L=%lld: 1 and 2 threads differ at [%zu]: %a vs %a", (long long)L, at,
                   (double)a1[at], (double)a2[at]);
    for (int64_t i = 0; a2 && i < L; i += i < 70 ? 1 : 37) { /* row i alone, on keys 0..i */
        float *one = attend(cpu, q, k, v, Hq, Hkv, 1, i + 1, L, D, i);
        if (!one)
            break;
        for (int64_t h = 0; h < Hq; h++)
            if (!TEST_CHECK(same_bits(one + h * D, a2 + (h * L + i) * D, (size_t)D, &at),
                            "L=%lld: row %lld head %lld alone differs from the prefill's at "
                            "element %zu", (long long)L, (long long)i, (long long)h, at))
                break;
        free(one);
    }
    free(a1), free(a2), free(q), free(k), free(v);
}

int main(void)
{
    wk_device *cpu;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    products();
    invariance(cpu, 150);
    invariance(cpu, 1000);
    wk_device_close(cpu);
    return testlib_summary();
}
