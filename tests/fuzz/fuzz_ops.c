/* fuzz_ops.c: the public op entry points on the CPU backend with fuzzer-chosen ops, dtypes,
 * shapes, strides, offsets, storage lengths, parameters and ids (index values come from the
 * fuzzer's bytes, so they are in range, out of range, negative and "none").
 * Contracts checked besides memory safety (ASan/UBSan, leaks per input):
 *   - the status is one an op may return (argument, shape, dtype, layout, overflow, index, out of
 *     memory, not supported), never a crash, WK_ERR_INTERNAL or a device error;
 *   - a failed call leaves *out NULL, sets a message, and leaves every input unchanged (in-place
 *     ops: the destination too);
 *   - a successful call returns a storage of the op's output dtype and element count.
 * Sizes: every layout the fuzzer builds addresses at most 2^14 elements (so a run stays fast);
 * layouts with huge dims whose count overflows or whose dims are negative still go in (the front
 * end must refuse them); any single allocation above 4 MiB fails (WK_ERR_OUT_OF_MEMORY). */
#include "fuzz.h"
#include <math.h>
#include <string.h>

enum { MAX_ELEMS = 1 << 14, NIN = 3 };
#define SKIP ((wk_status)-1)
static wk_device *g_cpu;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("OMP_NUM_THREADS", "2", 0);
    fuzz_cap_allocations((size_t)4 << 20);
    if (wk_device_open(&g_cpu, "cpu") != WK_OK)
        abort();
    return 0;
}

/* ---- operands: storages (with a snapshot) and their layouts */
typedef struct operand {
    wk_storage *s;
    wk_layout l;
    unsigned char *snap;
    size_t bytes;
} operand;
typedef struct ctx {
    fz f;
    int64_t pool[4]; /* the dims values layouts draw from, so shapes often agree */
    bool skip;       /* a layout too large to run (not a contract question) */
    operand in[NIN];
} ctx;

static wk_dtype read_dtype(ctx *c) { return (wk_dtype)(fz_u8(&c->f) % WK_DTYPE_COUNT); }

/* A layout of the given rank (or a fuzzer-chosen one when rank < 0); returns its storage length
 * need (highest element + 1; 0 when empty). */
static wk_layout read_layout(ctx *c, int32_t rank, int64_t *need)
{
    fz *f = &c->f;
    wk_layout l;
    memset(&l, 0, sizeof l);
    const uint8_t mode = fz_u8(f);
    l.rank = rank >= 0 ? rank : (int32_t)(fz_u8(f) % 5);
    if ((mode & 0xE0) == 0xE0) { /* wild: raw rank, dims, strides, offset */
        l.rank = rank >= 0 && (mode & 1) ? rank : (int32_t)(int8_t)fz_u8(f);
        for (int k = 0; k < WK_MAX_RANK; k++) {
            l.dims[k] = fz_i64_edgy(f, 5);
            l.strides[k] = fz_i64_edgy(f, 9);
        }
        l.offset = fz_i64_edgy(f, 9);
    } else {
        for (int k = 0; k < l.rank && k < WK_MAX_RANK; k++)
            l.dims[k] = c->pool[fz_u8(f) & 3];
        int64_t s = 1;
        for (int k = l.rank - 1; k >= 0; k--) { /* contiguous, then perturbed */
            l.strides[k] = s;
            s *= l.dims[k] > 0 ? l.dims[k] : 1;
        }
        if (mode & 1 && l.rank >= 2) { /* transposed last two dims: stored (.., n, m) */
            const int a = l.rank - 2;
            l.strides[a + 1] = l.dims[a] > 0 ? l.dims[a] : 1;
            l.strides[a] = 1;
        }
        if (mode & 2) /* a broadcast dim */
            l.strides[fz_u8(f) % (l.rank > 0 ? l.rank : 1)] = 0;
        if (mode & 4) /* random small strides */
            for (int k = 0; k < l.rank; k++)
                l.strides[k] = fz_u8(f) % 9;
        if (mode & 8)
            l.offset = fz_u8(f) % 9;
    }
    /* the highest element addressed, saturating (negative or overflowing layouts: need 1) */
    __int128 hi = l.offset, n = 1;
    bool bad = l.rank < 0 || l.rank > WK_MAX_RANK || l.offset < 0;
    for (int k = 0; !bad && k < l.rank; k++) {
        if (l.dims[k] < 0 || l.strides[k] < 0) {
            bad = true;
            break;
        }
        if (n <= ((__int128)1 << 63))
            n *= l.dims[k];
        if (l.dims[k] > 0 && hi < ((__int128)1 << 80))
            hi += (__int128)(l.dims[k] - 1) * l.strides[k];
    }
    if (!bad && n == 0)
        hi = l.offset - 1;
    if (!bad && n > INT64_MAX)
        bad = true; /* overflowing count: the front end must refuse it */
    if (!bad && (n > MAX_ELEMS || hi >= MAX_ELEMS))
        c->skip = true; /* valid but too large to run quickly */
    *need = bad ? 1 : hi + 1 <= 0 ? 0 : hi + 1 > MAX_ELEMS ? MAX_ELEMS : (int64_t)(hi + 1);
    return l;
}

