/* soak.c: long runs do not grow (a benchmark, not a timed test). One million mixed small ops by
 * default on one device, every K ops a sample of what the process holds:
 *   rss      the resident set size (/proc/self/statm)
 *   live     device bytes handed out to storages (GPU caching allocator; CPU: '-')
 *   cached   bytes the allocator keeps for reuse (GPU caching allocator; CPU: the storage cache
 *            of src/core/host_cache.c, which keeps blocks of 1 MiB or more: none here)
 *   held     live + cached: all the allocator holds (what must level off; live alone follows the
 *            random live set)
 *   driver   device memory in use as the driver counts it (simt: its arena; CUDA: total - free of
 *            cuMemGetInfo, every process on the GPU); CPU: '-'
 *   dallocs  allocations that reached the driver so far (GPU): flat once the cache has every size
 * The ops cycle through uploads, unary, binary, affine, cmp + where_cond, reductions, softmax,
 * rms_norm, casts, matmul, a strided copy, index_select, random numbers and downloads on f32
 * tensors of random shapes (R in 1..8 rows of C in {16, 64, 256, 1024}; seeded), keeping a ring
 * of 8 live results: the live set is bounded, so anything that grows is held by the library.
 * Last, for rss, held, driver and dallocs: the value after the warm-up (the first tenth of the
 * samples), the highest after it, and how much the high-water mark rose in the first and in the
 * second half of the run: a leak rises as much in each half; a cache filling up levels off.
 *   BUILD/wick_soak [--device SPEC] [--ops N] [--every K] [--check]
 * --check: exit 1 if one of them rose in the second half by more than a quarter of its rise in
 * the first (plus 1 MiB of slack for the RSS). The short runs of ctest (soak_cpu, soak_simt) use
 * it; `make asan` runs them under LeakSanitizer. Build: cmake --build BUILD --target wick_soak */
#include "bench.h"
#include "gpu/gpu_driver.h"
#include "wk_core.h"
#include <string.h>
#include <unistd.h>

/* Under ASan freed memory sits in its quarantine (256 MiB by default), so the RSS grows by
 * design and is not judged there; LeakSanitizer checks the exit instead. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif
#if defined(SOAK_ASAN)
static const int g_judge_rss = 0;
#else
static const int g_judge_rss = 1;
#endif

enum { RING = 8, MAXR = 8, MAXC = 1024 };
static const int64_t g_cols[4] = {16, 64, 256, 1024};

typedef struct sample {
    long ops;
    double t, rss, live, cached, held, driver, dallocs; /* bytes; -1: not available */
} sample;

typedef struct soak {
    wk_device *dev;
    bool gpu;
    uint64_t rng;
    wk_storage *ring[RING];
    int64_t rows[RING], cols[RING];
    int next;
    wk_storage *w[4], *alpha[4]; /* per column count: matmul weight (C, 8), rms_norm alpha (C) */
    float host[MAXR * MAXC];
    uint32_t ids[MAXR];
} soak;

