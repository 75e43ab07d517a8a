/* test_atomic_file.c: a file wick writes is replaced whole or not at all (docs/semantics.md,
 * "Files"; src/io/atomic_file.c), for both writers (GGUF and safetensors):
 *   1. rules: a new file gets mode 0666 & ~umask, a replaced one keeps its mode (and, as root,
 *      its owner); a symbolic link keeps pointing where it did and the file it leads to gets the
 *      new bytes (a dangling link too); a directory, a missing directory and a loop of links
 *      fail with WK_ERR_IO and change nothing; a file can be rewritten from tensors mapped from
 *      itself.
 *   2. I/O faults through the test hook wk_atomic_file_set_ops: each open, write, fsync, fchmod,
 *      close and rename that a write makes fails in turn (the k-th call, k = 1, 2, ... until the
 *      write succeeds without reaching k); a short write and an interrupted one (EINTR) must not
 *      matter, a short write followed by ENOSPC must. After each: WK_OK and the new bytes, or
 *      WK_ERR_IO and the old bytes, byte-identical; no temporary file left. The same onto a path
 *      where no file was: WK_OK, or still no file.
 *   3. allocation failures (a counting hook): each allocation of the write fails in turn:
 *      WK_OK or WK_ERR_OUT_OF_MEMORY, the old bytes kept, nothing leaked, no temporary.
 *   4. a full disk for real (issue 36's case): a 200 KB file, then a 2 MB one over it on a 1 MiB
 *      tmpfs -> WK_ERR_IO and the 200 KB file intact. Needs root and a mount namespace of its
 *      own (a child process); skipped with a line where that is not allowed.
 *   5. a reader process maps the old file and keeps checking it while this process replaces the
 *      file 20 times: its bytes never change (no SIGBUS); a fresh open sees the last version.
 *   6. kill -9: a writer process replaces the file over and over and is killed at random moments
 *      (seeded, about 2 s): the file left is always exactly one of the two versions.
 * Run: ctest -R test_atomic_file */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS */
#include "io/atomic_file.h"
#include "testlib.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the two formats */
/* Version v (0 = "A", 1 = "B") of a file: a tensor "t" of `bytes` bytes (byte i is
 * pattern(v, i)), a small tensor "s" and a metadata string naming the version. */
static uint8_t pattern(int v, size_t i) { return (uint8_t)(i * 131 + (size_t)v * 17 + 7 + (i >> 11)); }

static uint8_t *pattern_buf(int v, size_t bytes)
{
    uint8_t *p = malloc(bytes ? bytes : 1);
    for (size_t i = 0; p && i < bytes; i++)
        p[i] = pattern(v, i);
    return p;
}

static const float g_small[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

typedef struct fmt {
    const char *name; /* file name used */
    /* writes version v with a "t" of `bytes` bytes (data: that tensor's bytes, or NULL for the
     * pattern) */
    wk_status (*write)(const char *path, int v, size_t bytes, const void *data);
    /* maps path; *t, *n: tensor "t"; returns the handle (NULL on failure) */
    void *(*map)(const char *path, const uint8_t **t, size_t *n);
    void (*unmap)(void *h);
} fmt;

static wk_status gguf_write(const char *path, int v, size_t bytes, const void *data)
{
    uint8_t *own = data ? NULL : pattern_buf(v, bytes);
    wk_gguf_writer *w = NULL;
    wk_status st = wk_gguf_writer_new(&w);
    const int64_t dt[1] = {(int64_t)(bytes / 4)}, ds[1] = {16};
    const char *name = v ? "B" : "A";
    if (!st)
        st = wk_gguf_writer_add_string(w, "general.name", name, 1);
    if (!st)
        st = wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, dt, data ? data : own, bytes);
    if (!st)
        st = wk_gguf_writer_add_tensor(w, "s", WK_QTYPE_F32, 1, ds, g_small, sizeof g_small);
    if (!st)
        st = wk_gguf_writer_write(w, path, 3);
    wk_gguf_writer_free(w);
    free(own);
    return st;
}

