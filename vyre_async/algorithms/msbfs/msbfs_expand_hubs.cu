#include "msbfs_prelude.cuh"
#include "msbfs_pull.cuh"

// The vertex whose in-list holds edge j, given offsets[lo] <= j < offsets[hi] (or
// hi == n): a 32-way search, one probe per lane, so about log32(n) dependent loads.
__device__ __forceinline__ long long warp_owner_vertex(const long long* __restrict__ offsets,
                                                       long long lo,
                                                       long long hi,
                                                       long long j,
                                                       int lane)
{
    while (hi - lo > 1) {
        const long long step = (hi - lo + 31) / 32;
        const long long probe = lo + lane * step;
        const bool below = probe < hi && __ldg(&offsets[probe]) <= j;
        // Offsets never decrease: the probes at or below j are a prefix of the lanes.
        const unsigned ballot = __ballot_sync(FULL_MASK, below);
        lo += (31 - __clz(ballot)) * step;
        hi = min(lo + step, hi);
    }
    return lo;
}

// Pulls the part of hub h's in-list inside chunk [cs, ce) and merges it into next and
// visited. Chunks race on a hub's words, but next only gains bits (reading visited
// early or late only changes which chunk sets a bit), and the old value of next tells
// which chunk found a bit first, so each pair is counted once.
__device__ __forceinline__ void pull_hub_chunk(long long h,
                                               long long cs,
                                               long long ce,
                                               const long long* __restrict__ in_offsets,
                                               const int* __restrict__ in_indices,
                                               const unsigned long long* __restrict__ frontier,
                                               unsigned long long* __restrict__ next,
                                               unsigned long long* __restrict__ visited,
                                               unsigned long long live,
                                               long long hub_min,
                                               int words,
                                               int group,
                                               int slot,
                                               int w,
                                               unsigned long long* found,
                                               unsigned long long* gained)
{
    const long long begin = __ldg(&in_offsets[h]);
    const long long end = __ldg(&in_offsets[h + 1]);
    if (end - begin < hub_min) {
        return;  // msbfs_expand took it
    }
    const long long i = h * words + w;
    const unsigned long long need = w < words ? ~visited[i] & live : 0ull;
    if (!__any_sync(FULL_MASK, need != 0ull)) {
        return;
    }
    const unsigned long long got =
        warp_pull(max(begin, cs), min(end, ce), in_indices, frontier, need, words, group, slot, w);
    const unsigned long long fresh = got & need;
    if (slot == 0 && fresh != 0ull) {
        const unsigned long long before = atomicOr(&next[i], fresh);
        atomicOr(&visited[i], fresh);
        const unsigned long long gain = fresh & ~before;
        *found += __popcll(gain);
        *gained |= gain;
    }
}

extern "C" __global__ void msbfs_expand_hubs(const long long* __restrict__ in_offsets,
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
    if (state[STATE_DONE] != 0 || words == 0) {
        return;
    }
    const int group = msbfs_group(words);
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned long long live = w < words ? state_u64(state, STATE_LIVE)[w] : 0ull;
    // A hub holds at least one chunk of edges, so at most two hubs meet a chunk: the
    // owner of its first edge and the owner of its last.
    const long long chunk = HUB_LANE_EDGES / group;
    const long long edges = __ldg(&in_offsets[n]);
    const long long chunks = (edges + chunk - 1) / chunk;
    unsigned long long found = 0ull;
    unsigned long long gained = 0ull;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = warp; c < chunks; c += warps) {
        const long long cs = c * chunk;
        const long long ce = min(cs + chunk, edges);
        const long long first = warp_owner_vertex(in_offsets, 0, n, cs, lane);
        pull_hub_chunk(first, cs, ce, in_offsets, in_indices, frontier, next, visited, live,
                       chunk, words, group, slot, w, &found, &gained);
        if (__ldg(&in_offsets[first + 1]) < ce) {
            const long long last = warp_owner_vertex(in_offsets, first + 1, n, ce - 1, lane);
            pull_hub_chunk(last, cs, ce, in_offsets, in_indices, frontier, next, visited, live,
                           chunk, words, group, slot, w, &found, &gained);
        }
    }
    flush_progress(found, gained, group, words, state);
}
