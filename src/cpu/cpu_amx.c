/* cpu_amx.c: whether this process may use Intel's AMX tiles. Linux keeps the tile data out of a
 * process's saved state until the process asks (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XFEATURE_XTILEDATA); a tile instruction before that faults. Asked once, on the first call;
 * the AMX products (cpu_qgemm_amx.c, cpu_fgemm_amx.c) check their own instruction sets on top. */
#include "cpu_qdot.h"
#include <pthread.h>
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int g_tiles;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void ask(void)
{
    /* CPUID leaf 7 EDX bit 24 (AMX-TILE); read directly because clang before 16 does not know
     * the name "amx-tile" in __builtin_cpu_supports */
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1u))
        return;
    unsigned long bits = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0 ||
        syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bits) != 0)
        return;
    g_tiles = (bits >> XFEATURE_XTILEDATA) & 1u;
}

int wk_cpu_amx_tiles(void)
{
    pthread_once(&g_once, ask);
    return g_tiles;
}
#else
int wk_cpu_amx_tiles(void) { return 0; }
#endif
