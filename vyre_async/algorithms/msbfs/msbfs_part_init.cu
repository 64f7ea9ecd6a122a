#include "msbfs_part_prelude.cuh"

// Sets up one device's share of a partitioned traversal: the state (the same on every
// device: every device reads every source; every source's lane live), its vertices' visited bits and frontier
// (the own slot of recv), a cleared next, and the statistics of its share of the
// sources for the first direction step. Each block builds a tile of words in shared
// memory (cleared, then the source bits that fall in it) and stores it.
extern "C" __global__ void msbfs_part_init(const long long* __restrict__ offsets,
                                           const long long* __restrict__ in_offsets,
                                           const int* __restrict__ sources,
                                           unsigned long long* __restrict__ visited,
                                           unsigned long long* __restrict__ next,
                                           unsigned long long* __restrict__ recv,
                                           unsigned long long* __restrict__ stats_out,
                                           int* __restrict__ state,
                                           int max_level,
                                           int parts,
                                           int part,
                                           long long chunk,
                                           int words,
                                           long long n_total,
                                           long long n1,
                                           int lanes,
                                           long long lw,
                                           long long gw)
{
    const long long nd = n1 - 1;
    const bool valid = part_valid(nd, n_total, parts, part, chunk, words, lw, gw);
    const long long first = (long long)part * chunk;
    const int used = valid ? (int)min((long long)lanes, 64LL * words) : 0;
    if (blockIdx.x == 0) {
        __shared__ unsigned long long active[PART_MAX_WORDS];
        __shared__ unsigned long long seeds;
        __shared__ unsigned long long seed_edges;
        __shared__ int count;
        if (threadIdx.x < PART_MAX_WORDS) {
            active[threadIdx.x] = 0ull;
        }
        if (threadIdx.x == 0) {
            count = 0;
            seeds = 0ull;
            seed_edges = 0ull;
        }
        __syncthreads();
        for (int lane = threadIdx.x; lane < used; lane += blockDim.x) {
            const int s = sources[lane];
            if (s >= 0 && s < n_total) {
                atomicOr(&active[lane >> 6], 1ull << (lane & 63));
                atomicAdd(&count, 1);
                if (s >= first && s < first + nd) {
                    atomicAdd(&seeds, 1ull);
                    const long long i = s - first;
                    atomicAdd(&seed_edges, (unsigned long long)(offsets[i + 1] - offsets[i]));
                }
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 0; k < PSTATE_ACTIVE; ++k) {
                state[k] = 0;
            }
            state[PSTATE_MAX_LEVEL] = max_level;
            state[PSTATE_DONE] = (!valid || count == 0 || max_level <= 0) ? 1 : 0;
            state[PSTATE_WIDTH] = valid ? words : 0;
            state[PSTATE_LANES] = count;
            state[PSTATE_DIRECTION] = PART_TOP_DOWN;
            stats_out[STAT_FRONTIER] = seeds;
            stats_out[STAT_FRONTIER_EDGES] = seed_edges;
            stats_out[STAT_UNEXPLORED_EDGES] = valid ? (unsigned long long)in_offsets[nd] : 0ull;
            stats_out[STAT_DISCOVERED] = 0ull;
        }
        if (threadIdx.x < PART_MAX_WORDS) {
            part_u64(state, PSTATE_ACTIVE)[threadIdx.x] = active[threadIdx.x];
            part_u64(state, PSTATE_LIVE)[threadIdx.x] = active[threadIdx.x];
            stats_out[STAT_GAINED + threadIdx.x] = 0ull;
        }
    }
    if (!valid) {
        return;
    }
    __shared__ unsigned long long tile_bits[PART_INIT_TILE];
    unsigned long long* own = recv + first * words;
    const long long vw = nd * words;
    const long long tile = min((long long)blockDim.x, (long long)PART_INIT_TILE);
    const long long stride = tile * gridDim.x;
    for (long long base = blockIdx.x * tile; base < vw; base += stride) {
        if (threadIdx.x < tile) {
            tile_bits[threadIdx.x] = 0ull;
        }
        __syncthreads();
        for (int lane = threadIdx.x; lane < used; lane += blockDim.x) {
            const int s = sources[lane];
            if (s >= first && s < first + nd) {
                const long long k = (s - first) * words + (lane >> 6) - base;
                if (k >= 0 && k < tile) {
                    atomicOr(&tile_bits[k], 1ull << (lane & 63));
                }
            }
        }
        __syncthreads();
        const long long i = base + threadIdx.x;
        if (threadIdx.x < tile && i < vw) {
            visited[i] = tile_bits[threadIdx.x];
            own[i] = tile_bits[threadIdx.x];
            next[i] = 0ull;
        }
        __syncthreads();
    }
}
