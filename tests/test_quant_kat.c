/* test_quant_kat.c: known answers for the quantized ops, on every device testlib_devices()
 * gives (a device whose wk_device_supports_quant says no must answer WK_ERR_NOT_SUPPORTED).
 *   1. one hand-built block per type (bytes written out; the expected values worked out by hand
 *      from the block format in the comments) -> wk_dequantize, exact;
 *   2. round trip f32 -> wk_quantize (CPU) -> upload -> wk_dequantize on random data (seeded):
 *      max |x - deq| <= bound * max |x| of the block (docs/semantics.md, "Quantized tensors"),
 *      and byte-exact quantization of inputs the format represents exactly (q4_0, q8_0);
 *   3. qmatmul against dequantize + a float64 matmul: m in {1, 3, 8, 33}, batched, strided and
 *      transposed x, f32/f16/bf16;
 *   4. qembedding with u8, u32, i64 ids, the sentinel included. */
#include "quant_blocks.h"
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const wk_qtype all_qt[] = {
    WK_QTYPE_F32, WK_QTYPE_F16, WK_QTYPE_BF16, WK_QTYPE_Q4_0, WK_QTYPE_Q4_1, WK_QTYPE_Q5_0,
    WK_QTYPE_Q5_1, WK_QTYPE_Q8_0, WK_QTYPE_Q8_1, WK_QTYPE_Q2_K, WK_QTYPE_Q3_K, WK_QTYPE_Q4_K,
    WK_QTYPE_Q5_K, WK_QTYPE_Q6_K, WK_QTYPE_Q8_K};
#define NQT ((int)(sizeof all_qt / sizeof all_qt[0]))
static const wk_dtype float_dts[3] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16};

static wk_device *cpu;

/* ---------------------------------------------------------------- 1. known-answer blocks */
typedef struct kat {
    wk_qtype qt;
    unsigned char b[292];
    int nchk;
    int idx[6];
    double want[6];
} kat;

static double round_to(wk_dtype dt, double v)
{
    return dt == WK_DTYPE_F16 ? wk_f16_to_f32(wk_f32_to_f16((float)v))
           : dt == WK_DTYPE_BF16 ? wk_bf16_to_f32(wk_f32_to_bf16((float)v)) : (float)v;
}

/* Checks elements idx of the decoded block (exact), and that every other element equals
 * `rest` (the value of the filler bytes) when rest_known. */
static void run_kat(wk_device *dev, const kat *k, int rest_known, double rest)
{
    const int64_t n = wk_qtype_block_elems(k->qt), nb = wk_qtype_block_bytes(k->qt);
    wk_storage *q = testlib_upload(dev, WK_DTYPE_U8, k->b, (size_t)nb), *o = NULL;
    if (!q)
        return;
    for (int d = 0; d < 3; d++) {
        const wk_dtype dt = float_dts[d];
        if (!wk_device_supports_quant(dev, WK_OP_DEQUANTIZE, k->qt, dt)) {
            TEST_EQ_STATUS(wk_dequantize(&o, dt, q, k->qt, n), WK_ERR_NOT_SUPPORTED);
            continue;
        }
        if (!TEST_EQ_STATUS(wk_dequantize(&o, dt, q, k->qt, n), WK_OK))
            continue;
        double y[256];
        if (!testlib_download_f64(y, (size_t)n, o)) {
            for (int i = 0; i < n; i++) {
                int chk = -1;
                for (int c = 0; c < k->nchk; c++)
                    if (k->idx[c] == i)
                        chk = c;
                /* the f32 value rounded once to dt (e.g. 291.5 is 292 in bf16) */
                const double w = chk < 0 ? 0 : round_to(dt, k->want[chk]);
                if (chk >= 0)
                    TEST_CHECK(y[i] == w, "%s %s element %d: got %g want %g",
                               wk_qtype_name(k->qt), wk_dtype_name(dt), i, y[i], w);
                else if (rest_known)
                    TEST_CHECK(y[i] == rest, "%s %s element %d: got %g want %g (filler)",
                               wk_qtype_name(k->qt), wk_dtype_name(dt), i, y[i], rest);
            }
        }
        wk_storage_free(o);
    }
    wk_storage_free(q);
}

