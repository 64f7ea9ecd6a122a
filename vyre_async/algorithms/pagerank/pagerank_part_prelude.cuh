#ifndef PAGERANK_PART_PRELUDE
#define PAGERANK_PART_PRELUDE
// PageRank on a graph split over `parts` devices: this device owns vertices
// [part * chunk, part * chunk + nd). A slot of `chunk + 2` floats carries one device's
// shares (rank / out-degree of its vertices) and two header floats: its dangling mass
// and its L1 change of the last iteration. recv holds every device's slot, its own
// included, so vertex u's share is at recv[(u / chunk) * (chunk + 2) + u % chunk], that
// is recv[u + (u / chunk) * 2].
#include "pagerank_part_defines.cuh"


// Whether the bindings describe one part of a split whose every index stays inside the
// bound buffers (nr: rank and sums, sl: send, gl: recv). Kernels do nothing otherwise.
__device__ __forceinline__ bool pr_part_valid(long long nd, long long n_total, int parts,
                                              int part, long long chunk, long long nr,
                                              long long sl, long long gl)
{
    return parts >= 1 && part >= 0 && part < parts && chunk >= 1 && nd >= 0 && nd <= chunk &&
           (long long)part * chunk + nd <= n_total && n_total <= (long long)parts * chunk &&
           nr >= nd && sl >= chunk + PR_PART_HEADER &&
           gl >= (long long)parts * (chunk + PR_PART_HEADER);
}

// Adds every thread's value to *total: summed in shared memory, one global atomic per
// block. Every thread of the block must call it.
__device__ __forceinline__ void pr_part_block_add(float value, float* total)
{
    __shared__ float block_sum;
    if (threadIdx.x == 0) {
        block_sum = 0.0f;
    }
    __syncthreads();
    if (value != 0.0f) {
        atomicAdd(&block_sum, value);
    }
    __syncthreads();
    if (threadIdx.x == 0 && block_sum != 0.0f) {
        atomicAdd(total, block_sum);
    }
}
#endif
