#include "khop_prelude.cuh"

// Each reached vertex v (level >= 0) goes to out[tile_offsets[t] + its rank among the
// reached vertices of its tile t], so out holds them sorted; a position outside
// [0, cap) is skipped, never written. One block of KHOP_BLOCK threads per tile, in
// KHOP_ROUNDS rounds of KHOP_BLOCK consecutive vertices, so writes keep vertex order.
extern "C" __global__ void khop_scatter(const int* __restrict__ levels,
                                        const int* __restrict__ tile_offsets,
                                        int* __restrict__ out,
                                        int n,
                                        long long t1,
                                        long long cap)
{
    if (blockDim.x != KHOP_BLOCK) {
        return;
    }
    const long long tiles = t1 - 1;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        long long at = tile_offsets[t];  // the same in every thread of the block
        const long long base = t * KHOP_TILE;
        for (int r = 0; r < KHOP_ROUNDS; ++r) {
            const long long v = base + (long long)r * KHOP_BLOCK + threadIdx.x;
            const bool reached = v < n && levels[v] >= 0;
            int total = 0;
            const int rank = khop_rank(reached, &total);
            const long long position = at + rank;
            if (reached && position >= 0 && position < cap) {
                out[position] = (int)v;
            }
            at += total;
        }
    }
}
