/* gpu_module.c: the module cache of the GPU backend and the kernel lookup of gpu_impl.h.
 *
 * Each module (kernels/<name>.cu) is loaded once per device on first use, from the embedded code
 * object of the device's vendor; each kernel is looked up once and kept in a hash table keyed by
 * (module, name). A per-device mutex makes first calls from many threads at once load a module
 * exactly once. When no embedded code object fits the device (or WICK_FORCE_RTC=1 at device
 * open), the embedded source is compiled at run time (gpu_rtc.c) through the kernel cache on
 * disk (gpu_rtc_cache.c); the image is kept process-wide per (vendor, arch, module), so
 * identical devices compile it once. wk_gpu_modules_warmup loads every module at once, the
 * compiles on several threads. */
#include "gpu_driver.h"
#include "wk_core.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fn_entry {
    uint64_t hash;   /* 0 = empty slot */
    const char *module; /* the table's name (static) */
    char *name;      /* copy */
    void *fn;
} fn_entry;

struct wk_gpu_modules {
    pthread_mutex_t mu;
    void **loaded;   /* per embedded module: the driver's module handle, or NULL */
    fn_entry *fns;   /* open addressing, load <= 1/2 */
    size_t nfns, cap;
    int embedded, compiled;
    _Atomic(void *) slots[WK_GPU_FN_SLOTS]; /* wk_gpu_fn_slot: hot kernels, no lock, no name */
};

/* ---- run-time compiled images, shared by every device of a process */
typedef struct rtc_image {
    struct rtc_image *next;
    wk_backend_kind kind;
    char arch[64];
    const char *module;
    bool ready;     /* false while one thread compiles it (others wait on rtc_cv) */
    void *image;
    size_t size;
} rtc_image;

static pthread_mutex_t rtc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rtc_cv = PTHREAD_COND_INITIALIZER;
static rtc_image *rtc_images;
static int rtc_devices; /* open GPU devices: the images are freed when the last one closes */

/* image: module e compiled for g's arch (compiled now, read from the kernel cache, or made
 * earlier for a device like it). One thread compiles a given (vendor, arch, module) while
 * the others wanting it wait; different modules compile at once (wk_gpu_modules_warmup). */
static wk_status rtc_get(wk_gpu_device *g, const wk_gpu_embedded *e, const void **image)
{
    pthread_mutex_lock(&rtc_mu);
    for (;;) {
        rtc_image *r = rtc_images;
        while (r && !(r->kind == g->drv->kind && r->module == e->name &&
                      strcmp(r->arch, g->props.arch_full) == 0))
            r = r->next;
        if (r && r->ready) {
            *image = r->image;
            pthread_mutex_unlock(&rtc_mu);
            return WK_OK;
        }
        if (!r)
            break;
        pthread_cond_wait(&rtc_cv, &rtc_mu); /* another thread compiles it */
    }
    rtc_image *r = wk_calloc(1, sizeof *r);
    if (!r) {
        pthread_mutex_unlock(&rtc_mu);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s.cu: out of host memory", e->name);
    }
    r->kind = g->drv->kind;
    snprintf(r->arch, sizeof r->arch, "%s", g->props.arch_full);
    r->module = e->name;
    r->next = rtc_images;
    rtc_images = r;
    pthread_mutex_unlock(&rtc_mu);

    void *img = NULL;
    size_t size = 0;
    wk_status st = wk_gpu_rtc_build(&img, &size, r->kind, r->arch, e->name, e->source, NULL);

    pthread_mutex_lock(&rtc_mu);
    if (st == WK_OK) {
        r->image = img;
        r->size = size;
        r->ready = true;
        *image = img;
    } else { /* unlinked: a later call tries again (and reports its own error) */
        rtc_image **pp = &rtc_images;
        while (*pp != r)
            pp = &(*pp)->next;
        *pp = r->next;
        wk_free(r);
    }
    pthread_cond_broadcast(&rtc_cv);
    pthread_mutex_unlock(&rtc_mu);
    return st;
}

