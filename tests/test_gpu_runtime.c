/* test_gpu_runtime.c: the GPU runtime half (src/gpu: drivers, backend, allocator, module cache,
 * run-time compilation, embedded code objects). Runs everywhere; the parts that need a device
 * print "skip: ..." where there is none.
 *   1. libwick.so has no load-time dependency on any GPU library (its DT_NEEDED entries);
 *   2. the embedded code objects hold every required target (NVIDIA fatbin: SASS of every arch
 *      of WICK_CUDA_ARCHS, sm_80 and sm_90 by default, + PTX; AMD offload bundle: gfx906 gfx908 gfx90a gfx1030 and the rest
 *      of the configured list);
 *   3. every embedded kernel source compiles at run time, with the optimiser off (NVRTC -G to
 *      PTX for an arch newer than it knows, hipRTC -O0 for gfx90a), and one of them as a device
 *      would compile it (NVRTC for sm_80: a code object), where those libraries exist
 *      (WICK_TEST_RTC=cuda: only NVRTC; =hip: only the hipRTC part, nothing else);
 *   4. without a device: device counts are 0 with a reason, opening fails cleanly, the CPU works;
 *   5. on each GPU device: memory and copies, the caching allocator, 16 threads making their
 *      first call at once, out-of-memory and recovery, WICK_FORCE_RTC=1 bit-identical to the
 *      embedded code objects, WICK_GPU_NO_CACHE=1.
 * Build: part of the CMake build (cmake/gpu.cmake passes the library path and the targets).
 * Run: build/test_gpu_runtime; tests/gpu_runtime.sh runs it (and compute-sanitizer) on a GPU. */
#include "testlib.h"
#include "gpu/gpu_driver.h"
#include "wk_core.h"
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef WICK_TEST_SHARED_LIB
#define WICK_TEST_SHARED_LIB ""
#endif
#ifndef WICK_TEST_NVCC
#define WICK_TEST_NVCC 0
#endif
#ifndef WICK_TEST_HIPCC
#define WICK_TEST_HIPCC 0
#endif
#ifndef WICK_TEST_CUDA_ARCHS
#define WICK_TEST_CUDA_ARCHS "80,90"
#endif
#ifndef WICK_TEST_HIP_TARGETS
#define WICK_TEST_HIP_TARGETS "gfx906,gfx908,gfx90a,gfx1030"
#endif

static bool env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* ------------------------------------------------------------------ 1. DT_NEEDED */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            *size = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

/* File offset of virtual address v (through the PT_LOAD segments); SIZE_MAX if none. */
static size_t elf_offset(const unsigned char *img, size_t size, const Elf64_Ehdr *eh, uint64_t v)
{
    for (int i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        size_t at = eh->e_phoff + (size_t)i * eh->e_phentsize;
        if (at + sizeof ph > size)
            return SIZE_MAX;
        memcpy(&ph, img + at, sizeof ph);
        if (ph.p_type == PT_LOAD && v >= ph.p_vaddr && v < ph.p_vaddr + ph.p_filesz)
            return (size_t)(v - ph.p_vaddr + ph.p_offset);
    }
    return SIZE_MAX;
}

/* Fills needed (a ';'-separated list) with the DT_NEEDED entries of an ELF64 shared object. */
static int elf_needed(const char *path, char *needed, size_t cap)
{
    size_t size = 0;
    unsigned char *img = read_file(path, &size);
    needed[0] = '\0';
    if (!img)
        return 0;
    int ok = 0;
    Elf64_Ehdr eh;
    if (size < sizeof eh || memcmp(img, ELFMAG, SELFMAG) != 0 || img[EI_CLASS] != ELFCLASS64)
        goto done;
    memcpy(&eh, img, sizeof eh);
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        size_t at = eh.e_phoff + (size_t)i * eh.e_phentsize;
        if (at + sizeof ph > size)
            goto done;
        memcpy(&ph, img + at, sizeof ph);
        if (ph.p_type != PT_DYNAMIC)
            continue;
        size_t n = (size_t)(ph.p_filesz / sizeof(Elf64_Dyn)), strtab = SIZE_MAX;
        if (ph.p_offset + ph.p_filesz > size)
            goto done;
        for (size_t k = 0; k < n; k++) { /* the string table first */
            Elf64_Dyn d;
            memcpy(&d, img + ph.p_offset + k * sizeof d, sizeof d);
            if (d.d_tag == DT_STRTAB)
                strtab = elf_offset(img, size, &eh, d.d_un.d_ptr);
        }
        if (strtab == SIZE_MAX)
            goto done;
        for (size_t k = 0; k < n; k++) {
            Elf64_Dyn d;
            memcpy(&d, img + ph.p_offset + k * sizeof d, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == DT_NEEDED && strtab + d.d_un.d_val < size) {
                size_t len = strlen(needed);
                snprintf(needed + len, cap - len, "%s;", (const char *)img + strtab + d.d_un.d_val);
            }
        }
        ok = 1;
    }
done:
    free(img);
    return ok;
}

static void test_no_gpu_dependency(void)
{
    static const char *const forbidden[] = {"libcuda", "libcudart", "libnvrtc", "libamdhip64",
                                            "libhiprtc", "librocblas", "libcublas", "libhsa",
                                            "libamd_comgr"};
    char needed[4096], near_exe[4096];
    const char *path = WICK_TEST_SHARED_LIB;
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (f) {
        fclose(f);
    } else {
        /* The build folder was moved (e.g. carried to a GPU machine): libwick.so next to us. */
        ssize_t n = readlink("/proc/self/exe", near_exe, sizeof near_exe - 16);
        char *slash = n > 0 ? memchr(near_exe, '/', (size_t)n) : NULL;
        if (slash) {
            near_exe[n] = '\0';
            strcpy(strrchr(near_exe, '/'), "/libwick.so");
            path = near_exe;
        }
    }
    if (!path[0]) {
        printf("skip: libwick.so path not given (build through CMake)\n");
        return;
    }
    if (!TEST_CHECK(elf_needed(path, needed, sizeof needed), "cannot read the dynamic section of %s",
                    path))
        return;
    printf("libwick.so NEEDED: %s\n", needed);
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++)
        TEST_CHECK(!strstr(needed, forbidden[i]), "%s has a load-time dependency on %s*", path,
                   forbidden[i]);
}

/* ------------------------------------------------------------------ 2. code objects */
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* The NVIDIA fatbin: header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size},
 * then entries {u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 payload size, ..., u32 arch at
 * byte 28}. Sets sass[cc] / ptx[cc] for every entry; 0 on a malformed blob. */
