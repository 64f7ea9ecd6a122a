#include "ppr_prelude.cuh"

// Between iterations (one block): a column whose L1 change fell below tol stops
// iterating; the dangling mass just summed becomes the next iteration's; the run is
// done once no column iterates or the iteration limit is reached.
extern "C" __global__ void ppr_check(float* __restrict__ mass,
                                     float* __restrict__ mass_next,
                                     float* __restrict__ diff,
                                     int* __restrict__ active,
                                     float* __restrict__ state,
                                     long long w)
{
    __shared__ int live_columns;
    // Uniform: only this kernel's thread 0 (after the barrier below) and ppr_init write it.
    if (state[STATE_DONE] != 0.0f || w <= 0 || w > MAX_COLUMNS) {
        return;
    }
    if (threadIdx.x == 0) {
        live_columns = 0;
    }
    __syncthreads();
    const float tol = state[STATE_TOL];
    int live = 0;
    for (int c = threadIdx.x; c < w; c += blockDim.x) {
        int a = active[c];
        if (a != 0 && diff[c] < tol) {
            a = 0;
            active[c] = 0;
        }
        live += a;
        mass[c] = mass_next[c];
        mass_next[c] = 0.0f;
        diff[c] = 0.0f;
    }
    if (live != 0) {
        atomicAdd(&live_columns, live);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const float iterations = state[STATE_ITERATIONS] + 1.0f;
        state[STATE_ITERATIONS] = iterations;
        state[STATE_ACTIVE] = (float)live_columns;
        if (live_columns == 0 || iterations >= state[STATE_MAX_ITER]) {
            state[STATE_DONE] = 1.0f;
        }
    }
}
