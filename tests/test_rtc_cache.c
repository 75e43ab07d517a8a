/* test_rtc_cache.c: the kernel cache of run-time compiled modules (src/gpu/gpu_rtc_cache.c) and
 * the warm-up (wk_device_warmup), without a GPU:
 *   1. SHA-256 against FIPS 180-4's examples (the cache's key and checksum);
 *   2. the key: each of source, headers' stand-in (module), arch, options and compiler identity
 *      changes the entry; the same job names the same entry;
 *   3. a compiler that counts its calls (the fake behind wk_gpu_rtc_set_compiler): a cold build
 *      compiles and stores, a warm one compiles nothing and returns the same bytes;
 *   4. the atomic write: one entry and no temporary file after a store; a crashed writer's stale
 *      temporary file is swept, a young one (a writer at work) kept;
 *   5. corruption: an entry truncated (to nothing, to its header, by one byte), a flipped payload
 *      byte, a flipped key byte, a wrong magic: each is discarded and rebuilt, never loaded;
 *   6. four processes filling one directory at once: every image right, nothing torn, and a
 *      fifth process afterwards compiles nothing;
 *   7. directories: missing (made, mode 0700), uncreatable (a file in the way), unwritable
 *      (/proc/self; read-only by permission when not root: hits still served), WICK_CACHE_DISABLE,
 *      WICK_CACHE_MAXSIZE (least recently used evicted, too-large not stored), XDG_CACHE_HOME and
 *      HOME;
 *   8. the module cache over a fake driver: wk_gpu_modules_warmup compiles every module on
 *      several threads at once (the fake compiler sees more than one in flight), a second
 *      process-like start (images freed, state reset) compiles nothing; the public
 *      wk_device_warmup / wk_device_code_source on cpu and simt;
 *   9. the real NVRTC (sm_80) and hipRTC (gfx90a) through the cache, module rand, where the
 *      libraries are present.
 * Every case runs in its own directory under a mkdtemp directory, removed at the end. */
#include "testlib.h"
#include "gpu/gpu_driver.h"
#include "sha256.h"
#include "wk_core.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[64];

