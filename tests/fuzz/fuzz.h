/* fuzz.h: what every libFuzzer harness in tests/fuzz/ shares. A harness is one fuzz_<name>.c that
 * defines LLVMFuzzerTestOneInput (and may define fuzz_init, run once before the first input);
 * cmake/fuzz.cmake builds it twice: with -fsanitize=fuzzer (clang; `make fuzz`) and as a replay
 * program (fuzz_main.c, any compiler) that runs the committed corpus tests/fuzz/corpus/<name>/
 * in ctest, so every seed and every past crash stays a regression test in every build.
 *
 * Adding a harness: write tests/fuzz/fuzz_<name>.c, put a few small seeds in
 * tests/fuzz/corpus/<name>/, add one line `wick_add_fuzzer(<name>)` to cmake/fuzz.cmake.
 *
 * FUZZ_CHECK(cond) marks a broken contract of the library (not of the input): it prints and
 * aborts, which libFuzzer records as a crash with the input that caused it. */
#ifndef WICK_FUZZ_H
#define WICK_FUZZ_H

#include "wick.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, ...)                                                               \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "FUZZ_CHECK failed %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, " [wk_last_error: %s]\n", wk_last_error());                    \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- reading fuzzer bytes: past the end every read returns 0 (inputs never run out) */
typedef struct fz {
    const uint8_t *p;
    size_t n, pos;
} fz;
static inline fz fz_make(const uint8_t *p, size_t n) { fz f = {p, n, 0}; return f; }
static inline uint8_t fz_u8(fz *f) { return f->pos < f->n ? f->p[f->pos++] : 0; }
static inline uint16_t fz_u16(fz *f) { return (uint16_t)(fz_u8(f) | (fz_u8(f) << 8)); }
static inline uint32_t fz_u32(fz *f) { return (uint32_t)fz_u16(f) | ((uint32_t)fz_u16(f) << 16); }
static inline uint64_t fz_u64(fz *f) { return (uint64_t)fz_u32(f) | ((uint64_t)fz_u32(f) << 32); }
/* A value in [0, n) (n > 0). */
static inline uint32_t fz_below(fz *f, uint32_t n) { return n > 256 ? fz_u32(f) % n : fz_u8(f) % n; }
/* Mostly small, sometimes an edge: 0..small-1, or one of -1, INT64_MIN, INT64_MAX, 2^31, 2^32,
 * 2^62, or a raw 64-bit value. */
int64_t fz_i64_edgy(fz *f, int64_t small);
static inline size_t fz_left(const fz *f) { return f->n - f->pos; }

/* ---- a file holding bytes (for readers that open a path): an in-memory file (memfd) reached
 * through /proc/self/fd; rewritten for every input. Returns the path, or NULL if it failed. */
const char *fuzz_memfile(const uint8_t *data, size_t size);

/* ---- the allocation hook of the harnesses: fails any single allocation above cap bytes (the
 * library must answer WK_ERR_OUT_OF_MEMORY), so fuzzer-chosen sizes cannot exhaust the machine.
 * Call once, before any wick object exists. */
void fuzz_cap_allocations(size_t cap);

#endif
