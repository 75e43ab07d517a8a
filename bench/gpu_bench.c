/* gpu_bench.c: memory-bound op throughput on one device, for docs/performance.md (not a test).
 *   build: part of `make` (target wick_gpu_bench); run: build/wick_gpu_bench [--device cuda:0]
 *   bench/gpu_compare.py runs it beside PyTorch on the same GPU and prints the combined table.
 * Each row: the op on 2^28 elements (a 16384 x 16384 matrix), timed over repeated calls after a
 * warm-up, with the device synchronized before the clock is read; bytes = every input read once +
 * every output written once. Prints one line per op: "row <name> <bytes> <seconds per call>". */
#include "bench.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


typedef struct bench_ctx {
    wk_device *dev;
    wk_storage *a32, *b32, *a16, *b16, *cond, *row32, *t32;
    wk_layout l2d, lrow, lt;
} bench_ctx;

typedef void (*bench_fn)(bench_ctx *c, wk_storage **out);

static void op_copy(bench_ctx *c, wk_storage **o) { CHECK(wk_storage_clone(o, c->a32)); }
static void op_add32(bench_ctx *c, wk_storage **o) { CHECK(wk_binary(o, WK_OP_ADD, c->a32, &c->l2d, c->b32, &c->l2d)); }
static void op_add16(bench_ctx *c, wk_storage **o) { CHECK(wk_binary(o, WK_OP_ADD, c->a16, &c->l2d, c->b16, &c->l2d)); }
static void op_exp(bench_ctx *c, wk_storage **o) { CHECK(wk_unary(o, WK_OP_EXP, c->a32, &c->l2d)); }
static void op_gelu(bench_ctx *c, wk_storage **o) { CHECK(wk_unary(o, WK_OP_GELU, c->a32, &c->l2d)); }
static void op_affine(bench_ctx *c, wk_storage **o) { CHECK(wk_affine(o, c->a32, &c->l2d, 1.5, 0.25)); }
static void op_cast(bench_ctx *c, wk_storage **o) { CHECK(wk_to_dtype(o, c->a32, &c->l2d, WK_DTYPE_BF16)); }
static void op_where(bench_ctx *c, wk_storage **o) { CHECK(wk_where_cond(o, c->cond, &c->l2d, c->a32, &c->l2d, c->b32, &c->l2d)); }
static void op_badd(bench_ctx *c, wk_storage **o) { CHECK(wk_binary(o, WK_OP_ADD, c->a32, &c->l2d, c->row32, &c->lrow)); }
static void op_tcopy(bench_ctx *c, wk_storage **o)
{
    CHECK(wk_storage_alloc_uninit(o, c->dev, WK_DTYPE_F32, (size_t)1 << 28));
    CHECK(wk_copy_strided_src(*o, 0, c->a32, &c->lt));
}
static void red(bench_ctx *c, wk_storage **o, wk_op op, int32_t nd, int32_t d0)
{
    int32_t dims[2] = {d0, 1};
    CHECK(wk_reduce(o, op, c->a32, &c->l2d, dims, nd));
}
static void op_sum_last(bench_ctx *c, wk_storage **o) { red(c, o, WK_OP_SUM, 1, 1); }
static void op_sum_dim0(bench_ctx *c, wk_storage **o) { red(c, o, WK_OP_SUM, 1, 0); }
static void op_sum_all(bench_ctx *c, wk_storage **o) { red(c, o, WK_OP_SUM, 2, 0); }
static void op_max_last(bench_ctx *c, wk_storage **o) { red(c, o, WK_OP_MAX, 1, 1); }
static void op_argmax_last(bench_ctx *c, wk_storage **o) { red(c, o, WK_OP_ARGMAX, 1, 1); }

typedef struct bench_row {
    const char *name;
    bench_fn fn;
    double bytes;
} bench_row;

static double time_op(bench_ctx *c, bench_fn fn, int reps)
{
    wk_storage *o = NULL;
    for (int i = 0; i < 2; i++) {
        fn(c, &o);
        wk_storage_free(o);
    }
    CHECK(wk_device_synchronize(c->dev));
    double best = 1e30;
    for (int trial = 0; trial < 3; trial++) {
        double t0 = now();
        for (int i = 0; i < reps; i++) {
            fn(c, &o);
            wk_storage_free(o);
        }
        CHECK(wk_device_synchronize(c->dev));
        double t = (now() - t0) / reps;
        if (t < best)
            best = t;
    }
    return best;
}

