#include "sssp_light.cuh"

// Copies every edge lighter than delta, in list order, into the light graph whose
// offsets light_offsets holds (an exclusive scan of sssp_light_count's counts).
// A light graph shorter than its offsets say is left unwritten past its end.
extern "C" __global__ void sssp_light_fill(const long long* __restrict__ offsets,
                                           const int* __restrict__ indices,
                                           const float* __restrict__ weights,
                                           const long long* __restrict__ light_offsets,
                                           int* __restrict__ light_indices,
                                           float* __restrict__ light_weights,
                                           float delta,
                                           long long n1,
                                           long long light_edges)
{
    walk_light_edges(offsets, weights, delta, n1 - 1, [&](long long v, long long j, long long rank) {
        const long long at = __ldg(&light_offsets[v]) + rank;
        if (at < light_edges) {
            light_indices[at] = __ldg(&indices[j]);
            light_weights[at] = __ldg(&weights[j]);
        }
    }, [](long long, long long) {});
}
