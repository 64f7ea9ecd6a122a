#include "egraph_defines.cuh"

extern "C" __global__ void egraph_init(unsigned* __restrict__ parent,
                                       int* __restrict__ state,
                                       int max_rounds,
                                       long long num_classes)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < num_classes;
         c += stride) {
        parent[c] = (unsigned)c;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (int i = 0; i < 8; ++i) {
            state[i] = 0;
        }
        state[S_MAX_ROUNDS] = max_rounds;
        state[S_DONE] = max_rounds <= 0 ? 1 : 0;
    }
}
