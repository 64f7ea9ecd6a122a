#include "egraph_defines.cuh"
#include "egraph_hash.cuh"

extern "C" __global__ void egraph_signatures(const unsigned* __restrict__ image,
                                             const unsigned* __restrict__ canon,
                                             unsigned* __restrict__ signatures,
                                             const int* __restrict__ state,
                                             long long ops_at,
                                             long long starts_at,
                                             long long lens_at,
                                             long long num_rows)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < num_rows;
         r += stride) {
        signatures[r] = row_signature(__ldg(&image[ops_at + r]), __ldg(&image[lens_at + r]),
                                      canon, __ldg(&image[starts_at + r]));
    }
}
