#include "msbfs_part_prelude.cuh"

// The bookkeeping between two levels, on one thread: counts the level just expanded
// and keeps the lanes it gained on any device as the live ones, stops when the group's
// frontier is empty or the last level is reached, and picks the next level's
// direction. Every device reads the same statistics (its own and copies of the
// others'), so every device takes the same decision.
extern "C" __global__ void msbfs_part_direction(const unsigned long long* __restrict__ stats,
                                                const unsigned long long* __restrict__ stats_out,
                                                int* __restrict__ state,
                                                int parts,
                                                int part,
                                                long long n_total,
                                                int mode,
                                                long long ps)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[PSTATE_DONE] != 0) {
        return;
    }
    if (parts < 1 || part < 0 || part >= parts || ps < (long long)parts * PART_STATS) {
        state[PSTATE_DONE] = 1;
        return;
    }
    if (state[PSTATE_PENDING] != 0) {
        state[PSTATE_LEVEL] += 1;
        state[PSTATE_LEVELS_RUN] += 1;
        state[PSTATE_PENDING] = 0;
        // The lanes any device's last expansion gained are the lanes still live.
        for (int w = 0; w < PART_MAX_WORDS; ++w) {
            unsigned long long gained = 0ull;
            for (int e = 0; e < parts; ++e) {
                const unsigned long long* s =
                    e == part ? stats_out : stats + (long long)e * PART_STATS;
                gained |= s[STAT_GAINED + w];
            }
            part_u64(state, PSTATE_LIVE)[w] = gained & part_u64(state, PSTATE_ACTIVE)[w];
        }
    }
    unsigned long long frontier = 0ull;
    unsigned long long edges = 0ull;
    unsigned long long unexplored = 0ull;
    for (int e = 0; e < parts; ++e) {
        const unsigned long long* s = e == part ? stats_out : stats + (long long)e * PART_STATS;
        frontier += s[STAT_FRONTIER];
        edges += s[STAT_FRONTIER_EDGES];
        unexplored += s[STAT_UNEXPLORED_EDGES];
    }
    if (frontier == 0ull || state[PSTATE_LEVEL] >= state[PSTATE_MAX_LEVEL]) {
        state[PSTATE_DONE] = 1;
        return;
    }
    int direction = state[PSTATE_DIRECTION];
    if (mode == 1) {
        direction = PART_TOP_DOWN;
    } else if (mode == 2) {
        direction = PART_BOTTOM_UP;
    } else if (direction == PART_TOP_DOWN) {
        // A bottom-up scan reads ceil(W / 4) sectors of frontier words per in-edge.
        const int sectors = (state[PSTATE_WIDTH] + PART_SECTOR_WORDS - 1) / PART_SECTOR_WORDS;
        direction = edges * PUSH_ALPHA > unexplored * (unsigned long long)sectors
                        ? PART_BOTTOM_UP
                        : PART_TOP_DOWN;
    } else {
        direction = frontier * PULL_BETA < (unsigned long long)n_total ? PART_TOP_DOWN
                                                                        : PART_BOTTOM_UP;
    }
    state[PSTATE_DIRECTION] = direction;
    state[PSTATE_PENDING] = 1;
}