/* ------------------------------------------------------------------ helpers */
static void rm_rf(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        chmod(path, 0700);
        DIR *d = opendir(path);
        if (d) {
            for (struct dirent *e; (e = readdir(d));) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                char sub[512];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                rm_rf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* A fresh directory root/name (not created when make is 0); returns it (static buffers). */
static const char *case_dir(const char *name, int make)
{
    static char bufs[4][256];
    static int k;
    char *p = bufs[k++ & 3];
    snprintf(p, sizeof bufs[0], "%s/%s", root, name);
    rm_rf(p);
    if (make)
        mkdir(p, 0700);
    return p;
}

/* Points the cache at dir (NULL: unset WICK_CACHE_DIR) and forgets what it read before. */
static void use_dir(const char *dir)
{
    if (dir)
        setenv("WICK_CACHE_DIR", dir, 1);
    else
        unsetenv("WICK_CACHE_DIR");
    wk_gpu_rtc_cache_reset();
}

/* Names of the files in dir ending with suffix: count, and the first in first (may be NULL). */
static int count_files(const char *dir, const char *suffix, char *first, size_t cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (len > sl && strcmp(e->d_name + len - sl, suffix) == 0) {
            if (n == 0 && first)
                snprintf(first, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static wk_gpu_rtc_cache_stats stats(void)
{
    wk_gpu_rtc_cache_stats s;
    wk_gpu_rtc_cache_stats_get(&s);
    return s;
}

/* ------------------------------------------------------------------ the fake compiler */
/* Its image is a text that names everything the key should cover, so a wrong hit shows up as
 * wrong bytes: "fake|<compiler>|<arch>|<options>|<module>|<source length>|<source hash>". */
static atomic_int fake_compiles, fake_in_flight, fake_max_in_flight;
static char fake_version[64] = "fake-rtc 1.0";
static int fake_sleep_ms;

static wk_status fake_prepare(wk_gpu_rtc_job *job)
{
    snprintf(job->arch_opt, sizeof job->arch_opt, "--fake-arch=%s", job->arch);
    job->opts[0] = job->arch_opt;
    job->opts[1] = job->optimise ? "-O3" : "-O0";
    job->nopt = 2;
    job->ptx = false;
    snprintf(job->compiler, sizeof job->compiler, "%s", fake_version);
    return WK_OK;
}

static void expected_image(char *out, size_t cap, const char *compiler, const char *arch,
                           const char *opt, const char *module, const char *src)
{
    unsigned char d[32];
    char hex[65];
    wk_sha256(d, src, strlen(src));
    wk_sha256_hex(hex, d);
    snprintf(out, cap, "fake|%s|--fake-arch=%s %s|%s|%zu|%s", compiler, arch, opt, module,
             strlen(src), hex);
}

static wk_status fake_compile(const wk_gpu_rtc_job *job, void **image, size_t *size)
{
    const int now = atomic_fetch_add(&fake_in_flight, 1) + 1;
    for (int m = atomic_load(&fake_max_in_flight); now > m;)
        if (atomic_compare_exchange_weak(&fake_max_in_flight, &m, now))
            break;
    atomic_fetch_add(&fake_compiles, 1);
    if (fake_sleep_ms) {
        struct timespec ts = {0, (long)fake_sleep_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    char text[512];
    expected_image(text, sizeof text, job->compiler, job->arch, job->opts[1], job->module,
                   job->source);
    const size_t n = strlen(text);
    char *p = wk_malloc(n + 1);
    atomic_fetch_sub(&fake_in_flight, 1);
    if (!p)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "fake: out of memory");
    memcpy(p, text, n + 1);
    *image = p;
    *size = n;
    return WK_OK;
}

static const wk_gpu_rtc_compiler fake_rtc = {"fake", fake_prepare, fake_compile};

/* One build through the cache with the fake compiler: checks the image; returns from_cache
 * (or -1 on a failure, recorded). */
static int build(const char *module, const char *arch, const char *src)
{
    void *img = NULL;
    size_t n = 0;
    int cached = -1;
    wk_status st = wk_gpu_rtc_build(&img, &n, WK_BACKEND_CUDA, arch, module, src, &cached);
    if (!TEST_EQ_STATUS(st, WK_OK))
        return -1;
    char want[512];
    expected_image(want, sizeof want, fake_version, arch, "-O3", module, src);
    TEST_CHECK(n == strlen(want) && memcmp(img, want, n) == 0 && ((char *)img)[n] == '\0',
               "%s for %s: the image is not the one compiled for it (%zu bytes)", module, arch,
               n);
    wk_free(img);
    return cached;
}

/* ------------------------------------------------------------------ 1. SHA-256 */
static void test_sha256(void)
{
    static const struct { const char *msg, *hex; } kat[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    unsigned char d[32];
    char hex[65];
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        wk_sha256(d, kat[i].msg, strlen(kat[i].msg));
        wk_sha256_hex(hex, d);
        TEST_CHECK(strcmp(hex, kat[i].hex) == 0, "SHA-256 of example %zu (%zu bytes) = %s", i,
                   strlen(kat[i].msg), hex);
    }
    /* one million 'a' (FIPS 180-2 appendix B.3), fed in uneven pieces */
    static char a[1000];
    memset(a, 'a', sizeof a);
    wk_sha256_ctx s;
    wk_sha256_init(&s);
    size_t done = 0;
    for (size_t k = 1; done < 1000000; k = k % 997 + 1) {
        size_t take = k < 1000000 - done ? k : 1000000 - done;
        wk_sha256_update(&s, a, take);
        done += take;
    }
    wk_sha256_final(&s, d);
    wk_sha256_hex(hex, d);
    TEST_CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
               "SHA-256 of a million 'a' = %s", hex);
}

/* ------------------------------------------------------------------ 2. the key */
static void job_name(char *out, size_t cap, const char *module, const char *arch,
                     const char *src, bool optimise)
{
    wk_gpu_rtc_job job = {.kind = WK_BACKEND_CUDA, .arch = arch, .module = module,
                          .source = src, .optimise = optimise};
    fake_prepare(&job);
    wk_gpu_rtc_cache_name(out, cap, &job);
}

static void test_key(void)
{
    char base[256], other[256];
    job_name(base, sizeof base, "binary", "sm_80", "kernel source A", true);
    TEST_CHECK(strncmp(base, "binary-sm_80-", 13) == 0 && strstr(base, ".wkrtc"),
               "entry name %s", base);
    job_name(other, sizeof other, "binary", "sm_80", "kernel source A", true);
    TEST_CHECK(strcmp(base, other) == 0, "the same job named two entries: %s, %s", base, other);
    job_name(other, sizeof other, "binary", "sm_80", "kernel source B", true);
    TEST_CHECK(strcmp(base, other) != 0, "the source is not in the key");
    job_name(other, sizeof other, "binary", "sm_86", "kernel source A", true);
    TEST_CHECK(strcmp(base, other) != 0, "the arch is not in the key");
    job_name(other, sizeof other, "binary", "sm_80", "kernel source A", false);
    TEST_CHECK(strcmp(base, other) != 0, "the options are not in the key");
    job_name(other, sizeof other, "unary", "sm_80", "kernel source A", true);
    TEST_CHECK(strcmp(base, other) != 0, "the module is not in the key");
    snprintf(fake_version, sizeof fake_version, "fake-rtc 1.1");
    job_name(other, sizeof other, "binary", "sm_80", "kernel source A", true);
    TEST_CHECK(strcmp(base, other) != 0, "the compiler's version is not in the key");
    snprintf(fake_version, sizeof fake_version, "fake-rtc 1.0");
    /* an arch with target features becomes a file-name part without ':' */
    job_name(other, sizeof other, "binary", "gfx90a:sramecc+:xnack-", "kernel source A", true);
    TEST_CHECK(strncmp(other, "binary-gfx90a_sramecc+_xnack--", 30) == 0 && !strchr(other, ':'),
               "entry name %s", other);
}

/* ------------------------------------------------------------------ 3, 4. cold, warm, atomic */
static void test_cold_warm(void)
{
    const char *dir = case_dir("coldwarm", 1);
    use_dir(dir);
    atomic_store(&fake_compiles, 0);
    TEST_EQ_INT(build("binary", "sm_80", "src of binary"), 0);
    TEST_EQ_INT(atomic_load(&fake_compiles), 1);
    TEST_EQ_INT(stats().stores, 1);
    TEST_EQ_INT(build("binary", "sm_80", "src of binary"), 1); /* warm: no compile */
    TEST_EQ_INT(atomic_load(&fake_compiles), 1);
    TEST_EQ_INT(stats().hits, 1);
    TEST_EQ_INT(build("binary", "sm_90", "src of binary"), 0); /* another arch: compiled */
    TEST_EQ_INT(atomic_load(&fake_compiles), 2);
    snprintf(fake_version, sizeof fake_version, "fake-rtc 2.0"); /* a compiler update */
    TEST_EQ_INT(build("binary", "sm_80", "src of binary"), 0);
    TEST_EQ_INT(atomic_load(&fake_compiles), 3);
    snprintf(fake_version, sizeof fake_version, "fake-rtc 1.0");
    TEST_EQ_INT(count_files(dir, ".wkrtc", NULL, 0), 3);
    TEST_EQ_INT(count_files(dir, ".tmp", NULL, 0), 0);
    const char *d = "", *note = "";
    wk_kernel_cache_info(&d, &note);
    TEST_CHECK(strcmp(d, dir) == 0 && note[0] == '\0', "cache info: dir %s, note %s", d, note);

    /* a crashed writer's temporary file (10 minutes old or more) is swept at the next store;
     * a young one (a writer at work) stays */
    char stale[512], young[512];
    snprintf(stale, sizeof stale, "%s/x-sm_80-00.wkrtc.999.0.tmp", dir);
    snprintf(young, sizeof young, "%s/x-sm_80-00.wkrtc.999.1.tmp", dir);
    testlib_write_file(stale, "half an entry", 13);
    testlib_write_file(young, "half an entry", 13);
    struct timespec t[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    utimensat(AT_FDCWD, stale, t, 0);
    TEST_EQ_INT(build("unary", "sm_80", "src of unary"), 0);
    TEST_CHECK(access(stale, F_OK) != 0, "the stale temporary file was not swept");
    TEST_CHECK(access(young, F_OK) == 0, "a young temporary file was removed");
    TEST_EQ_INT(build("unary", "sm_80", "src of unary"), 1); /* never mistaken for an entry */
}

/* ------------------------------------------------------------------ 5. corruption */
typedef enum { TRUNC_EMPTY, TRUNC_HEADER, TRUNC_ONE, FLIP_PAYLOAD, FLIP_KEY, FLIP_MAGIC } damage;

static void test_corruption(void)
{
    static const char *const names[] = {"truncated to nothing", "truncated to its header",
                                        "one byte short", "a payload byte flipped",
                                        "a key byte flipped", "a magic byte flipped"};
    for (int k = TRUNC_EMPTY; k <= FLIP_MAGIC; k++) {
        const char *dir = case_dir("corrupt", 1);
        use_dir(dir);
        atomic_store(&fake_compiles, 0);
        TEST_EQ_INT(build("norm", "gfx1100", "src of norm"), 0);
        char path[512];
        TEST_EQ_INT(count_files(dir, ".wkrtc", path, sizeof path), 1);
        size_t n = 0;
        uint8_t *b = testlib_read_file(path, &n);
        if (!TEST_CHECK(b && n > 96, "entry %s unreadable", path)) {
            free(b);
            continue;
        }
        switch ((damage)k) {
        case TRUNC_EMPTY: n = 0; break;
        case TRUNC_HEADER: n = 96; break;
        case TRUNC_ONE: n -= 1; break;
        case FLIP_PAYLOAD: b[96 + (n - 96) / 2] ^= 0x10; break;
        case FLIP_KEY: b[30] ^= 1; break;
        case FLIP_MAGIC: b[0] ^= 0x20; break;
        }
        testlib_write_file(path, b, n);
        free(b);
        wk_gpu_rtc_cache_reset(); /* a new process */
        TEST_CHECK(build("norm", "gfx1100", "src of norm") == 0, "%s: loaded", names[k]);
        TEST_CHECK(atomic_load(&fake_compiles) == 2, "%s: not rebuilt (%d compiles)", names[k],
                   atomic_load(&fake_compiles));
        TEST_CHECK(stats().discarded == 1, "%s: not discarded", names[k]);
        TEST_CHECK(build("norm", "gfx1100", "src of norm") == 1, "%s: the rebuilt entry was not "
                   "stored", names[k]);
    }
}

/* ------------------------------------------------------------------ 6. processes at once */
static const char *const proc_modules[] = {"attn", "binary", "cast", "conv", "copy", "flash",
                                           "index", "matmul", "norm", "pool", "qmv", "quant"};
enum { NPROC_MOD = sizeof proc_modules / sizeof proc_modules[0], NPROC = 4 };

static void test_processes(void)
{
    const char *dir = case_dir("procs", 0); /* made by whichever process stores first */
    use_dir(dir);
    fflush(stdout);
    pid_t pid[NPROC];
    for (int p = 0; p < NPROC; p++) {
        pid[p] = fork();
        if (pid[p] == 0) { /* each in its own order; exits with its failure count */
            wk_gpu_rtc_cache_reset();
            fake_sleep_ms = 3;
            int bad = 0;
            for (int r = 0; r < 3; r++)
                for (int i = 0; i < NPROC_MOD; i++) {
                    const char *m = proc_modules[(i * (p + 1) + r) % NPROC_MOD];
                    char src[64];
                    snprintf(src, sizeof src, "source of %s", m);
                    void *img = NULL;
                    size_t n = 0;
                    char want[512];
                    expected_image(want, sizeof want, fake_version, "gfx942", "-O3", m, src);
                    if (wk_gpu_rtc_build(&img, &n, WK_BACKEND_ROCM, "gfx942", m, src, NULL) !=
                            WK_OK ||
                        n != strlen(want) || memcmp(img, want, n) != 0)
                        bad++;
                    wk_free(img);
                }
            _exit(bad > 100 ? 100 : bad);
        }
    }
    for (int p = 0; p < NPROC; p++) {
        int status = 0;
        TEST_CHECK(pid[p] > 0 && waitpid(pid[p], &status, 0) == pid[p] && WIFEXITED(status) &&
                       WEXITSTATUS(status) == 0,
                   "process %d: %d wrong or failed builds", p,
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    TEST_EQ_INT(count_files(dir, ".wkrtc", NULL, 0), NPROC_MOD);
    TEST_EQ_INT(count_files(dir, ".tmp", NULL, 0), 0);
    /* a fifth process: warm, compiles nothing */
    wk_gpu_rtc_cache_reset();
    atomic_store(&fake_compiles, 0);
    int hits = 0;
    for (int i = 0; i < NPROC_MOD; i++) {
        char src[64];
        snprintf(src, sizeof src, "source of %s", proc_modules[i]);
        void *img = NULL;
        size_t n = 0;
        int cached = 0;
        char want[512];
        expected_image(want, sizeof want, fake_version, "gfx942", "-O3", proc_modules[i], src);
        if (TEST_EQ_STATUS(wk_gpu_rtc_build(&img, &n, WK_BACKEND_ROCM, "gfx942", proc_modules[i],
                                            src, &cached), WK_OK))
            TEST_CHECK(n == strlen(want) && memcmp(img, want, n) == 0, "%s: wrong image",
                       proc_modules[i]);
        hits += cached;
        wk_free(img);
    }
    TEST_EQ_INT(hits, NPROC_MOD);
    TEST_EQ_INT(atomic_load(&fake_compiles), 0);
}

/* ------------------------------------------------------------------ 7. directories, switches */
static void test_directories(void)
{
    const char *d = "", *note = "";
    /* missing: made, with every missing parent, private to the user */
    const char *top = case_dir("missing", 0);
    char deep[300];
    snprintf(deep, sizeof deep, "%s/a/b/wick", top);
    use_dir(deep);
    TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
    struct stat sb;
    TEST_CHECK(stat(deep, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
               "%s was not made with mode 0700", deep);
    TEST_EQ_INT(build("rope", "sm_80", "src"), 1);

    /* uncreatable: a file where the directory should be; compiles work, one note, one try */
    const char *blocked = case_dir("blocked", 1);
    char file[300], under[320];
    snprintf(file, sizeof file, "%s/file", blocked);
    snprintf(under, sizeof under, "%s/file/wick", blocked);
    testlib_write_file(file, "x", 1);
    use_dir(under);
    atomic_store(&fake_compiles, 0);
    TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
    TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
    TEST_EQ_INT(atomic_load(&fake_compiles), 2);
    TEST_EQ_INT(stats().store_failures, 1);
    wk_kernel_cache_info(&d, &note);
    TEST_CHECK(strstr(note, "cannot create the directory") && strstr(note, under) &&
                   !strchr(note, '\n'),
               "note: %s", note ? note : "(null)");

    /* an existing directory nobody may write, not even root */
    use_dir("/proc/self");
    TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
    wk_kernel_cache_info(&d, &note);
    TEST_CHECK(strstr(note, "cannot write an entry") != NULL, "note: %s", note ? note : "(null)");

    /* read-only by permission (not for root, whom permissions do not stop): hits served */
    if (geteuid() != 0) {
        const char *ro = case_dir("readonly", 1);
        use_dir(ro);
        TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
        chmod(ro, 0500);
        wk_gpu_rtc_cache_reset();
        TEST_EQ_INT(build("rope", "sm_80", "src"), 1);
        TEST_EQ_INT(build("cast", "sm_80", "src"), 0);
        wk_kernel_cache_info(&d, &note);
        TEST_CHECK(strstr(note, "cannot write") != NULL, "note: %s", note ? note : "(null)");
        chmod(ro, 0700);
    } else {
        printf("skip: read-only cache directory by permission (running as root)\n");
    }

    /* off */
    const char *off = case_dir("off", 1);
    use_dir(off);
    setenv("WICK_CACHE_DISABLE", "1", 1);
    wk_gpu_rtc_cache_reset();
    atomic_store(&fake_compiles, 0);
    TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
    TEST_EQ_INT(build("rope", "sm_80", "src"), 0);
    TEST_EQ_INT(atomic_load(&fake_compiles), 2);
    TEST_EQ_INT(count_files(off, ".wkrtc", NULL, 0), 0);
    wk_kernel_cache_info(&d, &note);
    TEST_CHECK(d[0] == '\0' && strstr(note, "WICK_CACHE_DISABLE"), "off: dir %s, note %s", d,
               note);
    unsetenv("WICK_CACHE_DISABLE");

    /* size limit: entries of this source are 96 + ~150 bytes; 600 bytes keep two */
    const char *small = case_dir("small", 1);
    use_dir(small);
    setenv("WICK_CACHE_MAXSIZE", "600", 1);
    wk_gpu_rtc_cache_reset();
    const char *mods[4] = {"m0", "m1", "m2", "m3"};
    for (int i = 0; i < 4; i++) {
        TEST_EQ_INT(build(mods[i], "sm_80", "src"), 0);
        struct timespec ts = {0, 20 * 1000 * 1000}; /* distinct modification times */
        nanosleep(&ts, NULL);
    }
    TEST_EQ_INT(count_files(small, ".wkrtc", NULL, 0), 2);
    TEST_CHECK(stats().evicted == 2, "evicted %ld", stats().evicted);
    TEST_EQ_INT(build("m3", "sm_80", "src"), 1); /* the newest stayed */
    TEST_EQ_INT(build("m0", "sm_80", "src"), 0); /* the oldest went */
    setenv("WICK_CACHE_MAXSIZE", "100", 1);      /* smaller than an entry: nothing stored */
    const char *tiny = case_dir("tiny", 1);
    use_dir(tiny);
    TEST_EQ_INT(build("m0", "sm_80", "src"), 0);
    TEST_EQ_INT(count_files(tiny, ".wkrtc", NULL, 0), 0);
    setenv("WICK_CACHE_MAXSIZE", "lots", 1); /* not a number: the default, and a note */
    wk_gpu_rtc_cache_reset();
    wk_kernel_cache_info(&d, &note);
    TEST_CHECK(strstr(note, "WICK_CACHE_MAXSIZE") != NULL, "note: %s", note ? note : "(null)");
    unsetenv("WICK_CACHE_MAXSIZE");

    /* where it is without WICK_CACHE_DIR: $XDG_CACHE_HOME/wick (absolute only), ~/.cache/wick */
    const char *was_xdg = getenv("XDG_CACHE_HOME"), *was_home = getenv("HOME");
    char xdg_keep[512] = "", home_keep[512] = "", want[600];
    if (was_xdg)
        snprintf(xdg_keep, sizeof xdg_keep, "%s", was_xdg);
    if (was_home)
        snprintf(home_keep, sizeof home_keep, "%s", was_home);
    setenv("XDG_CACHE_HOME", root, 1);
    use_dir(NULL);
    wk_kernel_cache_info(&d, &note);
    snprintf(want, sizeof want, "%s/wick", root);
    TEST_CHECK(strcmp(d, want) == 0, "with XDG_CACHE_HOME: %s", d);
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    setenv("HOME", root, 1);
    wk_gpu_rtc_cache_reset();
    wk_kernel_cache_info(&d, &note);
    snprintf(want, sizeof want, "%s/.cache/wick", root);
    TEST_CHECK(strcmp(d, want) == 0, "with HOME (XDG relative): %s", d);
    if (was_xdg)
        setenv("XDG_CACHE_HOME", xdg_keep, 1);
    else
        unsetenv("XDG_CACHE_HOME");
    if (was_home)
        setenv("HOME", home_keep, 1);
    else
        unsetenv("HOME");
}

/* ------------------------------------------------------------------ 8. warm-up over a fake driver */
static atomic_int drv_loads;
static int drv_init(const char **reason) { *reason = ""; return 1; }
static wk_status drv_load(void *ctx, void **module, const void *image)
{
    (void)ctx;
    if (memcmp(image, "fake|", 5) != 0) /* an embedded code object: "none fits" */
        return wk_err(WK_ERR_NOT_SUPPORTED, "fake: no binary for this GPU");
    atomic_fetch_add(&drv_loads, 1);
    *module = (void *)image;
    return WK_OK;
}
static void drv_unload(void *ctx, void *module) { (void)ctx; (void)module; }
static wk_status drv_function(void *ctx, void **fn, void *module, const char *name)
{
    (void)ctx;
    *fn = (char *)module + strlen(name);
    return WK_OK;
}
static const wk_gpu_driver fake_driver = {
    .name = "fake", .kind = WK_BACKEND_CUDA, .init = drv_init, .module_load = drv_load,
    .module_unload = drv_unload, .function = drv_function,
};

static void fake_dev_open(wk_gpu_device *g)
{
    memset(g, 0, sizeof *g);
    g->drv = &fake_driver;
    g->ctx = g;
    snprintf(g->props.name, sizeof g->props.name, "fake GPU");
    snprintf(g->props.arch, sizeof g->props.arch, "sm_75"); /* older than every build's SASS */
    snprintf(g->props.arch_full, sizeof g->props.arch_full, "sm_75");
    g->props.warp_size = 32;
    TEST_EQ_STATUS(wk_gpu_modules_create(g), WK_OK);
}

static void test_warmup(void)
{
    const int n = wk_gpu_embedded_module_count;
    if (n == 0) {
        printf("skip: warm-up over the fake driver (no kernel module in this build)\n");
        return;
    }
    const char *dir = case_dir("warmup", 1);
    use_dir(dir);
    atomic_store(&fake_compiles, 0);
    atomic_store(&fake_max_in_flight, 0);
    atomic_store(&drv_loads, 0);
    fake_sleep_ms = 40; /* compiles overlap if they run at once */
    wk_gpu_device g;
    fake_dev_open(&g);
    TEST_EQ_STATUS(wk_gpu_modules_warmup(&g, 4), WK_OK);
    TEST_EQ_INT(atomic_load(&fake_compiles), n);
    TEST_EQ_INT(atomic_load(&drv_loads), n);
    TEST_CHECK(atomic_load(&fake_max_in_flight) >= 2,
               "the compiles ran one at a time (at most %d in flight)",
               atomic_load(&fake_max_in_flight));
    TEST_CHECK(atomic_load(&fake_max_in_flight) <= 4, "more than 4 compiles at once (%d)",
               atomic_load(&fake_max_in_flight));
    int emb = 0, comp = 0;
    wk_gpu_modules_counts(&g, &emb, &comp);
    TEST_EQ_INT(comp, n);
    TEST_CHECK(wk_gpu_code_source(&g) == WK_CODE_RUN_TIME, "code source %d",
               (int)wk_gpu_code_source(&g));
    TEST_EQ_STATUS(wk_gpu_modules_warmup(&g, 4), WK_OK); /* again: nothing to do */
    TEST_EQ_INT(atomic_load(&fake_compiles), n);
    wk_gpu_modules_destroy(&g); /* the last device: the process-wide images are freed */

    /* the next "process": everything from the cache, nothing compiled */
    wk_gpu_rtc_cache_reset();
    fake_dev_open(&g);
    TEST_EQ_STATUS(wk_gpu_modules_warmup(&g, 0), WK_OK);
    TEST_EQ_INT(atomic_load(&fake_compiles), n);
    TEST_EQ_INT(stats().hits, n);
    wk_gpu_modules_destroy(&g);
    fake_sleep_ms = 0;

    /* the public entry points on the devices every build has */
    wk_device *cpu = NULL, *simt = NULL;
    TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK);
    TEST_EQ_STATUS(wk_device_warmup(cpu, 0), WK_OK);
    TEST_CHECK(wk_device_code_source(cpu) == WK_CODE_BUILTIN, "cpu code source");
    TEST_EQ_STATUS(wk_device_warmup(NULL, 0), WK_ERR_INVALID_ARGUMENT);
    wk_device_close(cpu);
    if (wk_device_open(&simt, "simt:1") == WK_OK) {
        TEST_EQ_STATUS(wk_device_warmup(simt, 2), WK_OK);
        TEST_CHECK(wk_device_code_source(simt) == WK_CODE_BUILTIN, "simt code source");
        wk_device_close(simt);
    } else {
        printf("skip: simt warm-up (%s)\n", wk_last_error());
    }
}

/* ------------------------------------------------------------------ 9. the real compilers */
/* Module rand (the smallest) through the vendor's compiler and the cache, twice: the second is
 * read from disk and is the same code object. */
static void test_vendor(wk_backend_kind kind, const char *arch)
{
    const char *label = kind == WK_BACKEND_CUDA ? "NVRTC" : "hipRTC";
    int mi = -1;
    for (int i = 0; i < wk_gpu_embedded_module_count; i++)
        if (strcmp(wk_gpu_embedded_modules[i].name, "rand") == 0)
            mi = i;
    if (mi < 0 || (getenv("WICK_TEST_NO_RTC") && strcmp(getenv("WICK_TEST_NO_RTC"), "0") != 0)) {
        printf("skip: %s through the cache (%s)\n", label,
               mi < 0 ? "no module rand" : "WICK_TEST_NO_RTC set");
        return;
    }
    wk_gpu_rtc_set_compiler(NULL);
    const char *dir = case_dir(kind == WK_BACKEND_CUDA ? "nvrtc" : "hiprtc", 1);
    use_dir(dir);
    const wk_gpu_embedded *e = &wk_gpu_embedded_modules[mi];
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    int ca = -1, cb = -1;
    wk_status st = wk_gpu_rtc_build(&a, &na, kind, arch, e->name, e->source, &ca);
    if (st == WK_ERR_NOT_SUPPORTED && strstr(wk_last_error(), "unavailable")) {
        printf("skip: %s through the cache: %s\n", label, wk_last_error());
        wk_gpu_rtc_set_compiler(&fake_rtc);
        return;
    }
    TEST_EQ_STATUS(st, WK_OK);
    wk_gpu_rtc_cache_reset();
    TEST_EQ_STATUS(wk_gpu_rtc_build(&b, &nb, kind, arch, e->name, e->source, &cb), WK_OK);
    TEST_CHECK(ca == 0 && cb == 1, "%s: cold %d, warm %d", label, ca, cb);
    TEST_CHECK(a && b && na == nb && na > 4 && memcmp(a, b, na) == 0,
               "%s: the cached code object differs from the compiled one (%zu, %zu bytes)", label,
               na, nb);
    char name[300] = "";
    TEST_EQ_INT(count_files(dir, ".wkrtc", name, sizeof name), 1);
    printf("%s rand.cu for %s through the cache: %zu bytes, entry %s\n", label, arch, na,
           name[0] ? strrchr(name, '/') + 1 : "(none)");
    wk_free(a);
    wk_free(b);
    wk_gpu_rtc_set_compiler(&fake_rtc);
}

int main(void)
{
    snprintf(root, sizeof root, "%s/wick-rtc-cache.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                             : "/tmp");
    if (!mkdtemp(root)) {
        TEST_CHECK(0, "mkdtemp %s: %s", root, strerror(errno));
        return testlib_summary();
    }
    snprintf(testlib_dir, sizeof testlib_dir, "%s", root);
    unsetenv("WICK_CACHE_DISABLE");
    unsetenv("WICK_CACHE_MAXSIZE");
    wk_gpu_rtc_set_compiler(&fake_rtc);
    test_sha256();
    test_key();
    test_cold_warm();
    test_corruption();
    test_processes();
    test_directories();
    test_warmup();
    test_vendor(WK_BACKEND_CUDA, "sm_80");
    test_vendor(WK_BACKEND_ROCM, "gfx90a:sramecc+:xnack-");
    wk_gpu_rtc_set_compiler(NULL);
    rm_rf(root);
    return testlib_summary();
}
