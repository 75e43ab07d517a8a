/* common.c: see common.h. */
#include "common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ex_check(wk_status s, const char *what, const char *file, int line)
{
    if (s == WK_OK)
        return;
    fprintf(stderr, "%s:%d: %s: %s: %s\n", file, line, what, wk_status_string(s), wk_last_error());
    exit(1);
}

int ex_parse_dtype(wk_dtype *out, const char *name)
{
    if (strcmp(name, "f32") == 0)
        *out = WK_DTYPE_F32;
    else if (strcmp(name, "f16") == 0)
        *out = WK_DTYPE_F16;
    else if (strcmp(name, "bf16") == 0)
        *out = WK_DTYPE_BF16;
    else
        return -1;
    return 0;
}

wk_device *ex_open_device(const char *spec)
{
    wk_device *dev = NULL;
    wk_status s = wk_device_open(&dev, spec);
    if (s) {
        fprintf(stderr, "cannot open device '%s': %s: %s\n", spec, wk_status_string(s), wk_last_error());
        exit(1);
    }
    return dev;
}

int ex_option(const char *name, int argc, char **argv, int *i, const char **value)
{
    size_t n = strlen(name);
    if (strcmp(argv[*i], name) == 0 && *i + 1 < argc) {
        *value = argv[++*i];
        return 1;
    }
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    return 0;
}

double ex_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
