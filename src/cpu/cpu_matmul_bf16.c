/* cpu_matmul_bf16.c: a bf16 gemm for CPUs with AVX512-BF16 (vdpbf16ps, two bf16 products summed
 * into an f32 lane per instruction), used by cpu_matmul.c for bf16 matmuls when the CPU has it.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512bf16 (cmake/cpu.cmake); called only after
 * cpu_matmul.c checked the CPU at run time. Empty elsewhere (wk_cpu_bf16gemm_built is 0).
 *
 *   c (m x n, bf16, row stride ldc) = a (m x k, bf16, element strides sam, sak)
 *                                   @ b (k x n, bf16, element strides sbk, sbn)
 *
 * The operands are read as bf16 pairs, the layout vdpbf16ps wants: B is packed into panels of
 * NR columns, for each k pair q the NR dwords (b[2q][j], b[2q+1][j]); a row-major A already has
 * its pairs (a[i][2q], a[i][2q+1]) as dwords and is read in place, any other A is packed into
 * panels of MR rows, for each q the MR dwords. An odd k pads its last pair with zero; rows and
 * columns past m and n are zero (or repeat the last row). The micro-kernel keeps an MR x NR block of f32
 * sums in registers over the whole k, one vdpbf16ps per 16 columns and pair, and rounds it to
 * bf16 once (round to nearest even, the rounding of src/core/fpconv.h).
 *
 * Every output element is the same chain of operations whatever the threads or tiles:
 * s = +0; for q = 0 .. ceil(k/2)-1: s = vdpbf16ps(s, a pair q, b pair q); so results are the same
 * bits on every run and every thread count. vdpbf16ps treats bf16 subnormal inputs as zero and
 * flushes subnormal f32 results to zero (docs/semantics.md, Matmul). */
#include "cpu_ops.h"
#include <omp.h>
#include <string.h>

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512BF16__)
#include <immintrin.h>

const int wk_cpu_bf16gemm_built = 1;

#define MR 8  /* rows of the micro-kernel: MR x 2 accumulators */
#define NR 32 /* columns: two zmm of 16 f32 */
#define ALIGN 64

static int64_t round_up(int64_t x, int64_t r)
{
    return (x + r - 1) / r * r;
}

