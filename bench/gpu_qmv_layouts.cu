/* gpu_qmv_layouts.cu: how close a one-row Q4_0 / Q8_0 matvec gets to reading W at the rate the
 * GPU reads plain memory, for docs/performance.md "Quantized matvec" (not a test; not built by
 * CMake: build and run on the device machine with
 *   nvcc -std=c++17 -O3 -arch=sm_90 -Ikernels -Isrc/core -o /tmp/qmvl bench/gpu_qmv_layouts.cu
 *   /tmp/qmvl
 * ). Cold weights: each launch reads the next of enough copies of W to exceed 400 MB; launches
 * back to back (no early launch); us per call and GB/s of W, for the decode shapes of the
 * 8B-shaped model, W (n, k) = 4096x4096, 6144x4096, 28672x4096, 4096x14336, 14336x4096:
 *   warp, warp2, warp4, chunks, chunks2  the library's kernels (kernels/qmv.cu, included here);
 *   lanes_G_U    the library's lane-group template with G lanes per row and U blocks per lane;
 *   w5_G_U       GGML's layout read as aligned 32-bit words (rows of an even number of blocks:
 *                block u starts on a 4-byte boundary when u is even, 2 bytes past one when odd,
 *                so BYTES / 4 + 1 words from the aligned address at or before it hold it whole:
 *                5 loads for Q4_0, 9 for Q8_0, where the library's kernels issue 9 / 17 16-bit
 *                loads);
 *   rqG_U        a row-split layout (a row's 16- or 32-byte quant runs, then its f16 scales: the
 *                same bytes per row), one 16-byte load per block;
 *   read_floor, read_flat   every 16-byte word of W read once (grid of 8 blocks per SM / one
 *                thread per word): the floor.
 * Each output is compared with warp's (relative 1e-4: summation order moves it by ~3e-4 at
 * most, reported as MISMATCH). */
#include "../kernels/qmv.cu"
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

// read floor: every 16-byte word once
__global__ void __launch_bounds__(256) rd_floor(const uint4 *p, int64_t nw, unsigned *sink)
{
    uint32_t a = 0;
    for (int64_t i = blockIdx.x * 256ll + threadIdx.x; i < nw; i += (int64_t)gridDim.x * 256) {
        uint4 v = p[i];
        a ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (a == 0x12345679u) sink[0] = a;
}

// the sum of each group of G lanes (one weight row) stored by its first lane
template <int G> __device__ void group_store(float acc, int t, bool live, float *out, int row)
{
#pragma unroll
    for (int o = (G < 32 ? G : 32) / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (G > 32) {
        __shared__ float red[8];
        if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = acc;
        __syncthreads();
        if (t == 0) { float s = 0; for (int q = 0; q < G / 32; q++) s += red[threadIdx.x / 32 + q]; acc = s; }
    }
    if (t == 0 && live) out[row] = acc;
}

// row-split layout: each row its quant runs (16 bytes per block for Q4_0, 32 for Q8_0), then its f16 scales
template <int Q, int G, int U>
__global__ void __launch_bounds__(256) rq(const uint4 *qs, const uint32_t *xq,
                                          const float *xd, float *out, int n, int k)
{
    const int QW = Q == WK_Q4_0 ? 1 : 2; // uint4 per sub-block
    const int nsub = k / 32;
    const int g = threadIdx.x / G, t = threadIdx.x % G;
    int row = blockIdx.x * (256 / G) + g;
    const bool live = row < n;
    if (!live) row = n - 1;
    // per-row split layout: the row's quants, then its scales (same row bytes as GGML's)
    const uint4 *qr = (const uint4 *)((const uint8_t *)qs + (int64_t)row * nsub * (QW * 16 + 2));
    const uint16_t *sr = (const uint16_t *)(qr + nsub * QW);
    float acc = 0.0f;
    for (int u0 = t; u0 < nsub; u0 += U * G) {
        uint4 wq[U][QW];
        uint32_t ws[U];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int u = u0 + j * G < nsub ? u0 + j * G : u0;
#pragma unroll
            for (int q = 0; q < QW; q++) wq[j][q] = qr[(int64_t)u * QW + q];
            ws[j] = sr[u];
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int u = u0 + j * G;
            if (u >= nsub) break;
            const wk_u32x4 *xp = (const wk_u32x4 *)(xq + (int64_t)u * 8);
            const wk_u32x4 a = xp[0], b = xp[1];
            const uint32_t xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
            uint32_t w[8];
            if (Q == WK_Q4_0) {
                const uint32_t v[4] = {wq[j][0].x, wq[j][0].y, wq[j][0].z, wq[j][0].w};
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    w[i] = wk_qsubb(v[i] & 0x0F0F0F0Fu, 0x08080808u);
                    w[4 + i] = wk_qsubb((v[i] >> 4) & 0x0F0F0F0Fu, 0x08080808u);
                }
            } else {
                const uint32_t v[8] = {wq[j][0].x, wq[j][0].y, wq[j][0].z, wq[j][0].w,
                                       wq[j][QW - 1].x, wq[j][QW - 1].y, wq[j][QW - 1].z, wq[j][QW - 1].w};
#pragma unroll
                for (int i = 0; i < 8; i++) w[i] = v[i];
            }
            int is = 0;
#pragma unroll
            for (int i = 0; i < 8; i++) is = WK_DP4A(w[i], xv[i], is);
            acc += xd[u] * (wk_cvt_f16_f32(ws[j]) * (float)is);
        }
    }
    group_store<G>(acc, t, live, out, row);
}


