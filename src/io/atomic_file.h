/* atomic_file.h: a file written whole or not at all (docs/semantics.md, "Files"). Internal to
 * src/io and its tests.
 *
 *   wk_atomic_file *f;
 *   wk_status st = wk_atomic_file_open(&f, path, "wk_gguf_writer_write");
 *   ... wk_atomic_file_write(f, bytes, n) ...   (the first failure is kept; later writes no-op)
 *   st = wk_atomic_file_commit(f);              (or wk_atomic_file_abort(f) on a failure of yours)
 *
 * The bytes go to a new temporary file beside the destination's target (symbolic links in the
 * last component are followed: the file they lead to is replaced, the links stay); commit
 * flushes it, fsyncs it, gives it the old file's mode (and owner where the process may), renames
 * it over the target and fsyncs the directory. Until the rename the old file is untouched; on any
 * failure the temporary is removed. A reader sees the old file or the new one, never a mix. */
#ifndef WK_ATOMIC_FILE_H
#define WK_ATOMIC_FILE_H

#include "wick.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct wk_atomic_file wk_atomic_file;

/* *out: the temporary file for path, created. op names the calling function in messages.
 * WK_ERR_IO (the target is not a regular file, the directory is not writable, ...),
 * WK_ERR_OUT_OF_MEMORY; nothing is left behind on failure. */
wk_status wk_atomic_file_open(wk_atomic_file **out, const char *path, const char *op);
/* Appends n bytes (buffered). After a failure every later write returns that failure. */
wk_status wk_atomic_file_write(wk_atomic_file *f, const void *p, size_t n);
/* Appends n zero bytes. */
wk_status wk_atomic_file_zeros(wk_atomic_file *f, uint64_t n);
/* Finishes: flush, fsync, mode, close, rename over the target, directory fsync (best effort:
 * the rename has happened when it runs, see docs/semantics.md). Frees f in every case; on
 * failure (including an earlier failed write) the temporary is removed and the status of the
 * first failure returned. */
wk_status wk_atomic_file_commit(wk_atomic_file *f);
/* Removes the temporary and frees f. NULL is a no-op. */
void wk_atomic_file_abort(wk_atomic_file *f);

/* ---- test hook: the system calls used, replaceable so that tests can fail any one of them
 * (tests/test_atomic_file.c). NULL restores the system's. Only while no write is running. */
typedef struct wk_file_ops {
    int (*open_fn)(const char *path, int flags, mode_t mode); /* the temporary and the directory */
    ssize_t (*write_fn)(int fd, const void *p, size_t n);
    int (*fsync_fn)(int fd);                                  /* the file, then the directory */
    int (*fchmod_fn)(int fd, mode_t mode);
    int (*close_fn)(int fd);
    int (*rename_fn)(const char *from, const char *to);
} wk_file_ops;
void wk_atomic_file_set_ops(const wk_file_ops *ops);

#endif