static void test_kat(wk_device *dev)
{
    /* f16 bit patterns: 1.0 = 0x3c00, 0.5 = 0x3800, 0.25 = 0x3400, 2.0 = 0x4000, -1.0 = 0xbc00 */
    kat k;

    /* one-element types */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_F32, {0x00, 0x00, 0xc0, 0x3f}, 1, {0}, {1.5}}; /* 0x3fc00000 = 1.5 */
    run_kat(dev, &k, 0, 0);
    k = (kat){WK_QTYPE_F16, {0x00, 0xbc}, 1, {0}, {-1.0}};
    run_kat(dev, &k, 0, 0);
    k = (kat){WK_QTYPE_BF16, {0x40, 0x40}, 1, {0}, {3.0}}; /* 0x4040 = 3.0 */
    run_kat(dev, &k, 0, 0);

    /* q4_0: d = 0.5; value (nibble - 8) * d. qs[0] = 0x1f: e0 = (15-8)*.5 = 3.5, e16 = (1-8)*.5
     * = -3.5; qs[1] = 0x80: e1 = (0-8)*.5 = -4, e17 = (8-8)*.5 = 0; filler 0x88 -> 0. */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q4_0, {0x00, 0x38, 0x1f, 0x80}, 4, {0, 16, 1, 17}, {3.5, -3.5, -4.0, 0.0}};
    memset(k.b + 4, 0x88, 14);
    run_kat(dev, &k, 1, 0.0);

    /* q4_1: d = 0.5, m = -1; value nibble * d + m. qs[0] = 0x1f: e0 = 15*.5 - 1 = 6.5,
     * e16 = 1*.5 - 1 = -0.5; filler 0x00 -> -1. */
    k = (kat){WK_QTYPE_Q4_1, {0x00, 0x38, 0x00, 0xbc, 0x1f}, 2, {0, 16}, {6.5, -0.5}};
    run_kat(dev, &k, 1, -1.0);

    /* q5_0: d = 0.25, qh = 0x00010001 (bits 0 and 16: the 5th bit of e0 and e16), qs[0] = 0x3f:
     * e0 = (0xf | 0x10) - 16 = 15 -> 3.75, e16 = (0x3 | 0x10) - 16 = 3 -> 0.75; filler 0 -> -16
     * * .25 = -4. */
    k = (kat){WK_QTYPE_Q5_0, {0x00, 0x34, 0x01, 0x00, 0x01, 0x00, 0x3f}, 2, {0, 16}, {3.75, 0.75}};
    run_kat(dev, &k, 1, -4.0);

    /* q5_1: d = 0.25, m = 1, qh = 0x80000000 (bit 31: e31), qs[15] = 0xf0: e15 = 0*.25 + 1 = 1,
     * e31 = (0xf | 0x10) = 31 -> 31*.25 + 1 = 8.75; filler -> 1. */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q5_1, {0x00, 0x34, 0x00, 0x3c, 0x00, 0x00, 0x00, 0x80}, 2, {15, 31}, {1.0, 8.75}};
    k.b[8 + 15] = 0xf0;
    run_kat(dev, &k, 1, 1.0);

    /* q8_0: d = 0.5; int8 * d: 0x7f = 127 -> 63.5, 0x80 = -128 -> -64, 0xff = -1 -> -0.5. */
    k = (kat){WK_QTYPE_Q8_0, {0x00, 0x38, 0x7f, 0x80, 0xff}, 3, {0, 1, 2}, {63.5, -64.0, -0.5}};
    run_kat(dev, &k, 1, 0.0);

    /* q8_1: d = 2, s unused; qs[0] = 3 -> 6, qs[31] = 0xfe = -2 -> -4. */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q8_1, {0x00, 0x40, 0x00, 0x00, 0x03}, 2, {0, 31}, {6.0, -4.0}};
    k.b[4 + 31] = 0xfe;
    run_kat(dev, &k, 1, 0.0);

    /* q8_k: d = 0.25 as f32 (0x3e800000), qs[0] = 5 -> 1.25, qs[255] = 0x81 = -127 -> -31.75. */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q8_K, {0x00, 0x00, 0x80, 0x3e, 0x05}, 2, {0, 255}, {1.25, -31.75}};
    k.b[4 + 255] = 0x81;
    run_kat(dev, &k, 1, 0.0);

    /* q2_k: d = 1 (@80), dmin = 0.5 (@82); scales[s] = sc | m << 4; element 128h + 32j + l has
     * q = bits 2j of qs[32h + l] (qs @16), sub-block 8h + 2j + l/16; value d*sc*q - dmin*m.
     *   scales[0] = 0x21 (sc 1, m 2), qs[0] = 0xe4 (j0: 0, j3: 3): e0 = 1*1*0 - .5*2 = -1
     *   scales[1] = 0x03 (sc 3), qs[16] = 0x03: e16 (j0, l16, sub 1) = 3*3 = 9
     *   scales[6] = 0x52 (sc 2, m 5): e96 (j3, l0, sub 6) = 2*3 - .5*5 = 3.5
     *   scales[8] = 0xf1 (sc 1, m 15), qs[32] = 0x02: e128 (h1, sub 8) = 2 - 7.5 = -5.5
     * other scales 0: 0. */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q2_K, {0x21, 0x03, 0, 0, 0, 0, 0x52, 0, 0xf1}, 4, {0, 16, 96, 128},
              {-1.0, 9.0, 3.5, -5.5}};
    k.b[16] = 0xe4, k.b[16 + 16] = 0x03, k.b[16 + 32] = 0x02;
    k.b[80] = 0x00, k.b[81] = 0x3c, k.b[82] = 0x00, k.b[83] = 0x38;
    run_kat(dev, &k, 0, 0);

    /* q3_k: d = 0.5 (@108); scale i = (lo | hi << 4) - 32 with lo = low nibble of sc[i] (i < 8)
     * or high nibble of sc[i-8], hi = bits 2*(i/4) of sc[8 + i%4] (sc @96). sc[0] = 0x21:
     * scale 0 lo 1, scale 8 lo 2; sc[8] = 0x02: scale 0 hi 2 -> scale0 = 33 - 32 = 1,
     * scale 8 = 2 - 32 = -30; every other scale 0 - 32 = -32. q = (2 bits of qs[32h + l] at
     * 2j, qs @32) - (bit 4h+j of hmask[l] ? 0 : 4). Filler qs 0xff, hmask 0xff: q = 3.
     *   e0: qs[0] = 0xfc -> 0, hmask[0] = 0xfe (bit 0 clear) -> q = -4: 0.5*1*-4 = -2
     *   e16 (sub 1): q = 3: 0.5*-32*3 = -48
     *   e32 (j1, sub 2): (0xfc >> 2) & 3 = 3, hmask bit 1 set: 3 -> -48
     *   e128 (h1, sub 8): qs[32] = 0xff -> 3, hmask[0] bit 4 set -> 3: 0.5*-30*3 = -45 */
    memset(&k, 0, sizeof k);
    k.qt = WK_QTYPE_Q3_K;
    memset(k.b, 0xff, 96); /* hmask, qs */
    k.b[0] = 0xfe, k.b[32] = 0xfc;
    k.b[96] = 0x21, k.b[104] = 0x02;
    k.b[108] = 0x00, k.b[109] = 0x38;
    k.nchk = 4;
    memcpy(k.idx, (const int[]){0, 16, 32, 128}, sizeof(int[4]));
    memcpy(k.want, (const double[]){-2.0, -48.0, -48.0, -45.0}, sizeof(double[4]));
    run_kat(dev, &k, 0, 0);

    /* q4_k: d = 1, dmin = 0.5; 12 scale bytes @4: j < 4: sc = b[j] & 63, m = b[j+4] & 63;
     * j >= 4: sc = (b[j+4] & 15) | (b[j-4] >> 6) << 4, m = (b[j+4] >> 4) | (b[j] >> 6) << 4.
     * b[0] = 0x43 (sc0 3, sc4 hi 1), b[4] = 0x82 (m0 2, m4 hi 2), b[8] = 0x25 (sc4 lo 5,
     * m4 lo 2): sc4 = 21, m4 = 34. Element 64g + 32t + l: nibble t of qs[32g + l] (qs @16).
     *   e0: qs[0] = 0x7a -> 10: 1*3*10 - .5*2 = 29;   e1: 0 -> -1
     *   e32 (sub 1, sc 0, m 0): 0;   e128 (g2, sub 4): qs[64] = 0x0f -> 15: 21*15 - 17 = 298 */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q4_K, {0x00, 0x3c, 0x00, 0x38, 0x43, 0, 0, 0, 0x82, 0, 0, 0, 0x25}, 4,
              {0, 1, 32, 128}, {29.0, -1.0, 0.0, 298.0}};
    k.b[16] = 0x7a, k.b[16 + 64] = 0x0f;
    run_kat(dev, &k, 0, 0);

    /* q5_k: d = 0.5, dmin = 1, the same scale bytes (sc0 3, m0 2, sc4 21, m4 34); qh @16: bit
     * 2g + t of qh[l] is the 5th bit; qs @48. qh[0] = 0x11 (bits 0 and 4: e0 and e128).
     *   e0: 0x7a -> 10 | 16 = 26: .5*3*26 - 2 = 37;   e1: 0 -> -2
     *   e32: 7 (bit 1 clear), sub 1 (0, 0): 0;   e128: 15 | 16 = 31: .5*21*31 - 34 = 291.5 */
    memset(&k, 0, sizeof k);
    k = (kat){WK_QTYPE_Q5_K, {0x00, 0x38, 0x00, 0x3c, 0x43, 0, 0, 0, 0x82, 0, 0, 0, 0x25}, 4,
              {0, 1, 32, 128}, {37.0, -2.0, 0.0, 291.5}};
    k.b[16] = 0x11, k.b[48] = 0x7a, k.b[48 + 64] = 0x0f;
    run_kat(dev, &k, 0, 0);

    /* q6_k: d = 0.25 (@208), int8 scales @192: sc[0] = 2, sc[2] = -3, sc[14] = 10, others 1.
     * Element 128h + 32j + l: low nibble of ql[64h + l + 32(j&1)] (low for j < 2, high for
     * j >= 2), high 2 bits at 2j of qh[32h + l] (qh @128); q - 32; scale 8h + 2j + l/16.
     * ql[0] = 0x5f, qh[0] = 0xc6 (j0: 2, j1: 1, j2: 0, j3: 3); filler 0 -> q = -32.
     *   e0: 15 | 2<<4 = 47 -> 15: .25*2*15 = 7.5
     *   e32: ql[32] = 0 | 1<<4 = 16 -> -16, sc[2] = -3: .25*-3*-16 = 12
     *   e64: ql[0] >> 4 = 5 | 0 -> -27, sc[4] = 1: -6.75
     *   e96: 0 | 3<<4 = 48 -> 16, sc[6] = 1: 4
     *   e224 (h1, j3, l0): -32, sc[14] = 10: .25*10*-32 = -80
     *   e1: -32, sc[0] = 2: -16 */
    memset(&k, 0, sizeof k);
    k.qt = WK_QTYPE_Q6_K;
    k.b[0] = 0x5f, k.b[128] = 0xc6;
    memset(k.b + 192, 1, 16);
    k.b[192] = 2, k.b[194] = 0xfd, k.b[206] = 10;
    k.b[208] = 0x00, k.b[209] = 0x34;
    k.nchk = 6;
    memcpy(k.idx, (const int[]){0, 32, 64, 96, 224, 1}, sizeof(int[6]));
    memcpy(k.want, (const double[]){7.5, 12.0, -6.75, 4.0, -80.0, -16.0}, sizeof(double[6]));
    run_kat(dev, &k, 0, 0);
}

