#include "components_defines.cuh"

// Ends a round: counts it, and once its hook found no edge whose end points' parents
// differ, says done.
extern "C" __global__ void cc_check(int* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[CC_STATE_DONE] != 0) {
        return;
    }
    state[CC_STATE_ROUNDS] += 1;
    if (state[CC_STATE_CHANGED] == 0) {
        state[CC_STATE_DONE] = 1;
    }
    state[CC_STATE_CHANGED] = 0;
}
