#include "sssp_many_defines.cuh"
#include "sssp_warp.cuh"

// Lanes W per vertex: vw / n when that is a power of two up to MAX_LANES, else 0 (the
// kernels then do nothing). Only bound lengths go in, so no binding reads out of bounds.
__device__ __forceinline__ int many_lanes(long long n, long long vw)
{
    if (n <= 0 || vw <= 0 || vw % n != 0) {
        return 0;
    }
    const long long lanes = vw / n;
    return (lanes <= MAX_LANES && (lanes & (lanes - 1)) == 0) ? (int)lanes : 0;
}

// The low `lanes` bits.
__device__ __forceinline__ unsigned lanes_mask(int lanes)
{
    return lanes >= 32 ? FULL_MASK : (1u << lanes) - 1u;
}

// A lane mask tagged with the step that expands it: tag << 32 | lanes.
#define TAG_BITS 0xffffffff00000000ull

__device__ __forceinline__ unsigned long long tagged(int tag, unsigned lanes)
{
    return ((unsigned long long)(unsigned)tag << 32) | lanes;
}
