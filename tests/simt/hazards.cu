/* hazards.cu: kernels with planted bugs (and their correct twins) for tests/simt/test_simt_hazards.c.
 * Compiled only for the simt device (cmake/simt.cmake), never by nvcc or hipcc. */
#include "gpu.h"

/* Correct: a block sum through shared memory with barriers, the tree halving. */
WK_KERNEL hz_block_sum(const float *x, float *y)
{
    __shared__ float s[WK_BLOCK];
    const int t = (int)threadIdx.x;
    s[t] = x[blockIdx.x * WK_BLOCK + t];
    __syncthreads();
    for (int h = WK_BLOCK / 2; h > 0; h /= 2) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0)
        y[blockIdx.x] = s[0];
}

/* Bug: thread 5 leaves before the barrier the others wait at. */
WK_KERNEL hz_barrier_exit(float *y)
{
    if (threadIdx.x == 5)
        return;
    __syncthreads();
    y[threadIdx.x] = 1.0f;
}

/* Bug: odd threads pass two barriers, even ones one (then exit). */
WK_KERNEL hz_barrier_count(float *y)
{
    if (threadIdx.x % 2)
        __syncthreads();
    __syncthreads();
    y[threadIdx.x] = 2.0f;
}

/* Bug: lane 3 of each warp skips the shuffle the others do. */
WK_KERNEL hz_warp_exit(float *y)
{
    float v = (float)threadIdx.x;
    if (threadIdx.x % warpSize == 3)
        return;
    v += WK_SHFL_DOWN(v, 1);
    y[threadIdx.x] = v;
}

/* Bug: lane 0 waits at a barrier while the rest of its warp is at a shuffle. */
WK_KERNEL hz_warp_vs_barrier(float *y)
{
    float v = (float)threadIdx.x;
    if (threadIdx.x == 0)
        __syncthreads();
    else
        v += WK_SHFL_DOWN(v, 1);
    y[threadIdx.x] = v;
}

/* Warp facts: out[t] = shuffle down by 1 of t, and the ballot of (t is even). */
WK_KERNEL hz_warp_facts(unsigned *shfl, uint64_t *ballot, int *width)
{
    const unsigned t = threadIdx.x;
    shfl[t] = WK_SHFL_DOWN(t, 1);
    ballot[t] = WK_BALLOT(t % 2 == 0);
    if (t == 0)
        *width = warpSize;
}

/* Indexed shuffle: out[t] = the 64-bit value (t << 32 | (t + 7)) of lane (5 l + 3) mod W of
 * t's warp, l being t's lane. */
WK_KERNEL hz_shfl_idx(uint64_t *out)
{
    const unsigned t = threadIdx.x, l = t % (unsigned)warpSize;
    const uint64_t v = (uint64_t)t << 32 | (t + 7u);
    out[t] = WK_SHFL_IDX(v, (int)((5u * l + 3u) % (unsigned)warpSize));
}

/* Order of execution: each thread takes a ticket. */
WK_KERNEL hz_tickets(unsigned *counter, unsigned *ticket)
{
    ticket[threadIdx.x] = atomicAdd(counter, 1u);
}

/* Bug: reads one element past the end of x (n elements). */
WK_KERNEL hz_read_past(const float *x, int64_t n, float *y)
{
    if (threadIdx.x == 0)
        y[0] = x[n];
}

/* Bug: writes one element before the start of y. */
WK_KERNEL hz_write_before(float *y)
{
    if (threadIdx.x == 0)
        y[-1] = 1.0f;
}

/* Bug: reads a buffer after it was freed. */
WK_KERNEL hz_read_freed(const float *x, float *y)
{
    if (threadIdx.x == 0)
        y[0] = x[0];
}

/* Bug (a race): every thread reads its neighbour's slot without a barrier after the writes, the
 * warp-synchronous habit that lockstep execution hides. */
WK_KERNEL hz_race_raw(float *y)
{
    __shared__ float s[WK_BLOCK];
    const int t = (int)threadIdx.x;
    s[t] = (float)t;
    y[t] = s[(t + 1) % WK_BLOCK];
}

/* The same with the barrier: correct. */
WK_KERNEL hz_race_fixed(float *y)
{
    __shared__ float s[WK_BLOCK];
    const int t = (int)threadIdx.x;
    s[t] = (float)t;
    __syncthreads();
    y[t] = s[(t + 1) % WK_BLOCK];
}

/* Bug (a race): two threads write the same slot between barriers. */
WK_KERNEL hz_race_waw(float *y)
{
    __shared__ float s[8];
    s[threadIdx.x % 8] = (float)threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x % 8];
}

/* Bug (a race): thread 0 overwrites a slot others read in the same interval. */
WK_KERNEL hz_race_war(float *y)
{
    __shared__ float s[4];
    if (threadIdx.x < 4)
        s[threadIdx.x] = 1.0f;
    __syncthreads();
    y[threadIdx.x] = s[1];
    if (threadIdx.x == 0)
        s[1] = 2.0f;
}
