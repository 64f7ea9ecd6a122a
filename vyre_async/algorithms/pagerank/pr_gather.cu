#include "pagerank_warp_tasks.cuh"

// Edges per warp task. A hub's in-list is cut into many tasks spread over the grid,
// so no warp holds the launch open for a hub (one did: 6.4 ms per iteration at R-MAT
// scale 22, SMs active 43% of the time).
#define CHUNK 1024
// Groups of 32 edges a warp gathers at once: their loads are in flight together.
#define STEPS 2

extern "C" __global__ void pr_gather(const long long* __restrict__ in_offsets,
                                     const int* __restrict__ in_indices,
                                     const float* __restrict__ contrib,
                                     float* __restrict__ sums,
                                     const float* __restrict__ state,
                                     int n)
{
    if (state[2] != 0.0f || n <= 0) {
        return;
    }
    const long long edges = __ldg(&in_offsets[n]);
    const unsigned lane = threadIdx.x & 31u;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long cs = warp * CHUNK; cs < edges; cs += warps * CHUNK) {
        const long long ce = min(cs + (long long)CHUNK, edges);
        const long long v0 = owning_vertex(in_offsets, n, cs);
        const long long v1 = owning_vertex(in_offsets, n, ce - 1);
        // The chunk's vertices, 32 at a time: their lists (clipped to the chunk) merged,
        // lane i taking the i-th edge of each 32, then a sum over each run of lanes
        // with the same owner; each run's last lane adds it to the owner's sum.
        for (long long vw = v0; vw <= v1; vw += 32) {
            const long long v = vw + lane;
            int begin = (int)(ce - cs);  // chunk-relative; lanes past v1 hold no edges
            int end = begin;
            if (v <= v1) {
                begin = (int)(max(__ldg(&in_offsets[v]), cs) - cs);
                end = (int)(min(__ldg(&in_offsets[v + 1]), ce) - cs);
            }
            int total = 0;
            const int start = exclusive_scan32(end - begin, lane, &total);
            const int shift = begin - start;  // merged position k is chunk edge k + shift
            for (int k0 = 0; k0 < total; k0 += 32 * STEPS) {
                int owner[STEPS];
                int first[STEPS];
                float x[STEPS];
#pragma unroll
                for (int s = 0; s < STEPS; ++s) {
                    const int k = k0 + 32 * s + (int)lane;
                    owner[s] = owner32(start, k);
                    // The first lane of this step whose edge belongs to the owner.
                    first[s] = max(__shfl_sync(FULL_MASK, start, owner[s]) - (k - (int)lane), 0);
                    const int edge = k + __shfl_sync(FULL_MASK, shift, owner[s]);
                    // One gather per edge: rank[u] / out_degree[u] was stored by the last
                    // pr_update (or pr_init), not recomputed from two gathers here.
                    x[s] = k < total ? __ldg(&contrib[__ldg(&in_indices[cs + edge])]) : 0.0f;
                }
#pragma unroll
                for (int s = 0; s < STEPS; ++s) {
                    const int k = k0 + 32 * s + (int)lane;
                    // Inclusive scan within each run: lane i ends with lanes first..i.
                    float sum = x[s];
                    for (int d = 1; d < 32; d <<= 1) {
                        const float y = __shfl_up_sync(FULL_MASK, sum, d);
                        if ((int)lane - d >= first[s]) {
                            sum += y;
                        }
                    }
                    // A run ends where the next lane starts another run or has no edge.
                    const int next_first = __shfl_down_sync(FULL_MASK, first[s], 1);
                    if (k < total && (lane == 31u || next_first != first[s] || k + 1 == total)) {
                        atomicAdd(&sums[vw + owner[s]], sum);
                    }
                }
            }
        }
    }
}