static void *gguf_map(const char *path, const uint8_t **t, size_t *n)
{
    wk_gguf *g = NULL;
    if (wk_gguf_open(&g, path) != WK_OK)
        return NULL;
    const int64_t i = wk_gguf_find_tensor(g, "t");
    wk_gguf_tensor_info ti;
    if (i < 0 || wk_gguf_tensor_info_get(&ti, g, i) != WK_OK) {
        wk_gguf_close(g);
        return NULL;
    }
    *t = wk_gguf_tensor_data(g, i);
    *n = (size_t)ti.nbytes;
    return g;
}

static void gguf_unmap(void *h) { wk_gguf_close(h); }

static wk_status st_write(const char *path, int v, size_t bytes, const void *data)
{
    uint8_t *own = data ? NULL : pattern_buf(v, bytes);
    wk_safetensors_writer *w = NULL;
    wk_status st = wk_safetensors_writer_new(&w);
    const int64_t dt[1] = {(int64_t)bytes}, ds[1] = {16};
    if (!st)
        st = wk_safetensors_writer_add_metadata(w, "version", v ? "B" : "A");
    if (!st)
        st = wk_safetensors_writer_add_tensor(w, "t", WK_DTYPE_U8, 1, dt, data ? data : own, bytes);
    if (!st)
        st = wk_safetensors_writer_add_tensor(w, "s", WK_DTYPE_F32, 1, ds, g_small, sizeof g_small);
    if (!st)
        st = wk_safetensors_writer_write(w, path);
    wk_safetensors_writer_free(w);
    free(own);
    return st;
}

static void *st_map(const char *path, const uint8_t **t, size_t *n)
{
    wk_safetensors *s = NULL;
    if (wk_safetensors_open(&s, path) != WK_OK)
        return NULL;
    const int64_t i = wk_safetensors_find_tensor(s, "t");
    wk_safetensors_tensor_info ti;
    if (i < 0 || wk_safetensors_tensor_info_get(&ti, s, i) != WK_OK) {
        wk_safetensors_close(s);
        return NULL;
    }
    *t = wk_safetensors_tensor_data(s, i);
    *n = (size_t)ti.nbytes;
    return s;
}

static void st_unmap(void *h) { wk_safetensors_close(h); }

static const fmt g_fmts[2] = {
    {"model.gguf", gguf_write, gguf_map, gguf_unmap},
    {"model.safetensors", st_write, st_map, st_unmap},
};

/* ---------------------------------------------------------------- files and directories */
typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static bytes slurp(const char *path)
{
    bytes b = {NULL, 0};
    b.p = testlib_read_file(path, &b.n);
    return b;
}

/* 1 if the file at path holds exactly want. */
static int same_file(const char *path, bytes want)
{
    bytes b = slurp(path);
    int same = b.p && b.n == want.n && memcmp(b.p, want.p, want.n) == 0;
    free(b.p);
    return same;
}

static int exists(const char *path)
{
    struct stat s;
    return lstat(path, &s) == 0;
}

/* Entries of dir other than the names in keep (NULL-terminated): counted, and removed when
 * remove_them (temporaries a killed writer left). */
static int strays(const char *dir, const char *const *keep, int remove_them)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int kept = 0;
        for (const char *const *k = keep; *k; k++)
            kept |= strcmp(e->d_name, *k) == 0;
        if (kept)
            continue;
        n++;
        if (remove_them) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    closedir(d);
    return n;
}

static void rm_tree(const char *dir)
{
    char cmd[512];
    if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) >= (int)sizeof cmd || system(cmd) != 0)
        printf("note: could not remove %s\n", dir);
}

typedef struct pathbuf {
    char s[256];
} pathbuf;

static pathbuf join(const char *dir, const char *name)
{
    pathbuf p;
    if (snprintf(p.s, sizeof p.s, "%s/%s", dir, name) >= (int)sizeof p.s)
        TEST_CHECK(0, "path too long: %s/%s", dir, name);
    return p;
}

