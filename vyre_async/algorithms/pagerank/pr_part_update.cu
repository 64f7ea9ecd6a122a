#include "pagerank_part_prelude.cuh"

// Sums into ranks for this device's vertices; its L1 change into the state; the
// iteration counted.
extern "C" __global__ void pr_part_update(const long long* __restrict__ in_offsets,
                                          float* __restrict__ rank,
                                          float* __restrict__ sums,
                                          float* __restrict__ state,
                                          float damping,
                                          long long n_total,
                                          long long n1,
                                          long long nr)
{
    const long long nd = n1 - 1;
    if (state[PR_PART_DONE] != 0.0f || nd < 0 || nr < nd || n_total <= 0) {
        return;
    }
    const float teleport = (1.0f - damping) / (float)n_total;
    const float dangling = state[PR_PART_DANGLING] / (float)n_total;
    const long long stride = (long long)blockDim.x * gridDim.x;
    float diff = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nd; i += stride) {
        const float fresh = teleport + damping * (sums[i] + dangling);
        diff += fabsf(fresh - rank[i]);
        rank[i] = fresh;
        sums[i] = 0.0f;
    }
    pr_part_block_add(diff, &state[PR_PART_LOCAL_DIFF]);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        state[PR_PART_ITERATIONS] += 1.0f;
    }
}
