#include "msbfs_part_lists.cuh"

// counts[lane]: this device's vertices the lane reached. A warp takes a task, one word
// of PART_COUNT_TILE vertices (neighbouring warps take the other words of the same
// vertices, which share cache lines), 32 vertices a pass: ballot b holds bit b of the
// 32 words, so its popcount is lane b's share; then one atomic per lane and task, as
// one device's msbfs_count does. sources is never read: it is bound so that lanes
// derives from its length.
extern "C" __global__ void msbfs_part_count(const long long* __restrict__ offsets,
                                            const int* __restrict__ sources,
                                            const unsigned long long* __restrict__ visited,
                                            int* __restrict__ counts,
                                            int words,
                                            long long n1,
                                            long long lw,
                                            int lanes)
{
    const long long nd = n1 - 1;
    if (nd <= 0 || words < 1 || words > PART_MAX_WORDS || lw < nd * words) {
        return;
    }
    const int lane = (int)(threadIdx.x & 31u);
    const long long warp = part_tid() >> 5;
    const long long warps = part_threads() >> 5;
    const long long tasks = (nd + PART_COUNT_TILE - 1) / PART_COUNT_TILE * words;
    for (long long task = warp; task < tasks; task += warps) {
        const long long tile = task / words;
        const int w = (int)(task - tile * words);
        const long long first = tile * PART_COUNT_TILE;
        const long long last = min(first + PART_COUNT_TILE, nd);
        int low = 0;   // lane 64w + lane
        int high = 0;  // lane 64w + 32 + lane
        for (long long base = first; base < last; base += 32) {
            const long long v = base + lane;
            const unsigned long long x = v < last ? __ldg(&visited[v * words + w]) : 0ull;
            if (!__any_sync(PART_FULL_MASK, x != 0ull)) {
                continue;
            }
#pragma unroll 8
            for (int b = 0; b < 32; ++b) {
                const int lo = __popc(__ballot_sync(PART_FULL_MASK, (unsigned)(x >> b) & 1u));
                const int hi =
                    __popc(__ballot_sync(PART_FULL_MASK, (unsigned)(x >> (b + 32)) & 1u));
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