/* ---------------------------------------------------------------- 2. round trips */
/* max |x - deq(quant(x))| / max |x| over the block (one-element types: over runs of 32);
 * the guarantees of docs/semantics.md. */
static double rt_bound(wk_qtype qt)
{
    switch (qt) {
    case WK_QTYPE_F32: return 0;
    case WK_QTYPE_F16: return 0x1p-11;
    case WK_QTYPE_BF16: return 0x1p-8;
    case WK_QTYPE_Q4_0: return 0.126;
    case WK_QTYPE_Q4_1: return 0.068;
    case WK_QTYPE_Q5_0: return 0.0630;
    case WK_QTYPE_Q5_1: return 0.033;
    case WK_QTYPE_Q8_0: case WK_QTYPE_Q8_1: case WK_QTYPE_Q8_K: return 0.0040;
    case WK_QTYPE_Q2_K: return 0.34;
    case WK_QTYPE_Q3_K: return 0.30;
    case WK_QTYPE_Q4_K: return 0.068;
    case WK_QTYPE_Q5_K: return 0.033;
    case WK_QTYPE_Q6_K: return 0.045;
    }
    return 0;
}

static uint64_t rng_s = 0x9e3779b97f4a7c15ull;
static double unif(void) /* xorshift64*, [0, 1) */
{
    rng_s ^= rng_s >> 12, rng_s ^= rng_s << 25, rng_s ^= rng_s >> 27;
    return (double)((rng_s * 2685821657736338717ull) >> 11) * 0x1p-53;
}
static double gauss(void) { return sqrt(-2 * log(1 - unif())) * cos(6.283185307179586 * unif()); }

