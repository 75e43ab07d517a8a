/* test_graph.c: graph capture and replay (wk_graph_*). Expected values: the same calls run
 * eagerly on the same device (a replay must write the same bits), and the statuses of
 * docs/semantics.md ("Graphs").
 *   - CPU: every entry reports WK_ERR_NOT_SUPPORTED (or WK_ERR_INVALID_ARGUMENT for NULLs);
 *   - GPU (skipped without one): a decode-like sequence (add, mul, rms_norm, quantized matvec
 *     of a Q4_0 weight, decode attention, a temporary freed inside the capture) captured, then
 *     replayed: bit-identical to eager; x overwritten in place (const_set) and replayed again:
 *     bit-identical to eager on the new x, also after other storages were allocated and filled
 *     (the captured temporaries stay reserved); inside a capture a download, an upload, a
 *     synchronize and a nested begin fail with their statuses and the capture still ends and
 *     replays correctly; end without begin fails; 100 replays;
 *   - GPU: wk_decode_attention_lens (B = 2, f16, cache of 700 rows) captured once, the counts
 *     rewritten in place (const_set) between replays: each replay bit-identical to the eager
 *     call on the same counts, and different from the replay before (the counts are read at
 *     replay time); a count past the cache reported at the next synchronize.
 *   - the simt device has no graphs (its driver has no capture): wk_graph_begin must say so
 *     with WK_ERR_NOT_SUPPORTED and a message, and the GPU cases are skipped there; on any
 *     other GPU that status is a failure. */
#include "testlib.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096 /* x: (1, N) */
#define NW 256 /* weight rows */

typedef struct inputs {
    wk_storage *x, *alpha, *wq, *q, *k, *v;
    wk_layout lx, la, lq, lk;
} inputs;

/* The sequence: t = x + x; y = t * x (t freed); r = rms_norm(y); m = qmatmul(r, wq);
 * a = decode_attention(q, k, v). Outputs in out[0..2]. */
static wk_status sequence(const inputs *in, wk_storage **out)
{
    wk_storage *t = NULL, *y = NULL;
    wk_status st = wk_binary(&t, WK_OP_ADD, in->x, &in->lx, in->x, &in->lx);
    if (st == WK_OK)
        st = wk_binary(&y, WK_OP_MUL, t, &in->lx, in->x, &in->lx);
    wk_storage_free(t);
    if (st == WK_OK)
        st = wk_rms_norm(&out[0], y, &in->lx, in->alpha, &in->la, 1e-5f);
    wk_storage_free(y);
    if (st == WK_OK)
        st = wk_qmatmul(&out[1], out[0], &in->lx, in->wq, WK_QTYPE_Q4_0, NW, N);
    if (st == WK_OK)
        st = wk_decode_attention(&out[2], in->q, &in->lq, in->k, &in->lk, in->v, &in->lk, 0.125f, 1);
    return st;
}

static size_t out_len(int i) { return i == 0 ? N : i == 1 ? NW : 8 * 64; }

/* got[i] (downloaded) == want[i] bit for bit, over the output's bytes (the attention's output
 * has q's dtype, f16: half the bytes of the float buffers). */
static void same_bits(wk_storage **got, float **want, const char *what)
{
    for (int i = 0; i < 3; i++) {
        const size_t n = out_len(i);
        float *h = calloc(n, sizeof *h);
        if (!h || testlib_download(h, n, got[i])) {
            free(h);
            continue;
        }
        const size_t bytes = n * wk_dtype_size(wk_storage_dtype(got[i]));
        TEST_CHECK(memcmp(h, want[i], bytes) == 0, "%s: output %d differs from eager", what, i);
        free(h);
    }
}

static void eager(const inputs *in, float **want)
{
    wk_storage *o[3] = {NULL, NULL, NULL};
    if (TEST_EQ_STATUS(sequence(in, o), WK_OK))
        for (int i = 0; i < 3; i++)
            testlib_download(want[i], out_len(i), o[i]);
    for (int i = 0; i < 3; i++)
        wk_storage_free(o[i]);
}

/* Whether dev is the simt device and bs (wk_graph_begin's status) says it has no graphs: then
 * the case is skipped (the message is checked); elsewhere WK_ERR_NOT_SUPPORTED fails. */
static bool no_graphs(wk_device *dev, wk_status bs, const char *what)
{
    if (bs != WK_ERR_NOT_SUPPORTED || !strstr(wk_device_name(dev), "simt"))
        return false;
    TEST_CHECK(strstr(wk_last_error(), "graph") != NULL, "message: %s", wk_last_error());
    printf("skip: %s: %s has no graphs\n", what, wk_device_name(dev));
    return true;
}