/* testlib_dir/name, made */
static pathbuf subdir(const char *name)
{
    pathbuf p = join(testlib_dir, name);
    mkdir(p.s, 0777);
    return p;
}

/* The reference bytes of both versions of f with a "t" of n bytes, written with no faults. */
static void refs(const fmt *f, size_t n, bytes out[2])
{
    const char *p = testlib_tmp_path("ref.tmp");
    for (int v = 0; v < 2; v++) {
        TEST_EQ_STATUS(f->write(p, v, n, NULL), WK_OK);
        out[v] = slurp(p);
        TEST_CHECK(out[v].p && out[v].n > n, "%s: reference %d not read back", f->name, v);
    }
    unlink(p);
}

/* ---------------------------------------------------------------- 1. rules */
static void test_rules(const fmt *f)
{
    const pathbuf d_b = subdir("rules");
    const char *d = d_b.s;
    const pathbuf path_b = join(d, f->name);
    const char *path = path_b.s;
    bytes ref[2];
    refs(f, 4096, ref);
    const mode_t um = umask(022);
    umask(um);

    TEST_EQ_STATUS(f->write(path, 0, 4096, NULL), WK_OK);
    struct stat s;
    TEST_CHECK(stat(path, &s) == 0 && (s.st_mode & 0777) == (0666 & ~um),
               "%s: a new file has mode %o, want 0666 & ~umask = %o", f->name,
               (unsigned)(s.st_mode & 0777), (unsigned)(0666 & ~um));
    const char *keep[] = {f->name, NULL};
    TEST_EQ_INT(strays(d, keep, 0), 0);

    /* the old mode is kept, whatever the umask would give */
    const mode_t modes[3] = {0640, 0600, 0755};
    for (int k = 0; k < 3; k++) {
        chmod(path, modes[k]);
        TEST_EQ_STATUS(f->write(path, (k + 1) & 1, 4096, NULL), WK_OK);
        TEST_CHECK(stat(path, &s) == 0 && (s.st_mode & 07777) == modes[k],
                   "%s: replaced file has mode %o, want %o", f->name, (unsigned)(s.st_mode & 07777),
                   (unsigned)modes[k]);
        TEST_CHECK(same_file(path, ref[(k + 1) & 1]), "%s: mode %o: wrong bytes", f->name,
                   (unsigned)modes[k]);
    }
    /* the owner too, where the process may set it */
    if (geteuid() == 0) {
        TEST_CHECK(chown(path, 4321, 4322) == 0, "chown");
        TEST_EQ_STATUS(f->write(path, 0, 4096, NULL), WK_OK);
        TEST_CHECK(stat(path, &s) == 0 && s.st_uid == 4321 && s.st_gid == 4322,
                   "%s: owner %u:%u, want 4321:4322", f->name, (unsigned)s.st_uid, (unsigned)s.st_gid);
    } else {
        printf("skip: the owner of a replaced file (not root)\n");
    }

    /* a symbolic link (relative, through a second link) stays; its final target is replaced */
    const pathbuf real_b = subdir("rules/real");
    const char *real = real_b.s;
    const pathbuf target_b = join(real, f->name);
    const char *target = target_b.s;
    TEST_EQ_STATUS(f->write(target, 0, 4096, NULL), WK_OK);
    const pathbuf l1_b = join(d, "link1"), l2_b = join(d, "link2");
    const char *l1 = l1_b.s, *l2 = l2_b.s;
    char rel[128];
    snprintf(rel, sizeof rel, "real/%s", f->name);
    TEST_CHECK(symlink(rel, l1) == 0, "symlink %s", l1);
    TEST_CHECK(symlink("link1", l2) == 0, "symlink %s", l2);
    TEST_EQ_STATUS(f->write(l2, 1, 4096, NULL), WK_OK);
    TEST_CHECK(same_file(target, ref[1]), "%s: the file behind two links was not replaced", f->name);
    char buf[256];
    ssize_t n = readlink(l2, buf, sizeof buf - 1);
    TEST_CHECK(n == 5 && memcmp(buf, "link1", 5) == 0, "%s: link2 changed", f->name);
    n = readlink(l1, buf, sizeof buf - 1);
    TEST_CHECK(n == (ssize_t)strlen(rel) && memcmp(buf, rel, (size_t)n) == 0, "%s: link1 changed",
               f->name);
    const char *keep_real[] = {f->name, NULL};
    TEST_EQ_INT(strays(real, keep_real, 0), 0);

    /* a dangling link: the file it names is created */
    const pathbuf dang_b = join(d, "dangling");
    const char *dang = dang_b.s;
    TEST_CHECK(symlink("real/created.bin", dang) == 0, "symlink %s", dang);
    TEST_EQ_STATUS(f->write(dang, 0, 4096, NULL), WK_OK);
    TEST_CHECK(same_file(join(real, "created.bin").s, ref[0]), "%s: dangling link: file not created",
               f->name);
    struct stat ls;
    TEST_CHECK(lstat(dang, &ls) == 0 && S_ISLNK(ls.st_mode), "%s: the dangling link was replaced",
               f->name);

    /* refused: a directory, a missing directory, a loop of links; nothing changes */
    TEST_EQ_STATUS(f->write(real, 0, 4096, NULL), WK_ERR_IO);
    TEST_CHECK(strstr(wk_last_error(), "not a regular file") != NULL, "directory: '%s'",
               wk_last_error());
    TEST_EQ_STATUS(f->write(join(d, "no/such/dir/x").s, 0, 4096, NULL), WK_ERR_IO);
    const pathbuf la_b = join(d, "loop_a"), lb_b = join(d, "loop_b");
    const char *la = la_b.s, *lb = lb_b.s;
    TEST_CHECK(symlink("loop_b", la) == 0 && symlink("loop_a", lb) == 0, "symlinks");
    TEST_EQ_STATUS(f->write(la, 0, 4096, NULL), WK_ERR_IO);
    TEST_CHECK(strstr(wk_last_error(), "symbolic links") != NULL, "loop: '%s'", wk_last_error());
    const char *keep_all[] = {f->name, "real", "link1", "link2", "dangling", "loop_a", "loop_b", NULL};
    TEST_EQ_INT(strays(d, keep_all, 0), 0);
    const char *keep_real2[] = {f->name, "created.bin", NULL};
    TEST_EQ_INT(strays(real, keep_real2, 0), 0);

    /* a file rewritten from tensors mapped from itself (the old way truncated what it read) */
    const uint8_t *t = NULL;
    size_t tn = 0;
    void *h = f->map(path, &t, &tn);
    if (TEST_CHECK(h != NULL && tn == 4096, "%s: map", f->name)) {
        TEST_EQ_STATUS(f->write(path, 1, tn, t), WK_OK);
        int intact = 1;
        for (size_t i = 0; i < tn; i++)
            intact &= t[i] == pattern(0, i);
        TEST_CHECK(intact, "%s: the mapped old tensor changed while its file was replaced", f->name);
        f->unmap(h);
        const uint8_t *t2 = NULL;
        size_t n2 = 0;
        void *h2 = f->map(path, &t2, &n2);
        int ok = h2 && n2 == 4096;
        for (size_t i = 0; ok && i < n2; i++)
            ok = t2[i] == pattern(0, i);
        TEST_CHECK(ok, "%s: the file rewritten from its own map has the wrong tensor", f->name);
        if (h2)
            f->unmap(h2);
    }
    free(ref[0].p);
    free(ref[1].p);
    rm_tree(d);
}

