/* test_qact.c: the int8 activations (wk_quantize_act, wk_add_rms_norm_act, wk_qmatmul_act) on
 * every device, against independent answers:
 *   - literal blocks: x = c / 2 for chosen integer codes c with max |c| = 127 has the scale 0.5
 *     and the codes c exactly (wick.h's rule), half sums the sums of c over each half; a block
 *     with a NaN has scale NaN and codes 0; a zero block scale 0 and codes 0;
 *   - random rows (strided views of f32, f16, bf16): the rule written out here in f32
 *     (d = amax / 127, codes round half away from zero of x * (1 / d));
 *   - wk_qmatmul_act of wk_quantize_act(x) equals wk_qmatmul(x) bit for bit where wk_qmatmul
 *     quantizes x (every block type, rows 1..8 everywhere, also 12 rows on the CPU), and is within
 *     f32 summation error of the float64 product of the decoded activations and the dequantized
 *     weights elsewhere (12 rows on GPUs; F16 weights);
 *   - wk_add_rms_norm_act: sum and out equal wk_add_rms_norm's, act equals wk_quantize_act(out)
 *     bit for bit (fused and unfused shapes: 4096 and 64 columns, f16, a strided x);
 *   - wk_binary_act equals wk_quantize_act(wk_binary(op, a, b)) bit for bit (swiglu on the gate
 *     and up column views of one matrix, geglu, mul, add; f32, f16, bf16; a transposed b);
 *   - weights that the op just before wrote (activations read as Q4_K / Q8_0 rows) give the
 *     bits of the same bytes copied first (GPUs: no early read of W while its writer runs);
 *   - bad arguments: each its status, no output.
 * Run: ctest -R test_qact (WICK_TEST_DEVICES=cpu,simt:0,simt:1,cuda:0 to pick devices). */
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

static void fill(float *v, size_t n, unsigned seed, float scale)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (((s >> 8) & 0xFFFF) / 32768.0f - 1.0f) * scale;
    }
}

/* The activations' bytes of s (m rows of k), malloc'd. */
static uint8_t *act_bytes(const wk_storage *s, int64_t m, int64_t k)
{
    const int64_t nb = wk_act_bytes(m, k);
    uint8_t *b = malloc((size_t)nb + 1);
    if (b && testlib_download(b, (size_t)nb, s)) {
        free(b);
        return NULL;
    }
    return b;
}

static float f32_at(const uint8_t *p, int64_t i)
{
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}

static uint32_t u32_at(const uint8_t *p, int64_t i)
{
    uint32_t u;
    memcpy(&u, p + 4 * i, 4);
    return u;
}

/* ---- literal blocks: x (3 blocks of 32) = c / 2, a NaN block, a zero block */
static void test_literal(wk_dtype dt)
{
    enum { K = 96 };
    double x[K];
    int c[32], hs0 = 0, hs1 = 0;
    for (int i = 0; i < 32; i++) {
        c[i] = (i * 53) % 255 - 127; /* c[0] = -127: max |c| = 127 */
        x[i] = c[i] / 2.0;
        *(i < 16 ? &hs0 : &hs1) += c[i];
        x[32 + i] = i == 5 ? NAN : 1.0;
        x[64 + i] = 0.0;
    }
    wk_storage *xs = testlib_upload_f64(g_dev, dt, x, K), *a = NULL;
    const wk_layout lx = testlib_layout2(1, K);
    if (!xs || !TEST_EQ_STATUS(wk_quantize_act(&a, xs, &lx), WK_OK)) {
        wk_storage_free(xs);
        return;
    }
    uint8_t *b = act_bytes(a, 1, K);
    if (b) {
        int bad = 0;
        for (int i = 0; i < 32; i++)
            bad += (int8_t)b[i] != c[i] || b[32 + i] != 0 || b[64 + i] != 0;
        TEST_CHECK(!bad, "%s %s: literal codes (%d wrong)", g_spec, wk_dtype_name(dt), bad);
        TEST_CHECK(f32_at(b + K, 0) == 0.5f, "%s: scale %g, want 0.5", g_spec, f32_at(b + K, 0));
        TEST_CHECK(isnan(f32_at(b + K, 1)), "%s: NaN block's scale %g", g_spec, f32_at(b + K, 1));
        TEST_CHECK(f32_at(b + K, 2) == 0.0f, "%s: zero block's scale %g", g_spec, f32_at(b + K, 2));
        const uint32_t h = u32_at(b + K + 12, 0);
        TEST_CHECK((int16_t)(h & 0xFFFF) == hs0 && (int16_t)(h >> 16) == hs1,
                   "%s: half sums %d %d, want %d %d", g_spec, (int16_t)(h & 0xFFFF),
                   (int16_t)(h >> 16), hs0, hs1);
        TEST_CHECK(u32_at(b + K + 12, 1) == 0 && u32_at(b + K + 12, 2) == 0,
                   "%s: half sums of the NaN and zero blocks", g_spec);
    }
    free(b);
    wk_storage_free(a);
    wk_storage_free(xs);
}

