#include "msbfs_prelude.cuh"

#define INIT_TILE 1024

// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_init(const long long* __restrict__ offsets,
                                      const int* __restrict__ sources,
                                      unsigned long long* __restrict__ visited,
                                      unsigned long long* __restrict__ frontier,
                                      unsigned long long* __restrict__ next,
                                      int* __restrict__ state,
                                      int max_level,
                                      long long n1,
                                      int lanes,
                                      long long vw)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    const int used = (int)min((long long)lanes, 64LL * words);
    if (blockIdx.x == 0) {
        __shared__ unsigned long long active[MAX_WORDS];
        __shared__ int count;
        if (threadIdx.x < MAX_WORDS) {
            active[threadIdx.x] = 0ull;
        }
        if (threadIdx.x == 0) {
            count = 0;
        }
        __syncthreads();
        for (int lane = threadIdx.x; lane < used; lane += blockDim.x) {
            const int s = __ldg(&sources[lane]);
            if (s >= 0 && s < n) {
                atomicOr(&active[lane >> 6], 1ull << (lane & 63));
                atomicAdd(&count, 1);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 0; k < STATE_ACTIVE; ++k) {
                state[k] = 0;
            }
            state[STATE_MAX_LEVEL] = max_level;
            state[STATE_DONE] = (words == 0 || count == 0 || max_level <= 0) ? 1 : 0;
            state[STATE_WIDTH] = words;
            state[STATE_LANES] = count;
            *state_u64(state, STATE_REACHED) = (unsigned long long)count;
        }
        if (threadIdx.x < MAX_WORDS) {
            state_u64(state, STATE_ACTIVE)[threadIdx.x] = active[threadIdx.x];
            state_u64(state, STATE_LIVE)[threadIdx.x] = active[threadIdx.x];
            state_u64(state, STATE_NEXT_LIVE)[threadIdx.x] = 0ull;
        }
    }
    // Each block builds a tile of words in shared memory (cleared, then the source bits
    // that fall in it), then stores it: no word is both cleared and or-ed in global memory.
    __shared__ unsigned long long seeds[INIT_TILE];
    const long long tile = min((long long)blockDim.x, (long long)INIT_TILE);
    const long long stride = tile * gridDim.x;
    for (long long base = blockIdx.x * tile; base < vw; base += stride) {
        if (threadIdx.x < tile) {
            seeds[threadIdx.x] = 0ull;
        }
        __syncthreads();
        for (int lane = threadIdx.x; lane < used; lane += blockDim.x) {
            const int s = __ldg(&sources[lane]);
            if (s >= 0 && s < n) {
                const long long k = (long long)s * words + (lane >> 6) - base;
                if (k >= 0 && k < tile) {
                    atomicOr(&seeds[k], 1ull << (lane & 63));
                }
            }
        }
        __syncthreads();
        const long long i = base + threadIdx.x;
        if (threadIdx.x < tile && i < vw) {
            visited[i] = seeds[threadIdx.x];
            frontier[i] = seeds[threadIdx.x];
            next[i] = 0ull;
        }
        __syncthreads();
    }
}