static uint32_t load_pair(const uint16_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint32_t make_pair(uint16_t lo, uint16_t hi)
{
    return (uint32_t)lo | (uint32_t)hi << 16;
}

/* dst (kp x w dwords): dst[q w + i] = the pair (line_i[2q], line_i[2q+1]) of the lines i < cnt,
 * line_i = src + i sl with its elements sk apart (an odd k's last element pairs with 0); lines
 * from cnt to w are zero. The rows of a (w = MR) and the columns of a b that is not row-major. */
static void pack_pairs(uint32_t *dst, int w, const uint16_t *src, int64_t sl, int64_t sk, int64_t k,
                       int cnt)
{
    const int64_t kp = (k + 1) / 2, k2 = k / 2;
    if (cnt < w)
        memset(dst, 0, (size_t)(kp * w) * 4);
    if (sk == 1) { /* a line's pairs are adjacent dwords */
        for (int i = 0; i < cnt; i++) {
            const uint16_t *line = src + i * sl;
            uint32_t *d = dst + i;
            for (int64_t q = 0; q < k2; q++)
                d[q * w] = load_pair(line + 2 * q);
            if (k & 1)
                d[k2 * w] = line[k - 1];
        }
        return;
    }
    for (int64_t q = 0; q < kp; q++) {
        const uint16_t *lo = src + 2 * q * sk, *hi = lo + sk;
        const int odd = 2 * q + 1 == k;
        uint32_t *d = dst + q * w;
        for (int i = 0; i < cnt; i++)
            d[i] = make_pair(lo[i * sl], odd ? 0 : hi[i * sl]);
    }
}

/* dst (kp x NR dwords) = columns j0 .. j0+nr-1 of b as pairs; columns past nr are zero. */
static void pack_b(uint32_t *dst, const uint16_t *b, int64_t sbk, int64_t sbn, int64_t k, int nr)
{
    const int64_t kp = (k + 1) / 2;
    if (sbn == 1) { /* row-major: interleave two rows of 32 bf16 into 32 pairs */
        const __mmask32 mk = nr == NR ? ~(__mmask32)0 : (((__mmask32)1 << nr) - 1);
        __m512i ilo, ihi;
        {
            short il[32], ih[32];
            for (int t = 0; t < 16; t++) {
                il[2 * t] = (short)t, il[2 * t + 1] = (short)(32 + t);
                ih[2 * t] = (short)(16 + t), ih[2 * t + 1] = (short)(48 + t);
            }
            ilo = _mm512_loadu_si512(il);
            ihi = _mm512_loadu_si512(ih);
        }
        for (int64_t q = 0; q < kp; q++) {
            const uint16_t *lo = b + 2 * q * sbk;
            const __m512i x = _mm512_maskz_loadu_epi16(mk, lo);
            const __m512i y = 2 * q + 1 == k ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi16(mk, lo + sbk);
            _mm512_storeu_si512(dst + q * NR, _mm512_permutex2var_epi16(x, ilo, y));
            _mm512_storeu_si512(dst + q * NR + 16, _mm512_permutex2var_epi16(x, ihi, y));
        }
        return;
    }
    pack_pairs(dst, NR, b, sbn, sbk, k, nr);
}

/* 16 f32 -> 16 bf16, wk_fp_f32_to_bf16 lane by lane: round to nearest even, NaN kept quiet. */
static __m256i f32_to_bf16x16(__m512 v)
{
    const __m512i x = _mm512_castps_si512(v);
    const __m512i top = _mm512_srli_epi32(x, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_and_si512(top, _mm512_set1_epi32(1)),
                                          _mm512_set1_epi32(0x7fff));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(top, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

/* c (mr x nr of an MR x NR block, row stride ldc) = MR rows of A @ the packed B panel bp.
 * Row r's pair q is the dword at ar[r] + q * astep (bf16 elements): astep 2 reads a row-major A
 * in place, astep 2 MR a packed panel. nq pairs are read that way; tail adds one pair (ar[r][2 nq],
 * 0) for a row-major A of odd k (whose last pair is not in memory). */
static void micro(int64_t nq, int tail, const uint16_t *const ar[MR], int64_t astep,
                  const uint32_t *bp, uint16_t *c, int64_t ldc, int mr, int nr)
{
    __m512 s0[MR], s1[MR];
    const uint16_t *p[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++)
        s0[r] = _mm512_setzero_ps(), s1[r] = _mm512_setzero_ps(), p[r] = ar[r];
    for (int64_t q = 0; q < nq; q++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            const __m512bh x = (__m512bh)_mm512_set1_epi32((int)load_pair(p[r]));
            s0[r] = _mm512_dpbf16_ps(s0[r], x, b0);
            s1[r] = _mm512_dpbf16_ps(s1[r], x, b1);
            p[r] += astep;
        }
        bp += NR;
    }
    if (tail) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
        for (int r = 0; r < MR; r++) {
            const __m512bh x = (__m512bh)_mm512_set1_epi32((int)p[r][0]);
            s0[r] = _mm512_dpbf16_ps(s0[r], x, b0);
            s1[r] = _mm512_dpbf16_ps(s1[r], x, b1);
        }
    }
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (int r = 0; r < mr; r++) {
        _mm256_mask_storeu_epi16(c + r * ldc, m0, f32_to_bf16x16(s0[r]));
        if (m1)
            _mm256_mask_storeu_epi16(c + r * ldc + 16, m1, f32_to_bf16x16(s1[r]));
    }
}

/* The work is split in units of MC rows x nc columns of the output. A unit packs its nc columns
 * of B (k x nc, kept in L2) into its thread's buffer, unless that buffer already holds them,
 * then runs each MR-row panel of A against the unit's NR-column panels (the A panel, MR x k, in
 * L1). A row-major A is read in place; any other A is packed once, shared by all threads.
 * Units need nothing from each other, so a thread stalled by the machine delays only its own
 * unit. The sizes shape the split only, never the results. */
#define MC 128
#define B_BLOCK_BYTES (384 * 1024)

static int64_t unit_cols(int64_t kp)
{
    int64_t nc = B_BLOCK_BYTES / 4 / (kp > 0 ? kp : 1) / NR * NR;
    return nc < NR ? NR : nc > 512 ? 512 : nc;
}

/* Bytes of workspace: the shared packed A (when A is not row-major) and one B block per thread. */
size_t wk_cpu_bf16gemm_ws(int64_t m, int64_t n, int64_t k, int64_t sak, int nthreads)
{
    const int64_t kp = (k + 1) / 2, nc = unit_cols(kp);
    const int64_t abytes = sak == 1 ? 0 : round_up(m, MR) * kp * 4;
    return (size_t)(round_up(abytes, ALIGN) + nthreads * round_up(nc * kp * 4, ALIGN) + ALIGN);
}

/* One gemm's shape and operands, shared by the threads that run it. */
typedef struct gemm_job {
    int64_t m, n, k, kp, nc, tm, tn;
    const uint16_t *a, *b;
    int64_t sam, sak, sbk, sbn, ldc;
    uint16_t *c;
    uint32_t *ap; /* the packed A, or NULL (row-major A, read in place) */
    char *bbuf;   /* the threads' B blocks */
    size_t bstride;
} gemm_job;

static void job_pack_a(const gemm_job *g, int64_t p)
{
    const int64_t i0 = p * MR;
    pack_pairs(g->ap + p * MR * g->kp, MR, g->a + i0 * g->sam, g->sam, g->sak, g->k,
               (int)(g->m - i0 < MR ? g->m - i0 : MR));
}

/* Unit t of the output, run by thread tid; *have is the column block its B buffer holds. */
static void job_unit(const gemm_job *g, int64_t t, int tid, int64_t *have)
{
    const int64_t jb = t / g->tm, i0 = t % g->tm * MC, j0 = jb * g->nc;
    const int64_t i1 = i0 + MC < g->m ? i0 + MC : g->m, j1 = j0 + g->nc < g->n ? j0 + g->nc : g->n;
    uint32_t *bp = (uint32_t *)(g->bbuf + (size_t)tid * g->bstride);
    if (*have != jb) {
        for (int64_t j = j0; j < j1; j += NR)
            pack_b(bp + (j - j0) * g->kp, g->b + j * g->sbn, g->sbk, g->sbn, g->k,
                   (int)(j1 - j < NR ? j1 - j : NR));
        *have = jb;
    }
    for (int64_t i = i0; i < i1; i += MR) {
        const int mr = (int)(i1 - i < MR ? i1 - i : MR);
        const uint16_t *ar[MR];
        int64_t astep, nq;
        int tail;
        if (g->ap) { /* packed: row r of the panel is the r-th dword of each group of MR */
            const uint16_t *base = (const uint16_t *)(g->ap + i / MR * MR * g->kp);
            for (int r = 0; r < MR; r++)
                ar[r] = base + 2 * r;
            astep = 2 * MR, nq = g->kp, tail = 0;
        } else { /* in place; rows past m repeat the last row (their sums are not stored) */
            for (int r = 0; r < MR; r++)
                ar[r] = g->a + (i + (r < mr ? r : mr - 1)) * g->sam;
            astep = 2, nq = g->k / 2, tail = (int)(g->k & 1);
        }
        for (int64_t j = j0; j < j1; j += NR)
            micro(nq, tail, ar, astep, bp + (j - j0) * g->kp, g->c + i * g->ldc + j, g->ldc, mr,
                  (int)(j1 - j < NR ? j1 - j : NR));
    }
}

void wk_cpu_bf16gemm(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t sam, int64_t sak,
                     const uint16_t *b, int64_t sbk, int64_t sbn, uint16_t *c, int64_t ldc, void *ws,
                     int team)
{
    gemm_job g = {.m = m, .n = n, .k = k, .kp = (k + 1) / 2, .a = a, .b = b, .sam = sam, .sak = sak,
                  .sbk = sbk, .sbn = sbn, .c = c, .ldc = ldc};
    g.nc = unit_cols(g.kp), g.tm = (m + MC - 1) / MC, g.tn = (n + g.nc - 1) / g.nc;
    char *w = (char *)(((uintptr_t)ws + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    const int64_t pm = round_up(m, MR) / MR, nt = g.tm * g.tn;
    g.ap = sak == 1 ? NULL : (uint32_t *)w;
    g.bbuf = w + round_up(sak == 1 ? 0 : pm * MR * g.kp * 4, ALIGN);
    g.bstride = (size_t)round_up(g.nc * g.kp * 4, ALIGN);
    int64_t have = -1;
    if (!team) {
        for (int64_t p = 0; g.ap && p < pm; p++)
            job_pack_a(&g, p);
        for (int64_t t = 0; t < nt; t++)
            job_unit(&g, t, 0, &have);
        return;
    }
    /* every thread of the enclosing parallel region; units handed out as threads come free (a
     * shared machine stalls threads unevenly). The loops' implicit barriers order the packing of
     * A before its use, and the units before the next gemm reuses ws. */
    const int tid = omp_get_thread_num();
    if (g.ap) {
#pragma omp for schedule(dynamic, 4)
        for (int64_t p = 0; p < pm; p++)
            job_pack_a(&g, p);
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < nt; t++)
        job_unit(&g, t, tid, &have);
}

#else
const int wk_cpu_bf16gemm_built = 0;

size_t wk_cpu_bf16gemm_ws(int64_t m, int64_t n, int64_t k, int64_t sak, int nthreads)
{
    return 0;
}

void wk_cpu_bf16gemm(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t sam, int64_t sak,
                     const uint16_t *b, int64_t sbk, int64_t sbn, uint16_t *c, int64_t ldc, void *ws,
                     int team)
{
}
#endif