/* Makes operand i: dtype dt, layout of the given rank, a storage of about the length the layout
 * needs (sometimes one short, so the front end must refuse it), filled from the fuzzer's bytes. */
static bool make_operand(ctx *c, int i, wk_dtype dt, int32_t rank)
{
    int64_t need;
    operand *o = &c->in[i];
    o->l = read_layout(c, rank, &need);
    const uint8_t adj = fz_u8(&c->f);
    int64_t len = need + (adj < 16 ? -1 : adj < 32 ? (int64_t)(adj % 5) : 0);
    if (len < 0)
        len = 0;
    const size_t es = wk_dtype_size(dt);
    o->bytes = (size_t)len * es;
    o->snap = malloc(o->bytes ? o->bytes : 1);
    if (!o->snap)
        return false;
    /* contents: the fuzzer's bytes, repeated; ids and floats get whatever the bytes say */
    const size_t avail = fz_left(&c->f) > 64 ? 64 : fz_left(&c->f);
    const uint8_t *src = c->f.p + c->f.pos;
    for (size_t b = 0; b < o->bytes; b++)
        o->snap[b] = avail ? src[b % avail] : (uint8_t)(b * 37u);
    c->f.pos += avail / 2;
    if (wk_storage_from_host(&o->s, g_cpu, dt, o->snap, (size_t)len) != WK_OK)
        return false;
    return true;
}

static bool unchanged(const operand *o)
{
    if (!o->s)
        return true;
    unsigned char *now = malloc(o->bytes ? o->bytes : 1);
    FUZZ_CHECK(now != NULL, "harness out of memory");
    FUZZ_CHECK(wk_storage_to_host(now, wk_storage_len(o->s), o->s) == WK_OK, "download");
    const bool same = memcmp(now, o->snap, o->bytes) == 0;
    free(now);
    return same;
}

static void release(ctx *c)
{
    for (int i = 0; i < NIN; i++) {
        wk_storage_free(c->in[i].s);
        free(c->in[i].snap);
    }
}

static bool status_allowed(wk_status st)
{
    switch (st) {
    case WK_ERR_INVALID_ARGUMENT: case WK_ERR_SHAPE: case WK_ERR_DTYPE: case WK_ERR_LAYOUT:
    case WK_ERR_OVERFLOW: case WK_ERR_INDEX_OUT_OF_RANGE: case WK_ERR_OUT_OF_MEMORY:
    case WK_ERR_NOT_SUPPORTED:
        return true;
    default:
        return false;
    }
}

static int64_t count_of(const wk_layout *l) { return wk_layout_elem_count(l); }
static const wk_op unary_ops[] = {
    WK_OP_EXP, WK_OP_LOG, WK_OP_SIN, WK_OP_COS, WK_OP_TANH, WK_OP_ABS, WK_OP_NEG, WK_OP_RECIP,
    WK_OP_SQR, WK_OP_SQRT, WK_OP_GELU, WK_OP_GELU_ERF, WK_OP_ERF, WK_OP_RELU, WK_OP_SILU,
    WK_OP_FLOOR, WK_OP_CEIL, WK_OP_ROUND, WK_OP_SIGN, WK_OP_SIGMOID, WK_OP_ADD, (wk_op)200};
