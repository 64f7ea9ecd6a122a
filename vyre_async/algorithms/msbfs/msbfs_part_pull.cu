#include "msbfs_part_prelude.cuh"

// Bottom-up: each lane word a vertex of this device still needs is looked for among its
// in-neighbours' frontier words (recv holds every device's frontier at its global
// place); the scan stops once every needed lane is found.
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
    for (long long t = part_tid(); t < nd * words; t += part_threads()) {
        const long long i = t / words;
        const int w = (int)(t - i * words);
        const unsigned long long need = part_active(state, w) & ~visited[t];
        unsigned long long found = 0ull;
        if (need != 0ull) {
            const long long stop = min(in_offsets[i + 1], ein);
            for (long long k = max(in_offsets[i], 0LL); k < stop; ++k) {
                const long long u = in_indices[k];
                if (u >= 0 && u < n_total) {
                    found |= recv[u * words + w] & need;
                    if (found == need) {
                        break;
                    }
                }
            }
        }
        next[t] = found;
    }
}