static int fatbin_archs(const unsigned char *b, size_t n, bool sass[200], bool ptx[200])
{
    size_t at = 0;
    int blocks = 0;
    while (at + 16 <= n) {
        if (rd32(b + at) != 0xBA55ED50u) /* padding between fatbins */
            return blocks > 0 && rd32(b + at) == 0;
        size_t hs = (size_t)(b[at + 6] | b[at + 7] << 8), body = (size_t)rd64(b + at + 8);
        if (hs < 16 || at + hs + body > n)
            return 0;
        for (size_t e = at + hs; e < at + hs + body;) {
            if (e + 32 > n)
                return 0;
            unsigned kind = (unsigned)(b[e] | b[e + 1] << 8);
            size_t ehs = rd32(b + e + 4);
            uint64_t payload = rd64(b + e + 8);
            uint32_t arch = rd32(b + e + 28);
            if (arch < 200) {
                if (kind == 2)
                    sass[arch] = true;
                if (kind == 1)
                    ptx[arch] = true;
            }
            if (ehs == 0)
                return 0;
            e += ehs + (size_t)payload;
        }
        at += hs + body;
        blocks++;
    }
    return blocks > 0;
}

/* The clang offload bundle: "__CLANG_OFFLOAD_BUNDLE__", u64 count, then per entry u64 offset,
 * u64 size, u64 id length, id ("hipv4-amdgcn-amd-amdhsa--gfx90a"). Appends ",<target>" of every
 * device entry whose code object is an ELF inside the blob; 0 on a malformed blob. */
static int bundle_targets(const unsigned char *b, size_t n, char *out, size_t cap)
{
    static const char magic[] = "__CLANG_OFFLOAD_BUNDLE__";
    if (n < 32 || memcmp(b, magic, 24) != 0)
        return 0;
    uint64_t count = rd64(b + 24);
    size_t at = 32;
    out[0] = ',';
    out[1] = '\0';
    for (uint64_t i = 0; i < count; i++) {
        if (at + 24 > n)
            return 0;
        uint64_t off = rd64(b + at), size = rd64(b + at + 8), idlen = rd64(b + at + 16);
        at += 24;
        if (idlen > 256 || at + idlen > n || off > n || size > n - off)
            return 0;
        char id[260];
        memcpy(id, b + at, idlen);
        id[idlen] = '\0';
        at += idlen;
        const char *dash = strstr(id, "--");
        if (strncmp(id, "hip", 3) != 0 || !dash)
            continue; /* the host entry */
        if (size < 4 || memcmp(b + off, "\177ELF", 4) != 0)
            return 0;
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s,", dash + 2);
    }
    return 1;
}

static bool defines_kernels(const char *text)
{
    return strstr(text, "__global__") || strstr(text, "WK_KERNEL");
}

/* Whether text #includes an embedded header that defines kernels (a module whose .cu only
 * instantiates the macros of its header: kernels/matmul_f16.cu and gemm.h, say). */
static bool includes_kernels(const char *text)
{
    for (int i = 0; i < wk_gpu_embedded_header_count; i++) {
        const wk_gpu_embedded_header *h = &wk_gpu_embedded_headers[i];
        char inc[96];
        snprintf(inc, sizeof inc, "#include \"%s\"", h->name);
        if (h->text && strstr(text, inc) && defines_kernels(h->text))
            return true;
    }
    return false;
}

static void test_code_objects(void)
{
    int n = wk_gpu_embedded_module_count;
    printf("embedded modules: %d, headers: %d\n", n, wk_gpu_embedded_header_count);
    TEST_CHECK(n > 0, "no kernel module embedded (kernels/*.cu)");
    bool have_gpu_h = false, have_fpconv = false;
    for (int i = 0; i < wk_gpu_embedded_header_count; i++) {
        const wk_gpu_embedded_header *h = &wk_gpu_embedded_headers[i];
        TEST_CHECK(h->text && strlen(h->text) > 0, "embedded header %s is empty", h->name);
        have_gpu_h |= strcmp(h->name, "gpu.h") == 0;
        have_fpconv |= strcmp(h->name, "fpconv.h") == 0;
    }
    TEST_CHECK(have_gpu_h && have_fpconv, "gpu.h and fpconv.h must be embedded for run-time compilation");

    for (int i = 0; i < n; i++) {
        const wk_gpu_embedded *e = &wk_gpu_embedded_modules[i];
        TEST_CHECK(e->source && (defines_kernels(e->source) || includes_kernels(e->source)),
                   "module %s: embedded source has no kernel, nor includes a header with one",
                   e->name);
        if (WICK_TEST_NVCC) {
            bool sass[200] = {false}, ptx[200] = {false};
            const void *fb = NULL;
            size_t fb_size = 0;
            TEST_EQ_STATUS(wk_gpu_embedded_image(&fb, &fb_size, WK_BACKEND_CUDA, i), WK_OK);
            int ok = fb && fatbin_archs(fb, fb_size, sass, ptx);
            if (TEST_CHECK(ok, "module %s: no readable CUDA fatbin", e->name)) {
                char list[] = WICK_TEST_CUDA_ARCHS ",80,90"; /* the list, and the defaults */
                int last = 0;
                for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
                    int cc = atoi(t);
                    if (cc > 0 && cc < 200)
                        TEST_CHECK(sass[cc], "module %s: fatbin lacks SASS for sm_%d", e->name, cc);
                    if (last == 0 || cc > last)
                        last = cc;
                }
#ifdef WICK_TEST_CUDA_PTX /* the PTX cmake/gpu.cmake embeds: of the last arch's feature arch */
                last = WICK_TEST_CUDA_PTX;
#endif
                TEST_CHECK(last > 0 && ptx[last], "module %s: fatbin lacks PTX for compute_%d",
                           e->name, last);
                printf("module %-8s fatbin %7zu bytes (%zu embedded%s):", e->name, fb_size,
                       (size_t)(e->cuda_end - e->cuda), e->cuda_packed ? ", zstd" : "");
                for (int cc = 0; cc < 200; cc++) {
                    if (sass[cc])
                        printf(" sm_%d", cc);
                    if (ptx[cc])
                        printf(" compute_%d(PTX)", cc);
                }
                printf("\n");
            }
        } else if (i == 0) {
            printf("skip: CUDA code objects not built (nvcc not found at build time)\n");
        }
        if (WICK_TEST_HIPCC) {
            char targets[2048];
            const void *bundle = NULL;
            size_t bundle_size = 0;
            TEST_EQ_STATUS(wk_gpu_embedded_image(&bundle, &bundle_size, WK_BACKEND_ROCM, i), WK_OK);
            int ok = bundle && bundle_targets(bundle, bundle_size, targets, sizeof targets);
            if (TEST_CHECK(ok, "module %s: no readable HIP offload bundle", e->name)) {
                char list[] = WICK_TEST_HIP_TARGETS ",gfx906,gfx908,gfx90a,gfx1030";
                for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
                    char key[64];
                    snprintf(key, sizeof key, ",%s,", t);
                    TEST_CHECK(strstr(targets, key) != NULL, "module %s: bundle lacks %s", e->name, t);
                }
                printf("module %-8s bundle %7zu bytes (%zu embedded): %s\n", e->name, bundle_size,
                       (size_t)(e->hip_end - e->hip), targets);
            }
        } else if (i == 0) {
            printf("skip: HIP code objects not built (hipcc not found at build time)\n");
        }
    }
    wk_gpu_embedded_release(); /* no device is open here: free the inflated bundles */
}

