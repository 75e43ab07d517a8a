/* cpu_ops.h: the CPU backend's op entry points, one family per file (cpu_<family>.c), wired into
 * the vtable in cpu_backend.c. Contracts: src/core/backend.h. */
#ifndef WK_CPU_OPS_H
#define WK_CPU_OPS_H

#include "backend.h"

/* Parallel loops: OpenMP above this many elements. */
#define WK_CPU_PAR_THRESHOLD 32768

/* cpu_unary.c: plain unary ops, affine, powf, elu */
wk_status wk_cpu_unary(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx);
/* cpu_binary.c: binary arithmetic and comparisons */
wk_status wk_cpu_binary(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb);
/* cpu_where.c */
wk_status wk_cpu_where_cond(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf);
/* cpu_cast.c */
wk_status wk_cpu_to_dtype(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx);
/* cpu_copy.c: const_set, copy_strided, copy2d */
wk_status wk_cpu_const_set(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value);
wk_status wk_cpu_copy_strided(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx);
wk_status wk_cpu_copy2d(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset);
/* cpu_reduce.c */
wk_status wk_cpu_reduce(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, uint32_t dims_mask);

/* cpu_rand.c */
wk_status wk_cpu_rand(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset);

/* @marker:linalg */
/* @marker:image */
/* @marker:index */
/* @marker:fused */

#endif
