/* cpu_cast.c: the CPU to_dtype, every (from, to) pair, with the rules of docs/semantics.md
 * "Conversions".
 *
 * Each element passes through a canonical value: int64_t for integer sources, double for float
 * sources (both exact for every dtype). A loader (chosen once per call by `from`) fills a chunk
 * of canonical values, a storer (chosen once by `to` and the canonical kind) writes them out, so
 * the 100 pairs cost 20 loaders + 20 storers and no per-element switch. Going through int64_t
 * keeps i64/u32 exact; going through double is exact for every float source. */
#include "cpu_elem.h"
#include <omp.h>
#include <string.h>

#define CAST_CHUNK 1024

typedef union cast_buf {
    double d[CAST_CHUNK];
    int64_t i[CAST_CHUNK];
} cast_buf;

/* ---- per-dtype traits: canonical field, load, store from double, store from int64. */
#define CAST_FIELD_u8 i
#define CAST_FIELD_u32 i
#define CAST_FIELD_i16 i
#define CAST_FIELD_i32 i
#define CAST_FIELD_i64 i
#define CAST_FIELD_bf16 d
#define CAST_FIELD_f16 d
#define CAST_FIELD_f32 d
#define CAST_FIELD_f64 d
#define CAST_FIELD_f8e4m3 d

#define CAST_LOAD_u8(v) ((int64_t)(v))
#define CAST_LOAD_u32(v) ((int64_t)(v))
#define CAST_LOAD_i16(v) ((int64_t)(v))
#define CAST_LOAD_i32(v) ((int64_t)(v))
#define CAST_LOAD_i64(v) ((int64_t)(v))
#define CAST_LOAD_bf16(v) ((double)wk_fp_bf16_to_f32(v))
#define CAST_LOAD_f16(v) ((double)wk_fp_f16_to_f32(v))
#define CAST_LOAD_f32(v) ((double)(v))
#define CAST_LOAD_f64(v) (v)
#define CAST_LOAD_f8e4m3(v) ((double)wk_fp_f8e4m3_to_f32(v))

/* float -> integer: NaN -> 0, truncation toward zero, saturation. lo/hi are MIN-1 and MAX+1 as
 * doubles (for i64, MIN-1 rounds to MIN, which still maps to MIN); the explicit tests keep the
 * C conversion in range (out of range it is UB). */
#define CAST_SAT(T, d, lo, hi, mn, mx) \
    ((d) != (d) ? (T)0 : (d) <= (lo) ? (T)(mn) : (d) >= (hi) ? (T)(mx) : (T)(d))
#define CAST_FROM_D_u8(d) CAST_SAT(uint8_t, d, -1.0, 256.0, 0, UINT8_MAX)
#define CAST_FROM_D_u32(d) CAST_SAT(uint32_t, d, -1.0, 4294967296.0, 0, UINT32_MAX)
#define CAST_FROM_D_i16(d) CAST_SAT(int16_t, d, -32769.0, 32768.0, INT16_MIN, INT16_MAX)
#define CAST_FROM_D_i32(d) \
    CAST_SAT(int32_t, d, -2147483649.0, 2147483648.0, INT32_MIN, INT32_MAX)
#define CAST_FROM_D_i64(d) \
    CAST_SAT(int64_t, d, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX)
/* f64 -> reduced goes through f32 (documented double rounding). */
#define CAST_FROM_D_bf16(d) wk_fp_f32_to_bf16((float)(d))
#define CAST_FROM_D_f16(d) wk_fp_f32_to_f16((float)(d))
#define CAST_FROM_D_f32(d) ((float)(d))
#define CAST_FROM_D_f64(d) (d)
#define CAST_FROM_D_f8e4m3(d) wk_fp_f32_to_f8e4m3((float)(d))

/* integer -> integer wraps (two's complement, as Rust's `as`; narrowing to a signed type is
 * modulo 2^bits in GCC/Clang); integer -> float is one C conversion (round to nearest even),
 * to f32 first for the reduced types. */
