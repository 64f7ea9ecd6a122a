#include "pagerank_part_prelude.cuh"

// One thread, once every slot of recv has arrived: the group's dangling mass and the
// last iteration's L1 change, added in device order (so every device gets the same
// floats and takes the same decision); stop once converged or out of iterations.
extern "C" __global__ void pr_part_check(const float* __restrict__ recv,
                                         float* __restrict__ state,
                                         int parts,
                                         long long chunk,
                                         long long gl)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[PR_PART_DONE] != 0.0f) {
        return;
    }
    if (parts < 1 || chunk < 1 || gl < (long long)parts * (chunk + PR_PART_HEADER)) {
        state[PR_PART_DONE] = 1.0f;
        return;
    }
    float dangling = 0.0f;
    float diff = 0.0f;
    for (int e = 0; e < parts; ++e) {
        const float* header = recv + (long long)e * (chunk + PR_PART_HEADER) + chunk;
        dangling += header[0];
        diff += header[1];
    }
    if (state[PR_PART_ITERATIONS] > 0.0f) {
        state[PR_PART_LAST_DIFF] = diff;
        if (diff < state[PR_PART_TOL] || state[PR_PART_ITERATIONS] >= state[PR_PART_MAX_ITER]) {
            state[PR_PART_DONE] = 1.0f;
            return;
        }
    }
    state[PR_PART_DANGLING] = dangling;
    state[PR_PART_LOCAL_DIFF] = 0.0f;
    state[PR_PART_LOCAL_DANGLING] = 0.0f;
}
