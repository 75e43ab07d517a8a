/* cpu_attn_avx512.c: the steps of the CPU's attention on AVX-512F (contract: cpu_attn.h).
 * keys: 16 x 16 transposes; scores: 4 query rows x the 64 keys of a tile in 16 accumulators, one
 * FMA chain over e per (row, key) lane; softmax and rescale: a row's 64 scores as 4 vectors; pv:
 * 4 rows x 64 elements of o in 16 accumulators while the keys that all 4 rows see pass (each v
 * row read once for the 4), the rest of each row's keys after, in order. Compiled with
 * -mavx512f -mavx512bw -mavx512vl (cmake/cpu.cmake). */
#include "cpu_attn.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include "cpu_t16.h"
#include <immintrin.h>
#include <math.h>

const int wk_cpu_attn_avx512_built = 1;

/* 16 elements of a key row (f32, f16 or bf16 at p), masked to m, as f32 */
static inline __attribute__((always_inline)) __m512 kload(const void *p, wk_dtype dt, __mmask16 m)
{
    if (dt == WK_DTYPE_F32)
        return _mm512_maskz_loadu_ps(m, p);
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    return wk_widen16_ps(h, dt == WK_DTYPE_F16);
}

void wk_cpu_attn_keys_avx512(float *KT, const void *K, int64_t stride, wk_dtype dt, int nt, int D)
{
    const size_t es = wk_dtype_size(dt);
    for (int k0 = 0; k0 < 64; k0 += 16)
        for (int e0 = 0; e0 < D; e0 += 16) {
            const __mmask16 m = (__mmask16)(D - e0 >= 16 ? 0xFFFF : (1u << (D - e0)) - 1u);
            __m512i r[16];
            for (int i = 0; i < 16; i++)
                r[i] = _mm512_castps_si512(
                    k0 + i < nt ? kload((const char *)K + (size_t)((k0 + i) * stride + e0) * es, dt, m)
                                : _mm512_setzero_ps());
            wk_t16_epi32(r);
            for (int i = 0; i < 16 && e0 + i < D; i++)
                _mm512_storeu_si512(KT + (e0 + i) * 64 + k0, r[i]);
        }
}

void wk_cpu_attn_softmax_avx512(float *S, int R, const int *nk, float scale, float *m, float *dm)
{
    const __m512 sc = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    const __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int r = 0; r < R; r++) {
        float *s = S + r * 64;
        __mmask16 vis[4];
        __m512 v[4];
        __m512 mx = _mm512_set1_ps(m[r]);
        for (int c = 0; c < 4; c++) {
            vis[c] = _mm512_cmplt_epi32_mask(_mm512_add_epi32(idx, _mm512_set1_epi32(16 * c)),
                                             _mm512_set1_epi32(nk[r]));
            v[c] = _mm512_mul_ps(_mm512_loadu_ps(s + 16 * c), sc);
            /* a NaN score leaves the maximum as it is, as the plain C comparison does */
            mx = _mm512_mask_max_ps(mx, vis[c], v[c], mx);
        }
        const float mt = nk[r] ? _mm512_reduce_max_ps(mx) : m[r];
        const __m512 mv = _mm512_set1_ps(mt);
        for (int c = 0; c < 4; c++)
            _mm512_storeu_ps(s + 16 * c, _mm512_mask_sub_ps(ninf, vis[c], v[c], mv));
        dm[r] = nk[r] ? m[r] - mt : 0.0f;
        m[r] = mt;
    }
}

/* the 16-lane tree of cpu_attn.c */
static inline __attribute__((always_inline)) float tree16(__m512 v)
{
    const __m256 t = _mm256_add_ps(_mm512_castps512_ps256(v),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    const __m128 w = _mm_add_ps(u, _mm_movehl_ps(u, u));
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_movehdup_ps(w)));
}

void wk_cpu_attn_rescale_avx512(float *O, float *l, const float *P, const float *c, const int *nk,
                                int R, int D)
{
    for (int r = 0; r < R; r++) {
        if (!nk[r])
            continue;
        const float *p = P + r * 64;
        const __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16)),
                                       _mm512_add_ps(_mm512_loadu_ps(p + 32), _mm512_loadu_ps(p + 48)));
        l[r] = l[r] * c[r] + tree16(v);
        const __m512 cv = _mm512_set1_ps(c[r]);
        float *o = O + r * D;
        for (int e = 0; e < D; e += 16) {
            const __mmask16 m = (__mmask16)(D - e >= 16 ? 0xFFFF : (1u << (D - e)) - 1u);
            _mm512_mask_storeu_ps(o + e, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, o + e), cv));
        }
    }
}

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

/* o (64 elements from e0, masked by m) of one row += p_k v_k for keys [k0, k1) */
static void pv1(float *o, const float *p, const float *const *V, int e0, const __mmask16 m[4], int k0,
                int k1)
{
    __m512 a0 = _mm512_maskz_loadu_ps(m[0], o), a1 = _mm512_maskz_loadu_ps(m[1], o + 16);
    __m512 a2 = _mm512_maskz_loadu_ps(m[2], o + 32), a3 = _mm512_maskz_loadu_ps(m[3], o + 48);
    for (int k = k0; k < k1; k++) {
        const float *v = V[k] + e0;
        const __m512 pk = _mm512_set1_ps(p[k]);
        a0 = _mm512_fmadd_ps(pk, _mm512_maskz_loadu_ps(m[0], v), a0);
        a1 = _mm512_fmadd_ps(pk, _mm512_maskz_loadu_ps(m[1], v + 16), a1);
        a2 = _mm512_fmadd_ps(pk, _mm512_maskz_loadu_ps(m[2], v + 32), a2);
        a3 = _mm512_fmadd_ps(pk, _mm512_maskz_loadu_ps(m[3], v + 48), a3);
    }
    _mm512_mask_storeu_ps(o, m[0], a0);
    _mm512_mask_storeu_ps(o + 16, m[1], a1);
    _mm512_mask_storeu_ps(o + 32, m[2], a2);
    _mm512_mask_storeu_ps(o + 48, m[3], a3);
}

