/* atomic_file.c: replacing a file atomically (atomic_file.h; the rules: docs/semantics.md,
 * "Files"). The temporary is created beside the target, so the rename never crosses a file
 * system; it is named ".<name>.wick-<pid>-<n>-<salt>" and created with O_EXCL (a name another
 * process holds is skipped). Writes go through a buffer of BUF_BYTES; pieces at least that large
 * are written directly. Every system call that can fail the write goes through g_ops, which tests
 * replace to fail each in turn. */
#include "atomic_file.h"
#include "wk_core.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES ((size_t)1 << 18)
#define MAX_LINKS 40  /* symbolic links followed, as Linux's path lookup allows */
#define MAX_BASE 200  /* bytes of the target's name kept in the temporary's (NAME_MAX is 255) */
#define MAX_TRIES 100 /* temporary names tried before giving up */

static int sys_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static ssize_t sys_write(int fd, const void *p, size_t n) { return write(fd, p, n); }
static int sys_fsync(int fd) { return fsync(fd); }
static int sys_fchmod(int fd, mode_t mode) { return fchmod(fd, mode); }
static int sys_close(int fd) { return close(fd); }
static int sys_rename(const char *from, const char *to) { return rename(from, to); }
static const wk_file_ops sys_ops = {sys_open, sys_write, sys_fsync, sys_fchmod, sys_close, sys_rename};
static wk_file_ops g_ops = {sys_open, sys_write, sys_fsync, sys_fchmod, sys_close, sys_rename};

void wk_atomic_file_set_ops(const wk_file_ops *o) { g_ops = o ? *o : sys_ops; }

struct wk_atomic_file {
    const char *op;
    char *target; /* the file replaced: the path with the links of its last component followed */
    char *tmp;    /* the temporary beside it */
    char *dir;    /* their directory, for its fsync */
    int fd;
    bool had_old; /* target existed at open: its mode and owner are in old */
    struct stat old;
    unsigned char *buf;
    size_t len;
    wk_status failed; /* the first failure (its message was set then), else WK_OK */
};

