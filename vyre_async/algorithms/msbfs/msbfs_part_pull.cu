#include "msbfs_part_lists.cuh"

// Bottom-up: each lane word a vertex of this device still needs (live lanes it has not
// visited) is looked for among its in-neighbours' frontier words (recv holds every
// device's frontier at its global place); a scan stops once every needed lane is found,
// and a vertex that needs none is skipped. A warp takes 32 / group
// vertices, a team each; a narrow in-list is walked by its team, a wide one by the
// whole warp; a hub's (PART_HUB_LANE_EDGES / group in-edges or more) is left to
// msbfs_part_pull_hubs. next is zero at every level's start (init clears it, advance
// clears each word it takes), so only the words that found a lane are stored.
extern "C" __global__ void msbfs_part_pull(const long long* __restrict__ in_offsets,
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
    if (state[PSTATE_DONE] != 0 || state[PSTATE_DIRECTION] != PART_BOTTOM_UP ||
        !part_valid(nd, n_total, parts, part, chunk, words, lw, gw)) {
        return;
    }
    const int group = part_group(words);
    const int slots = 32 / group;
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned team = part_team_mask(group, slot);
    const unsigned long long live = w < words ? part_live(state, w) : 0ull;
    const long long hub_min = part_hub_min(group);
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long tiles = (nd + slots - 1) / slots;
    for (long long tile = warp; tile < tiles; tile += warps) {
        const long long v = tile * slots + slot;
        const bool mine = v < nd && w < words;
        const long long i = v * words + w;
        unsigned long long need = mine ? ~visited[i] & live : 0ull;
        const bool needy = (__ballot_sync(PART_FULL_MASK, need != 0ull) & team) != 0u;
        long long begin = 0;
        long long end = 0;
        long long degree = 0;
        if (needy) {
            const long long a = __ldg(&in_offsets[v]);
            const long long b = __ldg(&in_offsets[v + 1]);
            degree = b - a;
            begin = max(a, 0LL);
            end = min(b, ein);
        }
        if (degree >= hub_min) {
            need = 0ull;  // msbfs_part_pull_hubs pulls it
        }
        const bool wide = degree >= PART_WIDE_MIN_DEGREE && degree < hub_min;
        const bool narrow = degree > 0 && degree < PART_WIDE_MIN_DEGREE;
        unsigned long long acc = 0ull;
        unsigned wide_leaders = __ballot_sync(PART_FULL_MASK, wide && w == 0);
        while (wide_leaders != 0u) {
            const int leader = __ffs(wide_leaders) - 1;
            wide_leaders &= wide_leaders - 1u;
            const long long first = __shfl_sync(PART_FULL_MASK, begin, leader);
            const long long last = __shfl_sync(PART_FULL_MASK, end, leader);
            const unsigned long long leader_need = __shfl_sync(PART_FULL_MASK, need, leader + w);
            const unsigned long long got = part_warp_pull(first, last, in_indices, recv,
                                                          leader_need, words, group, slot, w,
                                                          n_total);
            if (slot == leader / group) {
                acc = got;
            }
        }
        // Short lists: each team walks its own, all in step so the votes see every lane;
        // a team stops once its vertex has every lane it needs.
        long long j = narrow ? begin : 0;
        const long long stop = narrow ? end : 0;
        bool covered = !narrow;
        while (__any_sync(PART_FULL_MASK, !covered)) {
            if (!covered) {
                int u[PART_UNROLL];
#pragma unroll
                for (int k = 0; k < PART_UNROLL; ++k) {
                    u[k] = j + k < stop ? __ldg(&in_indices[j + k]) : -1;
                }
                if (w < words) {
#pragma unroll
                    for (int k = 0; k < PART_UNROLL; ++k) {
                        if (u[k] >= 0 && (long long)u[k] < n_total) {
                            acc |= __ldg(&recv[(long long)u[k] * words + w]);
                        }
                    }
                }
                j += PART_UNROLL;
            }
            const unsigned have = __ballot_sync(PART_FULL_MASK, (acc & need) == need);
            covered = covered || (have & team) == team || j >= stop;
        }
        if (mine && (acc & need) != 0ull) {
            next[i] = acc & need;
        }
    }
}