/* Loads the embedded code object of module mi on g. WK_ERR_NOT_SUPPORTED with *why set when
 * there is none, none fits, or WICK_FORCE_RTC=1 (then the source is to be compiled). */
static wk_status module_load_embedded(wk_gpu_device *g, int mi, void **out, char *why, size_t cap)
{
    const void *obj = NULL;
    size_t obj_size = 0;
    if (g->force_rtc) {
        snprintf(why, cap, "WICK_FORCE_RTC=1");
        return WK_ERR_NOT_SUPPORTED;
    }
    wk_status st = wk_gpu_embedded_image(&obj, &obj_size, g->drv->kind, mi);
    if (st != WK_OK)
        return st;
    if (!obj) {
        snprintf(why, cap, "no embedded %s code object", g->drv->name);
        return WK_ERR_NOT_SUPPORTED;
    }
    st = g->drv->module_load(g->ctx, out, obj);
    if (st == WK_ERR_NOT_SUPPORTED)
        snprintf(why, cap, "%s", wk_last_error()); /* no code object fits the device */
    else if (st == WK_OK)
        g->modules->embedded++;
    return st;
}

/* Loads module mi on g from its source compiled at run time (why: why not the embedded one). */
static wk_status module_load_rtc(wk_gpu_device *g, int mi, void **out, const char *why)
{
    const wk_gpu_embedded *e = &wk_gpu_embedded_modules[mi];
    if (!e->source || !e->source[0])
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: module %s: %s, and no source to compile",
                      g->props.arch, e->name, why);
    const void *image = NULL;
    wk_status st = rtc_get(g, e, &image);
    if (st == WK_OK) {
        st = g->drv->module_load(g->ctx, out, image);
        g->modules->compiled += st == WK_OK;
    }
    if (st != WK_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        return wk_err(st == WK_ERR_OUT_OF_MEMORY ? st : WK_ERR_NOT_SUPPORTED,
                      "module %s on %s (%s): %s; run-time compilation: %s", e->name,
                      g->props.name, g->props.arch, why, msg);
    }
    return WK_OK;
}

/* Loads embedded module mi on g: its code object, else its source compiled at run time. */
static wk_status module_load(wk_gpu_device *g, int mi, void **out)
{
    if (g->drv->kind == WK_BACKEND_SIMT) /* its modules are compiled in, found by name */
        return g->drv->module_load(g->ctx, out, wk_gpu_embedded_modules[mi].name);
    char why[320];
    wk_status st = module_load_embedded(g, mi, out, why, sizeof why);
    return st == WK_ERR_NOT_SUPPORTED ? module_load_rtc(g, mi, out, why) : st;
}

/* ---- the kernel table */
static uint64_t fn_hash(const char *module, const char *name)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over "module\0name" */
    for (const char *s = module; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0u) * 1099511628211ull;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static fn_entry *fn_slot(fn_entry *t, size_t cap, uint64_t h, const char *module,
                         const char *name)
{
    for (size_t i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        fn_entry *e = &t[i];
        if (!e->hash || (e->hash == h && strcmp(e->module, module) == 0 &&
                         strcmp(e->name, name) == 0))
            return e;
    }
}

static wk_status fn_insert(struct wk_gpu_modules *M, uint64_t h, const char *module,
                           const char *name, void *fn)
{
    if (2 * (M->nfns + 1) > M->cap) {
        size_t cap = M->cap ? 2 * M->cap : 256;
        fn_entry *t = wk_calloc(cap, sizeof *t);
        if (!t)
            return wk_err(WK_ERR_OUT_OF_MEMORY, "gpu: out of host memory");
        for (size_t i = 0; i < M->cap; i++)
            if (M->fns[i].hash)
                *fn_slot(t, cap, M->fns[i].hash, M->fns[i].module, M->fns[i].name) = M->fns[i];
        wk_free(M->fns);
        M->fns = t;
        M->cap = cap;
    }
    size_t len = strlen(name);
    char *copy = wk_malloc(len + 1);
    if (!copy)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "gpu: out of host memory");
    memcpy(copy, name, len + 1);
    *fn_slot(M->fns, M->cap, h, module, name) = (fn_entry){h, module, copy, fn};
    M->nfns++;
    return WK_OK;
}

