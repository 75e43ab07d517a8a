/* test_alloc_fail.c: allocation failures. A counting allocator installed with wk_set_allocator
 * fails the k-th allocation; every op family runs with k = 1, 2, ... until it succeeds without
 * reaching k. Each run must return WK_OK or WK_ERR_OUT_OF_MEMORY (nothing else), leave *out
 * NULL on failure, leak nothing (live allocations return to the baseline) and leave its inputs
 * untouched (in-place ops: the destination too). Runs on every device (device memory does not go
 * through the hook; host-side objects do). Every op family is here (storage, elementwise, cast,
 * reduce, copy, matmul, convolutions, pooling, upsampling, indexing, fused, quantized, random),
 * small and past the CPU's parallel threshold, and so is every file reader (the table `readers`:
 * open, read every tensor, close; a new reader is one entry there).
 * Run: ctest -R test_alloc_fail */
#include "testlib.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the counting allocator (thread-safe: backends may allocate from worker threads) */
static atomic_long g_allocs;  /* allocation calls so far */
static atomic_long g_live;    /* successful allocations minus frees */
static atomic_long g_fail_at; /* 0: never fail; else the allocation call with this number fails */
static atomic_long g_misaligned;

static void *count_alloc(size_t bytes, void *user)
{
    (void)user;
    const long k = atomic_fetch_add(&g_allocs, 1) + 1;
    const long f = atomic_load(&g_fail_at);
    if (f != 0 && k == f)
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p) {
        atomic_fetch_add(&g_live, 1);
        if ((uintptr_t)p % 16 != 0)
            atomic_fetch_add(&g_misaligned, 1);
    }
    return p;
}

static void count_free(void *p, void *user)
{
    (void)user;
    if (!p)
        return;
    atomic_fetch_sub(&g_live, 1);
    free(p);
}

/* ---- inputs, snapshotted around every call */
enum { NBIG = 40000 }; /* past the CPU parallel threshold, so parallel paths run too */
enum { IN_X, IN_Y, IN_H, IN_C, IN_I, IN_BIG, IN_DST, IN_ID, IN_Q8, IN_QK, IN_COUNT };
static wk_storage *g_in[IN_COUNT];
static unsigned char *g_snap[IN_COUNT];
static wk_device *g_dev;
static const char *g_spec;

static size_t bytes_of(const wk_storage *s) { return wk_storage_len(s) * wk_dtype_size(wk_storage_dtype(s)); }

static void snap_take(void)
{
    for (int i = 0; i < IN_COUNT; i++)
        if (g_in[i])
            wk_storage_to_host(g_snap[i], wk_storage_len(g_in[i]), g_in[i]);
}

static int snap_same(void)
{
    int same = 1;
    for (int i = 0; i < IN_COUNT; i++) {
        if (!g_in[i])
            continue;
        unsigned char *now = malloc(bytes_of(g_in[i]));
        if (now && wk_storage_to_host(now, wk_storage_len(g_in[i]), g_in[i]) == WK_OK)
            same &= memcmp(now, g_snap[i], bytes_of(g_in[i])) == 0;
        free(now);
    }
    return same;
}