#define CAST_FROM_I_u8(v) ((uint8_t)(uint64_t)(v))
#define CAST_FROM_I_u32(v) ((uint32_t)(uint64_t)(v))
#define CAST_FROM_I_i16(v) ((int16_t)(uint16_t)(uint64_t)(v))
#define CAST_FROM_I_i32(v) ((int32_t)(uint32_t)(uint64_t)(v))
#define CAST_FROM_I_i64(v) ((int64_t)(v))
#define CAST_FROM_I_bf16(v) wk_fp_f32_to_bf16((float)(v))
#define CAST_FROM_I_f16(v) wk_fp_f32_to_f16((float)(v))
#define CAST_FROM_I_f32(v) ((float)(v))
#define CAST_FROM_I_f64(v) ((double)(v))
#define CAST_FROM_I_f8e4m3(v) wk_fp_f32_to_f8e4m3((float)(v))

/* ---- the loop bodies, one set per dtype */
typedef void (*cast_load_fn)(cast_buf *b, const void *x, int64_t off, wk_walker *w, int64_t n);
typedef void (*cast_store_fn)(void *out, int64_t start, const cast_buf *b, int64_t n);

#define CAST_DEFINE(E, n, T)                                                                    \
    /* contiguous (w == NULL: x[off + i]) or strided (w walks the layout) */                  \
    static void cast_load_##n(cast_buf *b, const void *x, int64_t off, wk_walker *w,          \
                              int64_t cnt)                                                     \
    {                                                                                          \
        const T *p = (const T *)x;                                                             \
        if (!w) {                                                                              \
            for (int64_t i = 0; i < cnt; i++)                                                  \
                b->CAST_FIELD_##n[i] = CAST_LOAD_##n(p[off + i]);                              \
            return;                                                                            \
        }                                                                                      \
        for (int64_t i = 0; i < cnt; i++) {                                                    \
            b->CAST_FIELD_##n[i] = CAST_LOAD_##n(p[w->off]);                                   \
            wk_walker_next(w);                                                                 \
        }                                                                                      \
    }                                                                                          \
    static void cast_store_d_##n(void *out, int64_t start, const cast_buf *b, int64_t cnt)    \
    {                                                                                          \
        T *o = (T *)out + start;                                                               \
        for (int64_t i = 0; i < cnt; i++)                                                      \
            o[i] = CAST_FROM_D_##n(b->d[i]);                                                   \
    }                                                                                          \
    static void cast_store_i_##n(void *out, int64_t start, const cast_buf *b, int64_t cnt)    \
    {                                                                                          \
        T *o = (T *)out + start;                                                               \
        for (int64_t i = 0; i < cnt; i++)                                                      \
            o[i] = CAST_FROM_I_##n(b->i[i]);                                                   \
    }
WK_DTYPE_LIST(CAST_DEFINE)
#undef CAST_DEFINE

#define CAST_ROW(E, n, T) {cast_load_##n, cast_store_d_##n, cast_store_i_##n},
static const struct {
    cast_load_fn load;
    cast_store_fn store_d, store_i;
} cast_table[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(CAST_ROW)};
#undef CAST_ROW

/* [*b, *e): this thread's share of n items (static split). */
static void cast_thread_range(int64_t n, int64_t *b, int64_t *e)
{
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t q = n / nt, r = n % nt;
    *b = t * q + (t < r ? t : r);
    *e = *b + q + (t < r ? 1 : 0);
}

/* Transpose-like layouts (the second-innermost stride is the smaller): the last two dims (R rows,
 * C cols) go in CAST_TILE x CAST_TILE tiles, a tile row at a time, so that the lines a tile reads
 * stay in cache from one tile row to the next. A task is one band of tile rows of one outer
 * index. */
