/* gpu_rtc_cache.c: the kernel cache, a directory of code objects compiled at run time (NVRTC,
 * hipRTC) by earlier processes, so a program pays for a module's compile once per machine, not
 * once per process. It behaves like the CUDA driver's own cache of JIT-compiled PTX
 * (CUDA_CACHE_PATH, CUDA_CACHE_DISABLE, CUDA_CACHE_MAXSIZE), with wick's own variables:
 *   WICK_CACHE_DIR       the directory; else $XDG_CACHE_HOME/wick, else $HOME/.cache/wick
 *   WICK_CACHE_DISABLE   1: no cache (compile every time, store nothing)
 *   WICK_CACHE_MAXSIZE   bytes the entries may take together (default 256 MiB); the least
 *                        recently used entries go first, an entry larger than this is not stored
 * An entry is one file "<module>-<arch>-<key>.wkrtc": a 96-byte header (magic, payload size,
 * the SHA-256 of the key and of the payload) and the code object. The key is the SHA-256 of
 * the compiler's identity (name, version, library file), the device architecture, the compile
 * options, the module's source and every embedded header. An entry is written to a temporary
 * file in the directory, flushed and renamed over the final name, so a reader sees a whole
 * entry or none, whatever crashes or runs beside it; one whose header or checksum does not
 * match is deleted and compiled again, never loaded. A directory that cannot be made or written
 * leaves the cache read-only (or off) with one note, which wk_kernel_cache_info and
 * `wick devices` report: the library never prints. */
#include "gpu_driver.h"
#include "sha256.h"
#include "wk_core.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAGIC "WKRTC01\n"
#define CACHE_HEADER 96
#define CACHE_SUFFIX ".wkrtc"
#define CACHE_DEFAULT_MAX ((unsigned long long)256 << 20)
#define CACHE_FLAG_PTX 1u
#define TMP_STALE_SECONDS 600 /* a temporary file this old is a crashed writer's: swept */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool read;                /* the environment has been read */
    bool off;                 /* no cache at all */
    char dir[1024];           /* "" when off */
    unsigned long long max;   /* WICK_CACHE_MAXSIZE */
    char note[512];           /* the first problem, one line ("" none) */
    bool dir_made;            /* mkdir -p done (or found) */
    bool unwritable;          /* a write failed: stop trying in this process */
    wk_gpu_rtc_cache_stats stats;
    const wk_gpu_rtc_compiler *compiler;
    unsigned char headers[32]; /* SHA-256 of the embedded headers (names and texts) */
    bool have_headers;
} C;
static atomic_uint tmp_counter;

/* ---- settings */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    if (C.note[0]) /* the first problem is the one to report */
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(C.note, sizeof C.note, fmt, ap);
    va_end(ap);
}

static bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Reads the environment once (under cache_mu). */
static void settings(void)
{
    if (C.read)
        return;
    C.read = true;
    C.max = CACHE_DEFAULT_MAX;
    const char *m = getenv("WICK_CACHE_MAXSIZE");
    if (m && *m) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(m, &end, 10);
        if (errno || !end || *end || m[0] == '-')
            note("WICK_CACHE_MAXSIZE=%.60s is not a byte count; using %llu", m, C.max);
        else
            C.max = v;
    }
    if (env_flag("WICK_CACHE_DISABLE")) {
        C.off = true;
        note("off (WICK_CACHE_DISABLE=%.20s)", getenv("WICK_CACHE_DISABLE"));
        return;
    }
    const char *d = getenv("WICK_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n = 0;
    if (d && *d)
        n = snprintf(C.dir, sizeof C.dir, "%s", d);
    else if (x && x[0] == '/') /* XDG: a relative path is invalid and ignored */
        n = snprintf(C.dir, sizeof C.dir, "%s/wick", x);
    else if (h && *h)
        n = snprintf(C.dir, sizeof C.dir, "%s/.cache/wick", h);
    else {
        C.off = true;
        note("off (no WICK_CACHE_DIR, XDG_CACHE_HOME or HOME)");
        return;
    }
    if (n <= 0 || (size_t)n >= sizeof C.dir - 128) { /* room for the entry names */
        C.off = true;
        C.dir[0] = '\0';
        note("off (the cache directory's path is too long)");
    }
}

/* Before any write was tried: whether one could succeed (the directory, or its nearest existing
 * parent, writable), so `wick devices` can tell up front. "" when it looks fine. */