static int inputs_make(void)
{
    static float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {6, 5, 4, 3, 2, 1}, big[NBIG], dst[NBIG];
    static const uint16_t h[6] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};
    static const uint8_t c[6] = {0, 1, 0, 1, 1, 0};
    static const int64_t iv[6] = {-3, 7, 0, 1, 2, 3};
    for (int i = 0; i < NBIG; i++) {
        big[i] = (float)(i % 97) - 48.0f;
        dst[i] = -1.0f;
    }
    g_in[IN_X] = testlib_upload(g_dev, WK_DTYPE_F32, x, 6);
    g_in[IN_Y] = testlib_upload(g_dev, WK_DTYPE_F32, y, 6);
    g_in[IN_H] = testlib_upload(g_dev, WK_DTYPE_F16, h, 6);
    g_in[IN_C] = testlib_upload(g_dev, WK_DTYPE_U8, c, 6);
    g_in[IN_I] = testlib_upload(g_dev, WK_DTYPE_I64, iv, 6);
    g_in[IN_BIG] = testlib_upload(g_dev, WK_DTYPE_F32, big, NBIG);
    g_in[IN_DST] = testlib_upload(g_dev, WK_DTYPE_F32, dst, NBIG);
    static const uint32_t ids[6] = {2, 0, 1, 1, 0, 2};
    g_in[IN_ID] = testlib_upload(g_dev, WK_DTYPE_U32, ids, 6);
    /* quantized weights: the first 512 values of big as Q8_0 (4 rows of 128) and as Q4_K (2 rows
     * of 256), quantized on the CPU and uploaded as bytes */
    wk_device *cpu = NULL;
    wk_storage *bigc = NULL, *q = NULL;
    const wk_layout l512 = testlib_layout1(512);
    if (wk_device_open(&cpu, "cpu") == WK_OK &&
        wk_storage_from_host(&bigc, cpu, WK_DTYPE_F32, big, 512) == WK_OK) {
        const wk_qtype qts[2] = {WK_QTYPE_Q8_0, WK_QTYPE_Q4_K};
        for (int k = 0; k < 2; k++) {
            if (wk_quantize(&q, qts[k], bigc, &l512) != WK_OK)
                continue;
            unsigned char bytes[1024];
            const size_t nb = wk_storage_len(q);
            if (nb <= sizeof bytes && wk_storage_to_host(bytes, nb, q) == WK_OK)
                g_in[k ? IN_QK : IN_Q8] = testlib_upload(g_dev, WK_DTYPE_U8, bytes, nb);
            wk_storage_free(q);
            q = NULL;
        }
    }
    wk_storage_free(bigc);
    wk_device_close(cpu);
    for (int i = 0; i < IN_COUNT; i++) {
        if (!g_in[i])
            return 1;
        g_snap[i] = malloc(bytes_of(g_in[i]));
        if (!g_snap[i])
            return 1;
    }
    return 0;
}

static void inputs_free(void)
{
    for (int i = 0; i < IN_COUNT; i++) {
        wk_storage_free(g_in[i]);
        free(g_snap[i]);
        g_in[i] = NULL;
        g_snap[i] = NULL;
    }
}

/* ---- the op families, each a function producing (maybe) a new storage */
typedef wk_status (*op_fn)(wk_storage **out);
static const wk_layout *L6(void)
{
    static wk_layout l;
    l = testlib_layout2(2, 3);
    return &l;
}
static const wk_layout *LBIG(void)
{
    static wk_layout l;
    l = testlib_layout2(200, 200);
    return &l;
}

