#include "msbfs_prelude.cuh"

// offsets and sources are never read: they are bound so that n and lanes derive from
// their lengths.
extern "C" __global__ void msbfs_count(const long long* __restrict__ offsets,
                                       const int* __restrict__ sources,
                                       const unsigned long long* __restrict__ visited,
                                       int* __restrict__ counts,
                                       long long n1,
                                       long long vw,
                                       int lanes)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (words == 0) {
        return;
    }
    const int lane = (int)(threadIdx.x & 31u);
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long tasks = (n + COUNT_TILE - 1) / COUNT_TILE * words;
    // A task is one word of COUNT_TILE vertices; neighbouring warps take the other words
    // of the same vertices, which share cache lines.
    for (long long task = warp; task < tasks; task += warps) {
        const long long tile = task / words;
        const int w = (int)(task - tile * words);
        const long long first = tile * COUNT_TILE;
        const long long last = min(first + COUNT_TILE, n);
        int low = 0;   // lane 64w + lane
        int high = 0;  // lane 64w + 32 + lane
        for (long long base = first; base < last; base += 32) {
            const long long v = base + lane;
            const unsigned long long x = v < last ? __ldg(&visited[v * words + w]) : 0ull;
            if (!__any_sync(FULL_MASK, x != 0ull)) {
                continue;
            }
            // Ballot b holds bit b of the 32 words: its popcount is lane b's share.
#pragma unroll 8
            for (int b = 0; b < 32; ++b) {
                const int lo = __popc(__ballot_sync(FULL_MASK, (unsigned)(x >> b) & 1u));
                const int hi = __popc(__ballot_sync(FULL_MASK, (unsigned)(x >> (b + 32)) & 1u));
                if (lane == b) {
                    low += lo;
                    high += hi;
                }
            }
        }
        const int lane_low = 64 * w + lane;
        if (low != 0 && lane_low < lanes) {
            atomicAdd(&counts[lane_low], low);
        }
        if (high != 0 && lane_low + 32 < lanes) {
            atomicAdd(&counts[lane_low + 32], high);
        }
    }
}
