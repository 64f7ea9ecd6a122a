#include "pagerank_prelude.cuh"

extern "C" __global__ void pr_update(float* __restrict__ rank_in,
                                     float* __restrict__ rank_out,
                                     const int* __restrict__ out_degree,
                                     const int* __restrict__ rank_of,
                                     float* __restrict__ contrib,
                                     float* __restrict__ state,
                                     float damping,
                                     int n)
{
    if (state[2] != 0.0f) {
        return;
    }
    const float teleport = (1.0f - damping) / (float)n;
    const float dangling = state[0] / (float)n;
    const long long stride = (long long)blockDim.x * gridDim.x;
    float diff = 0.0f;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        const float fresh = teleport + damping * (rank_out[v] + dangling);
        diff += fabsf(fresh - rank_in[v]);
        rank_out[v] = fresh;
        rank_in[v] = 0.0f;  // the next pr_gather accumulates into it
        const int degree = __ldg(&out_degree[v]);
        // What the next gather reads, at the vertex's place in the shares order.
        contrib[__ldg(&rank_of[v])] = degree > 0 ? fresh / (float)degree : 0.0f;
    }
    block_add_sum(diff, &state[1]);
}