/* ------------------------------------------------------------------ 3. run-time compilation */
/* Puts the embedded source of every module through the front end of the vendor's run-time
 * compiler for arch (wk_gpu_rtc_check), and a source it must reject; or (only: that module
 * alone) compiles it as a device would and checks the output's kind (want_magic). */
static void test_rtc_compiles(wk_backend_kind kind, const char *arch, const char *want_magic,
                              const char *only)
{
    const char *label = kind == WK_BACKEND_CUDA ? "NVRTC" : "hipRTC";
    if (env_set("WICK_TEST_NO_RTC")) {
        printf("skip: %s compile of the kernel sources (WICK_TEST_NO_RTC set)\n", label);
        return;
    }
    const char *only_vendor = getenv("WICK_TEST_RTC");
    if (only_vendor && strcmp(only_vendor, kind == WK_BACKEND_CUDA ? "cuda" : "hip") != 0) {
        printf("skip: %s compile of the kernel sources (WICK_TEST_RTC=%s)\n", label,
               only_vendor);
        return;
    }
    for (int i = 0; i < wk_gpu_embedded_module_count; i++) {
        const wk_gpu_embedded *e = &wk_gpu_embedded_modules[i];
        if (only && strcmp(e->name, only) != 0)
            continue;
        void *image = NULL;
        size_t size = 0;
        /* every module through the front end (wk_gpu_rtc_check: the build's nvcc and clang
         * ran the optimisers and code generators), the one module named by `only` as a device
         * would compile it */
        wk_status st = only ? wk_gpu_rtc_compile(&image, &size, kind, arch, e->name, e->source)
                            : wk_gpu_rtc_check(kind, arch, e->name, e->source);
        if (st == WK_ERR_NOT_SUPPORTED && strstr(wk_last_error(), "unavailable")) {
            printf("skip: %s compile of the kernel sources: %s\n", label, wk_last_error());
            return;
        }
        if (TEST_EQ_STATUS(st, WK_OK) && only)
            TEST_CHECK(size > 4 && memcmp(image, want_magic, strlen(want_magic)) == 0,
                       "%s: %s output for %s is not %s", e->name, label, arch,
                       want_magic[0] == '\177' ? "an ELF code object" : "PTX");
        printf("%s %s.cu for %s: %s\n", label, e->name, arch,
               st == WK_OK ? (only ? "compiled" : "accepted") : wk_last_error());
        wk_free(image);
    }
    if (only)
        return;
    /* an error that only instantiating a template finds: the check must see it (hipRTC's
     * verdict is read from its log, NVRTC's from its status) */
    const char *bad = "#include \"gpu.h\"\n"
                      "template <class T> __device__ float wk_bad(T x) { return x.no_such; }\n"
                      "extern \"C\" __global__ void k(float *o) { o[0] = wk_bad<int>(3); }\n";
    wk_status st = wk_gpu_rtc_check(kind, arch, "bad", bad);
    TEST_CHECK(st == WK_ERR_DEVICE && strstr(wk_last_error(), "no_such"),
               "%s accepted a source with an error (status %d: %s)", label, (int)st,
               wk_last_error());
    printf("%s rejects a bad source: %.120s\n", label, wk_last_error());
}

/* ------------------------------------------------------------------ 3b. a fake driver */
/* The allocator, the module cache and the backend's waits run here over a driver whose "device
 * memory" is host memory, so they are checked on every machine (and under the sanitizers). */
static struct fake_state {
    pthread_mutex_t mu;
    size_t capacity, used;
    int loads, unloads, launches;
    bool reject_embedded; /* module_load of an embedded code object says "no binary fits" */
    const void *last_image;
} fake = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, false, NULL};

static int fake_init(const char **reason) { *reason = ""; return 1; }
static wk_status fake_alloc(void *ctx, void **ptr, size_t bytes)
{
    (void)ctx;
    pthread_mutex_lock(&fake.mu);
    bool fits = fake.used + bytes <= fake.capacity;
    if (fits)
        fake.used += bytes;
    pthread_mutex_unlock(&fake.mu);
    size_t *p = fits ? malloc(bytes + 16) : NULL;
    if (!p) {
        if (fits) { /* host malloc failed: give the bytes back */
            pthread_mutex_lock(&fake.mu);
            fake.used -= bytes;
            pthread_mutex_unlock(&fake.mu);
        }
        return wk_err(WK_ERR_OUT_OF_MEMORY, "fake: cuMemAlloc(%zu bytes): CUDA_ERROR_OUT_OF_MEMORY", bytes);
    }
    p[0] = bytes;
    *ptr = (char *)p + 16;
    return WK_OK;
}
static void fake_free(void *ctx, void *ptr)
{
    (void)ctx;
    size_t *p = (size_t *)(void *)((char *)ptr - 16);
    pthread_mutex_lock(&fake.mu);
    fake.used -= p[0];
    pthread_mutex_unlock(&fake.mu);
    free(p);
}
static wk_status fake_info(void *ctx, size_t *f, size_t *t)
{
    (void)ctx;
    pthread_mutex_lock(&fake.mu);
    *f = fake.capacity - fake.used;
    *t = fake.capacity;
    pthread_mutex_unlock(&fake.mu);
    return WK_OK;
}
static wk_status fake_copy(void *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    memmove(dst, src, n);
    return WK_OK;
}
static wk_status fake_zero(void *ctx, void *dst, size_t n)
{
    (void)ctx;
    memset(dst, 0, n);
    return WK_OK;
}
static wk_status fake_sync(void *ctx) { (void)ctx; return WK_OK; }
static bool is_embedded_cuda(const void *image)
{
    for (int i = 0; i < wk_gpu_embedded_module_count; i++) {
        const void *fb = NULL; /* as the module cache got it: inflated where it is packed */
        size_t n = 0;
        if (wk_gpu_embedded_image(&fb, &n, WK_BACKEND_CUDA, i) == WK_OK && fb && image == fb)
            return true;
    }
    return false;
}
static wk_status fake_load(void *ctx, void **module, const void *image)
{
    (void)ctx;
    if (fake.reject_embedded && is_embedded_cuda(image))
        return wk_err(WK_ERR_NOT_SUPPORTED, "fake: cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU");
    struct timespec ts = {0, 20 * 1000 * 1000}; /* a slow load widens the race window */
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&fake.mu);
    fake.loads++;
    fake.last_image = image;
    pthread_mutex_unlock(&fake.mu);
    *module = (void *)image;
    return WK_OK;
}
static void fake_unload(void *ctx, void *module) { (void)ctx; (void)module; fake.unloads++; }
static wk_status fake_function(void *ctx, void **fn, void *module, const char *name)
{
    (void)ctx;
    *fn = (char *)module + strlen(name); /* distinct per name length: enough here */
    return WK_OK;
}
static wk_status fake_launch(void *ctx, void *fn, const unsigned g[3], const unsigned b[3],
                             unsigned shmem, void **args, unsigned flags)
{
    (void)ctx; (void)fn; (void)g; (void)b; (void)shmem; (void)args; (void)flags;
    pthread_mutex_lock(&fake.mu);
    fake.launches++;
    pthread_mutex_unlock(&fake.mu);
    return WK_OK;
}
static const wk_gpu_driver fake_driver = {
    .name = "fake", .kind = WK_BACKEND_CUDA, .init = fake_init, .mem_alloc = fake_alloc,
    .mem_free = fake_free, .mem_info = fake_info, .h2d = fake_copy, .d2h = fake_copy,
    .d2d = fake_copy, .memset_zero = fake_zero, .sync = fake_sync, .module_load = fake_load,
    .module_unload = fake_unload, .function = fake_function, .launch = fake_launch,
};