static void test_round_trip(wk_device *dev)
{
    enum { N = 256 * 64 };
    float *x = malloc(N * sizeof *x);
    double *y = malloc(N * sizeof *y);
    if (!TEST_CHECK(x && y, "out of memory"))
        goto out;
    for (int dist = 0; dist < 3; dist++) {
        for (int i = 0; i < N; i++) /* uniform [-1, 1), gaussian, positive offset [0.5, 3.5) */
            x[i] = (float)(dist == 0 ? 2 * unif() - 1 : dist == 1 ? gauss() : 0.5 + 3 * unif());
        wk_layout l = testlib_layout1(N);
        wk_storage *xs = testlib_upload(cpu, WK_DTYPE_F32, x, N);
        for (int t = 0; t < NQT && xs; t++) {
            const wk_qtype qt = all_qt[t];
            wk_storage *q = NULL, *qd = NULL, *o = NULL;
            unsigned char *bytes = NULL;
            if (!TEST_EQ_STATUS(wk_quantize(&q, qt, xs, &l), WK_OK))
                continue;
            const size_t nb = wk_storage_len(q);
            bytes = malloc(nb);
            if (bytes && !testlib_download(bytes, nb, q) &&
                (qd = testlib_upload(dev, WK_DTYPE_U8, bytes, nb))) {
                if (!wk_device_supports_quant(dev, WK_OP_DEQUANTIZE, qt, WK_DTYPE_F32)) {
                    TEST_EQ_STATUS(wk_dequantize(&o, WK_DTYPE_F32, qd, qt, N), WK_ERR_NOT_SUPPORTED);
                } else if (TEST_EQ_STATUS(wk_dequantize(&o, WK_DTYPE_F32, qd, qt, N), WK_OK) &&
                           !testlib_download_f64(y, N, o)) {
                    const int be = wk_qtype_block_elems(qt) < 32 ? 32 : (int)wk_qtype_block_elems(qt);
                    double worst = 0;
                    for (int b = 0; b < N / be; b++) {
                        double am = 0;
                        for (int i = 0; i < be; i++)
                            am = fmax(am, fabs(x[b * be + i]));
                        for (int i = 0; i < be; i++)
                            worst = fmax(worst, fabs(x[b * be + i] - y[b * be + i]) / am);
                    }
                    TEST_CHECK(worst <= rt_bound(qt), "round trip %s (distribution %d): max "
                               "error %.5f of the block max > bound %.5f", wk_qtype_name(qt),
                               dist, worst, rt_bound(qt));
                }
            }
            free(bytes);
            wk_storage_free(o);
            wk_storage_free(qd);
            wk_storage_free(q);
        }
        wk_storage_free(xs);
    }
out:
    free(x);
    free(y);
}

