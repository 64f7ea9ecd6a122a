#include "components_defines.cuh"

// One step of pointer jumping: each vertex's parent becomes its grandparent. Only the
// thread of v writes parent[v] here; a grandparent read while its own thread moves it
// is its old or its new value, and both are ancestors, so either will do. A jump never
// decides whether another round runs (only a hook does), so it sets no state.
extern "C" __global__ void cc_jump(int* parent, const int* __restrict__ state, int n)
{
    // Uniform exit: only cc_init and cc_check write the done word.
    if (state[CC_STATE_DONE] != 0) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        const int p = parent[v];
        const int grand = parent[p];
        if (grand != p) {
            parent[v] = grand;
        }
    }
}
