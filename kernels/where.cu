/* where.cu: where_cond, out = cond != 0 ? t : f (module "where").
 *
 * Values are moved as raw bits, so kernels depend only on the condition type (u8, u32, i64:
 * 1, 4 or 8 bytes) and the value size (1, 2, 4, 8 bytes):
 *   where_c<cs>_v<vs>(n, c, t, f, y)       all three contiguous
 *   where_s_c<cs>_v<vs>(n, L, c, t, f, y)  any layouts; L: joint collapsed layout of c, t, f
 * y is contiguous; pointers already include the layout offsets. */
#include "gpu.h"

/* Contiguous: 16-byte accesses of the wider type when every pointer allows it. */
template <int CS, int VS>
WK_DEV void wk_where_contig(int64_t n, const void *c, const void *t, const void *f, void *y)
{
    typedef typename wk_bits<CS>::T CT;
    typedef typename wk_bits<VS>::T VT;
    const int N = 16 / WK_MAX2(CS, VS);
    const CT *cs = (const CT *)c;
    const VT *ts = (const VT *)t, *fs = (const VT *)f;
    VT *ys = (VT *)y;
    const int64_t t0 = wk_tid(), nt = wk_nthreads();
    int64_t done = 0;
    const uintptr_t vals = (uintptr_t)t | (uintptr_t)f | (uintptr_t)y;
    if ((uintptr_t)c % (N * CS) == 0 && vals % (N * VS) == 0) {
        const int64_t nv = n / N;
        for (int64_t v = t0; v < nv; v += nt) {
            wk_pack<CT, N> pc;
            wk_pack<VT, N> pt, pf, py;
            pc.raw = ((const wk_pack<CT, N> *)cs)[v].raw;
            pt.raw = ((const wk_pack<VT, N> *)ts)[v].raw;
            pf.raw = ((const wk_pack<VT, N> *)fs)[v].raw;
#pragma unroll
            for (int k = 0; k < N; k++)
                py.v[k] = pc.v[k] != 0 ? pt.v[k] : pf.v[k];
            ((wk_pack<VT, N> *)ys)[v].raw = py.raw;
        }
        done = nv * N;
    }
    for (int64_t i = done + t0; i < n; i += nt)
        ys[i] = cs[i] != 0 ? ts[i] : fs[i];
}

/* Any layouts: by rows with vector accesses when the inner dim is contiguous in all three
 * (a broadcast row or column block), else the generic per-element loop. */
template <int CS, int VS> struct wk_where_row {
    typedef typename wk_bits<CS>::T CT;
    typedef typename wk_bits<VS>::T VT;
    enum { V = 16 / WK_MAX2(CS, VS) };
    const CT *c;
    const VT *t, *f;
    VT *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off, int cnt) const
    {
        const CT *pc = c + off[0];
        const VT *pt = t + off[1], *pf = f + off[2];
        VT *py = y + i;
        if (cnt == V && (uintptr_t)pc % (V * CS) == 0 &&
            ((uintptr_t)pt | (uintptr_t)pf | (uintptr_t)py) % (V * VS) == 0) {
            wk_pack<CT, V> qc;
            wk_pack<VT, V> qt, qf, qy;
            qc.raw = ((const wk_pack<CT, V> *)pc)->raw;
            qt.raw = ((const wk_pack<VT, V> *)pt)->raw;
            qf.raw = ((const wk_pack<VT, V> *)pf)->raw;
#pragma unroll
            for (int k = 0; k < V; k++)
                qy.v[k] = qc.v[k] != 0 ? qt.v[k] : qf.v[k];
            ((wk_pack<VT, V> *)py)->raw = qy.raw;
        } else {
            for (int k = 0; k < cnt; k++)
                py[k] = pc[k] != 0 ? pt[k] : pf[k];
        }
    }
};

template <int CS, int VS>
WK_DEV void wk_where_strided(int64_t n, const wk_klay<3> &L, const void *c, const void *t,
                             const void *f, void *y)
{
    typedef typename wk_bits<CS>::T CT;
    typedef typename wk_bits<VS>::T VT;
    const CT *cs = (const CT *)c;
    const VT *ts = (const VT *)t, *fs = (const VT *)f;
    VT *ys = (VT *)y;
    if (wk_inner_contig(L)) {
        wk_where_row<CS, VS> r = {cs, ts, fs, ys};
        wk_rows<3, wk_where_row<CS, VS>::V>(n, L, r);
        return;
    }
    for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
        int64_t off[3];
        wk_koff(L, i, off);
        ys[i] = cs[off[0]] != 0 ? ts[off[1]] : fs[off[2]];
    }
}

#define WK_WHERE(CS, VS)                                                                       \
    WK_KERNEL where_c##CS##_v##VS(int64_t n, const void *c, const void *t, const void *f,      \
                                  void *y)                                                     \
    {                                                                                          \
        wk_where_contig<CS, VS>(n, c, t, f, y);                                                \
    }                                                                                          \
    WK_KERNEL where_s_c##CS##_v##VS(int64_t n, wk_klay<3> L, const void *c, const void *t,     \
                                    const void *f, void *y)                                    \
    {                                                                                          \
        wk_where_strided<CS, VS>(n, L, c, t, f, y);                                            \
    }
#define WK_WHERE_VALUES(CS) WK_WHERE(CS, 1) WK_WHERE(CS, 2) WK_WHERE(CS, 4) WK_WHERE(CS, 8)
WK_WHERE_VALUES(1)
WK_WHERE_VALUES(4)
WK_WHERE_VALUES(8)
