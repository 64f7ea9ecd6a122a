#include "msbfs_part_lists.cuh"

// Pushes the part of hub h's out-list inside edges [cs, ce) if h is a hub with frontier
// bits. All 32 lanes call it with the same h.
__device__ __forceinline__ void push_hub_chunk(long long h,
                                               long long cs,
                                               long long ce,
                                               const long long* __restrict__ offsets,
                                               const int* __restrict__ indices,
                                               const unsigned long long* __restrict__ own,
                                               unsigned long long* __restrict__ send,
                                               long long hub_min,
                                               int words,
                                               int group,
                                               int slot,
                                               int w,
                                               long long n_total)
{
    const long long begin = __ldg(&offsets[h]);
    const long long end = __ldg(&offsets[h + 1]);
    if (end - begin < hub_min) {
        return;  // msbfs_part_push took it
    }
    const unsigned long long bits = w < words ? own[h * words + w] : 0ull;
    if (!__any_sync(PART_FULL_MASK, bits != 0ull)) {
        return;
    }
    part_warp_push(max(begin, cs), min(end, ce), indices, send, bits, words, group, slot, w,
                   n_total);
}

// Top-down, the hubs: this device's out-edges in chunks of PART_HUB_LANE_EDGES / group,
// a warp a chunk; a hub holds at least one chunk, so at most two hubs meet a chunk (the
// owners of its first and last edges). A hub's out-list is so spread over many warps.
extern "C" __global__ void msbfs_part_push_hubs(const long long* __restrict__ offsets,
                                                const int* __restrict__ indices,
                                                const unsigned long long* __restrict__ recv,
                                                unsigned long long* __restrict__ send,
                                                const int* __restrict__ state,
                                                int parts,
                                                int part,
                                                long long chunk,
                                                int words,
                                                long long n_total,
                                                long long n1,
                                                long long e,
                                                long long gw)
{
    const long long nd = n1 - 1;
    if (state[PSTATE_DONE] != 0 || state[PSTATE_DIRECTION] != PART_TOP_DOWN || nd <= 0 ||
        !part_valid(nd, n_total, parts, part, chunk, words, nd * words, gw)) {
        return;
    }
    const unsigned long long* own = recv + (long long)part * chunk * words;
    const int group = part_group(words);
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const long long hub_min = part_hub_min(group);
    const long long edges = min(__ldg(&offsets[nd]), e);
    const long long chunks = edges > 0 ? (edges + hub_min - 1) / hub_min : 0;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = warp; c < chunks; c += warps) {
        const long long cs = c * hub_min;
        const long long ce = min(cs + hub_min, edges);
        const long long first = part_owner_vertex(offsets, 0, nd, cs, lane);
        push_hub_chunk(first, cs, ce, offsets, indices, own, send, hub_min, words, group, slot,
                       w, n_total);
        if (__ldg(&offsets[first + 1]) < ce) {
            const long long last = part_owner_vertex(offsets, first + 1, nd, ce - 1, lane);
            push_hub_chunk(last, cs, ce, offsets, indices, own, send, hub_min, words, group,
                           slot, w, n_total);
        }
    }
}
