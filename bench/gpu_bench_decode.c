/* gpu_bench_decode.c: the decode-path figures of docs/performance.md (not a test).
 *   build: target wick_gpu_bench_decode (cmake/decode.cmake); run:
 *   build/wick_gpu_bench_decode [--device D]
 * Rows (the table is printed last; lines starting "ATTN " and "SMALL " are machine-readable for
 * bench/gpu_compare_decode.py):
 *   - small ops: 1000 back-to-back wk_binary adds of 1024 f32 elements (each allocating its
 *     output from the cache and freeing the previous one), us per op = wall time of the loop
 *     including the final synchronize / 1000; "issue" = the same loop's time before that
 *     synchronize (the host's share: when it is close to the total, the host is the limit). The
 *     result of the last add is checked (a + b, exact in f32). Best of 5 loops after one warm-up.
 *     The same 1000 adds captured once (wk_graph_begin/end) and replayed: us per op of a
 *     replay.
 *   - decode attention: q (1, 32, 1, 128), k and v (1, 8, L, 128), L = 8192 and 32768 (and
 *     2048 for f16: with the others, a fit of fixed cost plus streaming), causal,
 *     q and cache f16, bf16 and f32 (cache f16 with q f32 too), and wk_decode_attention_lens on
 *     the f16 cache of 32768 rows with the count 32768 and 16384 (and of 640 and 4736 rows with
 *     520 and 4620: the llama example's decode after a prompt); us per call and the bandwidth
 *     (K + V bytes of the rows read + q + out) / time as % of the device copy bandwidth
 *     measured here (clone of 1 GiB: 2 GiB moved). Eager: best of 3 trials of 50 calls after 2
 *     warm-ups (the host's launches included); graph: 50 calls captured once, best of 3
 *     replays (device time). Options: --attn-only (no small-op rows), --small (L 512, no
 *     bandwidth: a smoke run on the simt device), --lk N (only the cases of cache length N:
 *     one kernel for a profiler).
 *   - --prefill: instead, prefill attention (Lq = Lk = L query tokens and keys, causal): q
 *     (1, 32, L, D), k and v (1, 8, L, D), D 64 and 128, L 2048, 4096, 8192, f16 and bf16 (the
 *     matrix-unit kernel, kernels/flash.cu); ms per call (best of 3 trials of 5 after a
 *     warm-up) and TFLOP/s counting 4 L^2 D / 2 multiply-adds x 2 per head (the causal half),
 *     as FlashAttention's benchmarks count. Lines "PREFILL dt D L ms tflops" for
 *     bench/gpu_compare_prefill.py. With --small: L 128 and 256 only; with --f32: f32 instead of
 *     f16 and bf16 (the CPU's prefill: `--device cpu --prefill --f32`). */
#include "bench.h"
#include <math.h>
#include <string.h>

static wk_device *dev;

static double copy_bandwidth(void)
{
    wk_storage *big, *o;
    CHECK(wk_storage_zeros(&big, dev, WK_DTYPE_U8, (size_t)1 << 30));
    CHECK(wk_storage_clone(&o, big));
    wk_storage_free(o);
    CHECK(wk_device_synchronize(dev));
    double best = 1e30;
    for (int t = 0; t < 3; t++) {
        const double t0 = now();
        for (int i = 0; i < 10; i++) {
            CHECK(wk_storage_clone(&o, big));
            wk_storage_free(o);
        }
        CHECK(wk_device_synchronize(dev));
        const double dt = (now() - t0) / 10;
        best = dt < best ? dt : best;
    }
    wk_storage_free(big);
    return 2.0 * (double)(1u << 30) / best;
}

/* 1000 adds of 1024 f32: returns us per op (total) and the issue share in *issue_us. */
static double small_adds(double *issue_us)
{
    const size_t n = 1024;
    float ha[1024], hb[1024], hc[1024];
    for (size_t i = 0; i < n; i++) {
        ha[i] = (float)i;
        hb[i] = 0.5f * (float)i;
    }
    wk_storage *a, *b;
    CHECK(wk_storage_from_host(&a, dev, WK_DTYPE_F32, ha, n));
    CHECK(wk_storage_from_host(&b, dev, WK_DTYPE_F32, hb, n));
    wk_layout l;
    const int64_t dims[1] = {(int64_t)n};
    CHECK(wk_layout_contiguous(&l, 1, dims));
    double best = 1e30, best_issue = 1e30;
    for (int trial = 0; trial < 6; trial++) {
        wk_storage *c = NULL;
        CHECK(wk_device_synchronize(dev));
        const double t0 = now();
        for (int i = 0; i < 1000; i++) {
            wk_storage *o;
            CHECK(wk_binary(&o, WK_OP_ADD, a, &l, b, &l));
            wk_storage_free(c);
            c = o;
        }
        const double t1 = now();
        CHECK(wk_device_synchronize(dev));
        const double t2 = now();
        CHECK(wk_storage_to_host(hc, n, c));
        for (size_t i = 0; i < n; i++)
            if (hc[i] != ha[i] + hb[i]) {
                fprintf(stderr, "small add: element %zu is %g, want %g\n", i, (double)hc[i],
                        (double)(ha[i] + hb[i]));
                exit(1);
            }
        wk_storage_free(c);
        if (trial == 0)
            continue; /* warm-up */
        if ((t2 - t0) < best) {
            best = t2 - t0;
            best_issue = t1 - t0;
        }
    }
    wk_storage_free(a);
    wk_storage_free(b);
    *issue_us = best_issue * 1e6 / 1000;
    return best * 1e6 / 1000;
}

