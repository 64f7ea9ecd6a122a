#include "pagerank_part_prelude.cuh"

// Each of this device's vertices sums its in-neighbours' shares (every device's slot is
// in recv). One thread per vertex.
extern "C" __global__ void pr_part_gather(const long long* __restrict__ in_offsets,
                                          const int* __restrict__ in_indices,
                                          const float* __restrict__ recv,
                                          float* __restrict__ sums,
                                          const float* __restrict__ state,
                                          int parts,
                                          int part,
                                          long long chunk,
                                          long long n_total,
                                          long long n1,
                                          long long ein,
                                          long long nr,
                                          long long gl)
{
    const long long nd = n1 - 1;
    if (state[PR_PART_DONE] != 0.0f ||
        !pr_part_valid(nd, n_total, parts, part, chunk, nr, chunk + PR_PART_HEADER, gl)) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nd; i += stride) {
        const long long stop = min(in_offsets[i + 1], ein);
        float total = 0.0f;
        for (long long k = max(in_offsets[i], 0LL); k < stop; ++k) {
            const long long u = in_indices[k];
            if (u >= 0 && u < n_total) {
                const long long owner = u / chunk;
                total += recv[owner * (chunk + PR_PART_HEADER) + (u - owner * chunk)];
            }
        }
        sums[i] = total;
    }
}