typedef struct fake_dev {
    wk_device dev;
    wk_gpu_device g;
} fake_dev;

static void fake_open(fake_dev *f, bool no_cache, bool force_rtc)
{
    memset(f, 0, sizeof *f);
    f->g.drv = &fake_driver;
    f->g.ctx = &fake;
    f->g.no_cache = no_cache;
    f->g.force_rtc = force_rtc;
    snprintf(f->g.props.name, sizeof f->g.props.name, "fake");
    snprintf(f->g.props.arch, sizeof f->g.props.arch, "sm_80");
    snprintf(f->g.props.arch_full, sizeof f->g.props.arch_full, "sm_80");
    f->g.props.warp_size = 32;
    f->g.props.sm_count = 1;
    pthread_mutex_init(&f->g.error_mu, NULL);
    TEST_EQ_STATUS(wk_gpu_alloc_create(&f->g), WK_OK);
    TEST_EQ_STATUS(wk_gpu_modules_create(&f->g), WK_OK);
    f->dev.impl = &f->g;
    f->dev.kind = WK_BACKEND_CUDA;
}

static void fake_close(fake_dev *f)
{
    if (f->g.error_word)
        fake_free(NULL, f->g.error_word);
    wk_gpu_modules_destroy(&f->g);
    wk_gpu_alloc_destroy(&f->g);
    pthread_mutex_destroy(&f->g.error_mu);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

typedef struct alloc_thread {
    wk_gpu_device *g;
    int seed, failures;
} alloc_thread;

static void *alloc_stress(void *p)
{
    alloc_thread *t = p;
    uint64_t s = (uint64_t)t->seed;
    void *held[64] = {NULL};
    for (int i = 0; i < 4000; i++) {
        int k = (int)(lcg(&s) % 64);
        if (held[k]) {
            wk_gpu_mem_free(t->g, held[k]);
            held[k] = NULL;
        } else {
            size_t n = 1 + (size_t)(lcg(&s) % (3u << 20));
            if (wk_gpu_mem_alloc(t->g, n, &held[k]) != WK_OK)
                t->failures++;
            else
                memset(held[k], t->seed, n < 64 ? n : 64); /* the block is really ours */
        }
    }
    for (int k = 0; k < 64; k++)
        wk_gpu_mem_free(t->g, held[k]);
    return NULL;
}

static void test_fake_allocator(void)
{
    fake_dev f;
    fake.capacity = (size_t)1 << 30;
    fake_open(&f, false, false);
    wk_gpu_device *g = &f.g;
    wk_gpu_mem_stats st;
    void *a = NULL, *b = NULL;

    /* reuse: a 1000-byte block serves a later 900-byte request */
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 1000, &a), WK_OK);
    wk_gpu_mem_free(g, a);
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 900, &b), WK_OK);
    TEST_CHECK(a == b, "the cached block was not reused");
    wk_gpu_mem_stats_get(g, &st);
    TEST_EQ_INT(st.driver_allocs, 1);
    TEST_EQ_INT(st.cache_hits, 1);
    /* but not for a much smaller request (it would waste the block) */
    void *c = NULL;
    wk_gpu_mem_free(g, b);
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 100, &c), WK_OK);
    TEST_CHECK(c != b, "a 1 KiB block served a 100-byte request");
    wk_gpu_mem_free(g, c);
    wk_gpu_mem_free(g, NULL);
    wk_gpu_mem_free(g, (char *)c + 8); /* not a block of ours: ignored */

    /* many threads, many sizes: every block is ours, the books balance */
    alloc_thread th[8];
    pthread_t tid[8];
    for (int i = 0; i < 8; i++) {
        th[i] = (alloc_thread){g, i + 1, 0};
        pthread_create(&tid[i], NULL, alloc_stress, &th[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(tid[i], NULL);
        TEST_EQ_INT(th[i].failures, 0);
    }
    wk_gpu_mem_stats_get(g, &st);
    TEST_EQ_INT(st.live_bytes, 0);
    TEST_EQ_INT(fake.used, st.cached_bytes);
    printf("fake allocator: %zu driver allocations, %zu cache hits, %zu bytes cached\n",
           st.driver_allocs, st.cache_hits, st.cached_bytes);
    TEST_CHECK(st.cache_hits > st.driver_allocs, "the cache served too few requests");
    wk_gpu_mem_release_cache(g);
    TEST_EQ_INT(fake.used, 0);

    /* out of memory: the cache is released and the allocation retried once */
    fake.capacity = 64u << 20;
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 40u << 20, &a), WK_OK);
    wk_gpu_mem_free(g, a);
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 50u << 20, &b), WK_OK);
    wk_gpu_mem_stats_get(g, &st);
    TEST_EQ_INT(st.oom_retries, 1);
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 100u << 20, &c), WK_ERR_OUT_OF_MEMORY);
    TEST_CHECK(strstr(wk_last_error(), "out of device memory") != NULL, "message: %s", wk_last_error());
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, SIZE_MAX - 100, &c), WK_ERR_OUT_OF_MEMORY);
    TEST_EQ_STATUS(wk_gpu_mem_alloc(g, 1u << 20, &c), WK_OK); /* still usable */
    wk_gpu_mem_free(g, c);
    /* blocks the caller never freed go with the device */
    fake_close(&f);
    TEST_EQ_INT(fake.used, 0);

    /* WICK_GPU_NO_CACHE: every free is real */
    fake.capacity = (size_t)1 << 30;
    fake_open(&f, true, false);
    TEST_EQ_STATUS(wk_gpu_mem_alloc(&f.g, 5000, &a), WK_OK);
    wk_gpu_mem_free(&f.g, a);
    TEST_EQ_INT(fake.used, 0);
    wk_gpu_mem_stats_get(&f.g, &st);
    TEST_EQ_INT(st.cached_bytes, 0);
    fake_close(&f);
}

typedef struct fn_thread {
    wk_device *dev;
    pthread_barrier_t *barrier;
    wk_status st;
    wk_gpu_fn fn;
    char msg[300];
} fn_thread;

/* The module that the fake-driver checks load and the one compiled as a device would: rand.cu,
 * the quickest to compile (0.2 s through NVRTC to PTX, where attn_bf16.cu, the first, takes
 * 8 s and more than 15 s to a code object): what those check is the module cache and the
 * compile path, not the compiler. The first module where there is no rand. */
