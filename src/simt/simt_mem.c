/* simt_mem.c: device memory of the simt device and the checks of kernel memory accesses.
 *
 * Memory: one arena of WK_SIMT_MEM_BYTES reserved at first use (mapped without reserve: pages
 * cost nothing until touched). An allocation is [front guard | bytes, rounded up to 256 | back
 * guard], 256-byte aligned like cudaMalloc; a shadow byte per 16-byte granule says how many of
 * its bytes are addressable (16 all, 0 none: guards and never-allocated space, FREED after a
 * free). Freed blocks are reused best-fit; new memory is filled with 0xa5 bytes (uninitialised
 * device memory is not zero). The host-side copies check their ranges against the shadow.
 *
 * Kernel accesses: the kernels are compiled with -fsanitize=thread instrumentation but without
 * its runtime (cmake/simt.cmake): every load and store that is not of a private local calls one
 * of the __tsan_* hooks below with its address (ASan's instrumentation was tried first: it skips
 * constant-index accesses to static arrays, i.e. most shared-memory accesses). An access into the arena that is not addressable is an
 * out-of-bounds (or use-after-free) hazard; an access into the shared-memory section is
 * recorded for the race check: per byte, the epoch (barrier interval) and the thread that wrote
 * it and the thread(s) that read it; a write after another thread's read or write, or a read
 * after another thread's write, in one epoch, is a race hazard (like compute-sanitizer
 * racecheck). In the ASan build the kernels get ASan itself instead (the hooks are libasan's):
 * the guards and freed blocks are poisoned for it, and the race check is off. */
#include "simt_rt.h"
#include "wk_core.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define WK_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WK_SIMT_ASAN 1
#endif
#endif
#if defined(WK_SIMT_ASAN)
#include <sanitizer/asan_interface.h>
#endif
/* The library itself under ThreadSanitizer (make tsan): the real runtime owns the __tsan_* names. */
#if defined(__SANITIZE_THREAD__)
#define WK_SIMT_REAL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WK_SIMT_REAL_TSAN 1
#endif
#endif

#define GUARD 256
#define ALIGN 256
#define FREED 0x80

unsigned char wk_simt_dyn_shared[WK_SIMT_DYN_SHARED]
    __attribute__((section("wk_simt_shared"), aligned(64)));
extern unsigned char __start_wk_simt_shared[], __stop_wk_simt_shared[];

/* ---------------------------------------------------------------- the arena */
typedef struct block {
    size_t off, size; /* of the whole block, guards included */
} block;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *arena;
static unsigned char *shadow; /* one byte per 16 */
static size_t top, used;
static size_t limit; /* wk_simt_mem_set_limit; 0: the whole arena */
static block *freel;
static size_t nfree, capfree;

/* The header in an allocation's front guard (the runtime's own bytes; kernels touching them are
 * reported before they could). */
typedef struct header {
    uint64_t magic, size, block;
} header;
#define MAGIC 0x73696d74616c6c63ull

static bool arena_init(void)
{
    if (arena)
        return true;
    void *a = mmap(NULL, WK_SIMT_MEM_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED)
        return false;
    void *s = mmap(NULL, WK_SIMT_MEM_BYTES / 16, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) {
        munmap(a, WK_SIMT_MEM_BYTES);
        return false;
    }
    arena = a; /* ASan: only guards and freed blocks are poisoned (the whole arena would cost
                * a gigabyte of its shadow) */
    shadow = s;
    return true;
}

/* Shadow of [off, off + n) (n a multiple of 16 except at the end of an allocation). */
static void shadow_set(size_t off, size_t n, unsigned char v)
{
    memset(shadow + off / 16, v, n / 16);
    if (n % 16)
        shadow[off / 16 + n / 16] = v == 16 ? (unsigned char)(n % 16) : v;
}

