/* bench.h: what the GPU benchmark programs share: CHECK (a failed wick call ends the program with
 * its message: a benchmark that cannot run must not print numbers) and a monotonic clock. */
#ifndef WK_BENCH_H
#define WK_BENCH_H

#include "wick.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        wk_status st_ = (x);                                                                  \
        if (st_ != WK_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, wk_status_string(st_),   \
                    wk_last_error());                                                         \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
