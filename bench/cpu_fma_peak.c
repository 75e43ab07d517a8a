/* cpu_fma_peak.c: the f32 FMA peak of this CPU's cores with AVX-512F (24 independent zmm
 * accumulator chains, nothing loaded), on 1 and 2 threads: the ceiling that the compute-bound
 * rows of bench/cpu_compare.py (conv2d, conv1d, matmul) are measured against in
 * docs/performance.md. A benchmark, not a test; x86-64 with AVX-512F only.
 *   cc -O2 -mavx512f -fopenmp bench/cpu_fma_peak.c -o /tmp/fma_peak && /tmp/fma_peak */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>

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

int main(void)
{
    const long iters = 20000000;
    for (int nt = 1; nt <= 2; nt++) {
        double best = 1e30;
        float sink = 0;
        for (int rep = 0; rep < 5; rep++) {
            const double t0 = now();
#pragma omp parallel num_threads(nt) reduction(+ : sink)
            sink += chains(iters);
            const double t = now() - t0;
            best = t < best ? t : best;
        }
        const double flops = 2.0 * 16 * 24 * (double)iters * nt;
        printf("%d thread(s): %.1f GFLOP/s f32 FMA peak (%.1f per thread)  [%g]\n", nt,
               flops / best * 1e-9, flops / best * 1e-9 / nt, (double)sink);
    }
    return 0;
}