static void gpu_case(wk_device *dev, wk_device *cpu)
{
    inputs in;
    memset(&in, 0, sizeof in);
    float *want[3], *want2[3];
    for (int i = 0; i < 3; i++) {
        want[i] = calloc(out_len(i), sizeof(float));
        want2[i] = calloc(out_len(i), sizeof(float));
    }
    wk_storage *wf = NULL, *wqc = NULL, *o[3] = {NULL, NULL, NULL};
    wk_graph *g = NULL;
    in.lx = testlib_layout(2, (const int64_t[]){1, N});
    in.la = testlib_layout(1, (const int64_t[]){N});
    in.lq = testlib_layout(4, (const int64_t[]){1, 8, 1, 64});
    in.lk = testlib_layout(4, (const int64_t[]){1, 2, 700, 64});
    const wk_layout lw = testlib_layout(2, (const int64_t[]){NW, N});
    unsigned char *qb = malloc((size_t)NW * N / 32 * 18);
    if (!TEST_EQ_STATUS(wk_rand_uniform(&in.x, dev, WK_DTYPE_F32, N, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&in.alpha, dev, WK_DTYPE_F32, N, 0.5, 1.5), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&in.q, dev, WK_DTYPE_F16, 8 * 64, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&in.k, dev, WK_DTYPE_F16, 2 * 700 * 64, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&in.v, dev, WK_DTYPE_F16, 2 * 700 * 64, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&wf, cpu, WK_DTYPE_F32, (size_t)NW * N, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_quantize(&wqc, WK_QTYPE_Q4_0, wf, &lw), WK_OK) || !qb ||
        !TEST_EQ_STATUS(wk_storage_to_host(qb, (size_t)NW * N / 32 * 18, wqc), WK_OK) ||
        !(in.wq = testlib_upload(dev, WK_DTYPE_U8, qb, (size_t)NW * N / 32 * 18)))
        goto out;
    eager(&in, want);

    /* end without begin */
    TEST_EQ_STATUS(wk_graph_end(dev, &g), WK_ERR_INVALID_ARGUMENT);
    const wk_status bs = wk_graph_begin(dev);
    if (no_graphs(dev, bs, "capture and replay") || !TEST_EQ_STATUS(bs, WK_OK))
        goto out;
    TEST_EQ_STATUS(wk_graph_begin(dev), WK_ERR_INVALID_ARGUMENT); /* no nesting */
    TEST_EQ_STATUS(sequence(&in, o), WK_OK);
    float tmp[4] = {0};
    wk_storage *up = NULL;
    TEST_EQ_STATUS(wk_storage_to_host(want2[0], N, o[0]), WK_ERR_NOT_SUPPORTED);
    TEST_EQ_STATUS(wk_storage_from_host(&up, dev, WK_DTYPE_F32, tmp, 4), WK_ERR_NOT_SUPPORTED);
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_ERR_NOT_SUPPORTED);
    TEST_CHECK(strstr(wk_last_error(), "captured") != NULL, "message: %s", wk_last_error());
    if (!TEST_EQ_STATUS(wk_graph_end(dev, &g), WK_OK))
        goto out;
    TEST_EQ_STATUS(wk_graph_launch(g), WK_OK);
    same_bits(o, want, "first replay");

    /* new x in place, other memory allocated and written meanwhile, replay again */
    const float half = 0.5f;
    TEST_EQ_STATUS(wk_const_set(in.x, &in.lx, &half), WK_OK);
    wk_storage *junk[8] = {NULL};
    for (int i = 0; i < 8; i++) {
        const float val = 1e30f;
        if (TEST_EQ_STATUS(wk_storage_zeros(&junk[i], dev, WK_DTYPE_F32, N), WK_OK))
            TEST_EQ_STATUS(wk_const_set(junk[i], &in.lx, &val), WK_OK);
    }
    eager(&in, want2);
    TEST_EQ_STATUS(wk_graph_launch(g), WK_OK);
    same_bits(o, want2, "replay after x changed");
    for (int i = 0; i < 8; i++)
        wk_storage_free(junk[i]);
    for (int r = 0; r < 100; r++)
        if (!TEST_EQ_STATUS(wk_graph_launch(g), WK_OK))
            break;
    same_bits(o, want2, "100 replays");
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK);
out:
    wk_graph_free(g);
    for (int i = 0; i < 3; i++) {
        wk_storage_free(o[i]);
        free(want[i]);
        free(want2[i]);
    }
    wk_storage_free(in.x);
    wk_storage_free(in.alpha);
    wk_storage_free(in.wq);
    wk_storage_free(in.q);
    wk_storage_free(in.k);
    wk_storage_free(in.v);
    wk_storage_free(wf);
    wk_storage_free(wqc);
    free(qb);
}

