/* llama_util.c: the small helpers of examples/llama.c that are not about the model: errors,
 * layouts, GGUF metadata getters, sampling, token printing, id lists. Public API only. */
#include "llama_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ errors */
/* An example program: a failed call prints why and exits. */
void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "llama: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void ck(wk_status s, const char *what)
{
    if (s != WK_OK)
        die("%s: %s: %s", what, wk_status_string(s), wk_last_error());
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ --profile */
#define PROF_ROWS 64
typedef struct prof_row {
    char name[64];
    long calls;
    double s;
} prof_row;
static struct {
    int on, n, ndev;
    wk_device *const *devs;
    prof_row rows[PROF_ROWS];
} g_prof;

void prof_on(wk_device *const *devs, int n)
{
    memset(&g_prof, 0, sizeof g_prof);
    g_prof.on = 1;
    g_prof.devs = devs;
    g_prof.ndev = n;
}

void prof_off(void) { g_prof.on = 0; }

static void prof_sync(void)
{
    for (int i = 0; i < g_prof.ndev; i++)
        ck(wk_device_synchronize(g_prof.devs[i]), "wk_device_synchronize");
}

double prof_begin(void)
{
    if (!g_prof.on)
        return 0.0;
    prof_sync();
    return now_s();
}

void prof_end(double t0, const char *label, const char *call)
{
    if (!g_prof.on)
        return;
    prof_sync();
    const double t = now_s() - t0;
    char name[64];
    if (label) {
        snprintf(name, sizeof name, "%s", label);
    } else { /* the function's name: the call's text up to "(" */
        size_t len = strcspn(call, "(");
        len = len < sizeof name - 1 ? len : sizeof name - 1;
        memcpy(name, call, len);
        name[len] = '\0';
    }
    int i = 0;
    while (i < g_prof.n && strcmp(g_prof.rows[i].name, name))
        i++;
    if (i == g_prof.n) {
        if (g_prof.n == PROF_ROWS)
            return;
        snprintf(g_prof.rows[g_prof.n++].name, sizeof g_prof.rows[0].name, "%s", name);
    }
    g_prof.rows[i].calls++;
    g_prof.rows[i].s += t;
}

static int prof_cmp(const void *a, const void *b)
{
    const double x = ((const prof_row *)a)->s, y = ((const prof_row *)b)->s;
    return x < y ? 1 : x > y ? -1 : 0;
}

void prof_print(const char *title)
{
    double total = 0;
    for (int i = 0; i < g_prof.n; i++)
        total += g_prof.rows[i].s;
    qsort(g_prof.rows, (size_t)g_prof.n, sizeof g_prof.rows[0], prof_cmp);
    printf("profile: %s: %.2f ms in %d kinds of call\n", title, 1e3 * total, g_prof.n);
    printf("  %-44s %6s %10s %6s %10s\n", "op", "calls", "ms", "share", "us/call");
    for (int i = 0; i < g_prof.n; i++) {
        const prof_row *r = &g_prof.rows[i];
        printf("  %-44s %6ld %10.3f %5.1f%% %10.1f\n", r->name, r->calls, 1e3 * r->s,
               total > 0 ? 100.0 * r->s / total : 0.0, 1e6 * r->s / (double)r->calls);
    }
}

/* ------------------------------------------------------------------ layouts */
wk_layout lay(int32_t rank, const int64_t *dims)
{
    wk_layout l;
    CK(wk_layout_contiguous(&l, rank, dims));
    return l;
}
wk_layout lay1(int64_t a) { const int64_t d[1] = {a}; return lay(1, d); }
wk_layout lay2(int64_t a, int64_t b) { const int64_t d[2] = {a, b}; return lay(2, d); }
wk_layout lay3(int64_t a, int64_t b, int64_t c)
{
    const int64_t d[3] = {a, b, c};
    return lay(3, d);
}

/* A strided view: rank dims with the given strides and offset. */
wk_layout view(int32_t rank, const int64_t *dims, const int64_t *strides, int64_t offset)
{
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        l.dims[i] = dims[i];
        l.strides[i] = strides[i];
    }
    l.offset = offset;
    return l;
}