/* Byte-exact quantization of values the format represents: q4_0 of (i - 8) * 0.5 for
 * i = 0..15, twice: max |x| is -4 -> d = -4 / -8 = 0.5 (f16 0x3800), codes i, so
 * qs[j] = j | j << 4. q8_0 of (i - 16) * 0.25: amax 4 -> d = 4/127 = 0.0314960...
 * -> f16 2^-5 * (1 + 8/1024) = 0.031494140625 (0x2808),
 * so codes round((i - 16) * 0.25 / d); checked on code 0 (i = 16) and the extremes. */
static void test_quantize_bytes(void)
{
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)((i % 16) - 8) * 0.5f;
    wk_layout l = testlib_layout1(32);
    wk_storage *xs = testlib_upload(cpu, WK_DTYPE_F32, x, 32), *q = NULL;
    unsigned char b[34];
    if (xs && TEST_EQ_STATUS(wk_quantize(&q, WK_QTYPE_Q4_0, xs, &l), WK_OK) &&
        TEST_EQ_INT(wk_storage_len(q), 18) && !testlib_download(b, 18, q)) {
        TEST_EQ_INT(b[0] | b[1] << 8, 0x3800);
        for (int j = 0; j < 16; j++)
            TEST_EQ_INT(b[2 + j], j | j << 4);
    }
    wk_storage_free(q);
    wk_storage_free(xs);
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) * 0.25f;
    xs = testlib_upload(cpu, WK_DTYPE_F32, x, 32);
    q = NULL;
    if (xs && TEST_EQ_STATUS(wk_quantize(&q, WK_QTYPE_Q8_0, xs, &l), WK_OK) &&
        !testlib_download(b, 34, q)) {
        /* 4/127 = 0.031496...; f16 neighbours 0.031494140625 (0x2808) and 0.0315246582 */
        TEST_EQ_INT(b[0] | b[1] << 8, 0x2808);
        TEST_EQ_INT((signed char)b[2 + 16], 0);    /* x = 0 */
        TEST_EQ_INT((signed char)b[2 + 0], -127);  /* -4 / 0.031494 = -127.007 -> -127 */
        TEST_EQ_INT((signed char)b[2 + 31], 119);  /* 3.75 / 0.031494 = 119.07 -> 119 */
    }
    wk_storage_free(q);
    wk_storage_free(xs);
}