static void small_adds(wk_device *dev)
{
    wk_storage *a, *b, *o;
    wk_layout l;
    int64_t n = 1024;
    CHECK(wk_rand_uniform(&a, dev, WK_DTYPE_F32, 1024, -1, 1));
    CHECK(wk_rand_uniform(&b, dev, WK_DTYPE_F32, 1024, -1, 1));
    CHECK(wk_layout_contiguous(&l, 1, &n));
    double best = 1e30;
    for (int trial = 0; trial < 5; trial++) {
        CHECK(wk_device_synchronize(dev));
        double t0 = now();
        for (int i = 0; i < 1000; i++) {
            CHECK(wk_binary(&o, WK_OP_ADD, a, &l, b, &l));
            wk_storage_free(o);
        }
        CHECK(wk_device_synchronize(dev));
        double t = (now() - t0) / 1000;
        if (t < best)
            best = t;
    }
    printf("row small_add_1024 %.0f %.9f\n", 3.0 * 4 * 1024, best);
    wk_storage_free(a);
    wk_storage_free(b);
}

int main(int argc, char **argv)
{
    const char *spec = "cuda:0";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--device") == 0)
            spec = argv[i + 1];
    bench_ctx c;
    memset(&c, 0, sizeof c);
    CHECK(wk_device_open(&c.dev, spec));
    printf("device %s\n", wk_device_name(c.dev));
    const int64_t R = 16384, n = R * R;
    int64_t dims[2] = {R, R};
    CHECK(wk_layout_contiguous(&c.l2d, 2, dims));
    CHECK(wk_layout_transpose(&c.lt, &c.l2d, 0, 1));
    int64_t rdims[2] = {1, R};
    wk_layout lr;
    CHECK(wk_layout_contiguous(&lr, 2, rdims));
    CHECK(wk_layout_broadcast(&c.lrow, &lr, 2, dims));
    CHECK(wk_rand_uniform(&c.a32, c.dev, WK_DTYPE_F32, (size_t)n, -2, 2));
    CHECK(wk_rand_uniform(&c.b32, c.dev, WK_DTYPE_F32, (size_t)n, -2, 2));
    CHECK(wk_rand_uniform(&c.a16, c.dev, WK_DTYPE_BF16, (size_t)n, -2, 2));
    CHECK(wk_rand_uniform(&c.b16, c.dev, WK_DTYPE_BF16, (size_t)n, -2, 2));
    CHECK(wk_rand_uniform(&c.row32, c.dev, WK_DTYPE_F32, (size_t)R, -2, 2));
    wk_storage *u;
    CHECK(wk_rand_uniform(&u, c.dev, WK_DTYPE_F32, (size_t)n, 0, 1));
    CHECK(wk_to_dtype(&c.cond, u, &c.l2d, WK_DTYPE_U8)); /* 0 everywhere ... */
    wk_storage_free(u);
    CHECK(wk_rand_uniform(&u, c.dev, WK_DTYPE_F32, (size_t)n, 0, 2));
    wk_storage_free(c.cond);
    CHECK(wk_to_dtype(&c.cond, u, &c.l2d, WK_DTYPE_U8)); /* ... so draw in [0,2): half ones */
    wk_storage_free(u);
    const double f = 4.0 * (double)n, h = 2.0 * (double)n, b = (double)n;
    const bench_row rows[] = {
        {"copy_f32", op_copy, 2 * f},         {"add_f32", op_add32, 3 * f},
        {"add_bf16", op_add16, 3 * h},        {"exp_f32", op_exp, 2 * f},
        {"gelu_f32", op_gelu, 2 * f},         {"affine_f32", op_affine, 2 * f},
        {"cast_f32_bf16", op_cast, f + h},    {"where_f32", op_where, b + 3 * f},
        {"bcast_add_f32", op_badd, 2 * f},    {"transpose_copy_f32", op_tcopy, 2 * f},
        {"sum_last_f32", op_sum_last, f},     {"sum_dim0_f32", op_sum_dim0, f},
        {"sum_all_f32", op_sum_all, f},       {"max_last_f32", op_max_last, f},
        {"argmax_last_f32", op_argmax_last, f},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double t = time_op(&c, rows[i].fn, 10);
        printf("row %s %.0f %.9f\n", rows[i].name, rows[i].bytes, t);
        fflush(stdout);
    }
    small_adds(c.dev);
    wk_storage *all[] = {c.a32, c.b32, c.a16, c.b16, c.cond, c.row32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        wk_storage_free(all[i]);
    wk_device_close(c.dev);
    return 0;
}
