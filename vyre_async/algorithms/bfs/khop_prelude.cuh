#include "khop_defines.cuh"

#define KHOP_FULL_MASK 0xffffffffu
#define KHOP_WARPS (KHOP_BLOCK / 32)
#define KHOP_ROUNDS (KHOP_TILE / KHOP_BLOCK)

// For a block of KHOP_BLOCK threads: how many threads before this one (in thread order)
// set `flag`, and in `*total` how many did in all. Every thread of the block must call
// it; the second barrier lets the block call it again at once.
__device__ __forceinline__ int khop_rank(bool flag, int* total)
{
    __shared__ int warp_counts[KHOP_WARPS];
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    const unsigned ballot = __ballot_sync(KHOP_FULL_MASK, flag);
    if (lane == 0u) {
        warp_counts[warp] = __popc(ballot);
    }
    __syncthreads();
    int before = 0;
    int all = 0;
    for (unsigned w = 0; w < KHOP_WARPS; ++w) {
        const int count = warp_counts[w];
        all += count;
        before += w < warp ? count : 0;
    }
    __syncthreads();
    *total = all;
    return before + __popc(ballot & ((1u << lane) - 1u));
}

// The sum of `value` over a block of KHOP_BLOCK threads, in every thread. Every thread
// of the block must call it; the second barrier lets the block call it again at once.
__device__ __forceinline__ int khop_block_sum(int value)
{
    __shared__ int warp_sums[KHOP_WARPS];
    for (int offset = 16; offset > 0; offset >>= 1) {
        value += __shfl_down_sync(KHOP_FULL_MASK, value, offset);
    }
    if ((threadIdx.x & 31u) == 0u) {
        warp_sums[threadIdx.x >> 5] = value;
    }
    __syncthreads();
    int total = 0;
    for (unsigned w = 0; w < KHOP_WARPS; ++w) {
        total += warp_sums[w];
    }
    __syncthreads();
    return total;
}
