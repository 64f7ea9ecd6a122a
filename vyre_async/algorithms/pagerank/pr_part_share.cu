#include "pagerank_part_prelude.cuh"

// This device's shares, into its send slot and its own slot of recv, and its dangling
// mass (rank of its vertices without out-edges) into the state.
extern "C" __global__ void pr_part_share(const long long* __restrict__ in_offsets,
                                         const int* __restrict__ out_degree,
                                         const float* __restrict__ rank,
                                         float* __restrict__ send,
                                         float* __restrict__ recv,
                                         float* __restrict__ state,
                                         int parts,
                                         int part,
                                         long long chunk,
                                         long long n_total,
                                         long long n1,
                                         long long nr,
                                         long long sl,
                                         long long gl,
                                         long long od)
{
    const long long nd = n1 - 1;
    if (state[PR_PART_DONE] != 0.0f || od < nd ||
        !pr_part_valid(nd, n_total, parts, part, chunk, nr, sl, gl)) {
        return;
    }
    float* own = recv + (long long)part * (chunk + PR_PART_HEADER);
    const long long stride = (long long)blockDim.x * gridDim.x;
    float dangling = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nd; i += stride) {
        const int degree = out_degree[i];
        const float share = degree > 0 ? rank[i] / (float)degree : 0.0f;
        if (degree <= 0) {
            dangling += rank[i];
        }
        send[i] = share;
        own[i] = share;
    }
    pr_part_block_add(dangling, &state[PR_PART_LOCAL_DANGLING]);
}
