
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