/* ---------------------------------------------------------------- 2. I/O faults */
enum { K_OPEN, K_WRITE, K_SHORT, K_EINTR, K_SHORT_ENOSPC, K_FSYNC, K_FCHMOD, K_CLOSE, K_RENAME,
       K_COUNT };
static const char *const k_names[K_COUNT] = {"open", "write (ENOSPC)", "short write", "write (EINTR)",
                                             "short write then ENOSPC", "fsync", "fchmod", "close",
                                             "rename"};
static int g_kind = -1, g_at, g_calls, g_hit, g_enospc_next;

/* 1 when this call of a kind is the one to fail. */
static int hit(int kind)
{
    if (g_kind != kind || ++g_calls != g_at)
        return 0;
    g_hit = 1;
    return 1;
}

static int is_write_kind(int k)
{
    return k == K_WRITE || k == K_SHORT || k == K_EINTR || k == K_SHORT_ENOSPC;
}

static int f_open(const char *p, int fl, mode_t m)
{
    if (hit(K_OPEN)) {
        errno = EACCES;
        return -1;
    }
    return open(p, fl, m);
}

static ssize_t f_write(int fd, const void *p, size_t n)
{
    if (g_enospc_next) {
        g_enospc_next = 0;
        errno = ENOSPC;
        return -1;
    }
    if (is_write_kind(g_kind) && hit(g_kind)) {
        switch (g_kind) {
        case K_WRITE: errno = ENOSPC; return -1;
        case K_EINTR: errno = EINTR; return -1;
        case K_SHORT_ENOSPC: g_enospc_next = 1; return write(fd, p, n > 1 ? n / 2 : n);
        default: return write(fd, p, n > 1 ? n / 2 : n); /* K_SHORT */
        }
    }
    return write(fd, p, n);
}

