#include "components_defines.cuh"

// Every vertex its own parent, and a fresh state: not done unless there are no vertices.
extern "C" __global__ void cc_init(int* __restrict__ parent, int* __restrict__ state, int n)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        parent[v] = (int)v;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (int i = 0; i < CC_STATE_WORDS; ++i) {
            state[i] = 0;
        }
        state[CC_STATE_DONE] = n <= 0 ? 1 : 0;
    }
}
