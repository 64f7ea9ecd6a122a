"""CUDA C helpers shared by the graph kernels: warp-wide merged walks over edge lists.

A warp that must walk the edge lists of up to 32 vertices merges them: an exclusive
scan of the list lengths gives each list's start in the merged order, and lane i
takes the i-th edge of every 32, finding the list it belongs to by a binary search
over those starts. Index reads are then coalesced and no lane idles while another
walks a longer list.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._kernel import LaunchRule, LaunchShape, grid_stride

#: ``warp_exclusive_scan`` and ``warp_owner``; sources that use them define FULL_MASK.
WARP_MERGE = r"""
// Exclusive prefix sum of `x` over the warp; *total gets the warp's sum.
__device__ __forceinline__ long long warp_exclusive_scan(long long x, unsigned lane,
                                                         long long* total)
{
    long long inclusive = x;
    for (int d = 1; d < 32; d <<= 1) {
        const long long y = __shfl_up_sync(FULL_MASK, inclusive, d);
        if (lane >= (unsigned)d) {
            inclusive += y;
        }
    }
    *total = __shfl_sync(FULL_MASK, inclusive, 31);
    return inclusive - x;
}

// The lane whose range holds merged position k: the largest lane whose exclusive
// start is <= k (starts never decrease across lanes, empty ranges share a start).
__device__ __forceinline__ int warp_owner(long long start, long long k)
{
    int owner = 0;
    for (int step = 16; step > 0; step >>= 1) {
        const long long s = __shfl_sync(FULL_MASK, start, owner + step);
        if (s <= k) {
            owner += step;
        }
    }
    return owner;
}
"""


def at_least_one_block(symbol: str, block: int) -> LaunchRule:
    """A grid-stride rule that launches even for zero elements (state words must be set)."""
    inner = grid_stride(symbol, block=block)

    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        shape = inner(sizes)
        return LaunchShape(grid=(max(1, shape.grid[0]), 1, 1), block=shape.block)

    return rule


def one_thread(sizes: Mapping[str, int]) -> LaunchShape:
    """A single thread: state bookkeeping between the parallel steps."""
    return LaunchShape(grid=(1, 1, 1), block=(1, 1, 1))