static int module_index(const char *module)
{
    for (int i = 0; i < wk_gpu_embedded_module_count; i++)
        if (strcmp(wk_gpu_embedded_modules[i].name, module) == 0)
            return i;
    return -1;
}

wk_status wk_gpu_function(wk_gpu_fn *fn, wk_device *dev, const char *module, const char *name)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    struct wk_gpu_modules *M = g->modules;
    uint64_t h = fn_hash(module, name);
    wk_status st = WK_OK;
    pthread_mutex_lock(&M->mu);
    fn_entry *e = M->cap ? fn_slot(M->fns, M->cap, h, module, name) : NULL;
    if (e && e->hash) {
        *fn = e->fn;
        pthread_mutex_unlock(&M->mu);
        return WK_OK;
    }
    int mi = module_index(module);
    void *f = NULL;
    if (mi < 0)
        st = wk_err(WK_ERR_NOT_SUPPORTED, "gpu: no kernel module \"%.64s\" in this build", module);
    if (st == WK_OK && !M->loaded[mi])
        st = module_load(g, mi, &M->loaded[mi]);
    if (st == WK_OK)
        st = g->drv->function(g->ctx, &f, M->loaded[mi], name);
    if (st == WK_OK)
        st = fn_insert(M, h, wk_gpu_embedded_modules[mi].name, name, f);
    pthread_mutex_unlock(&M->mu);
    if (st == WK_OK)
        *fn = f;
    return st;
}

wk_status wk_gpu_module_load_named(wk_device *dev, const char *module)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    struct wk_gpu_modules *M = g->modules;
    const int mi = module_index(module);
    if (mi < 0)
        return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: no kernel module \"%.64s\" in this build", module);
    pthread_mutex_lock(&M->mu);
    wk_status st = M->loaded[mi] ? WK_OK : module_load(g, mi, &M->loaded[mi]);
    pthread_mutex_unlock(&M->mu);
    return st;
}

/* The hot-kernel slots: a kernel looked up once by name is remembered under a small number the
 * caller owns (gpu_impl.h, WK_GPU_SLOT_*), so the next call skips the name and the lock. A
 * slot's function is the same on every later read (a kernel handle lives as long as its
 * module, which lives as long as the device), so a relaxed race between two first calls only
 * stores the same value twice. */
wk_gpu_fn wk_gpu_fn_slot(const wk_device *dev, unsigned slot)
{
    return atomic_load_explicit(&wk_gpu_dev(dev)->modules->slots[slot], memory_order_acquire);
}

void wk_gpu_fn_slot_set(wk_device *dev, unsigned slot, wk_gpu_fn fn)
{
    atomic_store_explicit(&wk_gpu_dev(dev)->modules->slots[slot], fn, memory_order_release);
}

wk_status wk_gpu_launch_ex(wk_device *dev, wk_gpu_fn fn, unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **args,
                           unsigned flags)
{
    if (!gx || !gy || !gz || !bx || !by || !bz)
        return WK_OK; /* an empty grid (empty tensor) has nothing to do */
    wk_gpu_device *g = wk_gpu_dev(dev);
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return g->drv->launch(g->ctx, fn, grid, block, shmem, args, flags);
}

wk_status wk_gpu_launch(wk_device *dev, wk_gpu_fn fn, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **args)
{
    return wk_gpu_launch_ex(dev, fn, gx, gy, gz, bx, by, bz, shmem, args, 0);
}