static wk_status f_zeros(wk_storage **o) { return wk_storage_zeros(o, g_dev, WK_DTYPE_F32, 10); }
static wk_status f_uninit(wk_storage **o) { return wk_storage_alloc_uninit(o, g_dev, WK_DTYPE_I16, 10); }
static wk_status f_from_host(wk_storage **o)
{
    const double v[3] = {1, 2, 3};
    return wk_storage_from_host(o, g_dev, WK_DTYPE_F64, v, 3);
}
static wk_status f_clone(wk_storage **o) { return wk_storage_clone(o, g_in[IN_BIG]); }
static wk_status f_to_host(wk_storage **o)
{
    (void)o;
    float v[6];
    return wk_storage_to_host(v, 6, g_in[IN_X]);
}
static wk_status f_exp(wk_storage **o) { return wk_unary(o, WK_OP_EXP, g_in[IN_X], L6()); }
static wk_status f_gelu_f16(wk_storage **o) { return wk_unary(o, WK_OP_GELU, g_in[IN_H], L6()); }
static wk_status f_neg_big(wk_storage **o) { return wk_unary(o, WK_OP_NEG, g_in[IN_BIG], LBIG()); }
static wk_status f_affine(wk_storage **o) { return wk_affine(o, g_in[IN_I], L6(), 2.0, 1.0); }
static wk_status f_powf(wk_storage **o) { return wk_powf(o, g_in[IN_H], L6(), 2.0); }
static wk_status f_elu(wk_storage **o) { return wk_elu(o, g_in[IN_X], L6(), 1.0); }
static wk_status f_add_bcast(wk_storage **o)
{
    wk_layout lb = testlib_layout2(2, 3);
    lb.strides[0] = 0; /* row 0 of y broadcast over both rows */
    return wk_binary(o, WK_OP_ADD, g_in[IN_X], L6(), g_in[IN_Y], &lb);
}
static wk_status f_div_t(wk_storage **o)
{
    wk_layout t;
    const wk_layout l = testlib_layout2(3, 2);
    wk_layout_transpose(&t, &l, 0, 1);
    return wk_binary(o, WK_OP_DIV, g_in[IN_X], &t, g_in[IN_Y], L6());
}
static wk_status f_cmp(wk_storage **o) { return wk_cmp(o, WK_OP_LT, g_in[IN_X], L6(), g_in[IN_Y], L6()); }
static wk_status f_where(wk_storage **o)
{
    return wk_where_cond(o, g_in[IN_C], L6(), g_in[IN_X], L6(), g_in[IN_Y], L6());
}
static wk_status f_cast_f16(wk_storage **o) { return wk_to_dtype(o, g_in[IN_X], L6(), WK_DTYPE_F16); }
static wk_status f_cast_i64(wk_storage **o) { return wk_to_dtype(o, g_in[IN_I], L6(), WK_DTYPE_BF16); }
static wk_status f_cast_big(wk_storage **o) { return wk_to_dtype(o, g_in[IN_BIG], LBIG(), WK_DTYPE_F8E4M3); }
static wk_status f_sum0(wk_storage **o)
{
    const int32_t d[1] = {0};
    return wk_reduce(o, WK_OP_SUM, g_in[IN_X], L6(), d, 1);
}
static wk_status f_argmax_big(wk_storage **o)
{
    const int32_t d[1] = {1};
    return wk_reduce(o, WK_OP_ARGMAX, g_in[IN_BIG], LBIG(), d, 1);
}
static wk_status f_sum_all_big(wk_storage **o)
{
    const int32_t d[2] = {1, 0};
    return wk_reduce(o, WK_OP_SUM, g_in[IN_BIG], LBIG(), d, 2);
}
static wk_status f_max_f16(wk_storage **o)
{
    const int32_t d[2] = {0, 1};
    return wk_reduce(o, WK_OP_MAX, g_in[IN_H], L6(), d, 2);
}
static wk_status f_const_set(wk_storage **o)
{
    (void)o;
    wk_layout l = testlib_layout2(100, 100);
    l.strides[0] = 300;
    l.strides[1] = 3;
    const float v = 5.0f;
    return wk_const_set(g_in[IN_DST], &l, &v);
}
static wk_status f_copy_strided(wk_storage **o)
{
    (void)o;
    wk_layout t;
    wk_layout_transpose(&t, LBIG(), 0, 1);
    return wk_copy_strided_src(g_in[IN_DST], 0, g_in[IN_BIG], &t);
}
static wk_status f_copy2d(wk_storage **o)
{
    (void)o;
    return wk_copy2d(g_in[IN_DST], g_in[IN_BIG], 100, 150, 200, 300, 10, 5);
}

/* ---- linear algebra, convolutions, image ops */
static wk_layout lay(int32_t rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    const int64_t d[4] = {d0, d1, d2, d3};
    return testlib_layout(rank, d);
}
static wk_status f_matmul(wk_storage **o)
{
    const wk_layout la = lay(2, 2, 3, 0, 0), lb = lay(2, 3, 2, 0, 0);
    return wk_matmul(o, g_in[IN_X], &la, g_in[IN_Y], &lb);
}
static wk_status f_matmul_t_big(wk_storage **o)
{
    wk_layout t; /* a transposed operand (BLAS flag) and a batch of 4 */
    const wk_layout la = lay(3, 4, 50, 100, 0), lb0 = lay(3, 4, 50, 100, 0);
    wk_layout_transpose(&t, &lb0, 1, 2);
    return wk_matmul(o, g_in[IN_BIG], &la, g_in[IN_DST], &t);
}
static const wk_conv_params *CP(void)
{
    static const wk_conv_params p = {{1, 1}, {1, 1}, {1, 1}, {0, 0}, 1};
    return &p;
}
static wk_status f_conv1d(wk_storage **o)
{
    const wk_layout lx = lay(3, 1, 2, 3, 0), lw = lay(3, 1, 2, 2, 0);
    return wk_conv1d(o, g_in[IN_X], &lx, g_in[IN_Y], &lw, CP());
}
static wk_status f_conv_t1d(wk_storage **o)
{
    const wk_layout lx = lay(3, 1, 2, 3, 0), lw = lay(3, 2, 1, 2, 0);
    return wk_conv_transpose1d(o, g_in[IN_X], &lx, g_in[IN_Y], &lw, CP());
}
static wk_status f_conv2d_big(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 200, 200), lw = lay(4, 1, 1, 2, 2);
    return wk_conv2d(o, g_in[IN_BIG], &lx, g_in[IN_Y], &lw, CP());
}
static wk_status f_conv_t2d(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 2, 3), lw = lay(4, 1, 1, 2, 2);
    return wk_conv_transpose2d(o, g_in[IN_X], &lx, g_in[IN_Y], &lw, CP());
}
static const wk_pool_params *PP(void)
{
    static const wk_pool_params p = {{2, 2}, {1, 1}};
    return &p;
}
static wk_status f_avg_pool(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 2, 3);
    return wk_avg_pool2d(o, g_in[IN_X], &lx, PP());
}
static wk_status f_max_pool_big(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 200, 200);
    return wk_max_pool2d(o, g_in[IN_BIG], &lx, PP());
}
static wk_status f_up_n1d(wk_storage **o)
{
    const wk_layout lx = lay(3, 1, 2, 3, 0);
    return wk_upsample_nearest1d(o, g_in[IN_X], &lx, 5);
}
static wk_status f_up_n2d(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 2, 3);
    return wk_upsample_nearest2d(o, g_in[IN_X], &lx, 3, 4);
}
static wk_status f_up_bil_big(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 200, 200);
    return wk_upsample_bilinear2d(o, g_in[IN_BIG], &lx, 250, 250, 0, 0.0, 0.0);
}

