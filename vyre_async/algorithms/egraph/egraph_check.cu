#include "egraph_defines.cuh"

extern "C" __global__ void egraph_check(int* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[S_DONE] != 0) {
        return;
    }
    state[S_ROUNDS] += 1;
    const int changed = state[S_CHANGED];
    state[S_CHANGED] = 0;
    state[S_CONVERGED] = changed == 0 ? 1 : 0;
    if (changed == 0 || state[S_ROUNDS] >= state[S_MAX_ROUNDS]) {
        state[S_DONE] = 1;
    }
}
