// Warp-level helpers the shortest-path kernels share: staging, appends, last block.

#define FULL_MASK 0xffffffffu
// +inf as float32 bits: the largest bit pattern of a non-negative float that is not
// NaN, so atomicMin on the int bits of non-negative floats orders them as floats.
#define INF_BITS 0x7f800000

#include "warp_merge.cuh"

__device__ __forceinline__ unsigned lane_mask_below(unsigned lane)
{
    return (1u << lane) - 1u;
}

// Adds this warp's `take` lanes' `value` to a warp's staging buffer (at most 32 per
// call). Every lane of the warp must call it with the same `count`.
__device__ __forceinline__ void stage_push(int* buffer, int& count, bool take, int value,
                                           unsigned lane)
{
    const unsigned mask = __ballot_sync(FULL_MASK, take);
    if (take) {
        buffer[count + __popc(mask & lane_mask_below(lane))] = value;
    }
    count += __popc(mask);
}

// Appends the `take` lanes' `v` to `list` at `*fill`, one atomic for the warp. A slot
// past `capacity` is not written and raises the overflow word (the capacities are
// bounds, so that flags a bug). Warp-uniform; no atomic when no lane takes.
__device__ __forceinline__ void append_vertices(bool take, int v, int* list, int* fill,
                                                long long capacity, int* overflow, unsigned lane)
{
    const unsigned mask = __ballot_sync(FULL_MASK, take);
    if (mask == 0u) {
        return;
    }
    int base = 0;
    if (lane == 0u) {
        base = atomicAdd(fill, __popc(mask));
    }
    base = __shfl_sync(FULL_MASK, base, 0);
    if (take) {
        const long long at = (long long)base + __popc(mask & lane_mask_below(lane));
        if (at < capacity) {
            list[at] = v;
        } else {
            *overflow = 1;
        }
    }
}

// Appends the chunks (v << 32 | c) of the `take` lanes' lists of `degree` edges,
// `chunk_edges` each, one atomic for the warp. Warp-uniform.
__device__ __forceinline__ void append_chunks(bool take, int v, long long degree, long long* list,
                                              int* fill, long long capacity, int* overflow,
                                              long long chunk_edges, unsigned lane)
{
    const long long chunks = take ? (degree + chunk_edges - 1) / chunk_edges : 0;
    long long total = 0;
    const long long start = warp_exclusive_scan(chunks, lane, &total);
    if (total == 0) {
        return;
    }
    int base = 0;
    if (lane == 0u) {
        base = atomicAdd(fill, (int)total);
    }
    base = __shfl_sync(FULL_MASK, base, 0);
    for (long long c = 0; c < chunks; ++c) {
        const long long at = (long long)base + start + c;
        if (at < capacity) {
            list[at] = ((long long)v << 32) | c;
        } else {
            *overflow = 1;
        }
    }
}

// Whether this block is the last of the step's `blocks` to finish (thread 0 only),
// counted on the state word `*arrived` (the last block sets it back to 0).
// Its earlier writes are fenced first, so the last block sees every block's counts
// once it reads them past L1.
__device__ __forceinline__ bool last_block(int* arrived, unsigned blocks)
{
    __threadfence();
    const unsigned ticket = atomicAdd(reinterpret_cast<unsigned*>(arrived), 1u);
    if (ticket != blocks - 1u) {
        return false;
    }
    __threadfence();
    return true;
}
