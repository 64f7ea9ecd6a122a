#include "sssp_light.cuh"

// counts[v] (int32) = how many of v's out-edges weigh less than delta.
extern "C" __global__ void sssp_light_count(const long long* __restrict__ offsets,
                                            const float* __restrict__ weights,
                                            int* __restrict__ counts,
                                            float delta,
                                            long long n1)
{
    walk_light_edges(
        offsets, weights, delta, n1 - 1, [](long long, long long, long long) {},
        [&](long long v, long long count) { counts[v] = (int)count; });
}
