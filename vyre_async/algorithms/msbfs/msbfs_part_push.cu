#include "msbfs_part_prelude.cuh"

// Top-down: every frontier word of this device's vertices is or-ed into the outbox word
// of each out-neighbour (global place), for the neighbour's owner to mask.
extern "C" __global__ void msbfs_part_push(const long long* __restrict__ offsets,
                                           const int* __restrict__ indices,
                                           const unsigned long long* __restrict__ recv,
                                           unsigned long long* __restrict__ send,
                                           const int* __restrict__ state,
                                           int parts,
                                           int part,
                                           long long chunk,
                                           int words,
                                           long long n_total,
                                           long long n1,
                                           long long e,
                                           long long gw)
{
    const long long nd = n1 - 1;
    if (state[PSTATE_DONE] != 0 || state[PSTATE_DIRECTION] != PART_TOP_DOWN ||
        !part_valid(nd, n_total, parts, part, chunk, words, nd * words, gw)) {
        return;
    }
    const unsigned long long* own = recv + (long long)part * chunk * words;
    const long long mine = nd * words;
    for (long long t = part_tid(); t < mine; t += part_threads()) {
        const unsigned long long bits = own[t];
        if (bits == 0ull) {
            continue;
        }
        const long long i = t / words;
        const int w = (int)(t - i * words);
        const long long stop = min(offsets[i + 1], e);
        for (long long k = max(offsets[i], 0LL); k < stop; ++k) {
            const long long v = indices[k];
            if (v >= 0 && v < n_total) {
                atomicOr(&send[v * words + w], bits);
            }
        }
    }
}