static int f_fsync(int fd)
{
    if (hit(K_FSYNC)) {
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}

static int f_fchmod(int fd, mode_t m)
{
    if (hit(K_FCHMOD)) {
        errno = EPERM;
        return -1;
    }
    return fchmod(fd, m);
}

static int f_close(int fd)
{
    if (hit(K_CLOSE)) {
        close(fd); /* Linux frees the descriptor even when close reports an error */
        errno = EIO;
        return -1;
    }
    return close(fd);
}

static int f_rename(const char *a, const char *b)
{
    if (hit(K_RENAME)) {
        errno = EBUSY; /* a destination that is a mount point */
        return -1;
    }
    return rename(a, b);
}

static const wk_file_ops g_fault_ops = {f_open, f_write, f_fsync, f_fchmod, f_close, f_rename};

/* One write of version 1 over version 0 (or onto nothing: fresh) with the k-th call of kind
 * failing. Returns whether the fault was reached. */
static int one_fault(const fmt *f, const char *d, const bytes ref[2], size_t n, int kind, int k,
                     int fresh, int *fails)
{
    const pathbuf path_b = join(d, f->name);
    const char *path = path_b.s;
    if (fresh)
        unlink(path);
    else
        TEST_EQ_STATUS(f->write(path, 0, n, NULL), WK_OK);
    g_kind = kind;
    g_at = k;
    g_calls = g_hit = g_enospc_next = 0;
    wk_atomic_file_set_ops(&g_fault_ops);
    const wk_status st = f->write(path, 1, n, NULL);
    wk_atomic_file_set_ops(NULL);
    g_kind = -1;
    const char *what = k_names[kind];
    if (st == WK_OK) {
        TEST_CHECK(same_file(path, ref[1]), "%s, %s %d: WK_OK but not the new bytes", f->name, what, k);
    } else {
        (*fails)++;
        TEST_CHECK(st == WK_ERR_IO, "%s, %s %d: %s (want WK_OK or WK_ERR_IO)", f->name, what, k,
                   wk_status_string(st));
        if (fresh)
            TEST_CHECK(!exists(path), "%s, %s %d (no file before): a file was left", f->name, what, k);
        else
            TEST_CHECK(same_file(path, ref[0]), "%s, %s %d: the old file changed", f->name, what, k);
        if (kind == K_WRITE || kind == K_SHORT_ENOSPC)
            TEST_CHECK(strstr(wk_last_error(), strerror(ENOSPC)) && strstr(wk_last_error(), path),
                       "%s, %s %d: message '%s'", f->name, what, k, wk_last_error());
    }
    const char *keep[] = {f->name, NULL};
    TEST_CHECK(strays(d, keep, 1) == 0, "%s, %s %d: a temporary file was left", f->name, what, k);
    return g_hit;
}

static void test_io_faults(const fmt *f)
{
    const pathbuf d_b = subdir("faults");
    const char *d = d_b.s;
    /* 600 KB: the tensor is written past the 256 KiB buffer, the rest through it */
    const size_t n = 600 * 1024;
    bytes ref[2];
    refs(f, n, ref);
    for (int fresh = 0; fresh < 2; fresh++)
        for (int kind = 0; kind < K_COUNT; kind++) {
            if (fresh && kind == K_FCHMOD) /* a new file keeps the mode it was created with */
                continue;
            int fails = 0, k = 1;
            while (k < 1000 && one_fault(f, d, ref, n, kind, k, fresh, &fails))
                k++;
            TEST_CHECK(k > 1, "%s, %s: the fault was never reached", f->name, k_names[kind]);
            if (kind == K_SHORT || kind == K_EINTR)
                TEST_CHECK(fails == 0, "%s, %s: %d of %d writes failed (they must retry)", f->name,
                           k_names[kind], fails, k - 1);
            else
                TEST_CHECK(fails > 0, "%s, %s: no failure in %d tries", f->name, k_names[kind], k - 1);
            if (!fresh)
                printf("%s: %-24s %d calls failed in turn, %d writes failed\n", f->name,
                       k_names[kind], k - 1, fails);
        }
    free(ref[0].p);
    free(ref[1].p);
    rm_tree(d);
}

/* ---------------------------------------------------------------- 3. allocation failures */
static void test_alloc_faults(const fmt *f)
{
    const pathbuf d_b = subdir("alloc");
    const char *d = d_b.s;
    const pathbuf path_b = join(d, f->name);
    const char *path = path_b.s;
    bytes ref[2];
    refs(f, 4096, ref);
    int fails = 0, ok = 0;
    long k = 1;
    for (; k < 200 && !ok; k++) {
        TEST_EQ_STATUS(f->write(path, 0, 4096, NULL), WK_OK);
        const long live = atomic_load(&testlib_live);
        atomic_store(&testlib_allocs, 0);
        atomic_store(&testlib_fail_at, k);
        const wk_status st = f->write(path, 1, 4096, NULL);
        atomic_store(&testlib_fail_at, 0);
        ok = st == WK_OK;
        if (ok) {
            TEST_CHECK(same_file(path, ref[1]), "%s, allocation %ld: WK_OK but not the new bytes",
                       f->name, k);
        } else {
            fails++;
            TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY, "%s, allocation %ld failing: %s", f->name, k,
                       wk_status_string(st));
            TEST_CHECK(same_file(path, ref[0]), "%s, allocation %ld failing: the old file changed",
                       f->name, k);
        }
        TEST_CHECK(atomic_load(&testlib_live) == live, "%s, allocation %ld failing: %ld leaked",
                   f->name, k, atomic_load(&testlib_live) - live);
        const char *keep[] = {f->name, NULL};
        TEST_CHECK(strays(d, keep, 1) == 0, "%s, allocation %ld: a temporary file was left",
                   f->name, k);
    }
    TEST_CHECK(ok && fails > 0, "%s: %d allocation failures, success %d", f->name, fails, ok);
    printf("%s: %d allocations failed in turn\n", f->name, fails);
    free(ref[0].p);
    free(ref[1].p);
    rm_tree(d);
}