static uint64_t rnd(soak *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static double rss_bytes(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%ld %ld", &pages, &res) == 2;
    fclose(f);
    return ok ? (double)res * (double)sysconf(_SC_PAGESIZE) : -1;
}

static sample take(soak *s, long ops, double t0)
{
    CHECK(wk_device_synchronize(s->dev));
    sample m = {ops, now() - t0, rss_bytes(), -1, -1, -1, -1, -1};
    if (s->gpu) {
        wk_gpu_device *g = wk_gpu_dev(s->dev);
        wk_gpu_mem_stats st;
        wk_gpu_mem_stats_get(g, &st);
        size_t free_b = 0, total_b = 0;
        CHECK(g->drv->mem_info(g->ctx, &free_b, &total_b));
        m.live = (double)st.live_bytes;
        m.cached = (double)st.cached_bytes;
        m.driver = (double)(total_b - free_b);
        m.dallocs = (double)st.driver_allocs;
        m.held = m.live + m.cached;
    } else {
        m.cached = m.held = (double)wk_host_cache_bytes();
    }
    return m;
}

/* Slot i of the ring takes x (the old one is freed). */
static void keep(soak *s, wk_storage *x, int64_t r, int64_t c)
{
    const int i = s->next++ % RING;
    wk_storage_free(s->ring[i]);
    s->ring[i] = x;
    s->rows[i] = r;
    s->cols[i] = c;
}

static int col_index(int64_t c)
{
    for (int k = 0; k < 4; k++)
        if (g_cols[k] == c)
            return k;
    return 0;
}

/* One op (op % 14), counted as one call into wick. */
static void one_op(soak *s, long op)
{
    const int i = (int)(rnd(s) % RING);
    wk_storage *a = s->ring[i];
    const int64_t r = s->rows[i], c = s->cols[i];
    const int64_t d2[2] = {r, c};
    wk_layout l;
    CHECK(wk_layout_contiguous(&l, 2, d2));
    wk_storage *o = NULL, *t = NULL;
    switch (op % 14) {
    case 0: { /* upload a new shape */
        const int64_t nr = 1 + (int64_t)(rnd(s) % MAXR), nc = g_cols[rnd(s) % 4];
        CHECK(wk_storage_from_host(&o, s->dev, WK_DTYPE_F32, s->host, (size_t)(nr * nc)));
        keep(s, o, nr, nc);
        return;
    }
    case 1: {
        static const wk_op u[4] = {WK_OP_TANH, WK_OP_SIGMOID, WK_OP_NEG, WK_OP_ABS};
        CHECK(wk_unary(&o, u[rnd(s) % 4], a, &l));
        break;
    }
    case 2: {
        static const wk_op b[3] = {WK_OP_ADD, WK_OP_MUL, WK_OP_MAXIMUM};
        CHECK(wk_binary(&o, b[rnd(s) % 3], a, &l, a, &l));
        break;
    }
    case 3: CHECK(wk_affine(&o, a, &l, 0.5, 0.25)); break;
    case 4: { /* where(a > 0, a, 0.5 a + 0.25) through cmp: two calls, the second counted next */
        CHECK(wk_cmp(&t, WK_OP_GT, a, &l, a, &l));
        CHECK(wk_where_cond(&o, t, &l, a, &l, a, &l));
        wk_storage_free(t);
        break;
    }
    case 5: {
        const int32_t dim = 1;
        CHECK(wk_reduce(&t, WK_OP_SUM, a, &l, &dim, 1));
        wk_storage_free(t);
        return;
    }
    case 6: CHECK(wk_softmax_last_dim(&o, a, &l)); break;
    case 7: {
        const int k = col_index(c);
        wk_layout la;
        CHECK(wk_layout_contiguous(&la, 1, &c));
        CHECK(wk_rms_norm(&o, a, &l, s->alpha[k], &la, 1e-6f));
        break;
    }
    case 8: { /* to f16 and back */
        CHECK(wk_to_dtype(&t, a, &l, WK_DTYPE_F16));
        CHECK(wk_to_dtype(&o, t, &l, WK_DTYPE_F32));
        wk_storage_free(t);
        break;
    }
    case 9: {
        const int k = col_index(c);
        const int64_t wd[2] = {c, 8};
        wk_layout lw;
        CHECK(wk_layout_contiguous(&lw, 2, wd));
        CHECK(wk_matmul(&t, a, &l, s->w[k], &lw));
        wk_storage_free(t);
        return;
    }
    case 10: { /* a transposed copy */
        const wk_layout lt = {.rank = 2, .dims = {c, r}, .strides = {1, c}, .offset = 0};
        CHECK(wk_storage_alloc_uninit(&o, s->dev, WK_DTYPE_F32, (size_t)(r * c)));
        CHECK(wk_copy_strided_src(o, 0, a, &lt));
        break; /* kept as (r, c): the same number of elements */
    }
    case 11: { /* rows picked by ids uploaded now */
        for (int64_t k = 0; k < r; k++)
            s->ids[k] = (uint32_t)(rnd(s) % (uint64_t)r);
        const int64_t di[1] = {r};
        wk_layout li;
        CHECK(wk_layout_contiguous(&li, 1, di));
        CHECK(wk_storage_from_host(&t, s->dev, WK_DTYPE_U32, s->ids, (size_t)r));
        CHECK(wk_index_select(&o, a, &l, t, &li, 0));
        wk_storage_free(t);
        break;
    }
    case 12: CHECK(wk_rand_uniform(&o, s->dev, WK_DTYPE_F32, (size_t)(r * c), -1, 1)); break;
    default: /* 13 */
        CHECK(wk_storage_to_host(s->host, (size_t)(r * c), a));
        return;
    }
    keep(s, o, r, c);
}

static void setup(soak *s)
{
    for (int k = 0; k < MAXR * MAXC; k++)
        s->host[k] = (float)((k * 37) % 200 - 100) / 100.0f;
    for (int k = 0; k < 4; k++) {
        CHECK(wk_storage_from_host(&s->w[k], s->dev, WK_DTYPE_F32, s->host, (size_t)(g_cols[k] * 8)));
        CHECK(wk_storage_from_host(&s->alpha[k], s->dev, WK_DTYPE_F32, s->host, (size_t)g_cols[k]));
    }
    for (int k = 0; k < RING; k++)
        one_op(s, 0); /* uploads fill the ring */
}

static void teardown(soak *s)
{
    for (int k = 0; k < RING; k++)
        wk_storage_free(s->ring[k]);
    for (int k = 0; k < 4; k++) {
        wk_storage_free(s->w[k]);
        wk_storage_free(s->alpha[k]);
    }
}

static void col(double v, double unit)
{
    if (v < 0)
        printf(" %10s", "-");
    else
        printf(" %10.1f", v / unit);
}

static void row(const sample *m)
{
    printf("%9ld %8.1f", m->ops, m->t);
    col(m->rss, 1 << 20);
    col(m->live, 1 << 10);
    col(m->cached, 1 << 10);
    col(m->held, 1 << 10);
    col(m->driver, 1 << 20);
    col(m->dallocs, 1);
    printf("\n");
    fflush(stdout); /* a long run can be watched */
}

/* Column `field` of sample k. */
static double at(const sample *m, int k, size_t field)
{
    return *(const double *)((const char *)&m[k] + field);
}

static double max_of(const sample *m, int from, int to, size_t field)
{
    double v = at(m, from, field);
    for (int k = from + 1; k < to; k++)
        v = at(m, k, field) > v ? at(m, k, field) : v;
    return v;
}

/* One summary line for a column: its value after the warm-up (the first tenth of the samples),
 * the highest after it, and how the high-water mark rose over the first and the second half of
 * the run. Returns 1 if the second half rose by more than a quarter of the first half's rise plus
 * slack: growth that does not level off (a leak grows as much in each half). */
static int summarize(const char *name, const sample *m, int n, size_t field, double unit,
                     const char *uname, double slack)
{
    if (at(m, 0, field) < 0)
        return 0;
    const int warm = n / 10 > 0 ? n / 10 : 1, half = n / 2 > warm ? n / 2 : warm;
    const double w = at(m, warm, field), after = max_of(m, warm, n, field);
    const double first = max_of(m, 0, half + 1, field), second = max_of(m, half, n, field);
    const double rise1 = first - at(m, 0, field), rise2 = second - first;
    const int grows = rise2 > 0.25 * rise1 + slack;
    printf("  %-8s after the warm-up %10.1f %s, highest after it %10.1f (%+.1f); high-water mark: "
           "first half %+.1f, second half %+.1f: %s\n", name, w / unit, uname, after / unit,
           (after - w) / unit, rise1 / unit, rise2 / unit,
           rise2 <= slack ? "flat" : grows ? "GROWS" : "levelling off");
    return grows;
}

int main(int argc, char **argv)
{
    const char *spec = "cpu";
    long ops = 1000000, every = 10000;
    int check = 0;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--device") == 0 && k + 1 < argc)
            spec = argv[++k];
        else if (strcmp(argv[k], "--ops") == 0 && k + 1 < argc)
            ops = atol(argv[++k]);
        else if (strcmp(argv[k], "--every") == 0 && k + 1 < argc)
            every = atol(argv[++k]);
        else if (strcmp(argv[k], "--check") == 0)
            check = 1;
        else {
            fprintf(stderr, "usage: %s [--device SPEC] [--ops N] [--every K] [--check]\n", argv[0]);
            return 2;
        }
    }
    if (ops < 10 || every < 1 || every > ops) {
        fprintf(stderr, "--ops must be at least 10 and --every between 1 and --ops\n");
        return 2;
    }
    soak s;
    memset(&s, 0, sizeof s);
    s.rng = 36;
    CHECK(wk_device_open(&s.dev, spec));
    s.gpu = wk_device_backend(s.dev) != WK_BACKEND_CPU;
    const int n = (int)(ops / every) + 1;
    sample *m = calloc((size_t)n, sizeof *m);
    if (!m)
        return 1;
    printf("# wick soak: %ld mixed ops on %s (%s), a sample every %ld; sizes KiB, rss and driver "
           "MiB\n", ops, spec, wk_device_name(s.dev), every);
    printf("%9s %8s %10s %10s %10s %10s %10s %10s\n", "ops", "time_s", "rss_MiB", "live_KiB",
           "cached_KiB", "held_KiB", "driver_MiB", "dallocs");
    const double t0 = now();
    setup(&s);
    m[0] = take(&s, 0, t0);
    row(&m[0]);
    int got = 1;
    for (long op = 1; op <= ops; op++) {
        one_op(&s, op);
        if (op % every == 0 && got < n) {
            m[got] = take(&s, op, t0);
            row(&m[got++]);
        }
    }
    printf("summary (%d samples, %.2f us per op):\n", got, 1e6 * m[got - 1].t / (double)ops);
    int grew = summarize("rss", m, got, offsetof(sample, rss), 1 << 20, "MiB", 1 << 20);
    if (!g_judge_rss) {
        printf("  (rss not judged: an ASan build, whose quarantine keeps freed memory)\n");
        grew = 0;
    }
    grew |= summarize("held", m, got, offsetof(sample, held), 1 << 10, "KiB", 0);
    grew |= summarize("driver", m, got, offsetof(sample, driver), 1 << 20, "MiB", 0);
    grew |= summarize("dallocs", m, got, offsetof(sample, dallocs), 1, "   ", 0);
    teardown(&s);
    wk_device_close(s.dev);
    free(m);
    if (check && grew) {
        printf("FAIL: growth that does not level off\n");
        return 1;
    }
    return 0;
}