/* ---------------------------------------------------------------- 3. qmatmul */
/* W (n, k) of qt: quantized on the CPU from random values, *wq its bytes on dev, wd (n*k) its
 * dequantized f32 values (from the CPU). Returns 0 on failure. */
static int make_w(wk_device *dev, wk_qtype qt, int64_t n, int64_t k, wk_storage **wq, float *wd)
{
    float *w = malloc((size_t)(n * k) * sizeof *w);
    unsigned char *bytes = NULL;
    wk_storage *ws = NULL, *q = NULL, *d = NULL;
    int ok = 0;
    if (!w)
        return 0;
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (float)(2 * unif() - 1);
    wk_layout l = testlib_layout1(n * k);
    if ((ws = testlib_upload(cpu, WK_DTYPE_F32, w, (size_t)(n * k))) &&
        TEST_EQ_STATUS(wk_quantize(&q, qt, ws, &l), WK_OK) &&
        TEST_EQ_STATUS(wk_dequantize(&d, WK_DTYPE_F32, q, qt, n * k), WK_OK) &&
        !testlib_download(wd, (size_t)(n * k), d) && (bytes = malloc(wk_storage_len(q))) &&
        !testlib_download(bytes, wk_storage_len(q), q))
        ok = (*wq = testlib_upload(dev, WK_DTYPE_U8, bytes, wk_storage_len(q))) != NULL;
    free(bytes);
    free(w);
    wk_storage_free(ws);
    wk_storage_free(q);
    wk_storage_free(d);
    return ok;
}

static double ulp_rel(wk_dtype dt)
{
    return dt == WK_DTYPE_F16 ? 0x1p-10 : dt == WK_DTYPE_BF16 ? 0x1p-7 : 0x1p-23;
}

/* x dims (batch..., m, k) of dt; layout: 0 contiguous, 1 strided (every other column of a
 * wider buffer), 2 transposed (last two dims swapped in storage). */
