#include "sssp_many_prelude.cuh"

// counts[lane] (arriving zeroed) = vertices whose distance in that lane is at most
// max_distance (finite): per-block counts in shared memory, one atomic per lane and block.
// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void sssp_many_count(const long long* __restrict__ offsets,
                                           const float* __restrict__ dist,
                                           int* __restrict__ counts,
                                           float max_distance,
                                           long long n1,
                                           long long vw)
{
    __shared__ int block_counts[MAX_LANES];
    const int lanes = many_lanes(n1 - 1, vw);
    if (lanes == 0) {
        return;
    }
    if (threadIdx.x < MAX_LANES) {
        block_counts[threadIdx.x] = 0;
    }
    __syncthreads();
    const long long stride = (long long)blockDim.x * gridDim.x;
    // The stride is a multiple of `lanes`, so each thread keeps to one lane.
    const int my_lane = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) % lanes);
    int mine = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < vw; i += stride) {
        mine += __ldg(&dist[i]) <= max_distance ? 1 : 0;
    }
    if (mine != 0) {
        atomicAdd(&block_counts[my_lane], mine);
    }
    __syncthreads();
    if (threadIdx.x < lanes && block_counts[threadIdx.x] != 0) {
        atomicAdd(&counts[threadIdx.x], block_counts[threadIdx.x]);
    }
}
