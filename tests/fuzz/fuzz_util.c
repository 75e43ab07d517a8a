/* fuzz_util.c: the helpers of fuzz.h (byte reader edges, the in-memory file, the capped
 * allocation hook). */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz.h"
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int64_t fz_i64_edgy(fz *f, int64_t small)
{
    const uint8_t k = fz_u8(f);
    if (k < 224)
        return small > 0 ? (int64_t)(k % (uint64_t)small) : 0;
    switch (k & 7) {
    case 0: return -1;
    case 1: return INT64_MIN;
    case 2: return INT64_MAX;
    case 3: return (int64_t)1 << 31;
    case 4: return (int64_t)1 << 32;
    case 5: return (int64_t)1 << 62;
    case 6: return -(int64_t)fz_u16(f);
    default: return (int64_t)fz_u64(f);
    }
}

const char *fuzz_memfile(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("wick-fuzz", MFD_CLOEXEC);
        if (fd < 0)
            return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0)
        return NULL;
    size_t done = 0;
    while (done < size) {
        const ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
        if (w <= 0)
            return NULL;
        done += (size_t)w;
    }
    return path;
}

static size_t g_cap;
static void *cap_alloc(size_t bytes, void *user)
{
    (void)user;
    if (bytes > g_cap)
        return NULL;
    void *p = NULL;
    return posix_memalign(&p, 16, bytes ? bytes : 1) == 0 ? p : NULL;
}
static void cap_free(void *p, void *user)
{
    (void)user;
    free(p);
}

void fuzz_cap_allocations(size_t cap)
{
    g_cap = cap;
    const wk_allocator a = {cap_alloc, cap_free, NULL};
    if (wk_set_allocator(&a) != WK_OK) {
        fprintf(stderr, "fuzz: wk_set_allocator: %s\n", wk_last_error());
        abort();
    }
}