static const char *small_module(void)
{
    for (int i = 0; i < wk_gpu_embedded_module_count; i++)
        if (!strcmp(wk_gpu_embedded_modules[i].name, "rand"))
            return "rand";
    return wk_gpu_embedded_modules[0].name;
}

static void *fn_first_call(void *p)
{
    fn_thread *t = p;
    pthread_barrier_wait(t->barrier);
    t->st = wk_gpu_function(&t->fn, t->dev, small_module(), "wk_some_kernel");
    if (t->st != WK_OK)
        snprintf(t->msg, sizeof t->msg, "%s", wk_last_error());
    return NULL;
}

static void test_fake_modules(void)
{
    /* Without an embedded CUDA code object (a build without nvcc) every load compiles the source. */
    const bool have_obj = wk_gpu_embedded_module_count > 0 && wk_gpu_embedded_modules[0].cuda;
    if (wk_gpu_embedded_module_count == 0 || (!have_obj && env_set("WICK_TEST_NO_RTC"))) {
        printf("skip: fake-driver module cache checks (no module, or only run-time compilation "
               "and WICK_TEST_NO_RTC set)\n");
        return;
    }
    const char *mod = small_module();
    fake_dev f;
    fake.capacity = (size_t)1 << 30;
    fake.loads = fake.unloads = fake.launches = 0;
    fake.reject_embedded = false;
    fake_open(&f, false, false);

    /* 16 threads, one first call: one load, one function */
    enum { T = 16 };
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, T);
    fn_thread th[T];
    pthread_t tid[T];
    for (int i = 0; i < T; i++) {
        th[i] = (fn_thread){&f.dev, &barrier, WK_ERR_INTERNAL, NULL, ""};
        pthread_create(&tid[i], NULL, fn_first_call, &th[i]);
    }
    for (int i = 0; i < T; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&barrier);
    if (!have_obj && th[0].st == WK_ERR_NOT_SUPPORTED && strstr(th[0].msg, "unavailable")) {
        printf("skip: fake-driver module cache checks: %s\n", th[0].msg);
        fake_close(&f);
        return;
    }
    for (int i = 0; i < T; i++) {
        TEST_CHECK(th[i].st == WK_OK, "thread %d: %s", i, th[i].msg);
        TEST_CHECK(th[i].fn == th[0].fn, "thread %d got another function", i);
    }
    TEST_EQ_INT(fake.loads, 1);
    wk_gpu_fn fn = NULL;
    TEST_EQ_STATUS(wk_gpu_function(&fn, &f.dev, mod, "wk_other"), WK_OK);
    TEST_EQ_INT(fake.loads, 1);
    TEST_EQ_STATUS(wk_gpu_function(&fn, &f.dev, "no_such_module", "k"), WK_ERR_NOT_SUPPORTED);
    TEST_EQ_STATUS(wk_gpu_launch(&f.dev, fn, 0, 1, 1, 256, 1, 1, 0, NULL), WK_OK);
    TEST_EQ_INT(fake.launches, 0); /* an empty grid launches nothing */
    TEST_EQ_STATUS(wk_gpu_launch(&f.dev, fn, 4, 1, 1, 256, 1, 1, 0, NULL), WK_OK);
    TEST_EQ_INT(fake.launches, 1);
    int emb = 0, rtc = 0;
    wk_gpu_modules_counts(&f.g, &emb, &rtc);
    TEST_CHECK(emb == (have_obj ? 1 : 0) && rtc == (have_obj ? 0 : 1),
               "counts %d embedded, %d compiled", emb, rtc);
    fake_close(&f);
    TEST_EQ_INT(fake.unloads, 1);

    if (env_set("WICK_TEST_NO_RTC")) {
        printf("skip: fake-driver run-time compilation (WICK_TEST_NO_RTC set)\n");
        return;
    }
    /* no embedded code object fits: the source is compiled (NVRTC), loaded, and kept for the
     * next device of the same arch; WICK_FORCE_RTC does the same without trying */
    fake_dev d1, d2;
    fake.reject_embedded = true;
    fake_open(&d1, false, false);
    fake_open(&d2, false, true);
    wk_status st = wk_gpu_function(&fn, &d1.dev, mod, "k");
    if (st == WK_ERR_NOT_SUPPORTED && strstr(wk_last_error(), "unavailable")) {
        printf("skip: fake-driver run-time compilation: %s\n", wk_last_error());
    } else if (TEST_EQ_STATUS(st, WK_OK)) {
        const void *first = fake.last_image;
        TEST_CHECK(!is_embedded_cuda(first), "an embedded image was loaded");
        fake.reject_embedded = false;
        TEST_EQ_STATUS(wk_gpu_function(&fn, &d2.dev, mod, "k"), WK_OK);
        TEST_CHECK(fake.last_image == first, "the compiled image was not shared between devices");
        wk_gpu_modules_counts(&d2.g, &emb, &rtc);
        TEST_CHECK(emb == 0 && rtc == 1, "force_rtc counts %d embedded, %d compiled", emb, rtc);
    }
    fake.reject_embedded = false;
    fake_close(&d1);
    fake_close(&d2);
}

/* The backend's waits over the fake driver: the error word is reported once, then cleared. */
static void test_fake_backend(void)
{
    const wk_backend *be = wk_backend_for(WK_BACKEND_CUDA);
    if (!be || !be->synchronize || !be->upload) {
        printf("skip: fake-driver backend checks (the CUDA backend is not linked in)\n");
        return;
    }
    fake_dev f;
    fake.capacity = (size_t)1 << 30;
    fake_open(&f, false, false);
    f.dev.be = be;
    uint32_t *word = NULL, *again = NULL;
    const uint32_t code[2] = {WK_KERR_GATHER, 4242}; /* {code, detail} */
    unsigned char back[64];
    void *p = NULL;
    TEST_EQ_STATUS(be->alloc(&f.dev, 64, &p), WK_OK);
    TEST_EQ_STATUS(be->synchronize(&f.dev), WK_OK);
    TEST_EQ_STATUS(wk_gpu_error_word(&f.dev, &word), WK_OK);
    TEST_EQ_STATUS(wk_gpu_error_word(&f.dev, &again), WK_OK);
    TEST_CHECK(word && word == again, "the error word moved");
    TEST_EQ_STATUS(be->synchronize(&f.dev), WK_OK);
    TEST_EQ_STATUS(be->upload(&f.dev, word, code, sizeof code), WK_OK); /* "a kernel set it" */
    TEST_EQ_STATUS(be->download(&f.dev, back, p, 64), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_CHECK(strstr(wk_last_error(), "gather found id 4242") != NULL, "message: %s", wk_last_error());
    TEST_EQ_STATUS(be->synchronize(&f.dev), WK_OK); /* reported once, then cleared */
    be->free(&f.dev, p);
    fake_close(&f);
}

/* ------------------------------------------------------------------ 4. no device, CPU */
static void test_cpu_add(void)
{
    wk_device *cpu = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return;
    const float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, -2, 1e30f, -4};
    float y[4] = {0};
    wk_storage *sa = testlib_upload(cpu, WK_DTYPE_F32, a, 4);
    wk_storage *sb = testlib_upload(cpu, WK_DTYPE_F32, b, 4), *sy = NULL;
    wk_layout l = testlib_layout1(4);
    if (sa && sb && TEST_EQ_STATUS(wk_binary(&sy, WK_OP_ADD, sa, &l, sb, &l), WK_OK) &&
        !testlib_download(y, 4, sy))
        for (int i = 0; i < 4; i++)
            TEST_CHECK(y[i] == a[i] + b[i], "cpu add [%d]: %g", i, (double)y[i]);
    wk_storage_free(sa);
    wk_storage_free(sb);
    wk_storage_free(sy);
    wk_device_close(cpu);
}

