/* gpu_rand.c: rand_uniform / rand_normal on the GPU through kernels/rand.cu (same stream as
 * src/cpu/cpu_rand.c: see src/core/philox.h). */
#include "gpu_ops.h"
#include <stdio.h>

wk_status wk_gpu_rand(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset)
{
    int64_t len = (int64_t)n;
    int normal = op == WK_OP_RAND_NORMAL;
    char name[32];
    snprintf(name, sizeof name, "rand_%s", wk_gpu_dtype_kname(dt));
    void *args[] = {&out, &len, &normal, &a, &b, &seed, &offset};
    return wk_gpu_run(dev, "rand", name, wk_gpu_blocks(dev, len), 1, 1, args);
}