static const wk_op binary_ops[] = {WK_OP_ADD, WK_OP_SUB, WK_OP_MUL, WK_OP_DIV, WK_OP_MAXIMUM,
                                   WK_OP_MINIMUM, WK_OP_SWIGLU, WK_OP_GEGLU, WK_OP_GEGLU_ERF,
                                   WK_OP_EXP};
static const wk_op cmp_ops[] = {WK_OP_EQ, WK_OP_NE, WK_OP_LT, WK_OP_LE, WK_OP_GT, WK_OP_GE, WK_OP_ADD};
static const wk_op reduce_ops[] = {WK_OP_SUM, WK_OP_MIN, WK_OP_MAX, WK_OP_ARGMIN, WK_OP_ARGMAX, WK_OP_NEG};
static const wk_qtype qtypes[] = {WK_QTYPE_F32, WK_QTYPE_F16, WK_QTYPE_Q4_0, WK_QTYPE_Q4_1,
                                  WK_QTYPE_Q5_0, WK_QTYPE_Q5_1, WK_QTYPE_Q8_0, WK_QTYPE_Q8_1,
                                  WK_QTYPE_Q2_K, WK_QTYPE_Q3_K, WK_QTYPE_Q4_K, WK_QTYPE_Q5_K,
                                  WK_QTYPE_Q6_K, WK_QTYPE_Q8_K, WK_QTYPE_BF16, (wk_qtype)4};
#define PICK(c, arr) (arr)[fz_u8(&(c)->f) % (sizeof(arr) / sizeof((arr)[0]))]

static wk_conv_params read_conv(ctx *c)
{
    wk_conv_params p;
    fz *f = &c->f;
    for (int k = 0; k < 2; k++) {
        p.stride[k] = (int32_t)fz_i64_edgy(f, 4);
        p.padding[k] = (int32_t)fz_i64_edgy(f, 3);
        p.dilation[k] = (int32_t)fz_i64_edgy(f, 4);
        p.output_padding[k] = (int32_t)fz_i64_edgy(f, 3);
    }
    p.groups = (int32_t)fz_i64_edgy(f, 4);
    return p;
}

/* Runs one op; returns its status; *out_dt / *out_n: the expected output dtype and count when
 * known (-1 when not checked). In-place ops report out_n = -2. */