/* ---------------------------------------------------------------- 4. a full disk */
/* In a child with a mount namespace of its own: exit 77 when no tmpfs can be mounted, else the
 * number of failed checks. */
static int full_disk_child(const char *mnt)
{
    if (unshare(CLONE_NEWNS) != 0) {
        printf("skip: full disk: unshare(CLONE_NEWNS): %s (needs root)\n", strerror(errno));
        return 77;
    }
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0) {
        printf("skip: full disk: cannot mount a 1 MiB tmpfs on %s: %s\n", mnt, strerror(errno));
        return 77;
    }
    for (int fi = 0; fi < 2; fi++) {
        const fmt *f = &g_fmts[fi];
        const pathbuf path_b = join(mnt, f->name);
        const char *path = path_b.s;
        TEST_EQ_STATUS(f->write(path, 0, 200 * 1000, NULL), WK_OK);
        bytes old = slurp(path);
        TEST_EQ_STATUS(f->write(path, 1, 2 * 1000 * 1000, NULL), WK_ERR_IO);
        TEST_CHECK(strstr(wk_last_error(), strerror(ENOSPC)) != NULL, "%s: message '%s'", f->name,
                   wk_last_error());
        printf("%s, 2 MB onto a 1 MiB tmpfs holding 200 KB: %s\n", f->name, wk_last_error());
        TEST_CHECK(old.p && same_file(path, old), "%s: the 200 KB file did not survive", f->name);
        const char *keep[] = {f->name, NULL};
        TEST_CHECK(strays(mnt, keep, 1) == 0, "%s: a temporary file was left on the full disk", f->name);
        /* the space of the temporary is back: a smaller version fits */
        TEST_EQ_STATUS(f->write(path, 1, 300 * 1000, NULL), WK_OK);
        unlink(path);
        free(old.p);
    }
    return testlib_failed();
}