wk_status wk_simt_mem_alloc(void **ptr, size_t bytes)
{
    const size_t body = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (bytes > WK_SIMT_MEM_BYTES)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: allocation of %zu bytes (device has %zu)",
                      bytes, (size_t)WK_SIMT_MEM_BYTES);
    const size_t need = body + 2 * GUARD;
    pthread_mutex_lock(&mem_mu);
    if (!arena_init()) {
        pthread_mutex_unlock(&mem_mu);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: cannot reserve the device arena");
    }
    const size_t cap = limit ? limit : WK_SIMT_MEM_BYTES;
    if (used + need > cap) {
        pthread_mutex_unlock(&mem_mu);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: out of device memory (%zu bytes asked, %zu of "
                      "%zu in use)", bytes, used, cap);
    }
    size_t best = nfree;
    for (size_t i = 0; i < nfree; i++)
        if (freel[i].size >= need && freel[i].size <= 2 * need &&
            (best == nfree || freel[i].size < freel[best].size))
            best = i;
    block b;
    if (best < nfree) {
        b = freel[best];
        freel[best] = freel[--nfree];
    } else if (top + need <= WK_SIMT_MEM_BYTES) {
        b = (block){top, need};
        top += need;
    } else {
        pthread_mutex_unlock(&mem_mu);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: out of device memory (%zu bytes asked, %zu "
                      "in use)", bytes, used);
    }
    used += b.size;
    unsigned char *p = arena + b.off + GUARD;
#if defined(WK_SIMT_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(arena + b.off, b.size);
#endif
    header *h = (header *)(void *)(p - GUARD);
    *h = (header){MAGIC, bytes, b.off};
    shadow_set(b.off, b.size, 0);
    shadow_set(b.off + GUARD, bytes, 16);
    memset(p, 0xa5, bytes);
#if defined(WK_SIMT_ASAN)
    ASAN_POISON_MEMORY_REGION(arena + b.off, GUARD);
    ASAN_POISON_MEMORY_REGION(p + bytes, b.size - GUARD - bytes);
#endif
    pthread_mutex_unlock(&mem_mu);
    *ptr = p;
    return WK_OK;
}

void wk_simt_mem_free(void *ptr)
{
    if (!ptr)
        return;
    pthread_mutex_lock(&mem_mu);
    header *h = (header *)(void *)((unsigned char *)ptr - GUARD);
#if defined(WK_SIMT_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(h, sizeof *h); /* the runtime's own bytes in the front guard */
#endif
    if (h->magic == MAGIC) {
        const size_t body = (h->size + ALIGN - 1) / ALIGN * ALIGN;
        block b = {h->block, body + 2 * GUARD};
        h->magic = 0;
        shadow_set(b.off, b.size, FREED);
#if defined(WK_SIMT_ASAN)
        ASAN_POISON_MEMORY_REGION(arena + b.off, b.size);
#endif
        if (b.size >= ((size_t)1 << 20)) /* give large blocks' pages back */
            madvise(arena + b.off + 4096, (b.size - 8192) & ~(size_t)4095, MADV_DONTNEED);
        used -= b.size;
        if (nfree == capfree) {
            size_t cap = capfree ? 2 * capfree : 64;
            block *n = wk_malloc(cap * sizeof *n);
            if (n) {
                if (nfree)
                    memcpy(n, freel, nfree * sizeof *n);
                wk_free(freel);
                freel = n;
                capfree = cap;
            }
        }
        if (nfree < capfree) /* else the block is lost to reuse: harmless */
            freel[nfree++] = b;
    }
    pthread_mutex_unlock(&mem_mu);
}

size_t wk_simt_mem_total(void)
{
    pthread_mutex_lock(&mem_mu);
    const size_t t = limit ? limit : WK_SIMT_MEM_BYTES;
    pthread_mutex_unlock(&mem_mu);
    return t;
}

void wk_simt_mem_set_limit(size_t bytes)
{
    pthread_mutex_lock(&mem_mu);
    limit = bytes < WK_SIMT_MEM_BYTES ? bytes : 0;
    pthread_mutex_unlock(&mem_mu);
}

size_t wk_simt_mem_used(void)
{
    pthread_mutex_lock(&mem_mu);
    size_t u = used;
    pthread_mutex_unlock(&mem_mu);
    return u;
}