/* ---- lifetime */
wk_status wk_gpu_modules_create(wk_gpu_device *g)
{
    struct wk_gpu_modules *M = wk_calloc(1, sizeof *M);
    int n = wk_gpu_embedded_module_count;
    if (!M || !(M->loaded = wk_calloc((size_t)(n > 0 ? n : 1), sizeof(void *)))) {
        wk_free(M);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", g->drv->name);
    }
    if (pthread_mutex_init(&M->mu, NULL) != 0) {
        wk_free(M->loaded);
        wk_free(M);
        return wk_err(WK_ERR_INTERNAL, "%s: pthread_mutex_init failed", g->drv->name);
    }
    g->modules = M;
    pthread_mutex_lock(&rtc_mu);
    rtc_devices++;
    pthread_mutex_unlock(&rtc_mu);
    return WK_OK;
}

void wk_gpu_modules_destroy(wk_gpu_device *g)
{
    struct wk_gpu_modules *M = g->modules;
    if (!M)
        return;
    for (int i = 0; i < wk_gpu_embedded_module_count; i++)
        if (M->loaded[i])
            g->drv->module_unload(g->ctx, M->loaded[i]);
    for (size_t i = 0; i < M->cap; i++)
        if (M->fns[i].hash)
            wk_free(M->fns[i].name);
    wk_free(M->fns);
    wk_free(M->loaded);
    pthread_mutex_destroy(&M->mu);
    wk_free(M);
    g->modules = NULL;

    pthread_mutex_lock(&rtc_mu);
    if (--rtc_devices == 0) {
        while (rtc_images) {
            rtc_image *r = rtc_images;
            rtc_images = r->next;
            wk_free(r->image);
            wk_free(r);
        }
        wk_gpu_embedded_release();
    }
    pthread_mutex_unlock(&rtc_mu);
}

/* ---- warm-up: every module now, the run-time compiles on several threads */
typedef struct warm_state {
    wk_gpu_device *g;
    const int *pending;   /* module indices to compile */
    int n;
    atomic_int next;
    wk_status *st;     /* per pending module */
    char (*msg)[512];
} warm_state;

static void *warm_worker(void *p)
{
    warm_state *w = p;
    for (int i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
        const void *image = NULL;
        w->st[i] = rtc_get(w->g, &wk_gpu_embedded_modules[w->pending[i]], &image);
        if (w->st[i] != WK_OK)
            snprintf(w->msg[i], sizeof w->msg[i], "%s", wk_last_error());
    }
    return NULL;
}

static int online_cpus(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < 256 ? n : 256) : 1;
}

