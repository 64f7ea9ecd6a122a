#include "pagerank_warp_tasks.cuh"
#include "pagerank_part_prelude.cuh"

// PR_PART_GATHER_CHUNK edges per warp task, as in pr_gather: a hub's in-list is cut
// into many tasks spread over the grid, so no thread holds the launch open for a hub
// (one thread per vertex did: a hub of R-MAT scale 24 has about 10^6 in-edges).
// Groups of 32 edges a warp gathers at once: their loads are in flight together.
#define PART_STEPS 2

// Vertex u's share in recv: slot (u / chunk) at u % chunk, that is u plus the headers
// of the slots before it. The owner comes from comparisons with the slots' bounds
// (parts are few), not from a 64-bit division per edge.
__device__ __forceinline__ float pr_part_share_of(const float* __restrict__ recv,
                                                  int u,
                                                  int parts,
                                                  long long chunk)
{
    long long owner = 0;
    long long bound = chunk;
    for (int e = 1; e < parts; ++e) {
        owner += (long long)u >= bound ? 1 : 0;
        bound += chunk;
    }
    return __ldg(&recv[(long long)u + owner * PR_PART_HEADER]);
}

// Adds each of this device's vertices' in-neighbours' shares (every device's slot is in
// recv) to its sum, zeroed by pr_part_init and pr_part_update. The part's in-edges, not
// its vertices, are split over the grid as in pr_gather: a warp takes
// PR_PART_GATHER_CHUNK edges, merges the lists of the vertices they belong to (32 at a
// time), sums each run of lanes with one owner and adds it with one atomic.
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
    if (state[PR_PART_DONE] != 0.0f || nd <= 0 ||
        !pr_part_valid(nd, n_total, parts, part, chunk, nr, chunk + PR_PART_HEADER, gl)) {
        return;
    }
    const long long edges = min(__ldg(&in_offsets[nd]), ein);
    const unsigned lane = threadIdx.x & 31u;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long task_edges = PR_PART_GATHER_CHUNK;
    for (long long cs = warp * task_edges; cs < edges; cs += warps * task_edges) {
        const long long ce = min(cs + task_edges, edges);
        const long long v0 = owning_vertex(in_offsets, nd, cs);
        const long long v1 = owning_vertex(in_offsets, nd, ce - 1);
        for (long long vw = v0; vw <= v1; vw += 32) {
            const long long v = vw + lane;
            int begin = (int)(ce - cs);  // chunk-relative; lanes past v1 hold no edges
            int end = begin;
            if (v <= v1) {
                begin = (int)(min(max(__ldg(&in_offsets[v]), cs), ce) - cs);
                end = (int)(max(min(__ldg(&in_offsets[v + 1]), ce), cs) - cs);
                end = max(end, begin);
            }
            int total = 0;
            const int start = exclusive_scan32(end - begin, lane, &total);
            const int shift = begin - start;  // merged position k is chunk edge k + shift
            for (int k0 = 0; k0 < total; k0 += 32 * PART_STEPS) {
                int owner[PART_STEPS];
                int first[PART_STEPS];
                float x[PART_STEPS];
#pragma unroll
                for (int s = 0; s < PART_STEPS; ++s) {
                    const int k = k0 + 32 * s + (int)lane;
                    owner[s] = owner32(start, k);
                    first[s] = max(__shfl_sync(FULL_MASK, start, owner[s]) - (k - (int)lane), 0);
                    const int edge = k + __shfl_sync(FULL_MASK, shift, owner[s]);
                    const int u = k < total ? __ldg(&in_indices[cs + edge]) : -1;
                    x[s] = (u >= 0 && (long long)u < n_total)
                               ? pr_part_share_of(recv, u, parts, chunk)
                               : 0.0f;
                }
#pragma unroll
                for (int s = 0; s < PART_STEPS; ++s) {
                    const int k = k0 + 32 * s + (int)lane;
                    float sum = x[s];
                    for (int d = 1; d < 32; d <<= 1) {
                        const float y = __shfl_up_sync(FULL_MASK, sum, d);
                        if ((int)lane - d >= first[s]) {
                            sum += y;
                        }
                    }
                    const int next_first = __shfl_down_sync(FULL_MASK, first[s], 1);
                    if (k < total && (lane == 31u || next_first != first[s] || k + 1 == total)) {
                        atomicAdd(&sums[vw + owner[s]], sum);
                    }
                }
            }
        }
    }
}
