#include "msbfs_part_prelude.cuh"

// Ends a level on this device: the discoveries join the visited bits and become its
// frontier (the own slot of recv), next is cleared, and the statistics of the new
// frontier are summed per block in shared memory, then once per block into stats_out
// (cleared by this level's pack).
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
    unsigned long long frontier = 0ull;
    unsigned long long edges = 0ull;
    unsigned long long unexplored = 0ull;
    unsigned long long discovered = 0ull;
    for (long long i = part_tid(); i < nd; i += part_threads()) {
        bool fresh = false;
        bool open = false;
        for (int w = 0; w < words; ++w) {
            const long long t = i * words + w;
            const unsigned long long bits = next[t];
            const unsigned long long seen = visited[t] | bits;
            const unsigned long long active = part_active(state, w);
            next[t] = 0ull;
            visited[t] = seen;
            own[t] = bits;
            fresh = fresh || bits != 0ull;
            open = open || (seen & active) != active;
            discovered += (unsigned long long)__popcll(bits);
        }
        if (fresh) {
            frontier += 1ull;
            edges += (unsigned long long)(offsets[i + 1] - offsets[i]);
        }
        if (open) {
            unexplored += (unsigned long long)(in_offsets[i + 1] - in_offsets[i]);
        }
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
    __syncthreads();
    if (threadIdx.x < PART_STATS && sums[threadIdx.x] != 0ull) {
        atomicAdd(&stats_out[threadIdx.x], sums[threadIdx.x]);
    }
}
