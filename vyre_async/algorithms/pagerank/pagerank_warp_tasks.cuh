// Warp tasks over a CSR in-list (pr_gather, pr_part_gather): which vertex owns an
// edge, and the 32-bit scan and owner search a warp merges its lanes' lists with.
#ifndef PAGERANK_WARP_TASKS
#define PAGERANK_WARP_TASKS
#include "pagerank_prelude.cuh"

// The vertex whose in-list holds edge j: the largest v with offsets[v] <= j.
__device__ __forceinline__ long long owning_vertex(const long long* offsets,
                                                   long long n,
                                                   long long j)
{
    long long lo = 0;
    long long hi = n;  // offsets[hi] = E > j for any valid edge
    while (hi - lo > 1) {
        const long long mid = (lo + hi) >> 1;
        if (__ldg(&offsets[mid]) <= j) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Positions inside one chunk fit in 32 bits, so every shuffle below moves one word
// (the 64-bit merge helpers cost two per shuffle, and shuffles bounded the gather).
__device__ __forceinline__ int exclusive_scan32(int x, unsigned lane, int* total)
{
    int inclusive = x;
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(FULL_MASK, inclusive, d);
        if (lane >= (unsigned)d) {
            inclusive += y;
        }
    }
    *total = __shfl_sync(FULL_MASK, inclusive, 31);
    return inclusive - x;
}

// The largest lane whose merged start is <= k (starts never decrease across lanes).
__device__ __forceinline__ int owner32(int start, int k)
{
    int owner = 0;
    for (int step = 16; step > 0; step >>= 1) {
        if (__shfl_sync(FULL_MASK, start, owner + step) <= k) {
            owner += step;
        }
    }
    return owner;
}

#endif
