#include "msbfs_prelude.cuh"

// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_record_targets(const long long* __restrict__ offsets,
                                                const unsigned long long* __restrict__ next,
                                                const int* __restrict__ targets,
                                                int* __restrict__ target_levels,
                                                const int* __restrict__ state,
                                                long long n1,
                                                long long vw,
                                                int k,
                                                long long lk)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (state[STATE_DONE] != 0 || *state_u64(state, STATE_DISCOVERED) == 0ull || words == 0) {
        return;
    }
    const int level = state[STATE_LEVEL] + 1;
    const long long items = (long long)k * words;
    const long long stride = (long long)blockDim.x * gridDim.x;
    // Consecutive threads read consecutive words of one target.
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < items; i += stride) {
        const long long t = i / words;
        const int w = (int)(i - t * words);
        const int target = __ldg(&targets[t]);
        if (target < 0 || target >= n) {
            continue;
        }
        unsigned long long bits = __ldg(&next[(long long)target * words + w]);
        while (bits != 0ull) {
            const long long lane = 64LL * w + (__ffsll((long long)bits) - 1);
            bits &= bits - 1ull;
            const long long at = lane * k + t;
            if (at < lk) {
                target_levels[at] = level;
            }
        }
    }
}
