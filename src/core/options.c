/* options.c: the process-wide switches of wk_set_option (include/wick.h). Each starts from its
 * environment variable, read once; later reads are relaxed atomic loads, so ops on any thread
 * may consult them at every call. */
#include "wk_core.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int options[WK_OPTION_COUNT];
static pthread_once_t options_once = PTHREAD_ONCE_INIT;

static int env_on(const char *name, const char *on_value)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    if (on_value)
        return strcmp(v, on_value) == 0;
    return strcmp(v, "0") != 0;
}

static void options_init(void)
{
    atomic_store(&options[WK_OPTION_MATMUL_TF32], env_on("WICK_MATMUL_TF32", NULL));
    atomic_store(&options[WK_OPTION_PORTABLE_GEMM], env_on("WICK_GEMM", "portable"));
    atomic_store(&options[WK_OPTION_DETERMINISTIC], env_on("WICK_DETERMINISTIC", NULL));
}

wk_status wk_set_option(wk_option opt, int value)
{
    pthread_once(&options_once, options_init);
    if ((unsigned)opt >= WK_OPTION_COUNT)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_set_option: unknown option %d", (int)opt);
    atomic_store_explicit(&options[opt], value != 0, memory_order_relaxed);
    return WK_OK;
}

int wk_get_option(wk_option opt)
{
    pthread_once(&options_once, options_init);
    if ((unsigned)opt >= WK_OPTION_COUNT)
        return 0;
    return atomic_load_explicit(&options[opt], memory_order_relaxed);
}
