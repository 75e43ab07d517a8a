/* gpu_module.c: the module cache of the GPU backend and the kernel lookup of gpu_impl.h.
 *
 * Each module (kernels/<name>.cu) is loaded once per device on first use, from the embedded code
 * object of the device's vendor; each kernel is looked up once and kept in a hash table keyed by
 * (module, name). A per-device mutex makes first calls from many threads at once load a module
 * exactly once. When no embedded code object fits the device (or WICK_FORCE_RTC=1 at device
 * open), the embedded source is compiled at run time (gpu_rtc.c); the compiled image is kept
 * process-wide per (vendor, arch, module), so identical devices compile it once. */
#include "gpu_driver.h"
#include "wk_core.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
    void *image;
    size_t size;
} rtc_image;

static pthread_mutex_t rtc_mu = PTHREAD_MUTEX_INITIALIZER;
static rtc_image *rtc_images;
static int rtc_devices; /* open GPU devices: the images are freed when the last one closes */

/* image: module e compiled for g's arch (compiled now, or earlier for a device like it). */
static wk_status rtc_get(wk_gpu_device *g, const wk_gpu_embedded *e, const void **image)
{
    wk_status st = WK_OK;
    pthread_mutex_lock(&rtc_mu);
    rtc_image *r = rtc_images;
    while (r && !(r->kind == g->drv->kind && r->module == e->name &&
                  strcmp(r->arch, g->props.arch_full) == 0))
        r = r->next;
    if (!r) {
        r = wk_calloc(1, sizeof *r);
        if (!r) {
            st = wk_err(WK_ERR_OUT_OF_MEMORY, "%s.cu: out of host memory", e->name);
        } else {
            st = wk_gpu_rtc_compile(&r->image, &r->size, g->drv->kind, g->props.arch_full,
                                    e->name, e->source);
            if (st != WK_OK) {
                wk_free(r);
                r = NULL;
            } else {
                r->kind = g->drv->kind;
                snprintf(r->arch, sizeof r->arch, "%s", g->props.arch_full);
                r->module = e->name;
                r->next = rtc_images;
                rtc_images = r;
            }
        }
    }
    if (r)
        *image = r->image;
    pthread_mutex_unlock(&rtc_mu);
    return st;
}

/* Loads embedded module mi on g: its code object, else its source compiled at run time. */
static wk_status module_load(wk_gpu_device *g, int mi, void **out)
{
    const wk_gpu_embedded *e = &wk_gpu_embedded_modules[mi];
    if (g->drv->kind == WK_BACKEND_SIMT) /* its modules are compiled in, found by name */
        return g->drv->module_load(g->ctx, out, e->name);
    const void *obj = NULL;
    size_t obj_size = 0;
    char why[320];
    wk_status got = g->force_rtc ? WK_OK : wk_gpu_embedded_image(&obj, &obj_size, g->drv->kind, mi);
    if (got != WK_OK)
        return got;
    if (g->force_rtc)
        snprintf(why, sizeof why, "WICK_FORCE_RTC=1");
    else if (!obj)
        snprintf(why, sizeof why, "no embedded %s code object", g->drv->name);
    else {
        wk_status st = g->drv->module_load(g->ctx, out, obj);
        if (st != WK_ERR_NOT_SUPPORTED) {
            g->modules->embedded += st == WK_OK;
            return st;
        }
        snprintf(why, sizeof why, "%s", wk_last_error()); /* no code object fits the device */
    }
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

void wk_gpu_modules_counts(wk_gpu_device *g, int *embedded, int *compiled)
{
    pthread_mutex_lock(&g->modules->mu);
    *embedded = g->modules->embedded;
    *compiled = g->modules->compiled;
    pthread_mutex_unlock(&g->modules->mu);
}
