#include "msbfs_part_lists.cuh"

// Ends a level on this device: the discoveries join the visited bits and become its
// frontier (the own slot of recv), next is cleared, and the statistics of the new
// frontier, with the lanes it gained word by word, are summed per block in shared
// memory, then once per block into stats_out (cleared by this level's pack). A team of
// `group` lanes takes a vertex, lane w its word w, so a warp reads consecutive words;
// next and visited are written only where a lane was discovered.
extern "C" __global__ void msbfs_part_advance(const long long* __restrict__ offsets,
                                              const long long* __restrict__ in_offsets,
                                              unsigned long long* __restrict__ next,
                                              unsigned long long* __restrict__ visited,
                                              unsigned long long* __restrict__ recv,
                                              unsigned long long* __restrict__ stats_out,
                                              const int* __restrict__ state,
                                              int parts,
                                              int part,
                                              long long chunk,
                                              int words,
                                              long long n_total,
                                              long long n1,
                                              long long lw,
                                              long long gw)
{
    const long long nd = n1 - 1;
    if (state[PSTATE_DONE] != 0 || !part_valid(nd, n_total, parts, part, chunk, words, lw, gw)) {
        return;
    }
    __shared__ unsigned long long sums[PART_STATS];
    if (threadIdx.x < PART_STATS) {
        sums[threadIdx.x] = 0ull;
    }
    __syncthreads();
    unsigned long long* own = recv + (long long)part * chunk * words;
    const int group = part_group(words);
    const int slots = 32 / group;
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned team = part_team_mask(group, slot);
    const unsigned long long active = w < words ? part_active(state, w) : 0ull;
    const long long warp = part_tid() >> 5;
    const long long warps = part_threads() >> 5;
    const long long tiles = (nd + slots - 1) / slots;
    unsigned long long frontier = 0ull;
    unsigned long long edges = 0ull;
    unsigned long long unexplored = 0ull;
    unsigned long long discovered = 0ull;
    unsigned long long gained = 0ull;
    for (long long tile = warp; tile < tiles; tile += warps) {
        const long long v = tile * slots + slot;
        const bool mine = v < nd && w < words;
        unsigned long long bits = 0ull;
        bool open = false;
        if (mine) {
            const long long t = v * words + w;
            bits = next[t];
            const unsigned long long seen = visited[t] | bits;
            if (bits != 0ull) {
                next[t] = 0ull;
                visited[t] = seen;
            }
            own[t] = bits;
            open = (seen & active) != active;
            discovered += (unsigned long long)__popcll(bits);
            gained |= bits;
        }
        const bool fresh = (__ballot_sync(PART_FULL_MASK, bits != 0ull) & team) != 0u;
        const bool still_open = (__ballot_sync(PART_FULL_MASK, open) & team) != 0u;
        if (w == 0 && v < nd) {
            if (fresh) {
                frontier += 1ull;
                edges += (unsigned long long)(offsets[v + 1] - offsets[v]);
            }
            if (still_open) {
                unexplored += (unsigned long long)(in_offsets[v + 1] - in_offsets[v]);
            }
        }
    }
    // Lanes of one word sit `group` apart: the butterfly leaves each with their OR.
    for (int offset = group; offset < 32; offset <<= 1) {
        gained |= __shfl_xor_sync(PART_FULL_MASK, gained, offset);
    }
    if (frontier != 0ull) {
        atomicAdd(&sums[STAT_FRONTIER], frontier);
        atomicAdd(&sums[STAT_FRONTIER_EDGES], edges);
    }
    if (unexplored != 0ull) {
        atomicAdd(&sums[STAT_UNEXPLORED_EDGES], unexplored);
    }
    if (discovered != 0ull) {
        atomicAdd(&sums[STAT_DISCOVERED], discovered);
    }
    if (lane < group && w < words && gained != 0ull) {
        atomicOr(&sums[STAT_GAINED + w], gained);
    }
    __syncthreads();
    if (threadIdx.x < PART_STATS && sums[threadIdx.x] != 0ull) {
        if (threadIdx.x >= STAT_GAINED) {
            atomicOr(&stats_out[threadIdx.x], sums[threadIdx.x]);
        } else {
            atomicAdd(&stats_out[threadIdx.x], sums[threadIdx.x]);
        }
    }
}
