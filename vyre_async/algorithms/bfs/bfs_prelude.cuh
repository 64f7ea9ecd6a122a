
#define FULL_MASK 0xffffffffu


// Adds every thread's `count` to *counter with one atomic per block: warp shuffles,
// then one word per warp in shared memory. Every thread of the block must call it.
__device__ __forceinline__ void block_add_count(int count, int* counter)
{
    __shared__ int warp_counts[32];
    for (int offset = 16; offset > 0; offset >>= 1) {
        count += __shfl_down_sync(FULL_MASK, count, offset);
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        warp_counts[warp] = count;
    }
    __syncthreads();
    if (warp == 0u) {
        count = lane < ((blockDim.x + 31u) >> 5) ? warp_counts[lane] : 0;
        for (int offset = 16; offset > 0; offset >>= 1) {
            count += __shfl_down_sync(FULL_MASK, count, offset);
        }
        if (lane == 0u && count != 0) {
            atomicAdd(counter, count);
        }
    }
}