/* ---- random rows through a transposed view: x (m, k) = t^T, t (k, m) contiguous */
static float round_away(float f)
{
    const float t = truncf(f), r = f - t;
    return r >= 0.5f ? t + 1.0f : r <= -0.5f ? t - 1.0f : t;
}

static void test_random(wk_dtype dt)
{
    enum { M = 3, K = 160 };
    float t[K * M];
    double td[K * M];
    fill(t, K * M, 7, 3.0f);
    for (int i = 0; i < K * M; i++)
        td[i] = t[i];
    wk_storage *ts = testlib_upload_f64(g_dev, dt, td, K * M), *a = NULL;
    double back[K * M];
    if (!ts || testlib_download_f64(back, K * M, ts)) { /* x as the device holds it */
        wk_storage_free(ts);
        return;
    }
    const int64_t dims[2] = {M, K};
    wk_layout lx = testlib_layout(2, dims);
    lx.strides[0] = 1, lx.strides[1] = M;
    if (!TEST_EQ_STATUS(wk_quantize_act(&a, ts, &lx), WK_OK)) {
        wk_storage_free(ts);
        return;
    }
    uint8_t *b = act_bytes(a, M, K);
    int bad = 0;
    for (int r = 0; b && r < M; r++)
        for (int blk = 0; blk < K / 32; blk++) {
            float v[32], amax = 0.0f;
            for (int e = 0; e < 32; e++) {
                v[e] = (float)back[(blk * 32 + e) * M + r];
                amax = fabsf(v[e]) > amax ? fabsf(v[e]) : amax;
            }
            const float d = amax / 127.0f, id = 1.0f / d;
            const int bi = r * (K / 32) + blk;
            int h[2] = {0, 0};
            for (int e = 0; e < 32; e++) {
                float q = round_away(v[e] * id);
                q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
                h[e / 16] += (int)q;
                bad += (int8_t)b[bi * 32 + e] != (int)q;
            }
            const uint32_t hs = u32_at(b + M * K + 4 * (M * K / 32), bi);
            bad += f32_at(b + M * K, bi) != d || (int16_t)(hs & 0xFFFF) != h[0] ||
                   (int16_t)(hs >> 16) != h[1];
        }
    TEST_CHECK(b && !bad, "%s %s: random rows against the rule (%d wrong)", g_spec,
               wk_dtype_name(dt), bad);
    free(b);
    wk_storage_free(a);
    wk_storage_free(ts);
}

/* ---- the product */
static const wk_qtype QTYPES[] = {WK_QTYPE_Q4_0, WK_QTYPE_Q4_1, WK_QTYPE_Q5_0, WK_QTYPE_Q5_1,
                                  WK_QTYPE_Q8_0, WK_QTYPE_Q8_1, WK_QTYPE_Q2_K, WK_QTYPE_Q3_K,
                                  WK_QTYPE_Q4_K, WK_QTYPE_Q5_K, WK_QTYPE_Q6_K, WK_QTYPE_Q8_K,
                                  WK_QTYPE_F16};

static int same_bits(const wk_storage *a, const wk_storage *b, size_t n, wk_dtype dt)
{
    const size_t sz = n * wk_dtype_size(dt);
    uint8_t *x = malloc(sz), *y = malloc(sz);
    int eq = x && y && !testlib_download(x, n, a) && !testlib_download(y, n, b) &&
             !memcmp(x, y, sz);
    free(x);
    free(y);
    return eq;
}

