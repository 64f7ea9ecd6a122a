#include "khop_prelude.cuh"

// tile_counts[t] = how many vertices of tile t, [t * KHOP_TILE, (t + 1) * KHOP_TILE),
// have a level >= 0 (reached), for the t1 - 1 tiles; tile_counts[t1 - 1] is left alone.
// One block of KHOP_BLOCK threads per tile, striding over the tiles.
extern "C" __global__ void khop_count(const int* __restrict__ levels,
                                      int* __restrict__ tile_counts,
                                      int n,
                                      long long t1)
{
    if (blockDim.x != KHOP_BLOCK) {
        return;
    }
    const long long tiles = t1 - 1;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long base = t * KHOP_TILE;
        int count = 0;
        for (int r = 0; r < KHOP_ROUNDS; ++r) {
            const long long v = base + (long long)r * KHOP_BLOCK + threadIdx.x;
            count += (v < n && levels[v] >= 0) ? 1 : 0;
        }
        const int total = khop_block_sum(count);
        if (threadIdx.x == 0) {
            tile_counts[t] = total;
        }
    }
}
