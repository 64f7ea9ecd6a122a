#include "msbfs_prelude.cuh"

// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_record_levels(const long long* __restrict__ offsets,
                                               const unsigned long long* __restrict__ next,
                                               int* __restrict__ levels,
                                               const int* __restrict__ state,
                                               long long n1,
                                               long long vw,
                                               long long lv)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (state[STATE_DONE] != 0 || *state_u64(state, STATE_DISCOVERED) == 0ull || words == 0) {
        return;
    }
    const int level = state[STATE_LEVEL] + 1;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < vw; i += stride) {
        unsigned long long bits = __ldg(&next[i]);
        if (bits == 0ull) {
            continue;
        }
        const long long v = i / words;
        const int w = (int)(i - v * words);
        while (bits != 0ull) {
            const long long lane = 64LL * w + (__ffsll((long long)bits) - 1);
            bits &= bits - 1ull;
            const long long at = lane * n + v;
            if (at < lv) {
                levels[at] = level;
            }
        }
    }
}