/* out (m, n) against the float64 product of the decoded activations and the dequantized W. */
static void check_ref(const wk_storage *o, const wk_storage *a, const wk_storage *wq, wk_qtype qt,
                      int64_t m, int64_t n, int64_t k, wk_dtype dt, const char *what)
{
    uint8_t *b = act_bytes(a, m, k);
    wk_storage *wd = NULL;
    double *w = malloc((size_t)(n * k) * sizeof *w), *y = malloc((size_t)(m * n) * sizeof *y);
    int bad = -1;
    if (b && w && y && TEST_EQ_STATUS(wk_dequantize(&wd, WK_DTYPE_F32,
                                                    wq, qt, n * k), WK_OK) &&
        !testlib_download_f64(w, (size_t)(n * k), wd) && !testlib_download_f64(y, (size_t)(m * n), o)) {
        bad = 0;
        /* bound: f32 sums of k terms (k ulps of sum |terms|) and the rounding to dt */
        const double eps = dt == WK_DTYPE_F32 ? 0x1p-24 : dt == WK_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
        for (int64_t r = 0; r < m; r++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0.0, sa = 0.0;
                for (int64_t e = 0; e < k; e++) {
                    const double xv = (double)(int8_t)b[r * k + e] * f32_at(b + m * k, (r * k + e) / 32);
                    s += xv * w[j * k + e];
                    sa += fabs(xv * w[j * k + e]);
                }
                bad += !(fabs(y[r * n + j] - s) <= (double)k * 0x1p-24 * sa + eps * fabs(s) + 1e-30);
            }
    }
    TEST_CHECK(bad == 0, "%s %s: %s against the float64 product (%d outside)", g_spec,
               wk_qtype_name(qt), what, bad);
    wk_storage_free(wd);
    free(b), free(w), free(y);
}