// current GGML layout, rows 4-byte aligned (k % 64 == 0): BY/4 + 1 aligned 32-bit loads per block
template <int Q, int G, int U>
__global__ void __launch_bounds__(256) w5(const uint8_t *w, const uint32_t *xq, const float *xd, float *out, int n, int k)
{
    const int BY = Q == WK_Q4_0 ? 18 : 34, NW = BY / 4 + 1, NQ = NW - 1;
    const int nsub = k / 32;
    const int g = threadIdx.x / G, t = threadIdx.x % G;
    int row = blockIdx.x * (256 / G) + g;
    const bool live = row < n;
    if (!live) row = n - 1;
    const uint8_t *wr = w + (int64_t)row * nsub * BY;
    float acc = 0.0f;
    for (int u0 = t; u0 < nsub; u0 += U * G) {
        uint32_t wv[U][NW];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int u = u0 + j * G < nsub ? u0 + j * G : u0;
            const uint32_t *p = (const uint32_t *)(wr + BY * u - (u & 1) * 2);
#pragma unroll
            for (int i = 0; i < NW; i++) wv[j][i] = p[i];
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int u = u0 + j * G;
            if (u >= nsub) break;
            uint32_t q[NQ], d;
            if (u & 1) {
                d = wv[j][0] >> 16;
#pragma unroll
                for (int i = 0; i < NQ; i++) q[i] = wv[j][1 + i];
            } else {
                d = wv[j][0] & 0xFFFFu;
#pragma unroll
                for (int i = 0; i < NQ; i++) q[i] = __funnelshift_r(wv[j][i], wv[j][i + 1], 16);
            }
            const wk_u32x4 *xp = (const wk_u32x4 *)(xq + (int64_t)u * 8);
            const wk_u32x4 a = xp[0], b = xp[1];
            const uint32_t xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
            int is = 0;
            if (Q == WK_Q4_0) {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    is = WK_DP4A(wk_qsubb(q[i] & 0x0F0F0F0Fu, 0x08080808u), xv[i], is);
                    is = WK_DP4A(wk_qsubb((q[i] >> 4) & 0x0F0F0F0Fu, 0x08080808u), xv[4 + i], is);
                }
            } else {
#pragma unroll
                for (int i = 0; i < NQ; i++) is = WK_DP4A(q[i], xv[i % 8], is);
            }
            acc += xd[u] * (wk_cvt_f16_f32(d) * (float)is);
        }
    }
    group_store<G>(acc, t, live, out, row);
}

// the library's lane-group template with other U / G
template <int Q, int G, int U>
__global__ void __launch_bounds__(256) lanesU(const uint8_t *w, const uint32_t *xq, const float *xd, const uint32_t *xs, void *out, int dt, int64_t n, int64_t k, int rows)
{
    wk_qmv_lanes<Q, 1, 1, G, 1, U, false>(w, xq, xd, xs, out, dt, n, k, rows);
}

// the library's words kernel body without its launch prologue (prefetch, grid wait)
template <int Q, int G>
__global__ void __launch_bounds__(256) wbare(const uint8_t *w, const uint32_t *xq, const float *xd, void *out, int dt, int64_t n, int64_t k)
{
    wk_qmv_words<Q, G>(w, xq, xd, out, dt, n, k);
}

typedef void (*lanes_fn)(const uint8_t *, const uint32_t *, const float *, const uint32_t *, void *, int, int64_t, int64_t, int);

static float ms_of(cudaEvent_t a, cudaEvent_t b) { float m; cudaEventElapsedTime(&m, a, b); return m; }