static wk_status run_op(ctx *c, wk_storage **out, wk_dtype *out_dt, int64_t *out_n)
{
    fz *f = &c->f;
    const uint8_t which = fz_u8(f) % 40;
    const wk_dtype dt = read_dtype(c);
    operand *a = &c->in[0], *b = &c->in[1], *d = &c->in[2];
    *out_dt = dt;
    *out_n = -1;
    /* an operand too large to run quickly stops the input before the call (SKIP) */
#define MK(i, t, r) do { if (!make_operand(c, i, t, r) || c->skip) return SKIP; } while (0)
    switch (which) {
    case 0: {
        MK(0, dt, -1);
        *out_n = count_of(&a->l);
        return wk_unary(out, PICK(c, unary_ops), a->s, &a->l);
    }
    case 1: MK(0, dt, -1); *out_n = count_of(&a->l);
        return wk_affine(out, a->s, &a->l, (double)(int8_t)fz_u8(f) / 4, (double)(int8_t)fz_u8(f));
    case 2: MK(0, dt, -1); *out_n = count_of(&a->l); return wk_powf(out, a->s, &a->l, (double)(int8_t)fz_u8(f) / 8);
    case 3: MK(0, dt, -1); *out_n = count_of(&a->l); return wk_elu(out, a->s, &a->l, (double)(int8_t)fz_u8(f) / 8);
    case 4: MK(0, dt, -1); MK(1, fz_u8(f) < 240 ? dt : read_dtype(c), -1); *out_n = count_of(&a->l);
        return wk_binary(out, PICK(c, binary_ops), a->s, &a->l, b->s, &b->l);
    case 5: MK(0, dt, -1); MK(1, dt, -1); *out_n = count_of(&a->l); *out_dt = WK_DTYPE_U8;
        return wk_cmp(out, PICK(c, cmp_ops), a->s, &a->l, b->s, &b->l);
    case 6: MK(0, read_dtype(c), -1); MK(1, dt, -1); MK(2, dt, -1); *out_n = count_of(&a->l);
        return wk_where_cond(out, a->s, &a->l, b->s, &b->l, d->s, &d->l);
    case 7: {
        MK(0, dt, -1);
        const wk_dtype to = (wk_dtype)(fz_u8(f) % (WK_DTYPE_COUNT + 1));
        *out_n = count_of(&a->l);
        *out_dt = to;
        return wk_to_dtype(out, a->s, &a->l, to);
    }
    case 8: {
        MK(0, dt, -1);
        uint64_t v = fz_u64(f);
        *out_n = -2;
        return wk_const_set(a->s, &a->l, &v);
    }
    case 9: {
        MK(0, dt, -1);
        int32_t dims[WK_MAX_RANK + 1];
        const int32_t nd = (int32_t)(fz_u8(f) % (WK_MAX_RANK + 2));
        for (int k = 0; k < nd; k++)
            dims[k] = (int32_t)(int8_t)fz_u8(f) % 10;
        const wk_op op = PICK(c, reduce_ops);
        if (op == WK_OP_ARGMIN || op == WK_OP_ARGMAX)
            *out_dt = WK_DTYPE_U32;
        return wk_reduce(out, op, a->s, &a->l, nd > 0 || fz_u8(f) & 1 ? dims : NULL, nd);
    }
    case 10: {
        MK(0, dt, 1); MK(1, fz_u8(f) < 240 ? dt : read_dtype(c), -1);
        *out_n = -2;
        return wk_copy_strided_src(a->s, (size_t)fz_i64_edgy(f, 8), b->s, &b->l);
    }
    case 11: {
        MK(0, dt, 1); MK(1, dt, 1);
        size_t p[6];
        for (int k = 0; k < 6; k++)
            p[k] = (size_t)fz_i64_edgy(f, 8);
        size_t cnt; /* valid but huge (rows of stride 0): too slow to run, not a question */
        if (!__builtin_mul_overflow(p[0], p[1], &cnt) && cnt > MAX_ELEMS)
            return SKIP;
        *out_n = -2;
        return wk_copy2d(a->s, b->s, p[0], p[1], p[2], p[3], p[4], p[5]);
    }
    case 12: {
        const int32_t r = 2 + fz_u8(f) % 3;
        MK(0, dt, r); MK(1, dt, fz_u8(f) < 240 ? r : -1);
        return wk_matmul(out, a->s, &a->l, b->s, &b->l);
    }
    case 13: case 14: case 15: case 16: {
        const int32_t r = which < 15 ? 3 : 4;
        MK(0, dt, fz_u8(f) < 240 ? r : -1); MK(1, dt, fz_u8(f) < 240 ? r : -1);
        const wk_conv_params p = read_conv(c);
        const wk_conv_params *pp = fz_u8(f) == 255 ? NULL : &p;
        if (which == 13) return wk_conv1d(out, a->s, &a->l, b->s, &b->l, pp);
        if (which == 14) return wk_conv_transpose1d(out, a->s, &a->l, b->s, &b->l, pp);
        if (which == 15) return wk_conv2d(out, a->s, &a->l, b->s, &b->l, pp);
        return wk_conv_transpose2d(out, a->s, &a->l, b->s, &b->l, pp);
    }
    case 17: case 18: {
        MK(0, dt, fz_u8(f) < 240 ? 4 : -1);
        wk_pool_params p;
        for (int k = 0; k < 2; k++) {
            p.kernel[k] = (int32_t)fz_i64_edgy(f, 4);
            p.stride[k] = (int32_t)fz_i64_edgy(f, 4);
        }
        return which == 17 ? wk_avg_pool2d(out, a->s, &a->l, &p) : wk_max_pool2d(out, a->s, &a->l, &p);
    }
    case 19: MK(0, dt, fz_u8(f) < 240 ? 3 : -1);
        return wk_upsample_nearest1d(out, a->s, &a->l, fz_i64_edgy(f, 12));
    case 20: MK(0, dt, fz_u8(f) < 240 ? 4 : -1);
        return wk_upsample_nearest2d(out, a->s, &a->l, fz_i64_edgy(f, 12), fz_i64_edgy(f, 12));
    case 21: {
        MK(0, dt, fz_u8(f) < 240 ? 4 : -1);
        const int64_t h = fz_i64_edgy(f, 12), w = fz_i64_edgy(f, 12);
        const int ac = fz_u8(f) % 3;
        const double sh = (double)(int8_t)fz_u8(f) / 16, sw = fz_u8(f) == 7 ? NAN : (double)(int8_t)fz_u8(f) / 16;
        return wk_upsample_bilinear2d(out, a->s, &a->l, h, w, ac, sh, sw);
    }
    case 22: case 23: case 24: case 25: case 26: {
        static const wk_dtype id_types[] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64, WK_DTYPE_I32};
        const wk_dtype it = PICK(c, id_types);
        const int32_t dim = (int32_t)(int8_t)fz_u8(f) % 5;
        MK(0, dt, -1);
        MK(1, it, which == 22 || which == 26 ? (fz_u8(f) < 240 ? 1 : -1) : -1);
        if (which == 22) return wk_index_select(out, a->s, &a->l, b->s, &b->l, dim);
        if (which == 23) return wk_gather(out, a->s, &a->l, b->s, &b->l, dim);
        MK(2, fz_u8(f) < 240 ? dt : read_dtype(c), -1);
        if (which == 26) return wk_index_add(out, a->s, &a->l, b->s, &b->l, d->s, &d->l, dim);
        *out_n = -2;
        if (which == 24) return wk_scatter_set(a->s, &a->l, b->s, &b->l, d->s, &d->l, dim);
        return wk_scatter_add_set(a->s, &a->l, b->s, &b->l, d->s, &d->l, dim);
    }
    case 27: MK(0, dt, -1); *out_n = count_of(&a->l); return wk_softmax_last_dim(out, a->s, &a->l);
    case 28: {
        MK(0, dt, -1); MK(1, dt, fz_u8(f) < 240 ? 1 : -1);
        *out_n = count_of(&a->l);
        return wk_rms_norm(out, a->s, &a->l, b->s, &b->l, (float)fz_u8(f) / 64);
    }
    case 29: {
        MK(0, dt, -1); MK(1, dt, fz_u8(f) < 240 ? 1 : -1); MK(2, dt, fz_u8(f) < 240 ? 1 : -1);
        *out_n = count_of(&a->l);
        return wk_layer_norm(out, a->s, &a->l, b->s, &b->l, d->s, &d->l, (float)fz_u8(f) / 64);
    }
    case 30: case 31: case 32: {
        MK(0, dt, fz_u8(f) < 240 ? 4 : -1);
        const int32_t cr = fz_u8(f) & 1 ? 2 : 3;
        MK(1, dt, fz_u8(f) < 240 ? cr : -1); MK(2, dt, fz_u8(f) < 240 ? cr : -1);
        *out_n = count_of(&a->l);
        if (which == 30) return wk_rope(out, a->s, &a->l, b->s, &b->l, d->s, &d->l);
        if (which == 31) return wk_rope_i(out, a->s, &a->l, b->s, &b->l, d->s, &d->l);
        return wk_rope_thd(out, a->s, &a->l, b->s, &b->l, d->s, &d->l);
    }
    case 33: MK(0, dt, -1); *out_n = count_of(&a->l); *out_dt = WK_DTYPE_U32;
        return wk_arg_sort_last_dim(out, a->s, &a->l, fz_u8(f) & 1);
    case 34: {
        const wk_qtype qt = PICK(c, qtypes);
        MK(0, fz_u8(f) < 240 ? WK_DTYPE_F32 : dt, -1);
        *out_dt = WK_DTYPE_U8;
        return wk_quantize(out, qt, a->s, &a->l);
    }
    case 35: {
        const wk_qtype qt = PICK(c, qtypes);
        MK(0, fz_u8(f) < 240 ? WK_DTYPE_U8 : dt, 1);
        const int64_t n = fz_i64_edgy(f, 600);
        *out_n = n;
        return wk_dequantize(out, dt, a->s, qt, n);
    }
    case 36: {
        const wk_qtype qt = PICK(c, qtypes);
        MK(0, dt, -1); MK(1, fz_u8(f) < 240 ? WK_DTYPE_U8 : dt, 1);
        const int64_t n = fz_i64_edgy(f, 8), k = fz_i64_edgy(f, 600);
        return wk_qmatmul(out, a->s, &a->l, b->s, qt, n, k);
    }
    case 37: {
        static const wk_dtype id_types[] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64, WK_DTYPE_F32};
        const wk_qtype qt = PICK(c, qtypes);
        MK(0, PICK(c, id_types), -1); MK(1, fz_u8(f) < 240 ? WK_DTYPE_U8 : dt, 1);
        const int64_t rows = fz_i64_edgy(f, 8), k = fz_i64_edgy(f, 600);
        return wk_qembedding(out, dt, a->s, &a->l, b->s, qt, rows, k);
    }
    case 38: {
        const size_t n = (size_t)fz_i64_edgy(f, 3000);
        const double lo = (double)(int8_t)fz_u8(f), hi = fz_u8(f) == 3 ? NAN : (double)(int8_t)fz_u8(f);
        *out_n = (int64_t)n;
        if (fz_u8(f) & 1)
            return wk_rand_uniform(out, g_cpu, dt, n, lo, hi);
        return wk_rand_normal(out, g_cpu, dt, n, lo, hi);
    }
    default: {
        MK(0, dt, 1);
        *out_n = (int64_t)wk_storage_len(a->s);
        return wk_storage_clone(out, a->s);
    }
    }
