#include "msbfs_part_lists.cuh"

// Top-down: every frontier word of this device's vertices is or-ed into the outbox word
// of each out-neighbour (global place), for the neighbour's owner to mask. A warp takes
// 32 / group vertices, a team each; a narrow out-list is walked by its team, a wide one
// by the whole warp; a hub's (PART_HUB_LANE_EDGES / group edges or more) is left to
// msbfs_part_push_hubs.
extern "C" __global__ void msbfs_part_push(const long long* __restrict__ offsets,
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
    if (state[PSTATE_DONE] != 0 || state[PSTATE_DIRECTION] != PART_TOP_DOWN ||
        !part_valid(nd, n_total, parts, part, chunk, words, nd * words, gw)) {
        return;
    }
    const unsigned long long* own = recv + (long long)part * chunk * words;
    const int group = part_group(words);
    const int slots = 32 / group;
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned team = part_team_mask(group, slot);
    const long long hub_min = part_hub_min(group);
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long tiles = (nd + slots - 1) / slots;
    for (long long tile = warp; tile < tiles; tile += warps) {
        const long long v = tile * slots + slot;
        const bool mine = v < nd && w < words;
        const unsigned long long bits = mine ? own[v * words + w] : 0ull;
        const bool hot = (__ballot_sync(PART_FULL_MASK, bits != 0ull) & team) != 0u;
        long long begin = 0;
        long long end = 0;
        long long degree = 0;
        if (hot) {
            const long long a = __ldg(&offsets[v]);
            const long long b = __ldg(&offsets[v + 1]);
            degree = b - a;
            begin = max(a, 0LL);
            end = min(b, e);
        }
        const bool wide = degree >= PART_WIDE_MIN_DEGREE && degree < hub_min;
        const bool narrow = degree > 0 && degree < PART_WIDE_MIN_DEGREE;
        unsigned wide_leaders = __ballot_sync(PART_FULL_MASK, wide && w == 0);
        while (wide_leaders != 0u) {
            const int leader = __ffs(wide_leaders) - 1;
            wide_leaders &= wide_leaders - 1u;
            const long long first = __shfl_sync(PART_FULL_MASK, begin, leader);
            const long long last = __shfl_sync(PART_FULL_MASK, end, leader);
            const unsigned long long leader_bits = __shfl_sync(PART_FULL_MASK, bits, leader + w);
            part_warp_push(first, last, indices, send, leader_bits, words, group, slot, w,
                           n_total);
        }
        if (narrow && bits != 0ull) {
            for (long long k = begin; k < end; ++k) {
                const int u = __ldg(&indices[k]);
                if (u >= 0 && (long long)u < n_total) {
                    atomicOr(&send[(long long)u * words + w], bits);
                }
            }
        }
    }
}