/* First byte of [a, a + n) that is not addressable, or NULL. a must be inside the arena. */
static const unsigned char *first_bad(uintptr_t a, size_t n)
{
    const uintptr_t base = (uintptr_t)arena;
    for (uintptr_t g = (a - base) / 16, e = (a + n - 1 - base) / 16; g <= e; g++) {
        const unsigned v = shadow[g];
        if (v == 16)
            continue;
        const uintptr_t lo = base + g * 16;
        const uintptr_t from = a > lo ? a : lo;
        if (v == 0 || v == FREED || from - lo >= v)
            return (const unsigned char *)from;
        const uintptr_t to = a + n < lo + 16 ? a + n : lo + 16; /* past the last byte touched */
        if (to - lo > v)
            return (const unsigned char *)(lo + v);
    }
    return NULL;
}

static bool in_arena(uintptr_t a) { return arena && a - (uintptr_t)arena < WK_SIMT_MEM_BYTES; }

wk_status wk_simt_mem_check(const void *p, size_t n, const char *what)
{
    if (!n)
        return WK_OK;
    const uintptr_t a = (uintptr_t)p;
    if (!in_arena(a) || !in_arena(a + n - 1))
        return wk_err(WK_ERR_DEVICE, "simt: %s: %p is not device memory", what, p);
    pthread_mutex_lock(&mem_mu);
    const unsigned char *bad = first_bad(a, n);
    unsigned v = bad ? shadow[((uintptr_t)bad - (uintptr_t)arena) / 16] : 0;
    pthread_mutex_unlock(&mem_mu);
    if (bad)
        return wk_err(WK_ERR_DEVICE, "simt: %s of %zu bytes at %p: byte %p is %s", what, n, p,
                      (const void *)bad, v == FREED ? "in freed memory" : "out of bounds");
    return WK_OK;
}

/* ---------------------------------------------------------------- race check */
typedef struct shbyte {
    uint32_t epoch;
    uint16_t w, r; /* thread + 1 that wrote / read it in this epoch; r = MANY: several read */
} shbyte;
#define MANY 0xffffu

static shbyte *race;
static size_t race_len;
static uint32_t epoch = 1;

void wk_simt_race_epoch(void) { epoch++; }