#undef MK
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_cpu)
        LLVMFuzzerInitialize(NULL, NULL);
    ctx c;
    memset(&c, 0, sizeof c);
    c.f = fz_make(data, size);
    for (int k = 0; k < 4; k++)
        c.pool[k] = fz_u8(&c.f) % 9;
    wk_storage *out = NULL;
    wk_dtype out_dt;
    int64_t out_n;
    const wk_status st = run_op(&c, &out, &out_dt, &out_n);
    if (st == SKIP) {
        release(&c);
        return 0;
    }
    if (st != WK_OK) {
        FUZZ_CHECK(status_allowed(st), "status %d %s", (int)st, wk_status_string(st));
        FUZZ_CHECK(out == NULL, "a failed call set *out");
        FUZZ_CHECK(wk_last_error()[0] != '\0', "no message for %s", wk_status_string(st));
        for (int i = 0; i < NIN; i++)
            FUZZ_CHECK(unchanged(&c.in[i]), "a failed call changed operand %d", i);
    } else {
        /* inputs unchanged (in-place ops: every operand but the destination, operand 0) */
        for (int i = out_n == -2 ? 1 : 0; i < NIN; i++)
            FUZZ_CHECK(unchanged(&c.in[i]), "the call changed input operand %d", i);
        if (out_n != -2) {
            FUZZ_CHECK(out != NULL, "success without an output");
            FUZZ_CHECK(wk_storage_dtype(out) == out_dt, "output dtype %s, want %s",
                       wk_dtype_name(wk_storage_dtype(out)), wk_dtype_name(out_dt));
            if (out_n >= 0)
                FUZZ_CHECK((int64_t)wk_storage_len(out) == out_n, "output of %zu elements, want %lld",
                           wk_storage_len(out), (long long)out_n);
        }
    }
    wk_storage_free(out);
    release(&c);
    return 0;
}
