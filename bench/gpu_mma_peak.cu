/* gpu_mma_peak.cu: the rate of kernels/gpu.h's 16 x 8 x 16 matrix-unit product (wk_mma_16816:
 * mma.sync m16n8k16, f32 accumulation) on one NVIDIA GPU, with nothing loaded: the ceiling that
 * the portable GEMM (kernels/gemm.h gemm_c*, which issues only this instruction) is measured
 * against in docs/performance.md, beside cuBLAS (whose sm_90 kernels use Hopper's wgmma, which
 * has no portable twin). A benchmark, not a test, and not part of the build:
 *   nvcc -std=c++17 -O3 -arch=sm_90 -Ikernels -Isrc/core bench/gpu_mma_peak.cu -o /tmp/mma_peak
 *   /tmp/mma_peak
 * Prints TFLOP/s (2 * 16 * 8 * 16 per product) for bf16 and f16 operands at 1, 2 and 4 blocks of
 * 8 warps per SM, each warp with CH independent accumulator chains. */
#include "gpu.h"
#include <cuda_runtime.h>
#include <stdio.h>

#define CH 8 /* independent products per warp per step */

template <int BF> __global__ void __launch_bounds__(256) peak(float *out, int iters, uint32_t seed)
{
    uint32_t a[4], b[2];
    for (int i = 0; i < 4; i++)
        a[i] = seed * (threadIdx.x + 3 * i + 1); /* values the compiler cannot know */
    b[0] = seed ^ threadIdx.x, b[1] = seed + threadIdx.x;
    float c[CH][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < CH; j++)
            wk_mma_16816<BF>(c[j], a, b);
    }
    float s = 0.f;
    for (int j = 0; j < CH; j++)
        s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    if (s == 1.2345f) /* never in practice; keeps every chain live */
        out[threadIdx.x] = s;
}

template <int BF> static double run(int sms, int per_sm, int iters, float *out)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const int grid = sms * per_sm;
    peak<BF><<<grid, 256>>>(out, 100, 12345u); /* warm-up */
    cudaEventRecord(e0);
    peak<BF><<<grid, 256>>>(out, iters, 12345u);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    const double flop = 2.0 * 16 * 8 * 16 * CH * (double)iters * 8 * grid;
    return flop / (ms * 1e-3) / 1e12;
}

int main(void)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        fprintf(stderr, "no CUDA device\n");
        return 1;
    }
    float *out = NULL;
    cudaMalloc(&out, 256 * sizeof(float));
    printf("device %s, %d SMs, sm_%d%d\n", p.name, p.multiProcessorCount, p.major, p.minor);
    const int iters = 20000;
    for (int per = 1; per <= 4; per *= 2) {
        const double bf = run<1>(p.multiProcessorCount, per, iters, out);
        const double hf = run<0>(p.multiProcessorCount, per, iters, out);
        printf("mma_peak blocks_per_sm %d  bf16 %.1f TFLOP/s  f16 %.1f TFLOP/s\n", per, bf, hf);
    }
    const cudaError_t e = cudaGetLastError();
    cudaFree(out);
    if (e != cudaSuccess) {
        fprintf(stderr, "cuda: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
