#include "pagerank_prelude.cuh"

extern "C" __global__ void pr_dangling(const float* __restrict__ rank,
                                       const int* __restrict__ out_degree,
                                       float* __restrict__ state,
                                       int n)
{
    // Uniform exit: only pr_init and pr_check write the done word.
    if (state[2] != 0.0f) {
        return;
    }
    float mass = 0.0f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        if (__ldg(&out_degree[v]) == 0) {
            mass += __ldg(&rank[v]);
        }
    }
    block_add_sum(mass, &state[0]);
}
