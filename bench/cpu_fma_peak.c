/* cpu_fma_peak.c: the multiply-add peaks of this CPU's cores, on 1 and 2 threads: the ceilings
 * that the compute-bound rows of bench/cpu_compare.py (conv2d, conv1d, matmul) and the quantized
 * products (bench/cpu_qmv.c, the llama example's prefill) are measured against in
 * docs/performance.md. A benchmark, not a test; x86-64 with AVX-512F.
 *   - f32: AVX-512F FMA, 24 independent zmm accumulator chains, nothing loaded;
 *   - int8 VNNI: vpdpbusd (64 u8 x s8 products into 16 int32 lanes), 24 chains (needs
 *     AVX512-VNNI);
 *   - int8 AMX: tdpbssd on full 16 x 64 tiles (16384 products each), 4 accumulator tiles
 *     (needs AMX-INT8 and the kernel's grant of the tile data, asked with arch_prctl);
 *   - read bandwidth from memory, the ceiling of the decode matvecs: a 1 GiB buffer, each thread
 *     a contiguous share, summed 64 bytes at a time either as one sequential stream or as 16
 *     interleaved row streams of 2304 bytes (16 weight rows of a q4_0 row of k = 4096, the
 *     order of the AVX-512 decode functions: line c of rows 0..15, then line c + 1), no
 *     software prefetch.
 * Rates in multiply-adds per second (MAC/s; GFLOP/s = 2 x GMAC/s), bandwidth in GB/s (1e9).
 *   cc -O2 -mavx512f -mavx512vnni -mamx-tile -mamx-int8 -fopenmp bench/cpu_fma_peak.c \
 *      -o /tmp/fma_peak && /tmp/fma_peak */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* iters x 24 FMAs of 16 lanes in 24 named registers; returns a value that depends on every
 * chain (so nothing is optimised away) */
#define CH(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) \
    X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
static float chains(long iters)
{
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#define DECL(r) __m512 c##r = _mm512_set1_ps((float)(r));
    CH(DECL)
    for (long i = 0; i < iters; i++) {
#define STEP(r) c##r = _mm512_fmadd_ps(c##r, a, b);
        CH(STEP)
        __asm__ volatile("" ::: "memory");
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(r) s = _mm512_add_ps(s, c##r);
    CH(SUM)
    return _mm512_reduce_add_ps(s);
}

/* iters x 24 vpdpbusd of 16 lanes x 4 products */
static float chains_vnni(long iters)
{
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
#define DECLI(r) __m512i i##r = _mm512_set1_epi32(r);
    CH(DECLI)
    for (long i = 0; i < iters; i++) {
/* each chain pinned to a register by an empty asm (a memory clobber here made GCC keep the
 * chains on the stack: a store per vpdpbusd, half the rate on the AMD EPYC) */
#define STEPI(r) i##r = _mm512_dpbusd_epi32(i##r, a, b); __asm__ volatile("" : "+v"(i##r));
        CH(STEPI)
    }
    __m512i s = _mm512_setzero_si512();
#define SUMI(r) s = _mm512_add_epi32(s, i##r);
    CH(SUMI)
    return (float)_mm512_reduce_add_epi32(s);
}

/* iters x 4 tdpbssd of full tiles: C0..C3 (tiles 0-3) += A (4) x B (5, 6, 7 alternating) */
typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

static float chains_amx(long iters)
{
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++)
        c.rows[t] = 16, c.colsb[t] = 64;
    _tile_loadconfig(&c);
    static int8_t buf[16 * 64];
    memset(buf, 1, sizeof buf);
    _tile_loadd(4, buf, 64);
    _tile_loadd(5, buf, 64);
    _tile_loadd(6, buf, 64);
    _tile_loadd(7, buf, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long i = 0; i < iters; i++) {
        _tile_dpbssd(0, 4, 5);
        _tile_dpbssd(1, 4, 6);
        _tile_dpbssd(2, 4, 7);
        _tile_dpbssd(3, 4, 5);
    }
    int32_t out[16 * 16];
    _tile_stored(0, out, 64);
    _tile_release();
    return (float)out[0];
}

static int amx_ready(void)
{
    unsigned long bits = 0;
    return __builtin_cpu_supports("amx-int8") && syscall(SYS_arch_prctl, 0x1023, 18) == 0 &&
           syscall(SYS_arch_prctl, 0x1022, &bits) == 0 && ((bits >> 18) & 1u);
}

/* the best of 5 runs of fn on nt threads; per = multiply-adds of one iteration */
static void peak(const char *what, float (*fn)(long), long iters, double per)
{
    for (int nt = 1; nt <= 2; nt++) {
        double best = 1e30;
        float sink = 0;
        for (int rep = 0; rep < 5; rep++) {
            const double t0 = now();
#pragma omp parallel num_threads(nt) reduction(+ : sink)
            sink += fn(iters);
            const double t = now() - t0;
            best = t < best ? t : best;
        }
        const double macs = per * (double)iters * nt;
        printf("%-9s %d thread(s): %8.1f GMAC/s (%.1f per thread)  [%g]\n", what, nt,
               macs / best * 1e-9, macs / best * 1e-9 / nt, (double)sink);
    }
}

/* the sum of the bytes [0, n) of a as 16 interleaved streams of rows of rb bytes (rows = 16: the
 * group of the decode functions) or one stream (rows = 1) */
static long read_share(const uint8_t *a, size_t n, int rows, size_t rb)
{
    __m512i acc = _mm512_setzero_si512();
    const size_t group = (size_t)rows * rb;
    for (size_t g = 0; g + group <= n; g += group)
        for (size_t o = 0; o < rb; o += 64)
            for (int r = 0; r < rows; r++)
                acc = _mm512_add_epi64(acc, _mm512_load_si512(a + g + (size_t)r * rb + o));
    return _mm512_reduce_add_epi64(acc);
}

/* GB/s of read_share over the buffer, the best of 5 runs on nt threads */
static void bandwidth(const char *what, const uint8_t *a, size_t n, int rows, size_t rb)
{
    for (int nt = 1; nt <= 2; nt++) {
        double best = 1e30;
        long sink = 0;
        for (int rep = 0; rep < 5; rep++) {
            const double t0 = now();
#pragma omp parallel num_threads(nt) reduction(+ : sink)
            {
                const size_t share = n / (size_t)nt / 4608 * 4608; /* whole groups of rows */
                sink += read_share(a + share * (size_t)omp_get_thread_num(), share, rows, rb);
            }
            const double t = now() - t0;
            best = t < best ? t : best;
        }
        printf("%-9s %d thread(s): %8.1f GB/s  [%ld]\n", what, nt,
               (double)(n / (size_t)nt / 4608 * 4608) * nt / best * 1e-9, sink);
    }
}

int main(void)
{
    peak("f32 FMA", chains, 20000000, 16.0 * 24);
    if (__builtin_cpu_supports("avx512vnni"))
        peak("int8 VNNI", chains_vnni, 20000000, 64.0 * 24);
    else
        printf("int8 VNNI: not on this CPU\n");
    if (amx_ready())
        peak("int8 AMX", chains_amx, 2000000, 4.0 * 16 * 16 * 64);
    else
        printf("int8 AMX: not on this CPU (or the kernel did not grant the tile data)\n");
    const size_t n = (size_t)1 << 30;
    uint8_t *a = aligned_alloc(64, n);
    if (!a)
        return 1;
    memset(a, 1, n);
    bandwidth("read seq", a, n, 1, 2304);
    bandwidth("read 16x", a, n, 16, 2304);
    free(a);
    return 0;
}