static void qmm_case(wk_device *dev, wk_qtype qt, wk_dtype dt, int32_t rank, const int64_t *xd,
                     int64_t n, int layout)
{
    const int64_t k = xd[rank - 1], m = xd[rank - 2] * (rank > 2 ? xd[0] : 1), cnt = m * k;
    const int64_t len = layout == 1 ? 2 * cnt : cnt;
    float *wd = malloc((size_t)(n * k) * sizeof *wd);
    double *xv = malloc((size_t)len * sizeof *xv), *got = malloc((size_t)(m * n) * sizeof *got);
    wk_storage *wq = NULL, *xs = NULL, *o = NULL;
    if (!wd || !xv || !got || !make_w(dev, qt, n, k, &wq, wd))
        goto out;
    for (int64_t i = 0; i < len; i++) /* values exact in dt */
        xv[i] = dt == WK_DTYPE_F16 ? wk_f16_to_f32(wk_f32_to_f16((float)(2 * unif() - 1)))
                : dt == WK_DTYPE_BF16 ? wk_bf16_to_f32(wk_f32_to_bf16((float)(2 * unif() - 1)))
                                      : (float)(2 * unif() - 1);
    wk_layout l = testlib_layout(rank, xd);
    if (layout == 1) {
        for (int d = 0; d < rank; d++)
            l.strides[d] *= 2;
    } else if (layout == 2) {
        const int64_t mm = xd[rank - 2];
        l.strides[rank - 1] = mm;
        l.strides[rank - 2] = 1;
        if (rank > 2)
            l.strides[0] = mm * k;
    }
    if (!(xs = testlib_upload_f64(dev, dt, xv, (size_t)len)))
        goto out;
    if (!wk_device_supports_quant(dev, WK_OP_QMATMUL, qt, dt)) {
        TEST_EQ_STATUS(wk_qmatmul(&o, xs, &l, wq, qt, n, k), WK_ERR_NOT_SUPPORTED);
        goto out;
    }
    if (!TEST_EQ_STATUS(wk_qmatmul(&o, xs, &l, wq, qt, n, k), WK_OK) ||
        !TEST_EQ_INT(wk_storage_len(o), m * n) || testlib_download_f64(got, (size_t)(m * n), o))
        goto out;
    int bad = 0;
    /* GPUs quantize x (for m <= 8); the CPU for a block type, any m, unless
     * WICK_CPU_QDOT=exact */
    const char *qenv = getenv("WICK_CPU_QDOT");
    const int gpu = wk_device_backend(wk_storage_device(o)) != WK_BACKEND_CPU ||
                    (wk_qtype_block_elems(qt) > 1 && !(qenv && !strcmp(qenv, "exact")));
    for (int64_t r = 0; r < m && !bad; r++)
        for (int64_t j = 0; j < n && !bad; j++) {
            /* row r of x (row-major over the batch and m dims) */
            const int64_t b = r / xd[rank - 2], rr = r % xd[rank - 2];
            double s = 0, sa = 0;
            for (int64_t i = 0; i < k; i++) {
                int64_t off = rr * l.strides[rank - 2] + i * l.strides[rank - 1] +
                              (rank > 2 ? b * l.strides[0] : 0);
                s += xv[off] * wd[j * k + i];
                sa += fabs(xv[off] * wd[j * k + i]);
            }
            /* f32 sums within blocks: <= k * 2^-24 * sum|xw| (loose: 1e-5), plus the rounding
             * of the result to dt (one ulp) */
            double tol = ulp_rel(dt) * fabs(s) + 1e-5 * sa;
            /* x quantized to int8 blocks of 32 (scale = amax / 127) for integer dot products
             * (GPUs; the CPU): each x element is off by at most scale / 2 */
            for (int64_t b0 = 0; gpu && b0 < k; b0 += 32) {
                double amax = 0, sw = 0;
                for (int64_t i = b0; i < b0 + 32 && i < k; i++) {
                    int64_t off = rr * l.strides[rank - 2] + i * l.strides[rank - 1] +
                                  (rank > 2 ? b * l.strides[0] : 0);
                    amax = fmax(amax, fabs(xv[off]));
                    sw += fabs(wd[j * k + i]);
                }
                tol += amax / 254.0 * sw * (1 + 1e-6);
            }
            bad = !TEST_CHECK(fabs(got[r * n + j] - s) <= tol, "qmatmul %s %s m=%lld k=%lld "
                              "layout %d: out[%lld,%lld] = %.9g, want %.9g", wk_qtype_name(qt),
                              wk_dtype_name(dt), (long long)m, (long long)k, layout,
                              (long long)r, (long long)j, got[r * n + j], s);
        }
out:
    wk_storage_free(o);
    wk_storage_free(xs);
    wk_storage_free(wq);
    free(wd);
    free(xv);
    free(got);
}

static void test_qmatmul(wk_device *dev)
{
    static const wk_qtype qts[] = {WK_QTYPE_Q4_0, WK_QTYPE_Q5_1, WK_QTYPE_Q8_0, WK_QTYPE_Q2_K,
                                   WK_QTYPE_Q3_K, WK_QTYPE_Q4_K, WK_QTYPE_Q6_K, WK_QTYPE_F16};
    static const int64_t ms[] = {1, 3, 8, 33};
    for (size_t t = 0; t < sizeof qts / sizeof qts[0]; t++) {
        const int64_t be = wk_qtype_block_elems(qts[t]), k = be == 1 ? 64 : 3 * be;
        for (int d = 0; d < 3; d++) {
            for (size_t i = 0; i < 4; i++)
                qmm_case(dev, qts[t], float_dts[d], 2, (const int64_t[]){ms[i], k}, 5, 0);
            qmm_case(dev, qts[t], float_dts[d], 3, (const int64_t[]){3, 4, k}, 6, 0); /* batched */
            qmm_case(dev, qts[t], float_dts[d], 2, (const int64_t[]){8, k}, 4, 1);    /* strided */
            qmm_case(dev, qts[t], float_dts[d], 3, (const int64_t[]){2, 5, k}, 3, 2); /* transposed */
        }
    }
}