wk_status wk_gpu_modules_warmup(wk_gpu_device *g, int threads)
{
    struct wk_gpu_modules *M = g->modules;
    const int n = wk_gpu_embedded_module_count;
    wk_status first = WK_OK;
    char first_msg[700] = "";
    int *pending = wk_calloc((size_t)(n > 0 ? n : 1), sizeof *pending);
    char (*why)[320] = wk_calloc((size_t)(n > 0 ? n : 1), sizeof *why);
    wk_status *st = wk_calloc((size_t)(n > 0 ? n : 1), sizeof *st);
    char (*msg)[512] = wk_calloc((size_t)(n > 0 ? n : 1), sizeof *msg);
    if (!pending || !why || !st || !msg) {
        wk_free(pending);
        wk_free(why);
        wk_free(st);
        wk_free(msg);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: warm-up: out of host memory", g->drv->name);
    }
    /* 1. what an embedded code object serves, loaded now; the rest listed */
    int nt = 0;
    pthread_mutex_lock(&M->mu);
    for (int mi = 0; mi < n; mi++) {
        if (M->loaded[mi])
            continue;
        wk_status s;
        if (g->drv->kind == WK_BACKEND_SIMT)
            s = module_load(g, mi, &M->loaded[mi]);
        else
            s = module_load_embedded(g, mi, &M->loaded[mi], why[nt], sizeof why[nt]);
        if (s == WK_ERR_NOT_SUPPORTED && g->drv->kind != WK_BACKEND_SIMT)
            pending[nt++] = mi;
        else if (s != WK_OK && first == WK_OK) {
            first = s;
            snprintf(first_msg, sizeof first_msg, "%s", wk_last_error());
        }
    }
    pthread_mutex_unlock(&M->mu);
    /* 2. the sources compiled (or read from the kernel cache) on several threads, no lock held */
    if (nt > 0) {
        int t = threads > 0 ? threads : online_cpus();
        t = t < nt ? t : nt;
        warm_state w = {g, pending, nt, 0, st, msg};
        pthread_t tid[256];
        int started = 0;
        for (; started < t - 1 && started < 256; started++)
            if (pthread_create(&tid[started], NULL, warm_worker, &w) != 0)
                break; /* fewer threads: the rest is done here */
        warm_worker(&w);
        for (int i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
    }
    /* 3. the compiled images loaded (rtc_get finds them ready) */
    pthread_mutex_lock(&M->mu);
    for (int i = 0; i < nt; i++) {
        const int mi = pending[i];
        wk_status s = st[i];
        if (s == WK_OK && !M->loaded[mi])
            s = module_load_rtc(g, mi, &M->loaded[mi], why[i]);
        else if (s != WK_OK)
            wk_err(s, "module %s on %s (%s): %s; run-time compilation: %s",
                   wk_gpu_embedded_modules[mi].name, g->props.name, g->props.arch, why[i], msg[i]);
        if (s != WK_OK && first == WK_OK) {
            first = s;
            snprintf(first_msg, sizeof first_msg, "%s", wk_last_error());
        }
    }
    pthread_mutex_unlock(&M->mu);
    wk_free(pending);
    wk_free(why);
    wk_free(st);
    wk_free(msg);
    return first == WK_OK ? WK_OK : wk_err(first, "%s", first_msg);
}

/* ---- where the kernels come from */
/* 1 if token `t` is an element of the comma-separated `list`. */
static bool list_has(const char *list, const char *t)
{
    const size_t n = strlen(t);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        const size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, t, n) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

/* What the embedded code objects offer g's architecture (the vendors' rules: a cubin of sm_XY
 * runs on sm_XZ with Z >= Y; PTX of compute_N is compiled by the driver for any arch >= N; an
 * AMD bundle entry serves exactly its gfx target). */
static wk_code_source predicted_source(const wk_gpu_device *g)
{
    if (g->drv->kind == WK_BACKEND_CUDA) {
        int cc = 0;
        if (sscanf(g->props.arch, "sm_%d", &cc) != 1)
            return WK_CODE_RUN_TIME;
        for (const char *p = wk_gpu_embedded_cuda_sass; p && *p;) {
            const int a = atoi(p);
            if (a > 0 && a / 10 == cc / 10 && a <= cc)
                return WK_CODE_AHEAD_OF_TIME;
            p = strchr(p, ',');
            p = p ? p + 1 : NULL;
        }
        return wk_gpu_embedded_cuda_ptx > 0 && wk_gpu_embedded_cuda_ptx <= cc ? WK_CODE_DRIVER_JIT
                                                                              : WK_CODE_RUN_TIME;
    }
    return list_has(wk_gpu_embedded_hip_targets, g->props.arch) ? WK_CODE_AHEAD_OF_TIME
                                                                : WK_CODE_RUN_TIME;
}

wk_code_source wk_gpu_code_source(wk_gpu_device *g)
{
    if (g->drv->kind == WK_BACKEND_SIMT)
        return WK_CODE_BUILTIN;
    if (g->force_rtc)
        return WK_CODE_RUN_TIME;
    int emb = 0, comp = 0;
    wk_gpu_modules_counts(g, &emb, &comp);
    if (comp > 0) /* what happened beats what was expected */
        return WK_CODE_RUN_TIME;
    const wk_code_source p = predicted_source(g);
    return p == WK_CODE_RUN_TIME && emb > 0 ? WK_CODE_AHEAD_OF_TIME : p;
}

void wk_gpu_modules_counts(wk_gpu_device *g, int *embedded, int *compiled)
{
    pthread_mutex_lock(&g->modules->mu);
    *embedded = g->modules->embedded;
    *compiled = g->modules->compiled;
    pthread_mutex_unlock(&g->modules->mu);
}