/* The same 1000 adds captured once into a graph (wk_graph_*) and replayed: us per op of a
 * replay (best of 5 after one warm-up), the last output checked; < 0 if capture is refused. */
static double small_adds_graph(void)
{
    const size_t n = 1024;
    float ha[1024], hb[1024], hc[1024];
    for (size_t i = 0; i < n; i++) {
        ha[i] = (float)i;
        hb[i] = 0.25f * (float)i;
    }
    wk_storage *a, *b, *c = NULL;
    CHECK(wk_storage_from_host(&a, dev, WK_DTYPE_F32, ha, n));
    CHECK(wk_storage_from_host(&b, dev, WK_DTYPE_F32, hb, n));
    wk_layout l;
    const int64_t dims[1] = {(int64_t)n};
    CHECK(wk_layout_contiguous(&l, 1, dims));
    if (wk_graph_begin(dev) != WK_OK) {
        fprintf(stderr, "graph capture refused: %s\n", wk_last_error());
        wk_storage_free(a);
        wk_storage_free(b);
        return -1;
    }
    for (int i = 0; i < 1000; i++) {
        wk_storage *o;
        CHECK(wk_binary(&o, WK_OP_ADD, a, &l, b, &l));
        wk_storage_free(c);
        c = o;
    }
    wk_graph *g;
    CHECK(wk_graph_end(dev, &g));
    double best = 1e30;
    for (int trial = 0; trial < 6; trial++) {
        CHECK(wk_device_synchronize(dev));
        const double t0 = now();
        CHECK(wk_graph_launch(g));
        CHECK(wk_device_synchronize(dev));
        const double t = now() - t0;
        if (trial && t < best)
            best = t;
    }
    CHECK(wk_storage_to_host(hc, n, c));
    for (size_t i = 0; i < n; i++)
        if (hc[i] != ha[i] + hb[i]) {
            fprintf(stderr, "graph add: element %zu is %g, want %g\n", i, (double)hc[i],
                    (double)(ha[i] + hb[i]));
            exit(1);
        }
    wk_graph_free(g);
    wk_storage_free(c);
    wk_storage_free(a);
    wk_storage_free(b);
    return best * 1e6 / 1000;
}

typedef struct attn_case {
    wk_dtype qdt, kvdt;
    int64_t lk;
    int64_t len; /* 0: wk_decode_attention; else wk_decode_attention_lens with this count */
} attn_case;

typedef struct attn_ops {
    wk_storage *q, *k, *v, *lens;
    wk_layout lq, lk, ll;
    float scale;
} attn_ops;

static void attn_call(const attn_case *c, const attn_ops *a)
{
    wk_storage *o;
    if (c->len)
        CHECK(wk_decode_attention_lens(&o, a->q, &a->lq, a->k, &a->lk, a->v, &a->lk, a->lens,
                                       &a->ll, a->scale, 1));
    else
        CHECK(wk_decode_attention(&o, a->q, &a->lq, a->k, &a->lk, a->v, &a->lk, a->scale, 1));
    wk_storage_free(o);
}

/* Seconds per call: eager (best of 3 loops of 50 calls after a warm-up, host issue included)
 * and as one graph of 50 captured calls replayed (best of 3 after a warm-up: the device time
 * without the host; < 0 when the device has no graphs). *bytes: K + V rows read + q + out. */