/* 4 rows at once (o rows D apart, p rows 64 apart): each v row read once for the 4 */
static void pv4(float *o, const float *p, const float *const *V, int e0, int D,
                const __mmask16 m[4], int k0, int k1)
{
#define PV_LOAD(i) \
    __m512 a##i##0 = _mm512_maskz_loadu_ps(m[0], o + (i) * D), a##i##1 = _mm512_maskz_loadu_ps(m[1], o + (i) * D + 16), \
           a##i##2 = _mm512_maskz_loadu_ps(m[2], o + (i) * D + 32), a##i##3 = _mm512_maskz_loadu_ps(m[3], o + (i) * D + 48);
    PV_LOAD(0) PV_LOAD(1) PV_LOAD(2) PV_LOAD(3)
    for (int k = k0; k < k1; k++) {
        const float *v = V[k] + e0;
        const __m512 v0 = _mm512_maskz_loadu_ps(m[0], v), v1 = _mm512_maskz_loadu_ps(m[1], v + 16);
        const __m512 v2 = _mm512_maskz_loadu_ps(m[2], v + 32), v3 = _mm512_maskz_loadu_ps(m[3], v + 48);
#define PV_FMA(i)                                                                      \
    {                                                                                  \
        const __m512 pk = _mm512_set1_ps(p[(i) * 64 + k]);                             \
        a##i##0 = _mm512_fmadd_ps(pk, v0, a##i##0), a##i##1 = _mm512_fmadd_ps(pk, v1, a##i##1); \
        a##i##2 = _mm512_fmadd_ps(pk, v2, a##i##2), a##i##3 = _mm512_fmadd_ps(pk, v3, a##i##3); \
    }
        PV_FMA(0) PV_FMA(1) PV_FMA(2) PV_FMA(3)
    }
#define PV_STORE(i)                                                         \
    _mm512_mask_storeu_ps(o + (i) * D, m[0], a##i##0);                     \
    _mm512_mask_storeu_ps(o + (i) * D + 16, m[1], a##i##1);                \
    _mm512_mask_storeu_ps(o + (i) * D + 32, m[2], a##i##2);                \
    _mm512_mask_storeu_ps(o + (i) * D + 48, m[3], a##i##3);
    PV_STORE(0) PV_STORE(1) PV_STORE(2) PV_STORE(3)
#undef PV_LOAD
#undef PV_FMA
#undef PV_STORE
}

void wk_cpu_attn_pv_avx512(float *O, const float *P, const float *const *V, const int *nk, int R,
                           int D)
{
    for (int e0 = 0; e0 < D; e0 += 64) {
        __mmask16 m[4];
        for (int c = 0; c < 4; c++) {
            const int w = D - e0 - 16 * c;
            m[c] = (__mmask16)(w >= 16 ? 0xFFFF : w <= 0 ? 0 : (1u << w) - 1u);
        }
        int r = 0;
        for (; r + 4 <= R; r += 4) {
            int lo = nk[r];
            for (int i = 1; i < 4; i++)
                lo = nk[r + i] < lo ? nk[r + i] : lo;
            pv4(O + r * D + e0, P + r * 64, V, e0, D, m, 0, lo);
            for (int i = 0; i < 4; i++) /* each row's own further keys, in order */
                if (nk[r + i] > lo)
                    pv1(O + (r + i) * D + e0, P + (r + i) * 64, V, e0, m, lo, nk[r + i]);
        }
        for (; r < R; r++)
            pv1(O + r * D + e0, P + r * 64, V, e0, m, 0, nk[r]);
    }
}
#else
const int wk_cpu_attn_avx512_built = 0;
void wk_cpu_attn_keys_avx512(float *KT, const void *K, int64_t stride, wk_dtype dt, int nt, int D)
{
    wk_cpu_attn_keys_c(KT, K, stride, dt, nt, D);
}
void wk_cpu_attn_softmax_avx512(float *S, int R, const int *nk, float scale, float *m, float *dm)
{
    wk_cpu_attn_softmax_c(S, R, nk, scale, m, dm);
}
void wk_cpu_attn_rescale_avx512(float *O, float *l, const float *P, const float *c, const int *nk,
                                int R, int D)
{
    wk_cpu_attn_rescale_c(O, l, P, c, nk, R, D);
}
void wk_cpu_attn_scores_avx512(float *S, const float *Q, const float *KT, int R, int D)
{
    wk_cpu_attn_scores_c(S, Q, KT, R, D);
}
void wk_cpu_attn_pv_avx512(float *O, const float *P, const float *const *V, const int *nk, int R,
                           int D)
{
    wk_cpu_attn_pv_c(O, P, V, nk, R, D);
}
#endif
