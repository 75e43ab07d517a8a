/* common.h: small helpers shared by the examples (public API only): option parsing for
 * --device and --dtype, and a checked-call macro that reports wick's error and exits. */
#ifndef WICK_EXAMPLES_COMMON_H
#define WICK_EXAMPLES_COMMON_H

#include "wick.h"

/* Exits the program with wick's message when a call fails (examples only: the library itself
 * never exits). */
#define EX_CHECK(call) ex_check((call), #call, __FILE__, __LINE__)
void ex_check(wk_status s, const char *what, const char *file, int line);

/* "f32", "f16", "bf16" -> *out; returns 0, or -1 for another name. */
int ex_parse_dtype(wk_dtype *out, const char *name);
/* Opens spec ("cpu", "cuda:0", "rocm:0", "auto") or exits with the reason. */
wk_device *ex_open_device(const char *spec);
/* If argv[*i] is `name VALUE` or `name=VALUE`, *value <- VALUE, advances *i, returns 1. */
int ex_option(const char *name, int argc, char **argv, int *i, const char **value);
/* Seconds on a monotonic clock. */
double ex_now(void);

#endif