#define CAST_TILE 32
static void cast_tiled(void *out, const void *x, const wk_layout *c, cast_load_fn load,
                       cast_store_fn store, int par)
{
    const int r = c->rank;
    const int64_t R = c->dims[r - 2], C = c->dims[r - 1];
    const int64_t sr = c->strides[r - 2], sc = c->strides[r - 1];
    wk_layout outer = *c;
    outer.rank = r - 2;
    const int64_t bands = (R + CAST_TILE - 1) / CAST_TILE;
    const int64_t tasks = wk_layout_elem_count(&outer) * bands;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t o = t / bands, i0 = (t % bands) * CAST_TILE;
        const int64_t i1 = i0 + CAST_TILE < R ? i0 + CAST_TILE : R;
        const int64_t base = wk_layout_offset_of(&outer, o);
        cast_buf buf;
        wk_layout row;
        memset(&row, 0, sizeof row);
        row.rank = 1;
        row.strides[0] = sc;
        for (int64_t j0 = 0; j0 < C; j0 += CAST_TILE) {
            row.dims[0] = C - j0 < CAST_TILE ? C - j0 : CAST_TILE;
            for (int64_t i = i0; i < i1; i++) {
                wk_walker w;
                row.offset = base + i * sr + j0 * sc;
                wk_walker_init(&w, &row, 0);
                load(&buf, x, 0, &w, row.dims[0]);
                store(out, (o * R + i) * C + j0, &buf, row.dims[0]);
            }
        }
    }
}

/* ---- direct loops for the common pairs on contiguous input: one pass, no canonical buffer.
 * `omp simd` makes GCC vectorise them at -O2 (its default cost model there declines), and
 * WK_CPU_CLONES builds AVX2/AVX-512 versions, where the 32 <-> 16 bit narrowing and widening are
 * single instructions. Each loop gives the bits the generic path gives: that path moves floats
 * through double, and the f32 -> f64 -> f32 round trip quiets a signalling NaN (sets bit 22,
 * payload kept), so the loops that end in f32 set that bit on NaN too (cast_quiet). For
 * f32 -> bf16/f16 the quieting changes nothing: both conversions set the quiet bit anyway. */
typedef void (*cast_fast_fn)(void *out, const void *x, int64_t n);

static inline float cast_quiet(float f)
{
    const uint32_t u = wk_fp_bits(f);
    return wk_fp_from_bits((u & 0x7fffffffu) > 0x7f800000u ? u | 0x400000u : u);
}

/* f16 -> f32 as fpconv.h's wk_fp_f16_to_f32 then cast_quiet, without its branches and its
 * normalising loop, so that it vectorises: a subnormal m * 2^-24 is (float)m * 2^-24, exact, and
 * normal on both sides (so flush-to-zero modes cannot touch it). Checked bit for bit against the
 * generic path for all 65536 inputs. */