/* ---- indexing (ids 2 0 1 1 0 2, u32) */
static wk_status f_index_select(wk_storage **o)
{
    const wk_layout li = testlib_layout1(3);
    return wk_index_select(o, g_in[IN_X], L6(), g_in[IN_ID], &li, 1);
}
static wk_status f_gather(wk_storage **o) { return wk_gather(o, g_in[IN_X], L6(), g_in[IN_ID], L6(), 1); }
static wk_status f_scatter_set(wk_storage **o)
{
    (void)o;
    return wk_scatter_set(g_in[IN_DST], L6(), g_in[IN_ID], L6(), g_in[IN_X], L6(), 1);
}
static wk_status f_scatter_add(wk_storage **o)
{
    (void)o;
    return wk_scatter_add_set(g_in[IN_DST], L6(), g_in[IN_ID], L6(), g_in[IN_X], L6(), 1);
}
static wk_status f_index_add(wk_storage **o)
{
    const wk_layout li = testlib_layout1(3);
    return wk_index_add(o, g_in[IN_X], L6(), g_in[IN_ID], &li, g_in[IN_Y], L6(), 1);
}

/* ---- fused */
static wk_status f_softmax_big(wk_storage **o) { return wk_softmax_last_dim(o, g_in[IN_BIG], LBIG()); }
static wk_status f_rms_norm(wk_storage **o)
{
    const wk_layout la = testlib_layout1(3);
    return wk_rms_norm(o, g_in[IN_X], L6(), g_in[IN_Y], &la, 1e-5f);
}
static wk_status f_layer_norm_big(wk_storage **o)
{
    const wk_layout la = testlib_layout1(200);
    return wk_layer_norm(o, g_in[IN_BIG], LBIG(), g_in[IN_DST], &la, g_in[IN_BIG], &la, 1e-5f);
}
static wk_status f_rope(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 2, 4), lc = lay(2, 2, 2, 0, 0);
    return wk_rope(o, g_in[IN_BIG], &lx, g_in[IN_X], &lc, g_in[IN_Y], &lc);
}
static wk_status f_rope_i(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 1, 2, 4), lc = lay(2, 2, 2, 0, 0);
    return wk_rope_i(o, g_in[IN_BIG], &lx, g_in[IN_X], &lc, g_in[IN_Y], &lc);
}
static wk_status f_rope_thd(wk_storage **o)
{
    const wk_layout lx = lay(4, 1, 2, 1, 4), lc = lay(2, 2, 2, 0, 0);
    return wk_rope_thd(o, g_in[IN_BIG], &lx, g_in[IN_X], &lc, g_in[IN_Y], &lc);
}
static wk_status f_arg_sort_big(wk_storage **o) { return wk_arg_sort_last_dim(o, g_in[IN_BIG], LBIG(), 0); }

