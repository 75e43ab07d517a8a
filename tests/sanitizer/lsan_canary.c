/* lsan_canary.c: leaks on purpose. Built only in the sanitizer build (WICK_SANITIZE), where the
 * ctest test lsan_canary passes only if LeakSanitizer reports this leak: proof that leak
 * detection is really on for every test of that build (a runner's ASAN_OPTIONS could turn it
 * off, or ptrace could stop it). */
#include <stdio.h>
#include <stdlib.h>

static void *volatile g_keep;

int main(void)
{
    g_keep = malloc(24);
    g_keep = NULL; /* the only pointer is gone: a definite leak */
    puts("lsan_canary: leaked 24 bytes on purpose");
    return 0;
}
