#include "sssp_many_prelude.cuh"

// rows[lane * n + v] = dist[v * lanes + lane]: the distances one source per row. A
// block moves 32 vertices' lanes at a time through shared memory, so both the reads
// and the writes are coalesced.
// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void sssp_many_rows(const long long* __restrict__ offsets,
                                          const float* __restrict__ dist,
                                          float* __restrict__ rows,
                                          long long n1,
                                          long long vw)
{
    __shared__ float tile[32 * MAX_LANES];
    const long long n = n1 - 1;
    const int lanes = many_lanes(n, vw);
    if (lanes == 0) {
        return;
    }
    const long long tiles = (n + 31) / 32;
    for (long long tile_index = blockIdx.x; tile_index < tiles; tile_index += gridDim.x) {
        const long long v0 = tile_index * 32;
        const int width = (int)min(32ll, n - v0);
        for (int i = threadIdx.x; i < width * lanes; i += blockDim.x) {
            tile[i] = __ldg(&dist[v0 * lanes + i]);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < 32 * lanes; i += blockDim.x) {
            const int lane = i / 32;
            const int t = i % 32;
            if (t < width) {
                rows[(long long)lane * n + v0 + t] = tile[t * lanes + lane];
            }
        }
        __syncthreads();
    }
}
