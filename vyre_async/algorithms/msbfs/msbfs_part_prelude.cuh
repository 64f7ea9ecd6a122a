#ifndef MSBFS_PART_PRELUDE
#define MSBFS_PART_PRELUDE
#include "msbfs_part_defines.cuh"

// A graph split over `parts` devices: this device owns vertices [part * chunk,
// part * chunk + nd) with their in- and out-lists (neighbours as global ids). Lane words
// of the group-wide buffers (recv, send) sit at `v * words + w` for global vertex v.

__device__ __forceinline__ unsigned long long* part_u64(int* state, int index)
{
    return reinterpret_cast<unsigned long long*>(state + index);
}

__device__ __forceinline__ const unsigned long long* part_u64(const int* state, int index)
{
    return reinterpret_cast<const unsigned long long*>(state + index);
}

// Whether the bindings describe one part of a split whose every index stays inside the
// bound buffers (lw: local bitsets, gw: group-wide ones). Every kernel checks it first
// and does nothing otherwise, so no binding makes a kernel index out of bounds.
__device__ __forceinline__ bool part_valid(long long nd, long long n_total, int parts, int part,
                                           long long chunk, int words, long long lw,
                                           long long gw)
{
    return parts >= 1 && part >= 0 && part < parts && chunk >= 1 && words >= 1 &&
           words <= PART_MAX_WORDS && nd >= 0 && nd <= chunk &&
           (long long)part * chunk + nd <= n_total && n_total <= (long long)parts * chunk &&
           lw >= nd * words && gw >= (long long)parts * chunk * words;
}

// The lanes of word w that had a valid source at init.
__device__ __forceinline__ unsigned long long part_active(const int* state, int w)
{
    return part_u64(state, PSTATE_ACTIVE)[w];
}

// The lanes of word w whose frontier is not empty on some device: the only lanes a
// bottom-up level looks for (the direction step keeps them).
__device__ __forceinline__ unsigned long long part_live(const int* state, int w)
{
    return part_u64(state, PSTATE_LIVE)[w];
}

__device__ __forceinline__ long long part_tid()
{
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ long long part_threads()
{
    return (long long)gridDim.x * blockDim.x;
}
#endif