/* The lens variant under replay: out = attention with counts hl written into lens in place. */
static void set_lens(wk_storage *lens, const uint32_t *hl)
{
    for (int b = 0; b < 2; b++) {
        const wk_layout l = {.rank = 1, .dims = {1}, .strides = {1}, .offset = b};
        TEST_EQ_STATUS(wk_const_set(lens, &l, &hl[b]), WK_OK);
    }
}

static void lens_case(wk_device *dev)
{
    enum { LQN = 2 * 8 * 1 * 64, LKN = 2 * 2 * 700 * 64 };
    const wk_layout lq = testlib_layout(4, (const int64_t[]){2, 8, 1, 64});
    const wk_layout lk = testlib_layout(4, (const int64_t[]){2, 2, 700, 64});
    const wk_layout ll = testlib_layout1(2);
    static const uint32_t counts[4][2] = {{100, 700}, {1, 350}, {699, 2}, {700, 1}};
    wk_storage *q = NULL, *k = NULL, *v = NULL, *lens = NULL, *o = NULL, *e = NULL;
    wk_graph *g = NULL;
    uint16_t got[LQN], want[LQN], prev[LQN];
    if (!TEST_EQ_STATUS(wk_rand_uniform(&q, dev, WK_DTYPE_F16, LQN, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&k, dev, WK_DTYPE_F16, LKN, -1, 1), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&v, dev, WK_DTYPE_F16, LKN, -1, 1), WK_OK) ||
        !(lens = testlib_upload(dev, WK_DTYPE_U32, counts[0], 2)))
        goto out;
    const wk_status bs = wk_graph_begin(dev);
    if (no_graphs(dev, bs, "lens replay") || !TEST_EQ_STATUS(bs, WK_OK))
        goto out;
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lk, v, &lk, lens, &ll, 0.125f, 1),
                   WK_OK);
    if (!TEST_EQ_STATUS(wk_graph_end(dev, &g), WK_OK) || !o)
        goto out;
    for (int c = 0; c < 4; c++) {
        set_lens(lens, counts[c]);
        if (!TEST_EQ_STATUS(wk_decode_attention_lens(&e, q, &lq, k, &lk, v, &lk, lens, &ll,
                                                     0.125f, 1), WK_OK) ||
            testlib_download(want, LQN, e))
            goto out;
        wk_storage_free(e);
        e = NULL;
        if (!TEST_EQ_STATUS(wk_graph_launch(g), WK_OK) || testlib_download(got, LQN, o))
            goto out;
        TEST_CHECK(memcmp(got, want, sizeof got) == 0, "lens replay %d (%u, %u) differs from "
                   "eager", c, counts[c][0], counts[c][1]);
        if (c > 0)
            TEST_CHECK(memcmp(got, prev, sizeof got) != 0, "lens replay %d equals the replay "
                       "before: the new counts were not read", c);
        memcpy(prev, got, sizeof got);
    }
    const uint32_t bad[2] = {701, 5};
    set_lens(lens, bad);
    TEST_EQ_STATUS(wk_graph_launch(g), WK_OK);
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK);
out:
    wk_graph_free(g);
    wk_storage_free(e);
    wk_storage_free(o);
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    wk_storage_free(lens);
}

int main(void)
{
    wk_device *cpu;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    wk_graph *g = (wk_graph *)0x1;
    TEST_EQ_STATUS(wk_graph_begin(cpu), WK_ERR_NOT_SUPPORTED);
    TEST_CHECK(strstr(wk_last_error(), "cpu") != NULL, "message names the backend: %s", wk_last_error());
    TEST_EQ_STATUS(wk_graph_end(cpu, &g), WK_ERR_NOT_SUPPORTED);
    TEST_CHECK(g == (wk_graph *)0x1, "a failed end wrote its output");
    TEST_EQ_STATUS(wk_graph_begin(NULL), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_graph_end(NULL, &g), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_graph_launch(NULL), WK_ERR_INVALID_ARGUMENT);
    wk_graph_free(NULL);

    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    for (int i = 0; i < nd; i++) {
        wk_device *dev;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[i]), WK_OK))
            continue;
        if (wk_device_backend(dev) != WK_BACKEND_CPU) {
            TEST_EQ_STATUS(wk_graph_end(dev, NULL), WK_ERR_INVALID_ARGUMENT);
            gpu_case(dev, cpu);
            lens_case(dev);
        }
        wk_device_close(dev);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
