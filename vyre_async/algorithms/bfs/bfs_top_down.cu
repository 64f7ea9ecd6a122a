#include "bfs_prelude.cuh"
#include "warp_merge.cuh"

// A frontier vertex with at least this many out-edges is expanded by its whole warp,
// so one hub does not hold 31 idle lanes for its whole adjacency list.
#define WARP_EXPAND_MIN_DEGREE 32
// One with at least this many (4 per thread of a 256-thread block) by its whole block:
// R-MAT hubs have 10^4-10^5 out-edges, which one warp would walk alone for up to a
// millisecond while the rest of the grid has long finished (Merrill, Garland and
// Grimshaw's CTA-wide gathering, PPoPP 2012).
#define BLOCK_EXPAND_MIN_DEGREE 1024

__device__ __forceinline__ int discover(int* levels, int u, int next)
{
    // The plain read skips the atomic for vertices already seen; a stale -1 only
    // costs a CAS that fails.
    return (levels[u] == -1 && atomicCAS(&levels[u], -1, next) == -1) ? 1 : 0;
}

extern "C" __global__ void bfs_top_down(const long long* __restrict__ offsets,
                                        const int* __restrict__ indices,
                                        int* __restrict__ levels,
                                        int* __restrict__ state,
                                        int n)
{
    // Uniform exit: only bfs_init and bfs_advance write these words, never during this launch.
    if (state[2] != 0 || state[3] != 0) {
        return;
    }
    __shared__ int block_owner;
    __shared__ long long block_first;
    __shared__ long long block_last;
    const int level = state[0];
    const int next = level + 1;
    const unsigned lane = threadIdx.x & 31u;
    const long long block = blockDim.x;
    const long long stride = block * gridDim.x;
    int found = 0;
    // Loop per block, not per thread: all threads run the same trips, so the block
    // barriers and the warp ballots and shuffles below always see every thread.
    for (long long base = (long long)blockIdx.x * block; base < n; base += stride) {
        const long long v = base + threadIdx.x;
        long long begin = 0;
        long long end = 0;
        if (v < n && levels[v] == level) {
            begin = __ldg(&offsets[v]);
            end = __ldg(&offsets[v + 1]);
        }
        const long long degree = end - begin;
        // Hub lists, one at a time, by the whole block: each thread reads four
        // neighbours per trip, independently, before the dependent level checks.
        bool hub = degree >= BLOCK_EXPAND_MIN_DEGREE;
        while (__syncthreads_or(hub)) {
            if (hub) {
                block_owner = threadIdx.x;  // racing writes: any one winner will do
            }
            __syncthreads();
            if (block_owner == (int)threadIdx.x) {
                block_first = begin;
                block_last = end;
                hub = false;
            }
            __syncthreads();
            const long long last = block_last;
            long long j = block_first + threadIdx.x;
            for (; j + 3 * block < last; j += 4 * block) {
                int u[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    u[k] = __ldg(&indices[j + k * block]);
                }
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    found += discover(levels, u[k], next);
                }
            }
            for (; j < last; j += block) {
                found += discover(levels, __ldg(&indices[j]), next);
            }
            // The next __syncthreads_or orders these reads of block_first/last
            // before the next owner overwrites them.
        }
        const bool wide = degree >= WARP_EXPAND_MIN_DEGREE && degree < BLOCK_EXPAND_MIN_DEGREE;
        unsigned wide_lanes = __ballot_sync(FULL_MASK, wide);
        while (wide_lanes != 0u) {
            const int leader = __ffs(wide_lanes) - 1;
            wide_lanes &= wide_lanes - 1u;
            const long long first = __shfl_sync(FULL_MASK, begin, leader);
            const long long last = __shfl_sync(FULL_MASK, end, leader);
            // A wide list holds the whole warp: read eight neighbours per lane per
            // trip, independently, before the dependent level checks.
            long long j = first + lane;
            for (; j + 7 * 32 < last; j += 8 * 32) {
                int u[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    u[k] = __ldg(&indices[j + k * 32]);
                }
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    found += discover(levels, u[k], next);
                }
            }
            for (; j < last; j += 32) {
                found += discover(levels, __ldg(&indices[j]), next);
            }
        }
        // The narrow lists of the warp's frontier vertices, merged: lane i takes the
        // i-th edge of each 32, so index reads are coalesced and no lane idles while
        // another walks a longer list.
        long long total = 0;
        const long long narrow = degree < WARP_EXPAND_MIN_DEGREE ? degree : 0;
        const long long start = warp_exclusive_scan(narrow, lane, &total);
        for (long long k0 = 0; k0 < total; k0 += 32) {
            const long long k = k0 + lane;
            const int owner = warp_owner(start, k);
            const long long owner_begin = __shfl_sync(FULL_MASK, begin, owner);
            const long long owner_start = __shfl_sync(FULL_MASK, start, owner);
            if (k < total) {
                found += discover(levels, __ldg(&indices[owner_begin + (k - owner_start)]), next);
            }
        }
    }
    block_add_count(found, &state[1]);
}
