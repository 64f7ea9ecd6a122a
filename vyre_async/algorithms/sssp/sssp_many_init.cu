#include "sssp_many_prelude.cuh"

// Every distance +inf, every lane mask empty and tagged with no step (-1), nothing
// far. sssp_many_seed then places the sources.
extern "C" __global__ void sssp_many_init(float* __restrict__ dist,
                                          unsigned long long* __restrict__ masks_a,
                                          unsigned long long* __restrict__ masks_b,
                                          unsigned* __restrict__ far,
                                          long long n,
                                          long long vw)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long i = first; i < vw; i += stride) {
        dist[i] = __int_as_float(INF_BITS);
    }
    for (long long v = first; v < n; v += stride) {
        masks_a[v] = tagged(-1, 0u);
        masks_b[v] = tagged(-1, 0u);
        far[v] = 0u;
    }
}