int main(void)
{
    const int shapes[][2] = {{4096, 4096}, {6144, 4096}, {28672, 4096}, {4096, 14336}, {14336, 4096}};
    const int types[2] = {WK_Q4_0, WK_Q8_0};
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    unsigned *sink; CK(cudaMalloc(&sink, 4));
    const int REPS = 100;
    for (int ti = 0; ti < 2; ti++) {
        const int Q = types[ti];
        const int BY = Q == WK_Q4_0 ? 18 : 34, QB = Q == WK_Q4_0 ? 16 : 32;
        for (auto &sh : shapes) {
            const int n = sh[0], k = sh[1], nsub = k / 32;
            const size_t wb = (size_t)n * nsub * BY;
            const int C = (int)(400e6 / wb) + 1; // copies: > 400 MB rotated
            // host data
            std::vector<uint8_t> hw(wb);
            uint32_t s = 12345u;
            for (size_t i = 0; i < wb; i++) { s = s * 1664525u + 1013904223u; hw[i] = (uint8_t)(s >> 24); }
            for (size_t b = 0; b < (size_t)n * nsub; b++) { // scales sane f16 in [2^-8, 2^-7)
                uint16_t h = (uint16_t)(0x1C00 | (hw[b * BY + 2] << 2));
                memcpy(&hw[b * BY], &h, 2);
            }
            std::vector<uint8_t> hq(wb);
            for (size_t r = 0; r < (size_t)n; r++)
                for (size_t b = 0; b < (size_t)nsub; b++) {
                    uint8_t *rp = &hq[r * nsub * BY];
                    memcpy(rp + nsub * QB + 2 * b, &hw[(r * nsub + b) * BY], 2);
                    memcpy(rp + b * QB, &hw[(r * nsub + b) * BY + 2], QB);
                }
            std::vector<uint8_t> hx(k); std::vector<float> hd(nsub); std::vector<uint32_t> hxs(nsub, 0);
            for (int i = 0; i < k; i++) { s = s * 1664525u + 1013904223u; hx[i] = (uint8_t)((int)(s >> 24) % 255 - 127); }
            for (int i = 0; i < nsub; i++) hd[i] = 0.01f * (1 + i % 7);
            uint8_t *dw, *dq; uint32_t *dx, *dxs; float *dd, *out;
            CK(cudaMalloc(&dw, wb * C)); CK(cudaMalloc(&dq, hq.size() * C));
            for (int c = 0; c < C; c++) {
                CK(cudaMemcpy(dw + wb * c, hw.data(), wb, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(dq + hq.size() * c, hq.data(), hq.size(), cudaMemcpyHostToDevice));
            }
            CK(cudaMalloc(&dx, k)); CK(cudaMalloc(&dd, nsub * 4)); CK(cudaMalloc(&dxs, nsub * 4)); CK(cudaMalloc(&out, n * 4 * 8));
            CK(cudaMemcpy(dx, hx.data(), k, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dd, hd.data(), nsub * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dxs, hxs.data(), nsub * 4, cudaMemcpyHostToDevice));
            std::vector<float> ref(n), got(n);
            auto check = [&](const char *name) {
                CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost));
                double md = 0; for (int i = 0; i < n; i++) { double d = fabs(got[i] - ref[i]) / (fabs(ref[i]) + 1e-3); if (d > md) md = d; }
                if (md > 1e-4) printf("  MISMATCH %s: max rel %g\n", name, md);
            };
            auto timeit = [&](const char *name, auto launch) {
                launch(0); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                cudaEventRecord(e0);
                for (int r = 0; r < REPS; r++) launch(r % C);
                cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
                const double us = ms_of(e0, e1) * 1000.0 / REPS;
                printf("%s %dx%d %-14s %7.2f us  %6.0f GB/s\n", Q == WK_Q4_0 ? "q4_0" : "q8_0", n, k, name, us, wb / us / 1e3);
            };
            // baseline kernels
            int dti = WK_DT_F32; int64_t n64 = n, k64 = k; int rows = 1;
            struct { const char *name; lanes_fn f; int rpb; } base[] = {
                {"warp", Q == WK_Q4_0 ? (lanes_fn)qmv1_warp_q4_0 : (lanes_fn)qmv1_warp_q8_0, 8},
                {"warp2", Q == WK_Q4_0 ? (lanes_fn)qmv1_warp2_q4_0 : (lanes_fn)qmv1_warp2_q8_0, 4},
                {"warp4", Q == WK_Q4_0 ? (lanes_fn)qmv1_warp4_q4_0 : (lanes_fn)qmv1_warp4_q8_0, 2},
                {"words", Q == WK_Q4_0 ? (lanes_fn)qmv1_words_q4_0 : (lanes_fn)qmv1_words_q8_0, 8},
                {"words4", Q == WK_Q4_0 ? (lanes_fn)qmv1_words4_q4_0 : (lanes_fn)qmv1_words4_q8_0, 2},
            };
            for (int bi = 0; bi < 5; bi++) {
                auto L = [&](int c) { base[bi].f<<<(n + base[bi].rpb - 1) / base[bi].rpb, 256>>>(dw + wb * c, dx, dd, dxs, out, dti, n64, k64, rows); };
                L(0); CK(cudaDeviceSynchronize());
                if (bi == 0) CK(cudaMemcpy(ref.data(), out, n * 4, cudaMemcpyDeviceToHost));
                else check(base[bi].name);
                timeit(base[bi].name, L);
            }
            {   // chunks (P = 1 and 2), activations given
                const int CV = 8 * BY / 16;
                const size_t shm = 16 * ((size_t)(k / 256) * 21 + 2 * 256 * (size_t)CV);
                const int sms = 132;
                for (int P = 1; P <= 2; P++) {
                    if (P == 2 && k > 4096) continue;
                    void (*f)(const uint8_t *, const void *, const uint32_t *, void *, int, int64_t, int64_t) =
                        Q == WK_Q4_0 ? (P == 1 ? qmv1_chunks_q4_0 : qmv1_chunks2_q4_0) : (P == 1 ? qmv1_chunks_q8_0 : qmv1_chunks2_q8_0);
                    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
                    int per = (int)(227 * 1024 / shm); per = per < 1 ? 1 : per > 2 ? 2 : per;
                    int gx = ((P == 2 ? (n + 1) / 2 : n) + 7) / 8; if (gx > sms * per) gx = sms * per;
                    // xa in wick layout: codes, scales, half sums
                    static uint32_t *xa = nullptr; static int xak = 0;
                    if (xak != k) { if (xa) cudaFree(xa); CK(cudaMalloc(&xa, k + nsub * 8)); xak = k; }
                    CK(cudaMemcpy(xa, dx, k, cudaMemcpyDeviceToDevice)); CK(cudaMemcpy((uint8_t *)xa + k, dd, nsub * 4, cudaMemcpyDeviceToDevice));
                    CK(cudaMemcpy((uint8_t *)xa + k + nsub * 4, dxs, nsub * 4, cudaMemcpyDeviceToDevice));
                    auto L = [&](int c) { f<<<gx, 256, shm>>>(dw + wb * c, nullptr, xa, out, dti, n64, k64); };
                    L(0); check(P == 1 ? "chunks" : "chunks2");
                    timeit(P == 1 ? "chunks" : "chunks2", L);
                }
            }
#define RQ(G, U) { auto L2 = [&](int c) { (Q == WK_Q4_0 ? rq<WK_Q4_0, G, U> : rq<WK_Q8_0, G, U>)<<<(n + 256 / G - 1) / (256 / G), 256>>>((const uint4 *)(dq + hq.size() * c), dx, dd, out, n, k); }; L2(0); check("rq" #G "_" #U); timeit("rq" #G "_" #U, L2); }
#define W5(G, U) { auto L2 = [&](int c) { (Q == WK_Q4_0 ? w5<WK_Q4_0, G, U> : w5<WK_Q8_0, G, U>)<<<(n + 256 / G - 1) / (256 / G), 256>>>(dw + wb * c, dx, dd, out, n, k); }; L2(0); check("w5_" #G "_" #U); timeit("w5_" #G "_" #U, L2); }
            W5(32, 1) W5(32, 2) W5(32, 4) W5(64, 2) W5(128, 1) W5(16, 4)
#define WB(G) { auto L2 = [&](int c) { (Q == WK_Q4_0 ? wbare<WK_Q4_0, G> : wbare<WK_Q8_0, G>)<<<(n + 256 / G - 1) / (256 / G), 256>>>(dw + wb * c, dx, dd, out, dti, n64, k64); }; L2(0); check("wbare_" #G); timeit("wbare_" #G, L2); }
            WB(32) WB(128)
#define LU(G, U) { auto L2 = [&](int c) { (Q == WK_Q4_0 ? lanesU<WK_Q4_0, G, U> : lanesU<WK_Q8_0, G, U>)<<<(n + 256 / G - 1) / (256 / G), 256>>>(dw + wb * c, dx, dd, dxs, out, dti, n64, k64, rows); }; L2(0); check("lanes_" #G "_" #U); timeit("lanes_" #G "_" #U, L2); }
            LU(32, 4) LU(64, 2) LU(16, 4)
            RQ(32, 1) RQ(32, 2) RQ(32, 4) RQ(64, 1) RQ(64, 2) RQ(128, 1) RQ(16, 2) RQ(16, 4) RQ(8, 4)
            {
                auto L = [&](int c) { rd_floor<<<132 * 8, 256>>>((const uint4 *)(dw + wb * c), (int64_t)(wb / 16), sink); };
                timeit("read_floor", L);
                auto L2 = [&](int c) { rd_floor<<<(int)((wb / 16 + 255) / 256), 256>>>((const uint4 *)(dw + wb * c), (int64_t)(wb / 16), sink); };
                timeit("read_flat", L2);
            }
            cudaFree(dw); cudaFree(dq); cudaFree(dx); cudaFree(dd); cudaFree(dxs); cudaFree(out);
        }
    }
    return 0;
}