/* ---- quantized */
static wk_status f_quantize(wk_storage **o)
{
    const wk_layout l = lay(2, 2, 256, 0, 0);
    return wk_device_backend(g_dev) == WK_BACKEND_CPU ? wk_quantize(o, WK_QTYPE_Q4_K, g_in[IN_BIG], &l)
                                                      : WK_OK;
}
static wk_status f_dequantize(wk_storage **o) { return wk_dequantize(o, WK_DTYPE_F16, g_in[IN_Q8], WK_QTYPE_Q8_0, 512); }
static wk_status f_qmatmul(wk_storage **o)
{
    const wk_layout lx = lay(2, 3, 128, 0, 0);
    return wk_qmatmul(o, g_in[IN_BIG], &lx, g_in[IN_Q8], WK_QTYPE_Q8_0, 4, 128);
}
static wk_status f_qmatmul_big(wk_storage **o)
{
    const wk_layout lx = lay(2, 64, 256, 0, 0);
    return wk_qmatmul(o, g_in[IN_BIG], &lx, g_in[IN_QK], WK_QTYPE_Q4_K, 2, 256);
}
static wk_status f_qembedding(wk_storage **o)
{
    return wk_qembedding(o, WK_DTYPE_BF16, g_in[IN_ID], L6(), g_in[IN_Q8], WK_QTYPE_Q8_0, 4, 128);
}

/* ---- random */
static wk_status f_rand_uniform(wk_storage **o) { return wk_rand_uniform(o, g_dev, WK_DTYPE_F32, 10, 0.0, 1.0); }
static wk_status f_rand_normal_big(wk_storage **o) { return wk_rand_normal(o, g_dev, WK_DTYPE_BF16, NBIG, 0.0, 1.0); }

/* ---- file readers: open, load every tensor onto the device, close. The files are written in
 * main (before the hook is installed). A new reader is one function and one entry in readers. */
static char g_gguf_path[64];
static wk_status r_gguf(wk_storage **o)
{
    (void)o;
    wk_gguf *g = NULL;
    wk_status st = wk_gguf_open(&g, g_gguf_path);
    for (int64_t i = 0; st == WK_OK && i < wk_gguf_tensor_count(g); i++) {
        wk_storage *t = NULL;
        st = wk_gguf_load_tensor(&t, g, i, g_dev);
        wk_storage_free(t);
    }
    wk_gguf_close(g);
    return st;
}

static int write_gguf(const char *path)
{
    static const float f[64] = {1, 2, 3};
    static const uint16_t h[16] = {0x3C00};
    static const uint8_t q[34] = {0x00, 0x38, 1, 2, 3}; /* one Q8_0 block, scale 0.5 */
    const int64_t d2[2] = {8, 8}, d1[1] = {16}, dq[1] = {32};
    const uint32_t u = 7;
    wk_gguf_writer *w = NULL;
    int ok = wk_gguf_writer_new(&w) == WK_OK &&
             wk_gguf_writer_add(w, "general.u32", WK_GGUF_TYPE_U32, &u) == WK_OK &&
             wk_gguf_writer_add_string(w, "general.name", "alloc", 5) == WK_OK &&
             wk_gguf_writer_add_array(w, "a.u32", WK_GGUF_TYPE_U32, h, 4) == WK_OK &&
             wk_gguf_writer_add_tensor(w, "t.f32", WK_QTYPE_F32, 2, d2, f, sizeof f) == WK_OK &&
             wk_gguf_writer_add_tensor(w, "t.f16", WK_QTYPE_F16, 1, d1, h, sizeof h) == WK_OK &&
             wk_gguf_writer_add_tensor(w, "t.q8", WK_QTYPE_Q8_0, 1, dq, q, sizeof q) == WK_OK &&
             wk_gguf_writer_write(w, path, 3) == WK_OK;
    wk_gguf_writer_free(w);
    return ok;
}

static char g_st_path[64];
static wk_status r_safetensors(wk_storage **o)
{
    (void)o;
    wk_safetensors *st = NULL;
    wk_status got = wk_safetensors_open(&st, g_st_path);
    for (int64_t i = 0; got == WK_OK && i < wk_safetensors_tensor_count(st); i++) {
        wk_storage *t = NULL; /* converted to f32 on the device: the load and the cast */
        got = wk_safetensors_load_tensor(&t, st, i, g_dev, WK_DTYPE_F32);
        wk_storage_free(t);
    }
    wk_safetensors_close(st);
    return got;
}