static void test_product(wk_qtype qt, wk_dtype dt, int64_t m)
{
    const int64_t n = 40, k = 512;
    if (!wk_device_supports_quant(g_dev, WK_OP_QMATMUL_ACT, qt, dt))
        return;
    wk_device *cpu = NULL;
    float *wf = malloc((size_t)(n * k) * sizeof *wf), *xf = malloc((size_t)(m * k) * sizeof *xf);
    double *xd = malloc((size_t)(m * k) * sizeof *xd);
    wk_storage *wc = NULL, *wq = NULL, *wqd = NULL, *xs = NULL, *a = NULL, *o1 = NULL, *o2 = NULL;
    if (!wf || !xf || !xd || !TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        goto done;
    fill(wf, (size_t)(n * k), 11 + (unsigned)qt, 1.0f);
    fill(xf, (size_t)(m * k), 13 + (unsigned)m, 2.0f);
    for (int64_t i = 0; i < m * k; i++)
        xd[i] = xf[i];
    const wk_layout lw = testlib_layout1(n * k), lx = testlib_layout2(m, k);
    if (!(wc = testlib_upload(cpu, WK_DTYPE_F32, wf, (size_t)(n * k))) ||
        !TEST_EQ_STATUS(wk_quantize(&wq, qt, wc, &lw), WK_OK))
        goto done;
    uint8_t *qb = malloc(wk_storage_len(wq));
    if (!qb || testlib_download(qb, wk_storage_len(wq), wq) ||
        !(wqd = testlib_upload(g_dev, WK_DTYPE_U8, qb, wk_storage_len(wq)))) {
        free(qb);
        goto done;
    }
    free(qb);
    if (!(xs = testlib_upload_f64(g_dev, dt, xd, (size_t)(m * k))) ||
        !TEST_EQ_STATUS(wk_quantize_act(&a, xs, &lx), WK_OK) ||
        !TEST_EQ_STATUS(wk_qmatmul_act(&o1, dt, a, m, wqd, qt, n, k), WK_OK))
        goto done;
    const int cpu_dev = !strcmp(g_spec, "cpu");
    const int plain = wk_qtype_block_elems(qt) == 1;
    if (!plain && (m <= 8 || cpu_dev)) { /* wk_qmatmul quantizes x the same way */
        if (TEST_EQ_STATUS(wk_qmatmul(&o2, xs, &lx, wqd, qt, n, k), WK_OK))
            TEST_CHECK(same_bits(o1, o2, (size_t)(m * n), dt),
                       "%s %s %s m=%lld: qmatmul_act(quantize_act(x)) != qmatmul(x)", g_spec,
                       wk_qtype_name(qt), wk_dtype_name(dt), (long long)m);
    } else {
        check_ref(o1, a, wq, qt, m, n, k, dt, "decoded activations");
    }
done:
    wk_storage_free(o1), wk_storage_free(o2), wk_storage_free(a), wk_storage_free(xs);
    wk_storage_free(wqd), wk_storage_free(wq), wk_storage_free(wc);
    wk_device_close(cpu);
    free(wf), free(xf), free(xd);
}

/* ---- add_rms_norm_act against add_rms_norm + quantize_act */
static void test_norm(wk_dtype dt, int64_t m, int64_t d, int strided)
{
    const int64_t cnt = m * d;
    float *v = malloc((size_t)(3 * cnt + d) * sizeof *v);
    double *dv = malloc((size_t)(3 * cnt + d) * sizeof *dv);
    wk_storage *x = NULL, *r = NULL, *al = NULL, *s1 = NULL, *y1 = NULL, *a1 = NULL, *s2 = NULL,
               *y2 = NULL, *a2 = NULL, *a3 = NULL;
    if (!v || !dv)
        goto done;
    fill(v, (size_t)(3 * cnt + d), 17 + (unsigned)d, 1.5f);
    for (int64_t i = 0; i < 3 * cnt + d; i++)
        dv[i] = v[i];
    /* x: a view of every other row of a (2m, d) storage when strided */
    x = testlib_upload_f64(g_dev, dt, dv, (size_t)(2 * cnt));
    r = testlib_upload_f64(g_dev, dt, dv + 2 * cnt, (size_t)cnt);
    al = testlib_upload_f64(g_dev, dt, dv + 3 * cnt, (size_t)d);
    if (!x || !r || !al)
        goto done;
    wk_layout lx = testlib_layout2(m, d);
    const wk_layout lr = testlib_layout2(m, d), la = testlib_layout1(d);
    if (strided)
        lx.strides[0] = 2 * d;
    if (!TEST_EQ_STATUS(wk_add_rms_norm_act(&s1, &y1, &a1, x, &lx, r, &lr, al, &la, 1e-5f), WK_OK) ||
        !TEST_EQ_STATUS(wk_add_rms_norm(&s2, &y2, x, &lx, r, &lr, al, &la, 1e-5f), WK_OK) ||
        !TEST_EQ_STATUS(wk_quantize_act(&a2, y2, &lr), WK_OK) ||
        !TEST_EQ_STATUS(wk_add_rms_norm_act(NULL, NULL, &a3, x, &lx, r, &lr, al, &la, 1e-5f), WK_OK))
        goto done;
    const size_t nb = (size_t)wk_act_bytes(m, d);
    TEST_CHECK(same_bits(s1, s2, (size_t)cnt, dt) && same_bits(y1, y2, (size_t)cnt, dt),
               "%s %s %lldx%lld: sum / out differ from add_rms_norm", g_spec, wk_dtype_name(dt),
               (long long)m, (long long)d);
    TEST_CHECK(same_bits(a1, a2, nb, WK_DTYPE_U8) && same_bits(a3, a2, nb, WK_DTYPE_U8),
               "%s %s %lldx%lld%s: act differs from quantize_act(out)", g_spec, wk_dtype_name(dt),
               (long long)m, (long long)d, strided ? " strided" : "");
done:
    wk_storage_free(x), wk_storage_free(r), wk_storage_free(al), wk_storage_free(s1);
    wk_storage_free(y1), wk_storage_free(a1), wk_storage_free(s2), wk_storage_free(y2);
    wk_storage_free(a2), wk_storage_free(a3);
    free(v), free(dv);
}

/* ---- binary_act against binary + quantize_act: a and b column views of one (m, 2F) matrix
 * (gate | up), or b transposed */
static void test_binary(wk_dtype dt, wk_op op, int64_t m, int64_t f, int transposed)
{
    const int64_t cnt = 2 * m * f;
    double *v = malloc((size_t)cnt * sizeof *v);
    float *fv = malloc((size_t)cnt * sizeof *fv);
    wk_storage *s = NULL, *a1 = NULL, *y = NULL, *a2 = NULL;
    if (!v || !fv)
        goto done;
    fill(fv, (size_t)cnt, 23 + (unsigned)op, 4.0f);
    for (int64_t i = 0; i < cnt; i++)
        v[i] = fv[i];
    if (!(s = testlib_upload_f64(g_dev, dt, v, (size_t)cnt)))
        goto done;
    const int64_t dims[2] = {m, f};
    wk_layout la = testlib_layout(2, dims), lb = la;
    la.strides[0] = lb.strides[0] = 2 * f;
    lb.offset = f;
    if (transposed) { /* b (m, f) read from the second half as its transpose (f, m) */
        lb.strides[0] = 1, lb.strides[1] = m, lb.offset = m * f;
    }
    const wk_layout ly = testlib_layout(2, dims);
    if (!TEST_EQ_STATUS(wk_binary_act(&a1, op, s, &la, s, &lb), WK_OK) ||
        !TEST_EQ_STATUS(wk_binary(&y, op, s, &la, s, &lb), WK_OK) ||
        !TEST_EQ_STATUS(wk_quantize_act(&a2, y, &ly), WK_OK))
        goto done;
    TEST_CHECK(same_bits(a1, a2, (size_t)wk_act_bytes(m, f), WK_DTYPE_U8),
               "%s %s %s %lldx%lld%s: binary_act differs from quantize_act(binary)", g_spec,
               wk_op_name(op), wk_dtype_name(dt), (long long)m, (long long)f,
               transposed ? " transposed" : "");
done:
    wk_storage_free(s), wk_storage_free(a1), wk_storage_free(y), wk_storage_free(a2);
    free(v), free(fv);
}

/* ---- weights that the op just before wrote: activations read as Q4_K / Q8_0 rows, right after
 * the norm kernel that made them (on GPUs it lets the next kernel start early; the product must
 * not read its weights before that kernel ends), against the same bytes copied first */
static void test_w_written_before(wk_qtype qt)
{
    enum { D = 2048, K = 256 };
    const int64_t rb = K / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt);
    const int64_t n = wk_act_bytes(1, D) / rb;
    float v[3 * D + K];
    double dv[3 * D + K];
    fill(v, 3 * D + K, 29, 1.0f);
    for (int i = 0; i < 3 * D + K; i++)
        dv[i] = v[i];
    wk_storage *x = testlib_upload_f64(g_dev, WK_DTYPE_F32, dv, D);
    wk_storage *r = testlib_upload_f64(g_dev, WK_DTYPE_F32, dv + D, D);
    wk_storage *al = testlib_upload_f64(g_dev, WK_DTYPE_F32, dv + 2 * D, D);
    wk_storage *xk = testlib_upload_f64(g_dev, WK_DTYPE_F32, dv + 3 * D, K);
    wk_storage *ak = NULL, *wa = NULL, *wc = NULL, *o1 = NULL, *o2 = NULL;
    uint8_t *bytes = NULL;
    const wk_layout lx = testlib_layout2(1, D), la = testlib_layout1(D), lk = testlib_layout2(1, K);
    if (!x || !r || !al || !xk || !TEST_EQ_STATUS(wk_quantize_act(&ak, xk, &lk), WK_OK))
        goto done;
    for (int rep = 0; rep < 20; rep++) {
        wk_storage_free(wa), wk_storage_free(o1);
        wa = o1 = NULL;
        if (!TEST_EQ_STATUS(wk_add_rms_norm_act(NULL, NULL, &wa, x, &lx, r, &lx, al, &la, 1e-5f),
                            WK_OK) ||
            !TEST_EQ_STATUS(wk_qmatmul_act(&o1, WK_DTYPE_F32, ak, 1, wa, qt, n, K), WK_OK))
            goto done;
    }
    const size_t nb = (size_t)wk_act_bytes(1, D);
    if (!(bytes = act_bytes(wa, 1, D)) || !(wc = testlib_upload(g_dev, WK_DTYPE_U8, bytes, nb)) ||
        !TEST_EQ_STATUS(wk_qmatmul_act(&o2, WK_DTYPE_F32, ak, 1, wc, qt, n, K), WK_OK))
        goto done;
    TEST_CHECK(same_bits(o1, o2, (size_t)n, WK_DTYPE_F32),
               "%s %s: weights written by the op before differ from their copy", g_spec,
               wk_qtype_name(qt));
done:
    wk_storage_free(x), wk_storage_free(r), wk_storage_free(al), wk_storage_free(xk);
    wk_storage_free(ak), wk_storage_free(wa), wk_storage_free(wc), wk_storage_free(o1);
    wk_storage_free(o2);
    free(bytes);
}