static inline float cast_f16_to_f32(uint16_t h)
{
    const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    const uint32_t e = ((uint32_t)h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu;
    const uint32_t normal = ((e + 112u) << 23) | (m << 13);
    const uint32_t infnan = 0x7f800000u | (m << 13) | ((0u - m) >> 31 << 22); /* quiet if m */
    const uint32_t sub = wk_fp_bits((float)(int32_t)m * 0x1p-24f);
    /* selects written as masks: GCC keeps a ?: around the float multiply as a branch */
    const uint32_t is_sub = 0u - (uint32_t)(e == 0u), is_top = 0u - (uint32_t)(e == 0x1fu);
    const uint32_t r = (sub & is_sub) | (infnan & is_top) | (normal & ~(is_sub | is_top));
    return wk_fp_from_bits(sign | r);
}

#define CAST_LANES 16
#define CAST_FAST(NAME, TI, TO, EXPR)                                                           \
    WK_CPU_CLONES static void cast_fast_##NAME(void *out, const void *xv, int64_t n)           \
    {                                                                                          \
        TO *restrict o = (TO *)out;                                                            \
        const TI *restrict x = (const TI *)xv;                                                 \
        int64_t i = 0;                                                                         \
        for (; i + CAST_LANES <= n; i += CAST_LANES) {                                         \
            for (int pf = 0; pf < (int)(CAST_LANES * sizeof(TI)); pf += 64)                    \
                WK_CPU_PREFETCH((const char *)(x + i) + pf);                                   \
            _Pragma("omp simd") for (int j = 0; j < CAST_LANES; j++) {                         \
                const TI v = x[i + j];                                                         \
                o[i + j] = EXPR;                                                               \
            }                                                                                  \
        }                                                                                      \
        for (; i < n; i++) {                                                                   \
            const TI v = x[i];                                                                 \
            o[i] = EXPR;                                                                       \
        }                                                                                      \
    }
CAST_FAST(f32_bf16, float, uint16_t, wk_fp_f32_to_bf16(v))
CAST_FAST(f32_f16, float, uint16_t, wk_fp_f32_to_f16(v))
CAST_FAST(f32_f64, float, double, (double)v)
CAST_FAST(f64_f32, double, float, (float)v)
CAST_FAST(bf16_f32, uint16_t, float, cast_quiet(wk_fp_bf16_to_f32(v)))
CAST_FAST(f16_f32, uint16_t, float, cast_f16_to_f32(v))
CAST_FAST(u8_f32, uint8_t, float, (float)v)
CAST_FAST(u32_f32, uint32_t, float, (float)v)
CAST_FAST(i16_f32, int16_t, float, (float)v)
CAST_FAST(i32_f32, int32_t, float, (float)v)
CAST_FAST(i64_f32, int64_t, float, (float)v)
#undef CAST_FAST

/* The direct loop for (from, to), or NULL: use the generic path. */
static cast_fast_fn cast_fast_for(wk_dtype from, wk_dtype to)
{
#define CAST_PAIR(A, B, NAME)                                                                  \
    if (from == WK_DTYPE_##A && to == WK_DTYPE_##B)                                            \
        return cast_fast_##NAME;
    CAST_PAIR(F32, BF16, f32_bf16)
    CAST_PAIR(F32, F16, f32_f16)
    CAST_PAIR(F32, F64, f32_f64)
    CAST_PAIR(F64, F32, f64_f32)
    CAST_PAIR(BF16, F32, bf16_f32)
    CAST_PAIR(F16, F32, f16_f32)
    CAST_PAIR(U8, F32, u8_f32)
    CAST_PAIR(U32, F32, u32_f32)
    CAST_PAIR(I16, F32, i16_f32)
    CAST_PAIR(I32, F32, i32_f32)
    CAST_PAIR(I64, F32, i64_f32)
#undef CAST_PAIR
    return NULL;
}

/* Contiguous x from element off: fn over the threads' static shares. */
static void cast_fast_run(void *out, wk_dtype from, wk_dtype to, const void *x, int64_t off,
                          int64_t n, cast_fast_fn fn)
{
    const size_t isz = wk_dtype_size(from), osz = wk_dtype_size(to);
#pragma omp parallel if (n > WK_CPU_PAR_THRESHOLD)
    {
        int64_t b, e;
        cast_thread_range(n, &b, &e);
        if (b < e)
            fn((char *)out + (size_t)b * osz, (const char *)x + (size_t)(off + b) * isz, e - b);
    }
}

/* out (contiguous, dims of lx, dtype to) = x (dtype from) converted. */
wk_status wk_cpu_to_dtype(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx)
{
    if (from == to)
        return wk_cpu_copy_strided(dev, to, out, 0, x, lx);
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    wk_layout c;
    wk_layout_collapse(&c, lx);
    const bool contig = c.rank == 0 || (c.rank == 1 && c.strides[0] == 1);
    const cast_fast_fn fast = contig ? cast_fast_for(from, to) : NULL;
    if (fast) {
        cast_fast_run(out, from, to, x, c.offset, n, fast);
        return WK_OK;
    }
    const cast_load_fn load = cast_table[from].load;
    const cast_store_fn store = wk_dtype_is_int(from) ? cast_table[to].store_i
                                                      : cast_table[to].store_d;

    if (c.rank >= 2 && c.strides[c.rank - 2] < c.strides[c.rank - 1]) {
        cast_tiled(out, x, &c, load, store, n > WK_CPU_PAR_THRESHOLD);
        return WK_OK;
    }
#pragma omp parallel if (n > WK_CPU_PAR_THRESHOLD)
    {
        int64_t b, e;
        cast_thread_range(n, &b, &e);
        cast_buf buf;
        wk_walker w;
        if (!contig && b < e)
            wk_walker_init(&w, &c, b);
        for (int64_t i = b; i < e; i += CAST_CHUNK) {
            const int64_t cnt = e - i < CAST_CHUNK ? e - i : CAST_CHUNK;
            load(&buf, x, c.offset + i, contig ? NULL : &w, cnt);
            store(out, i, &buf, cnt);
        }
    }
    return WK_OK;
}