static double attn_time(const attn_case *c, double *graph, double *bytes)
{
    const int64_t hq = 32, hkv = 8, d = 128;
    attn_ops a;
    CHECK(wk_rand_uniform(&a.q, dev, c->qdt, (size_t)(hq * d), -1, 1));
    CHECK(wk_rand_uniform(&a.k, dev, c->kvdt, (size_t)(hkv * c->lk * d), -1, 1));
    CHECK(wk_rand_uniform(&a.v, dev, c->kvdt, (size_t)(hkv * c->lk * d), -1, 1));
    const uint32_t hl = (uint32_t)(c->len ? c->len : c->lk);
    CHECK(wk_storage_from_host(&a.lens, dev, WK_DTYPE_U32, &hl, 1));
    CHECK(wk_layout_contiguous(&a.lq, 4, (const int64_t[]){1, hq, 1, d}));
    CHECK(wk_layout_contiguous(&a.lk, 4, (const int64_t[]){1, hkv, c->lk, d}));
    CHECK(wk_layout_contiguous(&a.ll, 1, (const int64_t[]){1}));
    a.scale = 1.0f / sqrtf((float)d);
    double best = 1e30;
    for (int trial = 0; trial < 4; trial++) {
        const int reps = trial ? 50 : 2;
        CHECK(wk_device_synchronize(dev));
        const double t0 = now();
        for (int i = 0; i < reps; i++)
            attn_call(c, &a);
        CHECK(wk_device_synchronize(dev));
        const double t = (now() - t0) / reps;
        if (trial && t < best)
            best = t;
    }
    *graph = -1;
    if (wk_graph_begin(dev) == WK_OK) {
        for (int i = 0; i < 50; i++)
            attn_call(c, &a);
        wk_graph *g;
        CHECK(wk_graph_end(dev, &g));
        double gbest = 1e30;
        for (int trial = 0; trial < 4; trial++) {
            CHECK(wk_device_synchronize(dev));
            const double t0 = now();
            CHECK(wk_graph_launch(g));
            CHECK(wk_device_synchronize(dev));
            const double t = (now() - t0) / 50;
            if (trial && t < gbest)
                gbest = t;
        }
        wk_graph_free(g);
        *graph = gbest;
    }
    *bytes = 2.0 * (double)(hkv * hl * d) * (double)wk_dtype_size(c->kvdt) +
             2.0 * (double)(hq * d) * (double)wk_dtype_size(c->qdt);
    wk_storage_free(a.q);
    wk_storage_free(a.k);
    wk_storage_free(a.v);
    wk_storage_free(a.lens);
    return best;
}

/* --prefill: seconds per causal prefill attention call, q (1, 32, L, D), k, v (1, 8, L, D). */
static double prefill_time(wk_dtype dt, int64_t d, int64_t L)
{
    const int64_t hq = 32, hkv = 8;
    wk_storage *q, *k, *v, *o;
    wk_layout lq, lk;
    CHECK(wk_rand_uniform(&q, dev, dt, (size_t)(hq * L * d), -1, 1));
    CHECK(wk_rand_uniform(&k, dev, dt, (size_t)(hkv * L * d), -1, 1));
    CHECK(wk_rand_uniform(&v, dev, dt, (size_t)(hkv * L * d), -1, 1));
    CHECK(wk_layout_contiguous(&lq, 4, (const int64_t[]){1, hq, L, d}));
    CHECK(wk_layout_contiguous(&lk, 4, (const int64_t[]){1, hkv, L, d}));
    const float scale = 1.0f / sqrtf((float)d);
    double best = 1e30;
    for (int trial = 0; trial < 4; trial++) {
        const int reps = trial ? 5 : 1;
        CHECK(wk_device_synchronize(dev));
        const double t0 = now();
        for (int i = 0; i < reps; i++) {
            CHECK(wk_decode_attention(&o, q, &lq, k, &lk, v, &lk, scale, 1));
            wk_storage_free(o);
        }
        CHECK(wk_device_synchronize(dev));
        const double t = (now() - t0) / reps;
        if (trial && t < best)
            best = t;
    }
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    return best;
}

static void prefill_rows(int small, int f32)
{
    static const wk_dtype dts[3] = {WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_F32};
    static const int64_t ds[2] = {64, 128}, ls[3] = {2048, 4096, 8192}, lsmall[2] = {128, 256};
    for (int a = f32 ? 2 : 0; a < (f32 ? 3 : 2); a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < (small ? 2 : 3); c++) {
                const int64_t L = small ? lsmall[c] : ls[c];
                const double t = prefill_time(dts[a], ds[b], L);
                const double flop = 4.0 * 32 * (double)L * (double)L * (double)ds[b] / 2;
                printf("PREFILL %s %lld %lld %.3f %.1f\n", wk_dtype_name(dts[a]), (long long)ds[b],
                       (long long)L, t * 1e3, flop / t / 1e12);
                fflush(stdout);
            }
}