/* ---- bad arguments */
static void test_bad(void)
{
    const float z[512] = {0};
    wk_storage *x = testlib_upload(g_dev, WK_DTYPE_F32, z, 512);
    wk_storage *xi = testlib_upload(g_dev, WK_DTYPE_I32, z, 64);
    wk_storage *u8 = testlib_upload(g_dev, WK_DTYPE_U8, z, 2048);
    wk_storage *o = NULL, *s = NULL;
    if (!x || !xi || !u8)
        goto done;
    const wk_layout l1 = testlib_layout2(1, 64), l48 = testlib_layout2(1, 48),
                    l0 = testlib_layout(0, NULL), li = testlib_layout2(1, 64),
                    la = testlib_layout1(64), la48 = testlib_layout1(48);
    const int64_t asz = wk_act_bytes(1, 64);
    struct {
        wk_status got, want;
        const char *what;
    } c[] = {
        {wk_quantize_act(NULL, x, &l1), WK_ERR_INVALID_ARGUMENT, "quantize_act: NULL out"},
        {wk_quantize_act(&o, NULL, &l1), WK_ERR_INVALID_ARGUMENT, "quantize_act: NULL x"},
        {wk_quantize_act(&o, x, &l48), WK_ERR_SHAPE, "quantize_act: k = 48"},
        {wk_quantize_act(&o, x, &l0), WK_ERR_SHAPE, "quantize_act: rank 0"},
        {wk_quantize_act(&o, xi, &li), WK_ERR_DTYPE, "quantize_act: i32 x"},
        {wk_qmatmul_act(NULL, WK_DTYPE_F32, u8, 1, u8, WK_QTYPE_Q8_0, 4, 64),
         WK_ERR_INVALID_ARGUMENT, "qmatmul_act: NULL out"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, NULL, 1, u8, WK_QTYPE_Q8_0, 4, 64),
         WK_ERR_INVALID_ARGUMENT, "qmatmul_act: NULL act"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 1, NULL, WK_QTYPE_Q8_0, 4, 64),
         WK_ERR_INVALID_ARGUMENT, "qmatmul_act: NULL w"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, x, 1, u8, WK_QTYPE_Q8_0, 4, 64), WK_ERR_DTYPE,
         "qmatmul_act: f32 activations"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 1, x, WK_QTYPE_Q8_0, 4, 64), WK_ERR_DTYPE,
         "qmatmul_act: f32 weights"},
        {wk_qmatmul_act(&o, WK_DTYPE_I32, u8, 1, u8, WK_QTYPE_Q8_0, 4, 64), WK_ERR_DTYPE,
         "qmatmul_act: dt i32"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 1, u8, (wk_qtype)99, 4, 64),
         WK_ERR_INVALID_ARGUMENT, "qmatmul_act: block type 99"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, -1, u8, WK_QTYPE_Q8_0, 4, 64),
         WK_ERR_INVALID_ARGUMENT, "qmatmul_act: m = -1"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 1, u8, WK_QTYPE_F16, 4, 48), WK_ERR_SHAPE,
         "qmatmul_act: k = 48"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 40, u8, WK_QTYPE_Q8_0, 4, 64), WK_ERR_SHAPE,
         "qmatmul_act: activations too small"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 1, u8, WK_QTYPE_Q8_0, 1000, 64), WK_ERR_SHAPE,
         "qmatmul_act: weights too small"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, 1, u8, WK_QTYPE_Q4_K, 4, 64), WK_ERR_SHAPE,
         "qmatmul_act: k not a multiple of 256 (Q4_K)"},
        {wk_qmatmul_act(&o, WK_DTYPE_F32, u8, INT64_MAX / 32, u8, WK_QTYPE_Q8_0, 4, 64),
         WK_ERR_OVERFLOW, "qmatmul_act: m k overflows"},
        {wk_add_rms_norm_act(&s, &o, NULL, x, &l1, x, &l1, x, &la, 1e-5f),
         WK_ERR_INVALID_ARGUMENT, "add_rms_norm_act: NULL act"},
        {wk_add_rms_norm_act(&s, NULL, &s, x, &l1, x, &l1, x, &la, 1e-5f),
         WK_ERR_INVALID_ARGUMENT, "add_rms_norm_act: sum and act the same"},
        {wk_add_rms_norm_act(NULL, NULL, &o, x, &l48, x, &l48, x, &la48, 1e-5f), WK_ERR_SHAPE,
         "add_rms_norm_act: D = 48"},
        {wk_add_rms_norm_act(NULL, NULL, &o, xi, &li, xi, &li, xi, &la, 1e-5f), WK_ERR_DTYPE,
         "add_rms_norm_act: i32"},
        {wk_add_rms_norm_act(NULL, NULL, &o, x, &l1, NULL, &l1, x, &la, 1e-5f),
         WK_ERR_INVALID_ARGUMENT, "add_rms_norm_act: NULL r"},
        {wk_binary_act(NULL, WK_OP_SWIGLU, x, &l1, x, &l1), WK_ERR_INVALID_ARGUMENT,
         "binary_act: NULL act"},
        {wk_binary_act(&o, WK_OP_EQ, x, &l1, x, &l1), WK_ERR_INVALID_ARGUMENT,
         "binary_act: a comparison"},
        {wk_binary_act(&o, WK_OP_SWIGLU, x, &l1, NULL, &l1), WK_ERR_INVALID_ARGUMENT,
         "binary_act: NULL b"},
        {wk_binary_act(&o, WK_OP_SWIGLU, x, &l1, x, &l48), WK_ERR_SHAPE,
         "binary_act: dims differ"},
        {wk_binary_act(&o, WK_OP_SWIGLU, x, &l48, x, &l48), WK_ERR_SHAPE,
         "binary_act: last dim 48"},
        {wk_binary_act(&o, WK_OP_MUL, xi, &li, xi, &li), WK_ERR_DTYPE, "binary_act: i32"},
        {wk_binary_act(&o, WK_OP_MUL, x, &l1, xi, &li), WK_ERR_DTYPE, "binary_act: mixed dtypes"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        TEST_CHECK(c[i].got == c[i].want, "%s: %s: got %s, want %s", g_spec, c[i].what,
                   wk_status_string(c[i].got), wk_status_string(c[i].want));
    TEST_CHECK(o == NULL && s == NULL, "%s: an output after a failed call", g_spec);
    TEST_CHECK(asz == 64 + 16 && wk_act_bytes(3, 96) == 288 + 72 && wk_act_bytes(1, 48) == -1 &&
                   wk_act_bytes(-1, 32) == -1 && wk_act_bytes(INT64_MAX / 16, 32) == -1,
               "wk_act_bytes");
done:
    wk_storage_free(o), wk_storage_free(s);
    wk_storage_free(x), wk_storage_free(xi), wk_storage_free(u8);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    const wk_dtype fl[3] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16};
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        for (int d = 0; d < 3; d++) {
            test_literal(fl[d]);
            test_random(fl[d]);
        }
        const int64_t rows[] = {1, 2, 3, 5, 8, 12};
        for (size_t q = 0; q < sizeof QTYPES / sizeof QTYPES[0]; q++)
            for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
                test_product(QTYPES[q], WK_DTYPE_F32, rows[r]);
        test_product(WK_QTYPE_Q4_0, WK_DTYPE_F16, 1);
        test_product(WK_QTYPE_Q4_K, WK_DTYPE_BF16, 1);
        test_product(WK_QTYPE_Q8_0, WK_DTYPE_BF16, 8);
        test_norm(WK_DTYPE_F32, 1, 4096, 0);
        test_norm(WK_DTYPE_F32, 3, 4096, 0);
        test_norm(WK_DTYPE_F32, 5, 64, 0);
        test_norm(WK_DTYPE_F32, 2, 128, 1);
        test_norm(WK_DTYPE_F16, 2, 256, 0);
        test_norm(WK_DTYPE_BF16, 1, 4096, 0);
        test_binary(WK_DTYPE_F32, WK_OP_SWIGLU, 1, 14336, 0);
        test_binary(WK_DTYPE_F32, WK_OP_SWIGLU, 3, 96, 1);
        test_binary(WK_DTYPE_F32, WK_OP_GEGLU, 2, 160, 0);
        test_binary(WK_DTYPE_F16, WK_OP_SWIGLU, 2, 64, 0);
        test_binary(WK_DTYPE_BF16, WK_OP_MUL, 1, 256, 1);
        test_binary(WK_DTYPE_F32, WK_OP_ADD, 4, 32, 0);
        test_w_written_before(WK_QTYPE_Q4_K);
        test_w_written_before(WK_QTYPE_Q8_0);
        test_bad();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
