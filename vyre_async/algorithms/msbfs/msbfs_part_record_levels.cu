#include "msbfs_part_lists.cuh"

// levels[lane * nd + i] = level + 1 for every lane that discovered vertex first + i.
extern "C" __global__ void msbfs_part_record_levels(const long long* __restrict__ offsets,
                                                    const unsigned long long* __restrict__ next,
                                                    int* __restrict__ levels,
                                                    const int* __restrict__ state,
                                                    int words,
                                                    long long n1,
                                                    long long lw,
                                                    long long lv)
{
    const long long nd = n1 - 1;
    if (state[PSTATE_DONE] != 0 || nd <= 0 || words < 1 || words > PART_MAX_WORDS ||
        lw < nd * words || lv < 64LL * words * nd) {
        return;
    }
    const int level = state[PSTATE_LEVEL] + 1;
    for (long long t = part_tid(); t < nd * words; t += part_threads()) {
        unsigned long long bits = next[t];
        int w = 0;
        const long long i = part_split(t, words, &w);
        while (bits != 0ull) {
            const int b = __ffsll((long long)bits) - 1;
            bits &= bits - 1ull;
            levels[(64LL * w + b) * nd + i] = level;
        }
    }
}
