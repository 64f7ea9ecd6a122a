#include "egraph_defines.cuh"

extern "C" __global__ void egraph_rewrite(const unsigned* __restrict__ image,
                                          const unsigned* __restrict__ parent,
                                          unsigned* __restrict__ canon,
                                          const int* __restrict__ state,
                                          long long children_at,
                                          long long num_children)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const unsigned* children = image + children_at;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < num_children;
         j += stride) {
        canon[j] = __ldg(&parent[__ldg(&children[j])]);
    }
}