static void race_access(uintptr_t a, size_t n, int write, const void *pc)
{
    const size_t len = (size_t)(__stop_wk_simt_shared - __start_wk_simt_shared);
    if (!race) {
        void *m = mmap(NULL, len * sizeof(shbyte), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return;
        race = m;
        race_len = len;
    }
    const int id = wk_simt_lane_id();
    if (id < 0)
        return;
    const uint16_t me = (uint16_t)(id + 1);
    const size_t off = a - (uintptr_t)__start_wk_simt_shared;
    for (size_t k = 0; k < n && off + k < race_len; k++) {
        shbyte *s = &race[off + k];
        if (s->epoch != epoch)
            *s = (shbyte){epoch, 0, 0};
        int other = 0;
        const char *kind = NULL;
        if (s->w && s->w != me) {
            other = s->w - 1;
            kind = write ? "write after write" : "read after write";
        } else if (write && s->r && s->r != me) {
            other = s->r == MANY ? -1 : s->r - 1;
            kind = "write after read";
        }
        if (kind) {
            char who[48] = "several threads";
            if (other >= 0)
                snprintf(who, sizeof who, "thread %d (linear id)", other);
            wk_simt_hazard("shared-memory race (%s): a %zu-byte %s at shared offset %zu "
                           "(pc %p) conflicts with %s since the last barrier",
                           kind, n, write ? "write" : "read", off + k, pc, who);
            return;
        }
        if (write)
            s->w = me;
        else
            s->r = !s->r || s->r == me ? me : MANY;
    }
}

void wk_simt_access(uintptr_t a, size_t n, int write, int atomic, const void *pc)
{
    if (in_arena(a)) {
        const unsigned char *bad = first_bad(a, n);
        if (bad) {
            wk_simt_mem_fault = 1;
            const unsigned v = shadow[((uintptr_t)bad - (uintptr_t)arena) / 16];
            wk_simt_hazard("%s of %zu bytes at %p: byte %p is %s (pc %p)",
                           write ? "write" : "read", n, (void *)a, (const void *)bad,
                           v == FREED ? "in freed device memory" : "outside every allocation",
                           pc);
        }
    } else if (!atomic && a - (uintptr_t)__start_wk_simt_shared <
                              (uintptr_t)(__stop_wk_simt_shared - __start_wk_simt_shared)) {
        race_access(a, n, write, pc);
    }
}

/* ---------------------------------------------------------------- instrumentation hooks */
/* The entry points -fsanitize=thread instrumentation calls (GCC's and clang's names): this file is
 * their runtime, libtsan is never linked. Only the simt kernels are compiled with it. Not in the ASan
 * build (ASan checks the kernels there) nor in the TSan build (which has no simt kernels). */
#if !defined(WK_SIMT_ASAN) && !defined(WK_SIMT_REAL_TSAN)
#define RA __builtin_return_address(0)
#define WK_HOOK(N)                                                                       \
    void __tsan_read##N(uintptr_t a);                                                    \
    void __tsan_write##N(uintptr_t a);                                                   \
    void __tsan_unaligned_read##N(uintptr_t a);                                          \
    void __tsan_unaligned_write##N(uintptr_t a);                                         \
    void __tsan_read##N(uintptr_t a) { wk_simt_access(a, N, 0, 0, RA); }                 \
    void __tsan_write##N(uintptr_t a) { wk_simt_access(a, N, 1, 0, RA); }                \
    void __tsan_unaligned_read##N(uintptr_t a) { wk_simt_access(a, N, 0, 0, RA); }       \
    void __tsan_unaligned_write##N(uintptr_t a) { wk_simt_access(a, N, 1, 0, RA); }
WK_HOOK(1)
WK_HOOK(2)
WK_HOOK(4)
WK_HOOK(8)
WK_HOOK(16)
#undef WK_HOOK
void __tsan_read_range(uintptr_t a, size_t n);
void __tsan_write_range(uintptr_t a, size_t n);
void __tsan_read_range(uintptr_t a, size_t n) { if (n) wk_simt_access(a, n, 0, 0, RA); }
void __tsan_write_range(uintptr_t a, size_t n) { if (n) wk_simt_access(a, n, 1, 0, RA); }
void __tsan_init(void);
void __tsan_func_entry(void *pc);
void __tsan_func_exit(void);
void __tsan_init(void) {}
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}
#undef RA
#endif

/* ---------------------------------------------------------------- atomics */
#define CHECK_ATOMIC(p) wk_simt_access((uintptr_t)(p), sizeof *(p), 1, 1, __builtin_return_address(0))
unsigned wk_simt_atomic_cas32(unsigned *p, unsigned cmp, unsigned val)
{
    CHECK_ATOMIC(p);
    const unsigned old = *p;
    if (old == cmp)
        *p = val;
    return old;
}
uint64_t wk_simt_atomic_cas64(uint64_t *p, uint64_t cmp, uint64_t val)
{
    CHECK_ATOMIC(p);
    const uint64_t old = *p;
    if (old == cmp)
        *p = val;
    return old;
}
unsigned wk_simt_atomic_add_u32(unsigned *p, unsigned v)
{
    CHECK_ATOMIC(p);
    const unsigned old = *p;
    *p = old + v;
    return old;
}
uint64_t wk_simt_atomic_add_u64(uint64_t *p, uint64_t v)
{
    CHECK_ATOMIC(p);
    const uint64_t old = *p;
    *p = old + v;
    return old;
}
float wk_simt_atomic_add_f32(float *p, float v)
{
    CHECK_ATOMIC(p);
    const float old = *p;
    *p = old + v;
    return old;
}
double wk_simt_atomic_add_f64(double *p, double v)
{
    CHECK_ATOMIC(p);
    const double old = *p;
    *p = old + v;
    return old;
}
