/* api_rand.c: front end of the counter-based random numbers (set_seed, rand_uniform, rand_normal). */
#include "api.h"
#include <math.h>

#define WK_DEFAULT_SEED 299792458u

wk_status wk_device_set_seed(wk_device *dev, uint64_t seed)
{
    if (!dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "set_seed: NULL device");
    __atomic_store_n(&dev->rng_seed, seed, __ATOMIC_SEQ_CST);
    __atomic_store_n(&dev->rng_offset, 0, __ATOMIC_SEQ_CST);
    return WK_OK;
}

static wk_status rand_run(wk_storage **out, wk_device *dev, wk_op op, wk_dtype dt, size_t n,
                          double a, double b)
{
    const char *name = wk_op_name(op);
    wk_status st;
    if (!out || !dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", name, out ? "device" : "output");
    if (!wk_dtype_valid(dt))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", name, (int)dt);
    if (!isfinite(a) || !isfinite(b) || (op == WK_OP_RAND_UNIFORM ? b < a : b < 0))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: bad parameters (%g, %g)", name, a, b);
    if ((st = wk_check_op(dev, op, dt)))
        return st;
    wk_storage *o;
    if ((st = wk_storage_new(&o, dev, dt, n, name)))
        return st;
    uint64_t seed = __atomic_load_n(&dev->rng_seed, __ATOMIC_SEQ_CST);
    uint64_t offset = __atomic_fetch_add(&dev->rng_offset, (uint64_t)n, __ATOMIC_SEQ_CST);
    if (n > 0)
        st = dev->be->rand(dev, op, dt, o->data, n, a, b, seed, offset);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_rand_uniform(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n, double lo,
                          double up)
{
    return rand_run(out, dev, WK_OP_RAND_UNIFORM, dtype, n, lo, up);
}

wk_status wk_rand_normal(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n, double mean,
                         double std)
{
    return rand_run(out, dev, WK_OP_RAND_NORMAL, dtype, n, mean, std);
}