static void probe(char *out, size_t cap)
{
    char p[sizeof C.dir];
    snprintf(p, sizeof p, "%s", C.dir);
    out[0] = '\0';
    for (bool first = true;; first = false) {
        struct stat sb;
        if (stat(p, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode))
                snprintf(out, cap, "%.300s is not a directory: compiled kernels cannot be kept", p);
            else if (access(p, W_OK | X_OK) != 0)
                snprintf(out, cap, first ? "read-only (%s): entries are read, new ones not stored"
                                         : "cannot be created (%s): compiled kernels cannot be kept",
                         strerror(errno));
            return;
        }
        char *slash = strrchr(p, '/');
        if (!slash || slash == p)
            return;
        *slash = '\0';
    }
}

void wk_kernel_cache_info(const char **dir, const char **why)
{
    /* returned strings stay valid: C.dir and C.note only change in wk_gpu_rtc_cache_reset */
    static char probed[512];
    pthread_mutex_lock(&cache_mu);
    settings();
    if (dir)
        *dir = C.off ? "" : C.dir;
    if (why) {
        *why = C.note;
        if (!C.note[0] && !C.off && !C.unwritable) {
            probe(probed, sizeof probed);
            *why = probed;
        }
    }
    pthread_mutex_unlock(&cache_mu);
}

void wk_gpu_rtc_cache_reset(void)
{
    pthread_mutex_lock(&cache_mu);
    const wk_gpu_rtc_compiler *c = C.compiler;
    memset(&C, 0, sizeof C);
    C.compiler = c;
    pthread_mutex_unlock(&cache_mu);
}

void wk_gpu_rtc_cache_stats_get(wk_gpu_rtc_cache_stats *out)
{
    pthread_mutex_lock(&cache_mu);
    *out = C.stats;
    pthread_mutex_unlock(&cache_mu);
}

const wk_gpu_rtc_compiler *wk_gpu_rtc_set_compiler(const wk_gpu_rtc_compiler *c)
{
    pthread_mutex_lock(&cache_mu);
    const wk_gpu_rtc_compiler *old = C.compiler;
    C.compiler = c;
    pthread_mutex_unlock(&cache_mu);
    return old;
}

/* ---- the key */
static void sha_str(wk_sha256_ctx *s, const char *label, const char *v)
{
    /* label=value\n, with the value's length first: no two fields can run into each other */
    char len[32];
    snprintf(len, sizeof len, "%s %zu=", label, strlen(v));
    wk_sha256_update(s, len, strlen(len));
    wk_sha256_update(s, v, strlen(v));
    wk_sha256_update(s, "\n", 1);
}

static void headers_digest(unsigned char out[32])
{
    pthread_mutex_lock(&cache_mu);
    if (!C.have_headers) {
        wk_sha256_ctx s;
        wk_sha256_init(&s);
        for (int i = 0; i < wk_gpu_embedded_header_count; i++) {
            sha_str(&s, "header", wk_gpu_embedded_headers[i].name);
            sha_str(&s, "text", wk_gpu_embedded_headers[i].text);
        }
        wk_sha256_final(&s, C.headers);
        C.have_headers = true;
    }
    memcpy(out, C.headers, 32);
    pthread_mutex_unlock(&cache_mu);
}

static void job_key(unsigned char key[32], const wk_gpu_rtc_job *job)
{
    unsigned char hdr[32];
    char hex[65];
    headers_digest(hdr);
    wk_sha256_hex(hex, hdr);
    wk_sha256_ctx s;
    wk_sha256_init(&s);
    sha_str(&s, "wick kernel cache", "1");
    sha_str(&s, "vendor", job->kind == WK_BACKEND_CUDA ? "cuda" : job->kind == WK_BACKEND_ROCM
                                                                     ? "rocm" : "other");
    sha_str(&s, "arch", job->arch);
    sha_str(&s, "compiler", job->compiler);
    for (int i = 0; i < job->nopt; i++)
        sha_str(&s, "option", job->opts[i]);
    sha_str(&s, "output", job->ptx ? "ptx" : "binary");
    sha_str(&s, "module", job->module);
    sha_str(&s, "source", job->source);
    sha_str(&s, "headers", hex);
    wk_sha256_final(&s, key);
}

