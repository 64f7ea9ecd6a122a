#include "msbfs_prelude.cuh"
#include "msbfs_pull.cuh"

extern "C" __global__ void msbfs_expand(const long long* __restrict__ in_offsets,
                                        const int* __restrict__ in_indices,
                                        const unsigned long long* __restrict__ frontier,
                                        unsigned long long* __restrict__ next,
                                        unsigned long long* __restrict__ visited,
                                        int* __restrict__ state,
                                        long long n1,
                                        long long vw)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    // Uniform exit: only msbfs_init and msbfs_advance write the done word.
    if (state[STATE_DONE] != 0 || words == 0) {
        return;
    }
    const int group = msbfs_group(words);
    const int slots = 32 / group;
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned team = group == 32 ? FULL_MASK : ((1u << group) - 1u) << (slot * group);
    const unsigned long long live = w < words ? state_u64(state, STATE_LIVE)[w] : 0ull;
    const long long hub_min = HUB_LANE_EDGES / group;
    unsigned long long found = 0ull;
    unsigned long long gained = 0ull;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long tiles = (n + slots - 1) / slots;
    // A warp takes `slots` consecutive vertices, one team each: lane (slot, w) owns word
    // w of its vertex, so the warp reads and writes consecutive words.
    for (long long tile = warp; tile < tiles; tile += warps) {
        const long long v = tile * slots + slot;
        const bool mine = v < n && w < words;
        const long long i = v * words + w;
        const unsigned long long seen = mine ? visited[i] : ~0ull;
        unsigned long long need = ~seen & live;
        const bool needy = (__ballot_sync(FULL_MASK, need != 0ull) & team) != 0u;
        long long begin = 0;
        long long end = 0;
        if (needy) {
            begin = __ldg(&in_offsets[v]);
            end = __ldg(&in_offsets[v + 1]);
        }
        const long long degree = end - begin;
        if (degree >= hub_min) {
            need = 0ull;  // msbfs_expand_hubs expands it; its next words are zeroed below
        }
        const bool wide = degree >= WIDE_MIN_DEGREE && degree < hub_min;
        const bool narrow = needy && degree > 0 && degree < WIDE_MIN_DEGREE;
        unsigned long long acc = 0ull;
        unsigned wide_leaders = __ballot_sync(FULL_MASK, wide && w == 0);
        while (wide_leaders != 0u) {
            const int leader = __ffs(wide_leaders) - 1;
            wide_leaders &= wide_leaders - 1u;
            const long long first = __shfl_sync(FULL_MASK, begin, leader);
            const long long last = __shfl_sync(FULL_MASK, end, leader);
            const unsigned long long leader_need = __shfl_sync(FULL_MASK, need, leader + w);
            const unsigned long long got =
                warp_pull(first, last, in_indices, frontier, leader_need, words, group, slot, w);
            if (slot == leader / group) {
                acc = got;
            }
        }
        // Short lists: each team walks its own, all in step so the votes see every lane;
        // a team stops once its vertex has every lane it needs.
        long long j = narrow ? begin : 0;
        const long long stop = narrow ? end : 0;
        bool covered = !narrow;
        while (__any_sync(FULL_MASK, !covered)) {
            if (!covered) {
                int u[UNROLL];
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    u[k] = j + k < stop ? __ldg(&in_indices[j + k]) : -1;
                }
                if (w < words) {
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) {
                        if (u[k] >= 0) {
                            acc |= __ldg(&frontier[(long long)u[k] * words + w]);
                        }
                    }
                }
                j += UNROLL;
            }
            const unsigned have = __ballot_sync(FULL_MASK, (acc & need) == need);
            covered = covered || (have & team) == team || j >= stop;
        }
        if (mine) {
            const unsigned long long fresh = acc & need;
            next[i] = fresh;
            if (fresh != 0ull) {
                visited[i] = seen | fresh;
                found += __popcll(fresh);
                gained |= fresh;
            }
        }
    }
    flush_progress(found, gained, group, words, state);
}
