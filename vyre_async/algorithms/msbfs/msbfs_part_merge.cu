#include "msbfs_part_lists.cuh"

// Top-down: this device's vertices' discoveries, or-ed from its own outbox slot and the
// slots the others sent it, less what they had visited. next is zero at every level's
// start (init clears it, advance clears each word it takes), so only the words that
// discovered a lane are stored.
extern "C" __global__ void msbfs_part_merge(const long long* __restrict__ offsets,
                                            const unsigned long long* __restrict__ recv,
                                            const unsigned long long* __restrict__ send,
                                            const unsigned long long* __restrict__ visited,
                                            unsigned long long* __restrict__ next,
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
    if (state[PSTATE_DONE] != 0 || state[PSTATE_DIRECTION] != PART_TOP_DOWN ||
        !part_valid(nd, n_total, parts, part, chunk, words, lw, gw)) {
        return;
    }
    const long long slot = chunk * words;
    const unsigned long long* mine = send + (long long)part * slot;
    for (long long t = part_tid(); t < nd * words; t += part_threads()) {
        unsigned long long found = mine[t];
        for (int e = 0; e < parts; ++e) {
            if (e != part) {
                found |= recv[(long long)e * slot + t];
            }
        }
        int w = 0;
        part_split(t, words, &w);
        const unsigned long long fresh = found & ~visited[t] & part_active(state, w);
        if (fresh != 0ull) {
            next[t] = fresh;
        }
    }
}