void wk_gpu_rtc_cache_name(char *out, size_t cap, const wk_gpu_rtc_job *job)
{
    unsigned char key[32];
    char hex[65], arch[48];
    job_key(key, job);
    wk_sha256_hex(hex, key);
    /* the arch as a file-name part: "gfx90a:sramecc+:xnack-" -> "gfx90a_sramecc+_xnack-" */
    size_t i = 0;
    for (; job->arch[i] && i < sizeof arch - 1; i++) {
        const char c = job->arch[i];
        arch[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                          c == '+' || c == '-' || c == '.'
                      ? c : '_';
    }
    arch[i] = '\0';
    snprintf(out, cap, "%.40s-%s-%.32s" CACHE_SUFFIX, job->module, arch, hex);
}

/* ---- entries */
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The header: magic[8], u32 header size, u32 flags, u64 payload size, key[32], payload
 * SHA-256[32], u64 zero. Little-endian. */
static void header_make(unsigned char h[CACHE_HEADER], const unsigned char key[32],
                        const void *image, size_t size, unsigned flags)
{
    memset(h, 0, CACHE_HEADER);
    memcpy(h, CACHE_MAGIC, 8);
    put64(h + 8, (uint64_t)CACHE_HEADER | (uint64_t)flags << 32);
    put64(h + 16, size);
    memcpy(h + 24, key, 32);
    wk_sha256(h + 56, image, size);
}

/* Reads whole file `path` if it is a valid entry for key: *image (wk_malloc'd, NUL after it).
 * 1 hit, 0 absent, -1 present but invalid (truncated, corrupt, another key), -2 unreadable. */
static int entry_read(const char *path, const unsigned char key[32], unsigned flags,
                      void **image, size_t *size)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -2;
    struct stat sb;
    unsigned char h[CACHE_HEADER];
    int r = -1;
    char *p = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        r = -2;
        goto out;
    }
    if (sb.st_size < CACHE_HEADER || read(fd, h, CACHE_HEADER) != CACHE_HEADER)
        goto out;
    const uint64_t n = get64(h + 16), hs = get64(h + 8);
    if (memcmp(h, CACHE_MAGIC, 8) != 0 || (hs & 0xffffffffu) != CACHE_HEADER ||
        (unsigned)(hs >> 32) != flags || memcmp(h + 24, key, 32) != 0 ||
        n != (uint64_t)sb.st_size - CACHE_HEADER || n == 0)
        goto out;
    if (!(p = wk_malloc((size_t)n + 1))) {
        r = -2;
        goto out;
    }
    size_t got = 0;
    while (got < n) {
        const ssize_t k = read(fd, p + got, (size_t)n - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    unsigned char sum[32];
    if (got != n)
        goto out;
    wk_sha256(sum, p, (size_t)n);
    if (memcmp(sum, h + 56, 32) != 0)
        goto out;
    p[n] = '\0';
    *image = p;
    *size = (size_t)n;
    p = NULL;
    r = 1;
out:
    wk_free(p);
    close(fd);
    return r;
}

/* mkdir -p dir with mode 0700 (the cache holds code the process will run: it is the user's). */
static int make_dirs(const char *dir)
{
    char path[sizeof C.dir];
    snprintf(path, sizeof path, "%s", dir);
    for (char *s = path + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            const char c = *s;
            *s = '\0';
            if (mkdir(path, 0700) != 0 && errno != EEXIST)
                return -1;
            *s = c;
            if (!c)
                break;
        }
    }
    struct stat sb;
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

/* Writes the entry through a temporary file and a rename. 0 or -1 (errno kept). */
static int entry_write(const char *dir, const char *name, const unsigned char key[32],
                       const void *image, size_t size, unsigned flags)
{
    char tmp[sizeof C.dir + 280], path[sizeof C.dir + 208];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(),
             atomic_fetch_add(&tmp_counter, 1));
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    unsigned char h[CACHE_HEADER];
    header_make(h, key, image, size, flags);
    int ok = write(fd, h, CACHE_HEADER) == CACHE_HEADER;
    for (size_t done = 0; ok && done < size;) {
        const ssize_t k = write(fd, (const char *)image + done, size - done);
        ok = k > 0;
        done += ok ? (size_t)k : 0;
    }
    ok = ok && fsync(fd) == 0;
    const int err = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return 0;
    const int err2 = ok ? errno : err;
    unlink(tmp);
    errno = err2;
    return -1;
}

typedef struct entry_stat {
    char name[160];
    off_t size;
    struct timespec mtime;
} entry_stat;

static int older_first(const void *a, const void *b)
{
    const entry_stat *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec > y->mtime.tv_nsec;
}

/* Keeps the entries within C.max bytes, the least recently used (oldest mtime: a hit touches
 * its entry) removed first but never `keep`; sweeps stale temporary files. */