static int write_safetensors(const char *path)
{
    static const float f[16] = {1, 2, 3};
    static const uint16_t h[6] = {0x3C00, 0x4000};
    const int64_t d2[2] = {4, 4}, d1[1] = {6};
    wk_safetensors_writer *w = NULL;
    int ok = wk_safetensors_writer_new(&w) == WK_OK &&
             wk_safetensors_writer_add_metadata(w, "format", "pt") == WK_OK &&
             wk_safetensors_writer_add_tensor(w, "t.f32", WK_DTYPE_F32, 2, d2, f, sizeof f) == WK_OK &&
             wk_safetensors_writer_add_tensor(w, "t.bf16", WK_DTYPE_BF16, 1, d1, h, sizeof h) == WK_OK &&
             wk_safetensors_writer_write(w, path) == WK_OK;
    wk_safetensors_writer_free(w);
    return ok;
}

/* One sweep k = 1, 2, ... With check_live, every call must return the live count to where it
 * was; without it (the first, cold sweep on a GPU, whose backend may fill per-device caches such
 * as loaded kernel modules on first use) only the status, *out and the inputs are checked; those
 * caches must still be gone when the device closes (checked in main). */
static void sweep(const char *name, op_fn fn, int check_live)
{
    int ok = 0;
    long k;
    for (k = 1; k <= 10000 && !ok; k++) {
        snap_take();
        const long base = atomic_load(&g_live);
        const long start = atomic_load(&g_allocs);
        wk_storage *o = NULL;
        atomic_store(&g_fail_at, start + k);
        const wk_status st = fn(&o);
        atomic_store(&g_fail_at, 0);
        const int reached = atomic_load(&g_allocs) >= start + k;
        if (st == WK_OK) {
            wk_storage_free(o);
            TEST_CHECK(!check_live || atomic_load(&g_live) == base, "%s: %s succeeded with "
                       "allocation %ld failing but live allocations went %ld -> %ld", g_spec, name,
                       k, base, atomic_load(&g_live));
            ok = !reached; /* done once k is past every allocation the op makes */
            continue;
        }
        TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY, "%s: %s with allocation %ld failing: %s (%s)", g_spec,
                   name, k, wk_status_string(st), wk_last_error());
        TEST_CHECK(reached, "%s: %s failed (%s) without reaching allocation %ld", g_spec, name,
                   wk_status_string(st), k);
        TEST_CHECK(o == NULL, "%s: %s failed but set *out", g_spec, name);
        TEST_CHECK(!check_live || atomic_load(&g_live) == base, "%s: %s leaked with allocation %ld "
                   "failing: live %ld -> %ld", g_spec, name, k, base, atomic_load(&g_live));
        TEST_CHECK(snap_same(), "%s: %s changed its inputs with allocation %ld failing", g_spec, name, k);
    }
    TEST_CHECK(ok, "%s: %s never succeeded", g_spec, name);
    printf("  %-16s ok after %ld failure points%s\n", name, k - 2, check_live ? "" : " (cold)");
}

/* The CPU backend keeps no caches: strict from the first call. A GPU backend gets a cold sweep
 * first, then a strict one. */
static void run_family(const char *name, op_fn fn, int is_cpu)
{
    if (!is_cpu)
        sweep(name, fn, 0);
    sweep(name, fn, 1);
}

static void test_device_open(const char *spec)
{
    for (long k = 1; k <= 1000; k++) {
        const long base = atomic_load(&g_live), start = atomic_load(&g_allocs);
        wk_device *d = NULL;
        atomic_store(&g_fail_at, start + k);
        const wk_status st = wk_device_open(&d, spec);
        atomic_store(&g_fail_at, 0);
        const int reached = atomic_load(&g_allocs) >= start + k;
        if (st == WK_OK) {
            wk_device_close(d);
            TEST_CHECK(atomic_load(&g_live) == base, "%s: open/close leaked: %ld -> %ld", spec, base,
                       atomic_load(&g_live));
            if (!reached)
                return;
            continue;
        }
        TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY, "open %s with allocation %ld failing: %s (%s)", spec,
                   k, wk_status_string(st), wk_last_error());
        TEST_CHECK(d == NULL, "open %s failed but set the handle", spec);
        TEST_CHECK(atomic_load(&g_live) == base, "open %s leaked with allocation %ld failing", spec, k);
    }
    TEST_CHECK(0, "open %s never succeeded", spec);
}

