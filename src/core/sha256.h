/* sha256.h: SHA-256 (FIPS 180-4), for content keys and checksums (the run-time compiled kernel
 * cache, src/gpu/gpu_rtc_cache.c). Internal. Incremental: init, update any number of times,
 * final. */
#ifndef WK_SHA256_H
#define WK_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct wk_sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;        /* message length so far */
    unsigned char buf[64]; /* the partial block */
    size_t nbuf;
} wk_sha256_ctx;

void wk_sha256_init(wk_sha256_ctx *s);
void wk_sha256_update(wk_sha256_ctx *s, const void *data, size_t n);
void wk_sha256_final(wk_sha256_ctx *s, unsigned char digest[32]);
/* digest = SHA-256 of data[0, n). */
void wk_sha256(unsigned char digest[32], const void *data, size_t n);
/* hex (65 bytes): the digest as 64 lowercase hex digits and a NUL. */
void wk_sha256_hex(char hex[65], const unsigned char digest[32]);

#endif
