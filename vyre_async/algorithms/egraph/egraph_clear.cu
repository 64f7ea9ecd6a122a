#include "egraph_defines.cuh"

extern "C" __global__ void egraph_clear(unsigned* __restrict__ table,
                                        const int* __restrict__ state,
                                        long long table_size)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < table_size;
         i += stride) {
        table[i] = EMPTY_SLOT;
    }
}