int main(int argc, char **argv)
{
    const char *spec = "cuda:0";
    int attn_only = 0, small = 0, prefill = 0, f32 = 0;
    long long only_lk = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            spec = argv[++i];
        else if (strcmp(argv[i], "--attn-only") == 0)
            attn_only = 1;
        else if (strcmp(argv[i], "--small") == 0) /* a smoke run (L 512): the simt device */
            small = 1;
        else if (strcmp(argv[i], "--prefill") == 0)
            prefill = 1;
        else if (strcmp(argv[i], "--f32") == 0) /* --prefill in f32 instead (the CPU's case) */
            f32 = 1;
        else if (strcmp(argv[i], "--lk") == 0 && i + 1 < argc) /* one cache length (profilers) */
            only_lk = atoll(argv[++i]);
    }
    CHECK(wk_device_open(&dev, spec));
    printf("device %s\n", wk_device_name(dev));
    if (prefill) {
        prefill_rows(small, f32);
        wk_device_close(dev);
        return 0;
    }
    const double bw = small ? 1e9 : copy_bandwidth();
    printf("copy bandwidth %.0f GB/s\n", bw / 1e9);

    static char lines[64][200];
    int nl = 0;
    if (!attn_only) {
        double issue;
        const double us = small_adds(&issue);
        printf("SMALL add_f32_1024 %.3f %.3f\n", us, issue);
        snprintf(lines[nl++], 200,
                 "small add 1024 f32 x1000: %6.2f us/op (host issue %.2f us/op)", us, issue);
        const double gus = small_adds_graph();
        printf("GRAPH add_f32_1024 %.3f\n", gus);
        snprintf(lines[nl++], 200, "small add 1024 f32 x1000, one graph replay: %6.2f us/op",
                 gus);
    }

    static const attn_case cases[] = {
        {WK_DTYPE_F16, WK_DTYPE_F16, 2048, 0}, /* with 8k and 32k: the fixed cost by a fit */
        {WK_DTYPE_F16, WK_DTYPE_F16, 8192, 0},    {WK_DTYPE_F16, WK_DTYPE_F16, 32768, 0},
        {WK_DTYPE_BF16, WK_DTYPE_BF16, 8192, 0},  {WK_DTYPE_BF16, WK_DTYPE_BF16, 32768, 0},
        {WK_DTYPE_F32, WK_DTYPE_F32, 8192, 0},    {WK_DTYPE_F32, WK_DTYPE_F32, 32768, 0},
        {WK_DTYPE_F32, WK_DTYPE_F16, 8192, 0},    {WK_DTYPE_F16, WK_DTYPE_F16, 32768, 32768},
        {WK_DTYPE_F16, WK_DTYPE_F16, 32768, 16384},
        /* the llama example's tg128 after a 512-token prompt (a cache of 640 rows, 520 of them
         * counted) and at a 4096-token depth: short contexts, where the fixed cost is the time */
        {WK_DTYPE_F16, WK_DTYPE_F16, 640, 520},   {WK_DTYPE_F16, WK_DTYPE_F16, 4736, 4620},
    };
    const size_t ncases = small ? 2 : sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < ncases; i++) {
        attn_case c = cases[i];
        if (only_lk && c.lk != only_lk)
            continue;
        if (small) {
            c.lk = 512;
            c.len = i ? 300 : 0;
        }
        double bytes, g;
        const double t = attn_time(&c, &g, &bytes);
        /* ATTN qdt kvdt L len eager_us eager_pct graph_us graph_pct (len 0: no lens) */
        printf("ATTN %s %s %lld %lld %.2f %.1f %.2f %.1f\n", wk_dtype_name(c.qdt),
               wk_dtype_name(c.kvdt), (long long)c.lk, (long long)c.len, t * 1e6,
               100.0 * bytes / t / bw, g > 0 ? g * 1e6 : -1.0, g > 0 ? 100.0 * bytes / g / bw : -1.0);
        snprintf(lines[nl++], 200,
                 "decode attention q %-4s kv %-4s 32/8 heads D 128 L %6lld%s%6lld: %8.1f us "
                 "%4.0f%% of copy; graph %8.1f us %4.0f%%",
                 wk_dtype_name(c.qdt), wk_dtype_name(c.kvdt), (long long)c.lk,
                 c.len ? " lens " : "      ", (long long)c.len, t * 1e6,
                 100.0 * bytes / t / bw, g > 0 ? g * 1e6 : -1.0,
                 g > 0 ? 100.0 * bytes / g / bw : -1.0);
        fflush(stdout);
    }
    printf("\n== table (copy bandwidth %.0f GB/s)\n", bw / 1e9);
    for (int i = 0; i < nl; i++)
        printf("%s\n", lines[i]);
    wk_device_close(dev);
    return 0;
}
