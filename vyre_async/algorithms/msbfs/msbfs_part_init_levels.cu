#include "msbfs_part_prelude.cuh"

// levels[lane * nd + i] of every lane with a valid source: 0 where vertex first + i is
// the lane's source, else -1. Rows of other lanes are never read back and are left as
// they are (a lone query fills one row of its 64).
extern "C" __global__ void msbfs_part_init_levels(const long long* __restrict__ offsets,
                                                  const int* __restrict__ sources,
                                                  int* __restrict__ levels,
                                                  const int* __restrict__ state,
                                                  int part,
                                                  long long chunk,
                                                  long long n_total,
                                                  long long n1,
                                                  int lanes,
                                                  long long lv)
{
    const long long nd = n1 - 1;
    const long long first = (long long)part * chunk;
    if (nd <= 0 || part < 0 || chunk < 1 || first + nd > n_total || lv < (long long)lanes * nd) {
        return;
    }
    const unsigned long long* active = part_u64(state, PSTATE_ACTIVE);
    // Lane by lane (a row each), so that no element pays a 64-bit division.
    for (int lane = 0; lane < lanes && lane < 64 * PART_MAX_WORDS; ++lane) {
        if (((active[lane >> 6] >> (lane & 63)) & 1ull) == 0ull) {
            continue;
        }
        const long long own = (long long)sources[lane] - first;
        int* row = levels + (long long)lane * nd;
        for (long long i = part_tid(); i < nd; i += part_threads()) {
            row[i] = i == own ? 0 : -1;
        }
    }
}