static int test_backend_presence(wk_backend_kind kind)
{
    int n = -1;
    const char *why = NULL;
    const char *name = wk_backend_name(kind);
    TEST_EQ_STATUS(wk_backend_device_count(&n, &why, kind), WK_OK);
    if (n > 0) {
        printf("%s: %d device(s)\n", name, n);
        return n;
    }
    TEST_EQ_INT(n, 0);
    TEST_CHECK(why && why[0], "%s: 0 devices but no reason", name);
    printf("%s: unavailable: %s\n", name, why ? why : "(null)");
    char spec[16];
    snprintf(spec, sizeof spec, "%s:0", name);
    wk_device *dev = NULL;
    TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_ERR_NO_DEVICE);
    TEST_CHECK(dev == NULL && wk_last_error()[0], "%s: failed open leaves no handle, says why", spec);
    return 0;
}

/* ------------------------------------------------------------------ 5. on a device */
/* A fixed set of ops on fixed inputs; every output's bytes appended to out. Ops the device does
 * not support are left out (the same on every device of a build). */
typedef struct suite_out {
    unsigned char *bytes;
    size_t len, cap;
    int ops;
} suite_out;

static void suite_append(suite_out *o, const wk_storage *s)
{
    size_t n = wk_storage_len(s), bytes = n * wk_dtype_size(wk_storage_dtype(s));
    if (o->len + bytes > o->cap) {
        size_t cap = (o->len + bytes) * 2;
        unsigned char *t = realloc(o->bytes, cap);
        if (!t)
            return;
        o->bytes = t;
        o->cap = cap;
    }
    if (!testlib_download(o->bytes + o->len, n, s)) {
        o->len += bytes;
        o->ops++;
    }
}

static void run_suite(wk_device *dev, suite_out *o)
{
    enum { N = 3600 }; /* 60 x 60 */
    static float xf[N];
    static uint16_t xh[N];
    for (int i = 0; i < N; i++) {
        xf[i] = (float)((i * 7919) % 2001 - 1000) / 97.0f;
        xh[i] = wk_f32_to_bf16(xf[i] * 0.5f);
    }
    wk_storage *x = testlib_upload(dev, WK_DTYPE_F32, xf, N);
    wk_storage *h = testlib_upload(dev, WK_DTYPE_BF16, xh, N);
    if (!x || !h)
        goto done;
    wk_layout l = testlib_layout1(N), l2 = testlib_layout2(60, 60), lt;
    wk_layout_transpose(&lt, &l2, 0, 1);
    static const wk_op unary[] = {WK_OP_EXP, WK_OP_TANH, WK_OP_GELU, WK_OP_ERF, WK_OP_SILU,
                                  WK_OP_SQRT, WK_OP_LOG, WK_OP_SIN};
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        const wk_storage *in[2] = {x, h};
        for (int k = 0; k < 2; k++) {
            wk_storage *y = NULL;
            if (!wk_device_supports(dev, unary[i], wk_storage_dtype(in[k])))
                continue;
            if (TEST_EQ_STATUS(wk_unary(&y, unary[i], in[k], k ? &l : &lt), WK_OK))
                suite_append(o, y);
            wk_storage_free(y);
        }
    }
    static const wk_op binary[] = {WK_OP_ADD, WK_OP_MUL, WK_OP_DIV, WK_OP_MAXIMUM};
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
        wk_storage *y = NULL;
        if (wk_device_supports(dev, binary[i], WK_DTYPE_BF16) &&
            TEST_EQ_STATUS(wk_binary(&y, binary[i], h, &l, h, &l), WK_OK))
            suite_append(o, y);
        wk_storage_free(y);
        y = NULL;
        if (wk_device_supports(dev, binary[i], WK_DTYPE_F32) &&
            TEST_EQ_STATUS(wk_binary(&y, binary[i], x, &l2, x, &lt), WK_OK))
            suite_append(o, y);
        wk_storage_free(y);
    }
    const int32_t dims[1] = {1};
    static const wk_op reduce[] = {WK_OP_SUM, WK_OP_MAX, WK_OP_ARGMIN};
    for (size_t i = 0; i < sizeof reduce / sizeof reduce[0]; i++) {
        wk_storage *y = NULL;
        if (wk_device_supports(dev, reduce[i], WK_DTYPE_F32) &&
            TEST_EQ_STATUS(wk_reduce(&y, reduce[i], x, &l2, dims, 1), WK_OK))
            suite_append(o, y);
        wk_storage_free(y);
    }
    static const wk_dtype to[] = {WK_DTYPE_F16, WK_DTYPE_F8E4M3, WK_DTYPE_I32, WK_DTYPE_F64};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
        wk_storage *y = NULL;
        if (wk_device_supports(dev, WK_OP_TO_DTYPE, WK_DTYPE_F32) &&
            TEST_EQ_STATUS(wk_to_dtype(&y, x, &lt, to[i]), WK_OK))
            suite_append(o, y);
        wk_storage_free(y);
    }
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK);
done:
    wk_storage_free(x);
    wk_storage_free(h);
}

/* Memory and copies through the backend, and the cache's reuse of a freed block. */
static void test_memory(wk_device *dev)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    const wk_backend *be = dev->be;
    enum { N = 1 << 20 };
    unsigned char *h = malloc(N), *back = malloc(N);
    void *a = NULL, *b = NULL;
    if (!h || !back)
        goto done;
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 131 + 7);
    if (!TEST_EQ_STATUS(be->alloc(dev, N, &a), WK_OK) || !TEST_EQ_STATUS(be->alloc(dev, N, &b), WK_OK))
        goto done;
    TEST_EQ_STATUS(be->upload(dev, a, h, N), WK_OK);
    TEST_EQ_STATUS(be->copy(dev, b, a, N), WK_OK);
    TEST_EQ_STATUS(be->download(dev, back, b, N), WK_OK);
    TEST_CHECK(memcmp(h, back, N) == 0, "upload -> copy -> download changed the bytes");
    TEST_EQ_STATUS(be->memset_zero(dev, (char *)b + 1000, 5000), WK_OK);
    TEST_EQ_STATUS(be->download(dev, back, b, N), WK_OK);
    int zeros = 1;
    for (int i = 1000; i < 6000; i++)
        zeros &= back[i] == 0;
    TEST_CHECK(zeros && back[999] == h[999] && back[6000] == h[6000], "memset_zero range wrong");
    be->free(dev, b);
    b = NULL;
    void *c = NULL;
    wk_gpu_mem_stats s0, s1;
    wk_gpu_mem_stats_get(g, &s0);
    if (TEST_EQ_STATUS(be->alloc(dev, N - 100, &c), WK_OK)) {
        wk_gpu_mem_stats_get(g, &s1);
        if (g->no_cache)
            TEST_CHECK(s1.cache_hits == s0.cache_hits, "WICK_GPU_NO_CACHE=1 but a cached block was reused");
        else
            TEST_CHECK(s1.cache_hits == s0.cache_hits + 1, "a freed 1 MiB block was not reused");
        be->free(dev, c);
    }
    TEST_EQ_STATUS(be->synchronize(dev), WK_OK);
