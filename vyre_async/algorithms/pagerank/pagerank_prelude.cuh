
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float x)
{
    // Butterfly: every lane ends with the total.
    for (int offset = 16; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(FULL_MASK, x, offset);
    }
    return x;
}

// Adds every thread's `value` to *total with one atomic per block. Every thread of the
// block must call it.
__device__ __forceinline__ void block_add_sum(float value, float* total)
{
    __shared__ float warp_sums[32];
    value = warp_sum(value);
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        warp_sums[warp] = value;
    }
    __syncthreads();
    if (warp == 0u) {
        value = warp_sum(lane < ((blockDim.x + 31u) >> 5) ? warp_sums[lane] : 0.0f);
        if (lane == 0u && value != 0.0f) {
            atomicAdd(total, value);
        }
    }
}