static char *dup_n(const char *s, size_t n)
{
    char *p = wk_malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* ---------------------------------------------------------------- the target */
/* next: where the link at `at` (whose text is link) leads: link itself if absolute, else link
 * relative to at's directory. */
static char *link_dest(const char *at, const char *link)
{
    const char *slash = strrchr(at, '/');
    if (link[0] == '/' || !slash)
        return dup_n(link, strlen(link));
    const size_t d = (size_t)(slash - at) + 1, n = strlen(link);
    char *p = wk_malloc(d + n + 1);
    if (p) {
        memcpy(p, at, d);
        memcpy(p + d, link, n + 1);
    }
    return p;
}

/* *out: path with the symbolic links of its last component followed; *exists and *st: whether
 * that file exists and its facts. Refuses an existing file that is not a regular file. */
static wk_status resolve(char **out, bool *exists, struct stat *st, const char *path, const char *op)
{
    char *cur = dup_n(path, strlen(path));
    if (!cur)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    for (int hops = 0;; hops++) {
        if (lstat(cur, st) != 0) {
            const int e = errno;
            if (e == ENOENT) { /* a new file (or a missing directory: creating it says so) */
                *exists = false;
                *out = cur;
                return WK_OK;
            }
            wk_status s = wk_err(WK_ERR_IO, "%s: cannot look at '%s': %s", op, cur, strerror(e));
            wk_free(cur);
            return s;
        }
        if (!S_ISLNK(st->st_mode)) {
            if (!S_ISREG(st->st_mode)) {
                wk_status s = wk_err(WK_ERR_IO, "%s: '%s' exists and is not a regular file (only "
                                     "regular files are replaced)", op, cur);
                wk_free(cur);
                return s;
            }
            *exists = true;
            *out = cur;
            return WK_OK;
        }
        if (hops == MAX_LINKS) {
            wk_status s = wk_err(WK_ERR_IO, "%s: '%s': more than %d symbolic links", op, path, MAX_LINKS);
            wk_free(cur);
            return s;
        }
        const size_t cap = (st->st_size > 0 ? (size_t)st->st_size : 4096) + 1;
        char *link = wk_malloc(cap);
        ssize_t n = link ? readlink(cur, link, cap) : -1;
        const int e = errno;
        char *next = NULL;
        if (link && n >= 0 && (size_t)n < cap) {
            link[n] = 0;
            next = link_dest(cur, link);
        }
        wk_free(link);
        if (!next) {
            wk_status s = !link || (n >= 0 && (size_t)n < cap)
                              ? wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of memory", op)
                              : wk_err(WK_ERR_IO, "%s: cannot read the link '%s': %s", op, cur,
                                       n < 0 ? strerror(e) : "it changed while read");
            wk_free(cur);
            return s;
        }
        wk_free(cur);
        cur = next;
    }
}

/* ---------------------------------------------------------------- open */
static atomic_uint g_serial;

/* f->tmp <- a name not taken yet, created (f->fd); f->dir <- the directory. */
static wk_status create_tmp(wk_atomic_file *f)
{
    const char *slash = strrchr(f->target, '/');
    const size_t dl = slash ? (size_t)(slash - f->target) + 1 : 0; /* directory, with its '/' */
    const char *base = f->target + dl;
    size_t bl = strlen(base);
    bl = bl > MAX_BASE ? MAX_BASE : bl;
    f->dir = dl == 0 ? dup_n(".", 1) : dup_n(f->target, dl > 1 ? dl - 1 : 1);
    const size_t cap = dl + 1 + bl + 64;
    f->tmp = wk_malloc(cap);
    if (!f->dir || !f->tmp)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of memory", f->op);
    const mode_t mode = f->had_old ? (f->old.st_mode & 0777) : 0666; /* umask applies */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int tries = 0;; tries++) {
        const unsigned salt = (unsigned)(ts.tv_nsec ^ (ts.tv_sec << 20)) * 2654435761u + (unsigned)tries;
        snprintf(f->tmp, cap, "%.*s.%.*s.wick-%ld-%u-%08x", (int)dl, f->target, (int)bl, base,
                 (long)getpid(), atomic_fetch_add(&g_serial, 1), salt);
        f->fd = g_ops.open_fn(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (f->fd >= 0)
            return WK_OK;
        const int e = errno;
        if (e != EEXIST || tries + 1 == MAX_TRIES)
            return wk_err(WK_ERR_IO, "%s: cannot create a temporary file in '%s' to replace '%s' "
                          "with: %s", f->op, f->dir, f->target, strerror(e));
    }
}

static void release(wk_atomic_file *f)
{
    wk_free(f->buf);
    wk_free(f->target);
    wk_free(f->tmp);
    wk_free(f->dir);
    wk_free(f);
}

wk_status wk_atomic_file_open(wk_atomic_file **out, const char *path, const char *op)
{
    if (!out || !path || !*path)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: %s path", op, path ? "empty" : "NULL");
    wk_atomic_file *f = wk_calloc(1, sizeof *f);
    if (!f)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    f->op = op;
    f->fd = -1;
    wk_status st = resolve(&f->target, &f->had_old, &f->old, path, op);
    if (st == WK_OK && !(f->buf = wk_malloc(BUF_BYTES)))
        st = wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    if (st == WK_OK)
        st = create_tmp(f);
    if (st != WK_OK) {
        release(f); /* no temporary exists: create_tmp's open is the last step */
        return st;
    }
    *out = f;
    return WK_OK;
}

/* ---------------------------------------------------------------- writing */
/* Records the first failure: errno e while `doing`. */
static wk_status fail(wk_atomic_file *f, int e, const char *doing)
{
    if (!f->failed)
        f->failed = wk_err(WK_ERR_IO, "%s: %s the temporary file '%s' for '%s': %s; %s", f->op,
                           doing, f->tmp, f->target, strerror(e),
                           f->had_old ? "the old file is unchanged" : "nothing was created");
    return f->failed;
}

static wk_status put(wk_atomic_file *f, const unsigned char *p, size_t n)
{
    while (n > 0) {
        const ssize_t k = g_ops.write_fn(f->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return fail(f, k < 0 ? errno : EIO, "writing");
        p += k;
        n -= (size_t)k;
    }
    return WK_OK;
}

static wk_status flush(wk_atomic_file *f)
{
    wk_status st = put(f, f->buf, f->len);
    f->len = 0;
    return st;
}

wk_status wk_atomic_file_write(wk_atomic_file *f, const void *p, size_t n)
{
    if (f->failed)
        return f->failed;
    if (n >= BUF_BYTES) {
        wk_status st = flush(f);
        return st ? st : put(f, p, n);
    }
    if (f->len + n > BUF_BYTES) {
        wk_status st = flush(f);
        if (st)
            return st;
    }
    if (n)
        memcpy(f->buf + f->len, p, n);
    f->len += n;
    return WK_OK;
}

wk_status wk_atomic_file_zeros(wk_atomic_file *f, uint64_t n)
{
    static const unsigned char zeros[4096];
    wk_status st = f->failed;
    while (n > 0 && !st) {
        const size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        st = wk_atomic_file_write(f, zeros, k);
        n -= k;
    }
    return st;
}

/* ---------------------------------------------------------------- finishing */
void wk_atomic_file_abort(wk_atomic_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        (void)g_ops.close_fn(f->fd); /* Linux frees the descriptor even when close fails */
    unlink(f->tmp);
    release(f);
}

/* The old file's owner (where the process may set it: root, or a group it belongs to) and
 * mode on the new one; chown first, as it may clear set-id bits. */
static wk_status keep_mode(wk_atomic_file *f)
{
    struct stat now;
    if (fstat(f->fd, &now) == 0 && (now.st_uid != f->old.st_uid || now.st_gid != f->old.st_gid) &&
        fchown(f->fd, f->old.st_uid, f->old.st_gid) != 0) {
        /* not allowed: the new file belongs to the writer, as any file it creates */
    }
    if (g_ops.fchmod_fn(f->fd, f->old.st_mode & 07777) != 0)
        return fail(f, errno, "setting the old file's mode on");
    return WK_OK;
}

/* After the rename: makes the new directory entry durable. Best effort (docs/semantics.md,
 * "Files"): some file systems refuse to sync a directory, and the rename is done either way. */
static void sync_dir(const wk_atomic_file *f)
{
    const int dfd = g_ops.open_fn(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd < 0)
        return;
    if (g_ops.fsync_fn(dfd) != 0) {
        /* the new file is in place; a crash of the machine may bring the old one back, whole */
    }
    (void)g_ops.close_fn(dfd);
}

wk_status wk_atomic_file_commit(wk_atomic_file *f)
{
    wk_status st = f->failed ? f->failed : flush(f);
    if (!st && g_ops.fsync_fn(f->fd) != 0)
        st = fail(f, errno, "syncing");
    if (!st && f->had_old)
        st = keep_mode(f);
    const int fd = f->fd;
    f->fd = -1;
    if (g_ops.close_fn(fd) != 0 && !st)
        st = fail(f, errno, "closing");
    if (!st && g_ops.rename_fn(f->tmp, f->target) != 0)
        st = fail(f, errno, "renaming");
    if (st) {
        wk_atomic_file_abort(f);
        return st;
    }
    sync_dir(f);
    release(f);
    return WK_OK;
}