done:
    if (a)
        be->free(dev, a);
    if (b)
        be->free(dev, b);
    free(h);
    free(back);
}

/* The error word: a nonzero value left by a kernel (here written by a copy) is reported by the
 * next synchronize, once, and cleared. */
static void test_error_word(wk_device *dev)
{
    uint32_t *word = NULL, *again = NULL;
    const uint32_t code[2] = {WK_KERR_SCATTER_SET, 77777}; /* {code, detail} */
    if (!TEST_EQ_STATUS(wk_gpu_error_word(dev, &word), WK_OK))
        return;
    TEST_EQ_STATUS(wk_gpu_error_word(dev, &again), WK_OK);
    TEST_CHECK(word && word == again, "the error word moved");
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK);
    TEST_EQ_STATUS(dev->be->upload(dev, word, code, sizeof code), WK_OK); /* "a kernel set it" */
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_CHECK(strstr(wk_last_error(), "scatter_set found id 77777") != NULL, "message: %s",
               wk_last_error());
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK); /* reported once, then cleared */
}

/* 16 threads make their first call to the same op (loading its module) at the same moment. */
enum { NTHREADS = 16 };
typedef struct thread_arg {
    wk_device *dev;
    pthread_barrier_t *barrier;
    int id;
    wk_status st;
    char msg[256];
    int bad; /* wrong elements */
} thread_arg;

static void *first_call_thread(void *p)
{
    thread_arg *t = p;
    size_t n = 4096 + (size_t)t->id * 37;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
    wk_storage *sa = NULL, *sb = NULL, *sy = NULL;
    t->st = WK_ERR_OUT_OF_MEMORY;
    if (a && b && y) {
        for (size_t i = 0; i < n; i++) {
            a[i] = (float)i * 0.25f + (float)t->id;
            b[i] = 1.0f / (float)(i + 1);
        }
        t->st = wk_storage_from_host(&sa, t->dev, WK_DTYPE_F32, a, n);
        if (t->st == WK_OK)
            t->st = wk_storage_from_host(&sb, t->dev, WK_DTYPE_F32, b, n);
    }
    pthread_barrier_wait(t->barrier); /* every thread reaches its first op together */
    if (t->st == WK_OK) {
        wk_layout l = testlib_layout1((int64_t)n);
        t->st = wk_binary(&sy, WK_OP_ADD, sa, &l, sb, &l);
        if (t->st == WK_OK)
            t->st = wk_storage_to_host(y, n, sy);
        for (size_t i = 0; t->st == WK_OK && i < n; i++)
            t->bad += y[i] != a[i] + b[i];
    }
    if (t->st != WK_OK)
        snprintf(t->msg, sizeof t->msg, "%s", wk_last_error());
    wk_storage_free(sa);
    wk_storage_free(sb);
    wk_storage_free(sy);
    free(a);
    free(b);
    free(y);
    return NULL;
}

static void test_first_call_race(const char *spec)
{
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_OK))
        return;
    if (!wk_device_supports(dev, WK_OP_ADD, WK_DTYPE_F32)) {
        printf("skip: %s: add f32 not supported by this build's op half\n", spec);
        wk_device_close(dev);
        return;
    }
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    thread_arg args[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (thread_arg){.dev = dev, .barrier = &barrier, .id = i};
        TEST_CHECK(pthread_create(&th[i], NULL, first_call_thread, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < NTHREADS; i++) {
        TEST_CHECK(args[i].st == WK_OK, "%s thread %d: %s: %s", spec, i,
                   wk_status_string(args[i].st), args[i].msg);
        TEST_CHECK(args[i].bad == 0, "%s thread %d: %d wrong sums", spec, i, args[i].bad);
    }
    int emb = 0, rtc = 0;
    wk_gpu_modules_counts(wk_gpu_dev(dev), &emb, &rtc);
    TEST_EQ_INT(emb + rtc, 1); /* the binary module, loaded once */
    wk_device_close(dev);
}

/* More than the card holds fails with WK_ERR_OUT_OF_MEMORY; a request that fits only once the
 * cache is released succeeds; ops work afterwards. */
static void test_out_of_memory(wk_device *dev)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    wk_storage *s = NULL;
    size_t too_much = g->props.total_mem + ((size_t)1 << 30);
    TEST_EQ_STATUS(wk_storage_alloc_uninit(&s, dev, WK_DTYPE_U8, too_much), WK_ERR_OUT_OF_MEMORY);
    printf("%s: oom message: %s\n", dev->name, wk_last_error());
    TEST_CHECK(s == NULL, "failed allocation returned a storage");

    size_t free_b = 0, total_b = 0;
    if (!g->no_cache && TEST_EQ_STATUS(g->drv->mem_info(g->ctx, &free_b, &total_b), WK_OK)) {
        /* 45% cached + 75% requested cannot both fit: the cache must be released. */
        wk_storage *a = NULL, *b = NULL;
        size_t na = free_b / 100 * 45, nb = free_b / 100 * 75;
        if (TEST_EQ_STATUS(wk_storage_alloc_uninit(&a, dev, WK_DTYPE_U8, na), WK_OK)) {
            wk_storage_free(a);
            wk_gpu_mem_stats s0, s1;
            wk_gpu_mem_stats_get(g, &s0);
            TEST_CHECK(s0.cached_bytes >= na, "a freed block of %zu bytes is not cached", na);
            if (TEST_EQ_STATUS(wk_storage_alloc_uninit(&b, dev, WK_DTYPE_U8, nb), WK_OK)) {
                wk_gpu_mem_stats_get(g, &s1);
                TEST_CHECK(s1.oom_retries == s0.oom_retries + 1 && s1.cached_bytes == 0,
                           "the cache was not released on out-of-memory");
            }
            wk_storage_free(b);
        }
    }
    suite_out o = {0};
    run_suite(dev, &o); /* the device still works */
    TEST_CHECK(o.ops > 0, "%s: no op ran after out-of-memory", dev->name);
    free(o.bytes);
}

