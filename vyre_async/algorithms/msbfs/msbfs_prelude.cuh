#define FULL_MASK 0xffffffffu
#include "msbfs_defines.cuh"

// Words per vertex: vw / n when that is a whole number in [1, MAX_WORDS], else 0 (the
// kernels then do nothing). Only bound lengths go in, so no binding reads out of bounds.
__device__ __forceinline__ int msbfs_words(long long n, long long vw)
{
    if (n <= 0 || vw <= 0 || vw % n != 0) {
        return 0;
    }
    const long long words = vw / n;
    return words <= MAX_WORDS ? (int)words : 0;
}

// Lanes per vertex team: the word count rounded up to a power of two, so that a team
// reads one vertex's consecutive words and 32 / group teams fill a warp exactly.
__device__ __forceinline__ int msbfs_group(int words)
{
    int group = 1;
    while (group < words) {
        group <<= 1;
    }
    return group;
}

__device__ __forceinline__ unsigned long long* state_u64(int* state, int index)
{
    return reinterpret_cast<unsigned long long*>(state + index);
}

__device__ __forceinline__ const unsigned long long* state_u64(const int* state, int index)
{
    return reinterpret_cast<const unsigned long long*>(state + index);
}

// Whether a lane had a valid source at init (lanes past MAX_WORDS words never do).
__device__ __forceinline__ bool lane_active(const int* state, long long lane)
{
    if (lane < 0 || lane >= 64LL * MAX_WORDS) {
        return false;
    }
    return ((state_u64(state, STATE_ACTIVE)[lane >> 6] >> (lane & 63)) & 1ull) != 0ull;
}
