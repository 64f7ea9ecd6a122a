#include "ppr_defines.cuh"

#define FULL_MASK 0xffffffffu

// Columns W of a run: the seeds' count when it is a power of two up to 32 or a multiple
// of 32 up to MAX_COLUMNS and the rank buffers hold n * W floats; else 0 (the kernels
// then do nothing). Only bound lengths go in, so no binding can index outside a buffer.
__device__ __forceinline__ int ppr_columns(long long n, long long w, long long vw)
{
    if (n <= 0 || w <= 0 || w > MAX_COLUMNS || vw != n * w) {
        return 0;
    }
    const bool ok = w < 32 ? (w & (w - 1)) == 0 : w % 32 == 0;
    return ok ? (int)w : 0;
}

// Columns one warp handles at once: 128 (four per lane) when they divide W, else up
// to 32 (one per lane).
__device__ __forceinline__ int ppr_tile(int cols)
{
    return cols % 128 == 0 ? 128 : min(cols, 32);
}

// A vertex's rank as the top half of its select key: the float's bits without the
// sign (ranks are >= 0; this also makes -0.0 equal to 0.0).
__device__ __forceinline__ unsigned long long ppr_key(float rank, long long v, long long n)
{
    const unsigned bits = __float_as_uint(rank) & 0x7fffffffu;
    return ((unsigned long long)bits << 32) | (unsigned long long)(n - 1 - v);
}
