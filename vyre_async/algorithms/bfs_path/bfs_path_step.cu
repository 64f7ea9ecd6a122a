#include "bfs_path_defines.cuh"

#define FULL_MASK 0xffffffffu

// Runs after each BFS level (after bfs_advance). Once the target has a level L, one warp
// walks back from it: at each step, to the first in-neighbour (in in-list order) one
// level closer to the source, writing path[L] = target down to path[0] = source; then
// it ends the traversal with state[STATE_DONE] = PATH_FOUND, so no further level runs
// and the host reads path[0, L] with L = state[STATE_LEVEL]. Levels up to L are final
// by then: each level's kernels have finished before this one starts. Launched as one
// block of 32 threads; anything else, or a target outside [0, n), does nothing. Levels
// that are not one traversal's (a level >= n, a step with no in-neighbour one level
// closer) end it with PATH_LOST instead, and nothing is written outside path.
extern "C" __global__ void bfs_path_step(const long long* __restrict__ in_offsets,
                                         const int* __restrict__ in_indices,
                                         const int* __restrict__ levels,
                                         int* __restrict__ state,
                                         const int* __restrict__ goal,
                                         int* __restrict__ path,
                                         int n)
{
    if (blockIdx.x != 0 || blockDim.x != 32 || state[STATE_DONE] != 0) {
        return;
    }
    const int target = goal[0];
    if (target < 0 || target >= n) {
        return;
    }
    const int level = levels[target];
    if (level < 0) {
        return;
    }
    const unsigned lane = threadIdx.x;
    if (level >= n) {  // not a traversal's level: the path would not fit
        if (lane == 0u) {
            state[STATE_DONE] = PATH_LOST;
        }
        return;
    }
    int v = target;
    if (lane == 0u) {
        path[level] = v;
    }
    bool complete = true;
    for (int want = level - 1; want >= 0; --want) {
        const long long last = in_offsets[v + 1];
        int found = -1;  // the same in every lane: it only changes through a shuffle
        for (long long j0 = in_offsets[v]; j0 < last && found < 0; j0 += 32) {
            const long long j = j0 + lane;
            const int u = j < last ? in_indices[j] : -1;
            const bool hit = u >= 0 && levels[u] == want;
            const unsigned hits = __ballot_sync(FULL_MASK, hit);
            if (hits != 0u) {
                found = __shfl_sync(FULL_MASK, u, __ffs(hits) - 1);
            }
        }
        if (found < 0) {  // not levels of one traversal: say so rather than write garbage
            complete = false;
            break;
        }
        v = found;
        if (lane == 0u) {
            path[want] = v;
        }
    }
    __syncwarp();
    if (lane == 0u) {
        state[STATE_DONE] = complete ? PATH_FOUND : PATH_LOST;
    }
}
