#include "msbfs_part_prelude.cuh"

// Fills what this device sends to the others this level. Top-down: a cleared outbox
// (the push then ors discoveries into it, each vertex's words at its global place).
// Bottom-up: this device's frontier in every other device's slot (the others' pull reads
// it); its own slot, which nothing reads on such a level, is left as it is. Also clears
// this device's statistics for the level's advance.
extern "C" __global__ void msbfs_part_pack(const long long* __restrict__ offsets,
                                           const unsigned long long* __restrict__ recv,
                                           unsigned long long* __restrict__ send,
                                           unsigned long long* __restrict__ stats_out,
                                           const int* __restrict__ state,
                                           int parts,
                                           int part,
                                           long long chunk,
                                           int words,
                                           long long n_total,
                                           long long n1,
                                           long long gw)
{
    const long long nd = n1 - 1;
    if (state[PSTATE_DONE] != 0 || !part_valid(nd, n_total, parts, part, chunk, words, nd * words, gw)) {
        return;
    }
    if (blockIdx.x == 0 && threadIdx.x < PART_STATS) {
        stats_out[threadIdx.x] = 0ull;
    }
    const bool top_down = state[PSTATE_DIRECTION] == PART_TOP_DOWN;
    const long long slot = chunk * words;
    const long long mine = nd * words;
    const unsigned long long* own = recv + (long long)part * slot;
    for (int e = 0; e < parts; ++e) {
        if (e == part && !top_down) {
            continue;
        }
        unsigned long long* out = send + (long long)e * slot;
        for (long long j = part_tid(); j < slot; j += part_threads()) {
            out[j] = (top_down || j >= mine) ? 0ull : own[j];
        }
    }
}
