#include "egraph_defines.cuh"
#include "egraph_union_find.cuh"

extern "C" __global__ void egraph_compress(unsigned* __restrict__ parent,
                                           const int* __restrict__ state,
                                           int force,
                                           long long num_classes)
{
    if (state[S_DONE] != 0 && force == 0) {
        return;
    }
    // No hooks run during this launch: concurrent writes only shortcut a class to
    // its root, so every path still ends at the same root.
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < num_classes;
         c += stride) {
        parent[c] = find_root(parent, (unsigned)c);
    }
}