/* Opens spec with var=1 in the environment (read by device_open; no other thread runs now),
 * then restores the variable as it was. */
static wk_device *open_with_env(const char *spec, const char *var)
{
    wk_device *dev = NULL;
    char old[64] = "";
    const char *was = var ? getenv(var) : NULL;
    if (was)
        snprintf(old, sizeof old, "%s", was);
    if (var)
        setenv(var, "1", 1);
    wk_status st = wk_device_open(&dev, spec);
    if (var && was)
        setenv(var, old, 1);
    else if (var)
        unsetenv(var);
    TEST_EQ_STATUS(st, WK_OK);
    return st == WK_OK ? dev : NULL;
}

static void test_device(const char *spec)
{
    printf("---- %s\n", spec);
    wk_device *dev = open_with_env(spec, NULL);
    if (!dev)
        return;
    wk_gpu_device *g = wk_gpu_dev(dev);
    printf("%s: %s, warp %d, arch %s\n", spec, wk_device_name(dev), g->props.warp_size,
           g->props.arch_full);
    TEST_CHECK(strstr(wk_device_name(dev), g->props.arch) != NULL, "name lacks the arch: %s",
               wk_device_name(dev));
    TEST_CHECK(g->props.warp_size == 32 || g->props.warp_size == 64, "warp size %d",
               g->props.warp_size);
    TEST_CHECK(g->props.sm_count > 0, "sm count %d", g->props.sm_count);
    test_memory(dev);
    test_error_word(dev);

    suite_out ref = {0};
    run_suite(dev, &ref);
    int emb = 0, rtc = 0;
    wk_gpu_modules_counts(g, &emb, &rtc);
    printf("%s: %d ops ran; modules from code objects %d, compiled at run time %d\n", spec,
           ref.ops, emb, rtc);
    TEST_CHECK(ref.ops > 0, "%s: no op of the suite is supported", spec);
    /* Devices of a built arch must run the embedded code objects; others may need RTC. */
    char built[] = WICK_TEST_CUDA_ARCHS;
    bool arch_built = false;
    for (char *t = strtok(built, ","); t; t = strtok(NULL, ",")) {
        char sm[16];
        snprintf(sm, sizeof sm, "sm_%s", t);
        arch_built |= strcmp(sm, g->props.arch) == 0;
    }
    if (g->drv->kind == WK_BACKEND_ROCM) {
        char key[40];
        snprintf(key, sizeof key, ",%s,", g->props.arch);
        arch_built = strstr("," WICK_TEST_HIP_TARGETS ",", key) != NULL;
    }
    if (arch_built && !g->force_rtc)
        TEST_CHECK(emb > 0 && rtc == 0, "%s: the embedded code objects were not used", spec);
    else
        printf("note: %s (%s) is not a built target: %d module(s) compiled at run time\n", spec,
               g->props.arch, rtc);
    test_out_of_memory(dev);

    /* WICK_FORCE_RTC=1: every module compiled from the embedded source, same bits. */
    wk_device *rd = open_with_env(spec, "WICK_FORCE_RTC");
    if (rd) {
        suite_out o = {0};
        run_suite(rd, &o);
        wk_gpu_modules_counts(wk_gpu_dev(rd), &emb, &rtc);
        printf("%s WICK_FORCE_RTC=1: %d ops; modules from code objects %d, compiled %d\n", spec,
               o.ops, emb, rtc);
        TEST_CHECK(emb == 0 && rtc > 0, "WICK_FORCE_RTC=1 did not compile at run time");
        TEST_CHECK(o.ops == ref.ops && o.len == ref.len && memcmp(o.bytes, ref.bytes, o.len) == 0,
                   "%s: run-time compiled kernels differ from the embedded ones", spec);
        free(o.bytes);
        wk_device_close(rd);
    }
    /* WICK_GPU_NO_CACHE=1: every free is real; ops still work and agree. */
    wk_device *nd = open_with_env(spec, "WICK_GPU_NO_CACHE");
    if (nd) {
        TEST_CHECK(wk_gpu_dev(nd)->no_cache, "WICK_GPU_NO_CACHE=1 not seen");
        test_memory(nd);
        suite_out o = {0};
        run_suite(nd, &o);
        TEST_CHECK(o.len == ref.len && memcmp(o.bytes, ref.bytes, o.len) == 0,
                   "%s: results differ with WICK_GPU_NO_CACHE=1", spec);
        free(o.bytes);
        wk_device_close(nd);
    }
    free(ref.bytes);
    wk_device_close(dev);
    test_first_call_race(spec);
}

int main(void)
{
    /* the run-time compiles here (NVRTC, hipRTC) go through no kernel cache: each run compiles,
     * and nothing is left in the user's ~/.cache/wick (tests/test_rtc_cache.c tests the cache) */
    setenv("WICK_CACHE_DISABLE", "1", 1);
    /* WICK_TEST_RTC=hip: only hipRTC's check of every module (one vendor's compiler alone) */
    const char *rtc_only = getenv("WICK_TEST_RTC");
    if (rtc_only && !strcmp(rtc_only, "hip")) {
        test_rtc_compiles(WK_BACKEND_ROCM, "gfx90a", NULL, NULL);
        return testlib_summary();
    }
    test_no_gpu_dependency();
    test_code_objects();
    /* Every module through the front ends of NVRTC and hipRTC: what can reject a source there
     * and not in the build is the front end (the run-time headers, WK_RTC); the optimisers,
     * ptxas and the AMD code generator ran on every module in the build's nvcc and clang. One
     * module goes through NVRTC as a device of a known arch compiles it (a code object);
     * device runs compile every module that way (WICK_FORCE_RTC=1). */
    test_rtc_compiles(WK_BACKEND_CUDA, "sm_999", NULL, NULL); /* newer than NVRTC knows */
    if (wk_gpu_embedded_module_count > 0)
        test_rtc_compiles(WK_BACKEND_CUDA, "sm_80", "\177ELF", small_module());
    test_rtc_compiles(WK_BACKEND_ROCM, "gfx90a", NULL, NULL);
    test_fake_allocator();
    test_fake_modules();
    test_fake_backend();
    test_cpu_add();
    const wk_backend_kind kinds[2] = {WK_BACKEND_CUDA, WK_BACKEND_ROCM};
    int any = 0;
    for (int k = 0; k < 2; k++) {
        int n = test_backend_presence(kinds[k]);
        for (int i = 0; i < n; i++) {
            char spec[16];
            snprintf(spec, sizeof spec, "%s:%d", wk_backend_name(kinds[k]), i);
            test_device(spec);
            any = 1;
        }
    }
    if (!any && env_set("WICK_TEST_REQUIRE_GPU"))
        TEST_CHECK(0, "WICK_TEST_REQUIRE_GPU is set but no CUDA or ROCm device is usable");
    else if (!any)
        printf("skip: GPU device tests (allocator, first-call race, out-of-memory, "
               "WICK_FORCE_RTC, WICK_GPU_NO_CACHE): no CUDA or ROCm device\n");
    return testlib_summary();
}
