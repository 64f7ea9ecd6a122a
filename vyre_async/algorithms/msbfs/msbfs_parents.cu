#include "msbfs_prelude.cuh"

// Each entry of `levels` (row-major [row * n + v], one row per traversal; rows = lv / n,
// whole rows only) gets a parent: the first in-neighbour, in in-list order, one level
// closer to its row's source; -1 for a source (level 0), an unreached vertex (-1) and
// an entry of a partial last row. A warp takes 32 consecutive entries per trip: an
// in-list shorter than WIDE_MIN_DEGREE is scanned by its own lane, a longer one by the
// whole warp, UNROLL * 32 neighbours per trip with independent loads. Both stop at
// the first match in list order, so the parent does not depend on the schedule.
extern "C" __global__ void msbfs_parents(const long long* __restrict__ in_offsets,
                                         const int* __restrict__ in_indices,
                                         const int* __restrict__ levels,
                                         int* __restrict__ parents,
                                         long long n1,
                                         long long lv)
{
    const long long n = n1 - 1;
    if (n <= 0) {
        return;
    }
    const long long rows = lv / n;
    const unsigned lane = threadIdx.x & 31u;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)blockDim.x * gridDim.x) >> 5;
    // Loop per warp, not per thread: all 32 lanes run the same trips, so the ballots
    // and shuffles below always see the whole warp.
    for (long long base = warp * 32; base < lv; base += warps * 32) {
        const long long i = base + (long long)lane;
        long long row_base = 0;
        long long begin = 0;
        long long end = 0;
        int want = -1;
        if (i < lv) {
            const long long row = i / n;
            const int level = levels[i];
            if (level > 0 && row < rows) {
                const long long v = i - row * n;
                row_base = row * n;
                want = level - 1;
                begin = __ldg(&in_offsets[v]);
                end = __ldg(&in_offsets[v + 1]);
            }
        }
        int parent = -1;
        const bool wide = end - begin >= WIDE_MIN_DEGREE;
        if (!wide) {
            for (long long j = begin; j < end; ++j) {
                const int u = __ldg(&in_indices[j]);
                if (levels[row_base + u] == want) {
                    parent = u;
                    break;
                }
            }
        }
        unsigned wide_lanes = __ballot_sync(FULL_MASK, wide);
        while (wide_lanes != 0u) {
            const int leader = __ffs(wide_lanes) - 1;
            wide_lanes &= wide_lanes - 1u;
            const long long first = __shfl_sync(FULL_MASK, begin, leader);
            const long long last = __shfl_sync(FULL_MASK, end, leader);
            const long long at = __shfl_sync(FULL_MASK, row_base, leader);
            const int wanted = __shfl_sync(FULL_MASK, want, leader);
            int found = -1;  // the same in every lane: it only changes through a shuffle
            for (long long j0 = first; j0 < last && found < 0; j0 += UNROLL * 32) {
                int u[UNROLL];
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    const long long j = j0 + k * 32 + (long long)lane;
                    u[k] = j < last ? __ldg(&in_indices[j]) : -1;
                }
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    const bool hit = u[k] >= 0 && levels[at + u[k]] == wanted;
                    const unsigned hits = __ballot_sync(FULL_MASK, hit);
                    if (hits != 0u && found < 0) {
                        found = __shfl_sync(FULL_MASK, u[k], __ffs(hits) - 1);
                    }
                }
            }
            if ((int)lane == leader) {
                parent = found;
            }
        }
        if (i < lv) {
            parents[i] = parent;
        }
    }
}
