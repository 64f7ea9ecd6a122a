#include "ppr_prelude.cuh"

// shares[j] = 1 / out_degree[u] for in-edge j from u: what the edge carries of u's rank.
// Made once per resident graph, so a gather reads it beside the in-list (coalesced)
// rather than gathering the source's degree at random.
extern "C" __global__ void ppr_shares(const int* __restrict__ in_indices,
                                      const int* __restrict__ out_degree,
                                      float* __restrict__ shares,
                                      long long edges,
                                      int n)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < edges; j += stride) {
        const int u = __ldg(&in_indices[j]);
        const int degree = (u >= 0 && u < n) ? __ldg(&out_degree[u]) : 0;
        shares[j] = degree > 0 ? 1.0f / (float)degree : 0.0f;
    }
}