int64_t meta_int(const wk_gguf *g, const char *key, int64_t def, int required)
{
    const int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) {
        if (required)
            die("missing metadata key %s", key);
        return def;
    }
    wk_gguf_value v;
    CK(wk_gguf_kv_value(&v, g, i));
    switch (wk_gguf_value_type(v)) {
    case WK_GGUF_TYPE_U8: { uint8_t x; CK(wk_gguf_get_u8(&x, v)); return x; }
    case WK_GGUF_TYPE_I8: { int8_t x; CK(wk_gguf_get_i8(&x, v)); return x; }
    case WK_GGUF_TYPE_U16: { uint16_t x; CK(wk_gguf_get_u16(&x, v)); return x; }
    case WK_GGUF_TYPE_I16: { int16_t x; CK(wk_gguf_get_i16(&x, v)); return x; }
    case WK_GGUF_TYPE_U32: { uint32_t x; CK(wk_gguf_get_u32(&x, v)); return x; }
    case WK_GGUF_TYPE_I32: { int32_t x; CK(wk_gguf_get_i32(&x, v)); return x; }
    case WK_GGUF_TYPE_U64: { uint64_t x; CK(wk_gguf_get_u64(&x, v)); return (int64_t)x; }
    case WK_GGUF_TYPE_I64: { int64_t x; CK(wk_gguf_get_i64(&x, v)); return x; }
    default: die("metadata key %s is not an integer", key);
    }
    return def;
}

double meta_float(const wk_gguf *g, const char *key, double def)
{
    const int64_t i = wk_gguf_find_key(g, key);
    if (i < 0)
        return def;
    wk_gguf_value v;
    CK(wk_gguf_kv_value(&v, g, i));
    if (wk_gguf_value_type(v) == WK_GGUF_TYPE_F32) {
        float x;
        CK(wk_gguf_get_f32(&x, v));
        return x;
    }
    if (wk_gguf_value_type(v) == WK_GGUF_TYPE_F64) {
        double x;
        CK(wk_gguf_get_f64(&x, v));
        return x;
    }
    die("metadata key %s is not a float", key);
    return def;
}

int64_t find_tensor(const wk_gguf *g, const char *name, int required)
{
    const int64_t i = wk_gguf_find_tensor(g, name);
    if (i < 0 && required)
        die("missing tensor %s", name);
    return i;
}

/* ------------------------------------------------------------------ sampling */
uint64_t rng_next(uint64_t *st) /* splitmix64 */
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
double rng_uniform(uint64_t *st) { return (double)(rng_next(st) >> 11) * 0x1.0p-53; }

/* The answer of one pass keeping the first strict maximum (x[i] > best: a NaN never takes
 * over, a NaN at 0 is kept, -0 and +0 tie), in two passes that the compiler keeps in vector
 * registers: the maximum M by 16 independent running maxima (each `x > m ? x : m`, as the
 * one-pass rule compares), then the first index holding a value equal to M. The one-pass loop
 * waited on its own last load at every element: about 3x slower over a 128256-token vocabulary,
 * and greedy decoding runs it between every two steps of the GPU. */
uint32_t argmax(const float *x, int64_t n)
{
    if (n <= 0 || x[0] != x[0])
        return 0;
    enum { W = 16 };
    float m[W], mx = x[0];
    for (int k = 0; k < W; k++)
        m[k] = mx;
    int64_t i = 0;
    for (; i + W <= n; i += W)
        for (int k = 0; k < W; k++)
            m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
    for (int k = 0; k < W; k++)
        mx = m[k] > mx ? m[k] : mx;
    for (int64_t j = i; j < n; j++)
        mx = x[j] > mx ? x[j] : mx;
    for (i = 0; i + W <= n; i += W) { /* the first group of W holding M */
        int hit = 0;
        for (int k = 0; k < W; k++)
            hit |= x[i + k] == mx;
        if (hit)
            break;
    }
    for (; i < n; i++)
        if (x[i] == mx)
            return (uint32_t)i;
    return 0; /* not reached: some x[i] equals M */
}