static void test_full_disk(void)
{
    const pathbuf mnt_b = subdir("tmpfs");
    const char *mnt = mnt_b.s;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        const int r = full_disk_child(mnt);
        fflush(stdout);
        _exit(r > 76 && r != 77 ? 76 : r);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
    if (code != 77)
        TEST_CHECK(code == 0, "full disk: %d checks failed in the child (status %d)", code, status);
    rmdir(mnt);
}

/* ---------------------------------------------------------------- 5. a reader keeps its map */
static int reader_child(const fmt *f, const char *path, size_t n, int ready, int done)
{
    const uint8_t *t = NULL;
    size_t tn = 0;
    void *h = f->map(path, &t, &tn);
    if (!h || tn != n)
        return 2;
    if (write(ready, "r", 1) != 1)
        return 2;
    int bad = 0, checks = 0;
    char last = 0;
    for (;;) {
        for (size_t i = 0; i < tn; i++)
            bad |= t[i] != pattern(0, i);
        checks++;
        struct pollfd p = {done, POLLIN, 0};
        if (poll(&p, 1, 0) == 1 && read(done, &last, 1) == 1)
            break;
    }
    for (size_t i = 0; i < tn; i++) /* once more, after the last replacement */
        bad |= t[i] != pattern(0, i);
    f->unmap(h);
    const uint8_t *t2 = NULL;
    size_t n2 = 0;
    void *h2 = f->map(path, &t2, &n2);
    int fresh_ok = h2 && n2 == n;
    for (size_t i = 0; fresh_ok && i < n2; i++)
        fresh_ok = t2[i] == pattern(last - '0', i);
    if (h2)
        f->unmap(h2);
    printf("%s: the reader checked its map %d times while the file was replaced\n", f->name, checks);
    return bad ? 3 : !fresh_ok ? 4 : 0;
}