static void evict(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    entry_stat *v = NULL;
    size_t n = 0, cap = 0;
    unsigned long long total = 0;
    const time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        const bool is_tmp = len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0 &&
                            strstr(e->d_name, CACHE_SUFFIX ".");
        const bool is_entry = len > strlen(CACHE_SUFFIX) &&
                              strcmp(e->d_name + len - strlen(CACHE_SUFFIX), CACHE_SUFFIX) == 0;
        if ((!is_tmp && !is_entry) || len >= sizeof v->name)
            continue;
        char path[sizeof C.dir + sizeof v->name + 1];
        const size_t dl = strlen(dir);
        if (dl + 1 + len >= sizeof path)
            continue;
        memcpy(path, dir, dl);
        path[dl] = '/';
        memcpy(path + dl + 1, e->d_name, len + 1);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (is_tmp) {
            if (now - sb.st_mtime > TMP_STALE_SECONDS)
                unlink(path);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            entry_stat *w = wk_malloc(cap * sizeof *w);
            if (!w)
                break;
            if (n)
                memcpy(w, v, n * sizeof *w);
            wk_free(v);
            v = w;
        }
        memcpy(v[n].name, e->d_name, len + 1); /* len < sizeof name: checked above */
        v[n].size = sb.st_size;
        v[n].mtime = sb.st_mtim;
        total += (unsigned long long)sb.st_size;
        n++;
    }
    closedir(d);
    if (total > C.max && n) {
        qsort(v, n, sizeof *v, older_first);
        for (size_t i = 0; i < n && total > C.max; i++) {
            if (strcmp(v[i].name, keep) == 0)
                continue;
            char path[sizeof C.dir + 200];
            snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
            if (unlink(path) == 0) {
                total -= (unsigned long long)v[i].size;
                pthread_mutex_lock(&cache_mu);
                C.stats.evicted++;
                pthread_mutex_unlock(&cache_mu);
            }
        }
    }
    wk_free(v);
}

/* ---- the compile through the cache */
static void count(long *c)
{
    pthread_mutex_lock(&cache_mu);
    (*c)++;
    pthread_mutex_unlock(&cache_mu);
}

wk_status wk_gpu_rtc_build(void **image, size_t *size, wk_backend_kind kind, const char *arch,
                           const char *name, const char *src, int *from_cache)
{
    wk_gpu_rtc_job job = {.kind = kind, .arch = arch, .module = name, .source = src,
                          .optimise = true};
    char dir[sizeof C.dir];
    pthread_mutex_lock(&cache_mu);
    settings();
    const wk_gpu_rtc_compiler *cc = C.compiler ? C.compiler : &wk_gpu_rtc_vendor;
    snprintf(dir, sizeof dir, "%s", C.off ? "" : C.dir);
    const unsigned long long max = C.max;
    pthread_mutex_unlock(&cache_mu);
    if (from_cache)
        *from_cache = 0;

    wk_status st = cc->prepare(&job);
    if (st != WK_OK)
        return st;
    unsigned char key[32];
    char entry[200], path[sizeof C.dir + 208];
    const unsigned flags = job.ptx ? CACHE_FLAG_PTX : 0;
    if (dir[0]) {
        job_key(key, &job);
        wk_gpu_rtc_cache_name(entry, sizeof entry, &job);
        snprintf(path, sizeof path, "%s/%s", dir, entry);
        const int r = entry_read(path, key, flags, image, size);
        if (r == 1) {
            (void)utimensat(AT_FDCWD, path, NULL, 0); /* recently used (fails harmlessly read-only) */
            count(&C.stats.hits);
            if (from_cache)
                *from_cache = 1;
            return WK_OK;
        }
        count(&C.stats.misses);
        if (r == -1) { /* never loaded: removed, and compiled again below */
            (void)unlink(path);
            count(&C.stats.discarded);
        }
    }

    st = cc->compile(&job, image, size);
    if (st != WK_OK || !dir[0] || *size > max)
        return st;
    pthread_mutex_lock(&cache_mu);
    const bool skip = C.unwritable;
    bool made = C.dir_made;
    pthread_mutex_unlock(&cache_mu);
    if (skip)
        return WK_OK;
    int w = made || make_dirs(dir) == 0 ? 0 : -1;
    const char *what = "create the directory";
    if (w == 0) {
        made = true;
        what = "write an entry in it";
        w = entry_write(dir, entry, key, *image, *size, flags);
    }
    const int err = errno;
    pthread_mutex_lock(&cache_mu);
    C.dir_made |= made;
    if (w == 0) {
        C.stats.stores++;
    } else {
        C.stats.store_failures++;
        C.unwritable = true;
        note("not written: cannot %s %.300s (%s); compiled kernels are not kept", what, dir,
             strerror(err));
    }
    pthread_mutex_unlock(&cache_mu);
    if (w == 0)
        evict(dir, entry);
    return WK_OK;
}
