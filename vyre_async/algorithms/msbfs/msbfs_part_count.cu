#include "msbfs_part_prelude.cuh"

// counts[lane]: this device's vertices the lane reached. A task is one word of
// PART_COUNT_TILE vertices, summed per bit in registers, then one atomic per lane.
// sources is never read: it is bound so that lanes derives from its length.
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
    const long long tiles = (nd + PART_COUNT_TILE - 1) / PART_COUNT_TILE;
    for (long long task = part_tid(); task < tiles * words; task += part_threads()) {
        const long long tile = task / words;
        const int w = (int)(task - tile * words);
        const long long stop = min((tile + 1) * PART_COUNT_TILE, nd);
        int found[64];
        for (int b = 0; b < 64; ++b) {
            found[b] = 0;
        }
        for (long long i = tile * PART_COUNT_TILE; i < stop; ++i) {
            unsigned long long bits = visited[i * words + w];
            while (bits != 0ull) {
                found[__ffsll((long long)bits) - 1] += 1;
                bits &= bits - 1ull;
            }
        }
        for (int b = 0; b < 64; ++b) {
            const int lane = 64 * w + b;
            if (found[b] != 0 && lane < lanes) {
                atomicAdd(&counts[lane], found[b]);
            }
        }
    }
}