int main(void)
{
    static const struct { const char *name; op_fn fn; } fams[] = {
        {"zeros", f_zeros},         {"alloc_uninit", f_uninit}, {"from_host", f_from_host},
        {"clone", f_clone},         {"to_host", f_to_host},     {"exp", f_exp},
        {"gelu f16", f_gelu_f16},   {"neg big", f_neg_big},     {"affine i64", f_affine},
        {"powf f16", f_powf},       {"elu", f_elu},             {"add bcast", f_add_bcast},
        {"div transposed", f_div_t}, {"cmp", f_cmp},            {"where_cond", f_where},
        {"to f16", f_cast_f16},     {"i64 to bf16", f_cast_i64}, {"big to f8", f_cast_big},
        {"sum dim 0", f_sum0},      {"argmax big", f_argmax_big}, {"sum all big", f_sum_all_big},
        {"max f16", f_max_f16},     {"const_set", f_const_set}, {"copy_strided", f_copy_strided},
        {"copy2d", f_copy2d},
        {"matmul", f_matmul},       {"matmul t batched", f_matmul_t_big}, {"conv1d", f_conv1d},
        {"conv_transpose1d", f_conv_t1d}, {"conv2d big", f_conv2d_big}, {"conv_transpose2d", f_conv_t2d},
        {"avg_pool2d", f_avg_pool}, {"max_pool2d big", f_max_pool_big}, {"upsample_n1d", f_up_n1d},
        {"upsample_n2d", f_up_n2d}, {"bilinear big", f_up_bil_big}, {"index_select", f_index_select},
        {"gather", f_gather},       {"scatter_set", f_scatter_set}, {"scatter_add_set", f_scatter_add},
        {"index_add", f_index_add}, {"softmax big", f_softmax_big}, {"rms_norm", f_rms_norm},
        {"layer_norm big", f_layer_norm_big}, {"rope", f_rope}, {"rope_i", f_rope_i},
        {"rope_thd", f_rope_thd},   {"arg_sort big", f_arg_sort_big}, {"quantize q4_k", f_quantize},
        {"dequantize q8_0", f_dequantize}, {"qmatmul q8_0", f_qmatmul}, {"qmatmul q4_k big", f_qmatmul_big},
        {"qembedding", f_qembedding}, {"rand_uniform", f_rand_uniform}, {"rand_normal big", f_rand_normal_big},
    };
    /* the file readers */
    static const struct { const char *name; op_fn fn; } readers[] = {
        {"gguf reader", r_gguf},
        {"safetensors reader", r_safetensors},
    };
    snprintf(g_gguf_path, sizeof g_gguf_path, "/tmp/wick_alloc_fail_%d.gguf", (int)getpid());
    if (!TEST_CHECK(write_gguf(g_gguf_path), "cannot write %s: %s", g_gguf_path, wk_last_error()))
        return testlib_summary();
    snprintf(g_st_path, sizeof g_st_path, "/tmp/wick_alloc_fail_%d.safetensors", (int)getpid());
    if (!TEST_CHECK(write_safetensors(g_st_path), "cannot write %s: %s", g_st_path, wk_last_error()))
        return testlib_summary();
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs); /* before the hook: may touch drivers */
    const wk_allocator a = {count_alloc, count_free, NULL};
    if (!TEST_EQ_STATUS(wk_set_allocator(&a), WK_OK))
        return testlib_summary();
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        printf("device %s\n", g_spec);
        test_device_open(g_spec);
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        if (!inputs_make()) {
            const int is_cpu = wk_device_backend(g_dev) == WK_BACKEND_CPU;
            for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
                run_family(fams[f].name, fams[f].fn, is_cpu);
            for (size_t f = 0; f < sizeof readers / sizeof readers[0]; f++)
                run_family(readers[f].name, readers[f].fn, is_cpu);
        } else {
            TEST_CHECK(0, "%s: could not make the inputs", g_spec);
        }
        inputs_free();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    /* Everything is freed (device caches included): live allocations back to zero, and the hook
     * can be removed. */
    TEST_EQ_INT(atomic_load(&g_live), 0);
    TEST_EQ_INT(atomic_load(&g_misaligned), 0);
    TEST_CHECK(atomic_load(&g_allocs) > 0, "the library never called the allocator hook");
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    remove(g_gguf_path);
    remove(g_st_path);
    return testlib_summary();
}