/* ---------------------------------------------------------------- 4. qembedding */
static void test_qembedding(wk_device *dev)
{
    const wk_qtype qt = WK_QTYPE_Q4_K;
    const int64_t rows = 6, k = 512;
    float *wd = malloc((size_t)(rows * k) * sizeof *wd);
    double *got = malloc((size_t)(5 * k) * sizeof *got);
    wk_storage *wq = NULL;
    if (!wd || !got || !make_w(dev, qt, rows, k, &wq, wd))
        goto out;
    /* ids 3, none, 0, 5, 3 (the sentinel is each dtype's max) */
    const uint8_t i8[5] = {3, 255, 0, 5, 3};
    const uint32_t i32[5] = {3, UINT32_MAX, 0, 5, 3};
    const int64_t i64[5] = {3, INT64_MAX, 0, 5, 3};
    const void *idv[3] = {i8, i32, i64};
    const wk_dtype idt[3] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64};
    const int64_t want_row[5] = {3, -1, 0, 5, 3};
    for (int t = 0; t < 3; t++) {
        wk_storage *ids = testlib_upload(dev, idt[t], idv[t], 5), *o = NULL;
        wk_layout li = testlib_layout1(5);
        for (int d = 0; d < 3 && ids; d++) {
            const wk_dtype dt = float_dts[d];
            if (!wk_device_supports_quant(dev, WK_OP_QEMBEDDING, qt, dt)) {
                TEST_EQ_STATUS(wk_qembedding(&o, dt, ids, &li, wq, qt, rows, k), WK_ERR_NOT_SUPPORTED);
                continue;
            }
            if (!TEST_EQ_STATUS(wk_qembedding(&o, dt, ids, &li, wq, qt, rows, k), WK_OK) ||
                testlib_download_f64(got, (size_t)(5 * k), o)) {
                wk_storage_free(o);
                continue;
            }
            int bad = 0;
            for (int p = 0; p < 5 && !bad; p++)
                for (int64_t i = 0; i < k && !bad; i++) {
                    double w = want_row[p] < 0 ? 0.0 : wd[want_row[p] * k + i];
                    /* the f32 value rounded once to dt */
                    w = round_to(dt, w);
                    bad = !TEST_CHECK(got[p * k + i] == w, "qembedding ids %s %s: out[%d,%lld] = "
                                      "%g, want %g", wk_dtype_name(idt[t]), wk_dtype_name(dt), p,
                                      (long long)i, got[p * k + i], w);
                }
            wk_storage_free(o);
            o = NULL;
        }
        /* an id past the rows fails, naming it; nothing is returned */
        const int64_t badv[1] = {rows};
        wk_storage *bid = testlib_upload(dev, WK_DTYPE_I64, badv, 1);
        wk_layout l1 = testlib_layout1(1);
        if (bid && wk_device_supports_quant(dev, WK_OP_QEMBEDDING, qt, WK_DTYPE_F32)) {
            wk_status st = wk_qembedding(&o, WK_DTYPE_F32, bid, &l1, wq, qt, rows, k);
            if (st == WK_OK && wk_device_backend(dev) != WK_BACKEND_CPU) {
                /* a GPU kernel finds it: reported by the next synchronize, output undefined */
                wk_storage_free(o);
                o = NULL;
                st = wk_device_synchronize(dev);
            }
            TEST_EQ_STATUS(st, WK_ERR_INDEX_OUT_OF_RANGE);
            TEST_CHECK(strstr(wk_last_error(), "id 6") != NULL || rows != 6,
                       "the message names the id: %s", wk_last_error());
            TEST_CHECK(o == NULL, "a failed qembedding returned an output");
        }
        wk_storage_free(bid);
        wk_storage_free(ids);
    }
out:
    wk_storage_free(wq);
    free(wd);
    free(got);
}

int main(void)
{
    /* the block geometry the kernels use equals the library's table */
    for (int t = 0; t < NQT; t++) {
        TEST_EQ_INT(wk_qb_block_elems((int)all_qt[t]), wk_qtype_block_elems(all_qt[t]));
        TEST_EQ_INT(wk_qb_block_bytes((int)all_qt[t]), wk_qtype_block_bytes(all_qt[t]));
    }
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    test_quantize_bytes();
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    for (int i = 0; i < nd; i++) {
        wk_device *dev = NULL;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[i]), WK_OK))
            continue;
        test_kat(dev);
        test_round_trip(dev);
        test_qmatmul(dev);
        test_qembedding(dev);
        wk_device_close(dev);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