static void test_reader(const fmt *f)
{
    const pathbuf d_b = subdir("reader");
    const char *d = d_b.s;
    const pathbuf path_b = join(d, f->name);
    const char *path = path_b.s;
    const size_t n = 1 << 20;
    TEST_EQ_STATUS(f->write(path, 0, n, NULL), WK_OK);
    int ready[2], done[2];
    if (!TEST_CHECK(pipe(ready) == 0 && pipe(done) == 0, "pipe"))
        return;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        const int r = reader_child(f, path, n, ready[1], done[0]);
        fflush(stdout);
        _exit(r);
    }
    char c = 0;
    TEST_CHECK(read(ready[0], &c, 1) == 1 && c == 'r', "%s: the reader did not start", f->name);
    int v = 0;
    for (int i = 0; i < 20; i++) {
        v = 1 - v;
        TEST_EQ_STATUS(f->write(path, v, n, NULL), WK_OK);
    }
    c = (char)('0' + v);
    TEST_CHECK(write(done[1], &c, 1) == 1, "pipe write");
    int status = 0;
    waitpid(pid, &status, 0);
    TEST_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "%s: reader: %s %d (2 setup, 3 its mapped bytes changed, 4 a fresh open saw the "
               "wrong version; a signal: SIGBUS is 7)", f->name,
               WIFEXITED(status) ? "exit" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    for (int k = 0; k < 2; k++) {
        close(ready[k]);
        close(done[k]);
    }
    rm_tree(d);
}

/* ---------------------------------------------------------------- 6. kill -9 */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_kill(const fmt *f)
{
    const pathbuf d_b = subdir("kill");
    const char *d = d_b.s;
    const pathbuf path_b = join(d, f->name);
    const char *path = path_b.s;
    const size_t n = 1 << 20;
    bytes ref[2];
    refs(f, n, ref);
    TEST_EQ_STATUS(f->write(path, 0, n, NULL), WK_OK);
    uint64_t rng = 0x36a70b1c5eedull; /* fixed seed: a failure reproduces */
    int iters = 0, mid = 0, seen[2] = {0, 0};
    const double t0 = now_s();
    while (iters < 300 && (iters < 20 || now_s() - t0 < 2.0)) {
        fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            for (int v = 1;; v = 1 - v)
                if (f->write(path, v, n, NULL) != WK_OK)
                    _exit(1);
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        usleep((useconds_t)(rng % 20000)); /* 0 to 20 ms: from before the first byte to several writes */
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        iters++;
        TEST_CHECK(WIFSIGNALED(status), "%s: the writer ended before the kill (status %d)", f->name,
                   status);
        const int a = same_file(path, ref[0]), b = same_file(path, ref[1]);
        seen[0] += a;
        seen[1] += b;
        if (!TEST_CHECK(a || b, "%s, kill %d: the file is neither version", f->name, iters))
            break;
        const char *keep[] = {f->name, NULL};
        mid += strays(d, keep, 1) > 0; /* killed between creating its temporary and the rename */
    }
    printf("%s: %d kills in %.1f s: the old version %d times, the new %d, killed mid-write %d "
           "times (its temporary removed here)\n", f->name, iters, now_s() - t0, seen[0], seen[1], mid);
    TEST_CHECK(mid > 0, "%s: no kill landed during a write: the test proved nothing", f->name);
    free(ref[0].p);
    free(ref[1].p);
    rm_tree(d);
}

int main(void)
{
    const wk_allocator a = {testlib_count_alloc, testlib_count_free, NULL};
    TEST_EQ_STATUS(wk_set_allocator(&a), WK_OK);
    snprintf(testlib_dir, sizeof testlib_dir, "/tmp/wick_atomic_XXXXXX");
    if (!mkdtemp(testlib_dir)) {
        TEST_CHECK(0, "mkdtemp failed");
        return testlib_summary();
    }
    for (int fi = 0; fi < 2; fi++) {
        test_rules(&g_fmts[fi]);
        test_io_faults(&g_fmts[fi]);
        test_alloc_faults(&g_fmts[fi]);
    }
    test_full_disk();
    for (int fi = 0; fi < 2; fi++) {
        test_reader(&g_fmts[fi]);
        test_kill(&g_fmts[fi]);
    }
    TEST_CHECK(atomic_load(&testlib_live) == 0, "%ld allocations still live at the end",
               atomic_load(&testlib_live));
    rm_tree(testlib_dir);
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    return testlib_summary();
}