typedef struct cand {
    double p;
    uint32_t id;
} cand;
static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* temp <= 0: greedy. Else softmax(logits / temp), restricted to the smallest set of most likely
 * tokens whose probability reaches top_p (nucleus), renormalised, sampled with the seeded RNG. */
uint32_t sample(const float *logits, int64_t n, double temp, double top_p, uint64_t *rng)
{
    if (temp <= 0)
        return argmax(logits, n);
    cand *c = malloc((size_t)n * sizeof *c);
    if (!c)
        die("out of memory");
    const double mx = logits[argmax(logits, n)];
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        c[i].p = exp(((double)logits[i] - mx) / temp);
        c[i].id = (uint32_t)i;
        sum += c[i].p;
    }
    qsort(c, (size_t)n, sizeof *c, cand_cmp);
    int64_t keep = 0;
    double cum = 0;
    while (keep < n && (keep == 0 || cum < top_p * sum))
        cum += c[keep++].p;
    double r = rng_uniform(rng) * cum, acc = 0;
    uint32_t id = c[keep - 1].id;
    for (int64_t i = 0; i < keep; i++) {
        acc += c[i].p;
        if (r < acc) {
            id = c[i].id;
            break;
        }
    }
    free(c);
    return id;
}

/* ------------------------------------------------------------------ printing */
/* Prints token id, and its vocabulary string when the file has one (SentencePiece's U+2581 as a
 * space, <0xNN> byte tokens as the byte). */
void print_token(const wk_gguf *g, int64_t tokens_kv, uint32_t id)
{
    wk_gguf_value arr, v;
    const char *s;
    uint64_t len;
    if (tokens_kv < 0 || wk_gguf_kv_value(&arr, g, tokens_kv) != WK_OK ||
        wk_gguf_array_elem(&v, arr, id) != WK_OK || wk_gguf_get_string(&s, &len, v) != WK_OK) {
        printf("%u", id);
        return;
    }
    printf("%u:", id);
    unsigned byte;
    if (len == 6 && sscanf(s, "<0x%2X>", &byte) == 1) {
        printf("<0x%02X>", byte);
        return;
    }
    printf("'");
    for (uint64_t i = 0; i < len; i++) {
        if (i + 2 < len && (unsigned char)s[i] == 0xE2 && (unsigned char)s[i + 1] == 0x96 &&
            (unsigned char)s[i + 2] == 0x81) {
            putchar(' ');
            i += 2;
        } else if ((unsigned char)s[i] >= 0x20 && s[i] != '\'') {
            putchar(s[i]);
        } else {
            printf("\\x%02x", (unsigned char)s[i]);
        }
    }
    printf("'");
}

/* ------------------------------------------------------------------ command line */
/* Token ids separated by spaces or commas; *n gets the count. */
uint32_t *parse_ids(const char *s, int64_t *n)
{
    int64_t cap = 16, k = 0;
    uint32_t *ids = malloc((size_t)cap * sizeof *ids);
    while (ids && *s) {
        while (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t')
            s++;
        if (!*s)
            break;
        char *end;
        const unsigned long v = strtoul(s, &end, 10);
        if (end == s || v > 0xffffffffu)
            die("bad token id list near \"%.20s\"", s);
        if (k == cap) {
            cap *= 2;
            uint32_t *r = realloc(ids, (size_t)cap * sizeof *ids);
            if (!r)
                die("out of memory");
            ids = r;
        }
        ids[k++] = (uint32_t)v;
        s = end;
    }
    if (!ids)
        die("out of memory");
    *n = k;
    return ids;
}
