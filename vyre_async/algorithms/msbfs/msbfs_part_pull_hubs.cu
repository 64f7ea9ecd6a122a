#include "msbfs_part_lists.cuh"

// Pulls the part of hub h's in-list inside edges [cs, ce) and ors what it finds into
// next. Chunks of one hub race on its next words, but next only gains bits, so a chunk
// looks only for the lanes no chunk that ran before it has found (next read through
// L2, where the others' atomics land), as one device's hub chunks do through visited.
// All 32 lanes call it with the same h.
__device__ __forceinline__ void pull_hub_chunk(long long h,
                                               long long cs,
                                               long long ce,
                                               const long long* __restrict__ in_offsets,
                                               const int* __restrict__ in_indices,
                                               const unsigned long long* __restrict__ recv,
                                               const unsigned long long* __restrict__ visited,
                                               unsigned long long* __restrict__ next,
                                               unsigned long long live,
                                               long long hub_min,
                                               int words,
                                               int group,
                                               int slot,
                                               int w,
                                               long long n_total)
{
    const long long begin = __ldg(&in_offsets[h]);
    const long long end = __ldg(&in_offsets[h + 1]);
    if (end - begin < hub_min) {
        return;  // msbfs_part_pull took it
    }
    const long long i = h * words + w;
    const unsigned long long need = w < words ? ~(visited[i] | __ldcg(&next[i])) & live : 0ull;
    if (!__any_sync(PART_FULL_MASK, need != 0ull)) {
        return;
    }
    const unsigned long long got = part_warp_pull(max(begin, cs), min(end, ce), in_indices, recv,
                                                  need, words, group, slot, w, n_total);
    const unsigned long long fresh = got & need;
    if (slot == 0 && fresh != 0ull) {
        atomicOr(&next[i], fresh);
    }
}

// Bottom-up, the hubs: this device's in-edges in chunks of PART_HUB_LANE_EDGES / group,
// a warp a chunk; at most two hubs meet a chunk (the owners of its first and last
// edges). next is zero at the level's start; msbfs_part_pull leaves the hubs' words.
extern "C" __global__ void msbfs_part_pull_hubs(const long long* __restrict__ in_offsets,
                                                const int* __restrict__ in_indices,
                                                const unsigned long long* __restrict__ recv,
                                                const unsigned long long* __restrict__ visited,
                                                unsigned long long* __restrict__ next,
                                                const int* __restrict__ state,
                                                int parts,
                                                int part,
                                                long long chunk,
                                                int words,
                                                long long n_total,
                                                long long n1,
                                                long long ein,
                                                long long lw,
                                                long long gw)
{
    const long long nd = n1 - 1;
    if (state[PSTATE_DONE] != 0 || state[PSTATE_DIRECTION] != PART_BOTTOM_UP || nd <= 0 ||
        !part_valid(nd, n_total, parts, part, chunk, words, lw, gw)) {
        return;
    }
    const int group = part_group(words);
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned long long live = w < words ? part_live(state, w) : 0ull;
    const long long hub_min = part_hub_min(group);
    const long long edges = min(__ldg(&in_offsets[nd]), ein);
    const long long chunks = edges > 0 ? (edges + hub_min - 1) / hub_min : 0;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = warp; c < chunks; c += warps) {
        const long long cs = c * hub_min;
        const long long ce = min(cs + hub_min, edges);
        const long long first = part_owner_vertex(in_offsets, 0, nd, cs, lane);
        pull_hub_chunk(first, cs, ce, in_offsets, in_indices, recv, visited, next, live, hub_min,
                       words, group, slot, w, n_total);
        if (__ldg(&in_offsets[first + 1]) < ce) {
            const long long last = part_owner_vertex(in_offsets, first + 1, nd, ce - 1, lane);
            pull_hub_chunk(last, cs, ce, in_offsets, in_indices, recv, visited, next, live,
                           hub_min, words, group, slot, w, n_total);
        }
    }
}
