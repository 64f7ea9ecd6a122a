#include "pagerank_part_prelude.cuh"

// Uniform ranks for this device's vertices, cleared sums, a fresh state (the same on
// every device).
extern "C" __global__ void pr_part_init(const long long* __restrict__ in_offsets,
                                        float* __restrict__ rank,
                                        float* __restrict__ sums,
                                        float* __restrict__ state,
                                        float tol,
                                        int max_iter,
                                        long long n_total,
                                        long long n1,
                                        long long nr)
{
    const long long nd = min(n1 - 1, nr);
    const float uniform = n_total > 0 ? 1.0f / (float)n_total : 0.0f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nd; i += stride) {
        rank[i] = uniform;
        sums[i] = 0.0f;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        state[PR_PART_DANGLING] = 0.0f;
        state[PR_PART_LOCAL_DIFF] = 0.0f;
        state[PR_PART_DONE] = (max_iter <= 0 || n_total <= 0) ? 1.0f : 0.0f;
        state[PR_PART_ITERATIONS] = 0.0f;
        state[PR_PART_TOL] = tol;
        state[PR_PART_MAX_ITER] = (float)min(max_iter, 1 << 24);
        state[PR_PART_LAST_DIFF] = 0.0f;
        state[PR_PART_LOCAL_DANGLING] = 0.0f;
    }
}
