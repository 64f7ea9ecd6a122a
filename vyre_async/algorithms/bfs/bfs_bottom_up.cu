#include "bfs_prelude.cuh"

extern "C" __global__ void bfs_bottom_up(const long long* __restrict__ in_offsets,
                                         const int* __restrict__ in_indices,
                                         int* __restrict__ levels,
                                         int* __restrict__ state,
                                         int n)
{
    if (state[2] != 0 || state[3] != 1) {
        return;
    }
    const int level = state[0];
    const int next = level + 1;
    const long long stride = (long long)blockDim.x * gridDim.x;
    int found = 0;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        if (levels[v] != -1) {
            continue;
        }
        // Vertices written during this launch go from -1 to next, never to level, so
        // racing with those writes cannot change what this scan finds.
        const long long end = __ldg(&in_offsets[v + 1]);
        for (long long j = __ldg(&in_offsets[v]); j < end; ++j) {
            if (levels[__ldg(&in_indices[j])] == level) {
                levels[v] = next;
                ++found;
                break;
            }
        }
    }
    block_add_count(found, &state[1]);
}
