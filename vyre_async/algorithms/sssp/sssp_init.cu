#include "sssp_prelude.cuh"

// Every distance +inf but the source's 0, no stamps, nothing far, and the source
// scheduled for step 0: in the light lists by its light degree (narrow queue or
// chunks of its light list), and as the first member by its degree (members list or
// chunks of its list). An out-of-range source, or one without out-edges, leaves the
// state done.
extern "C" __global__ void sssp_init(const long long* __restrict__ offsets,
                                     const long long* __restrict__ light_offsets,
                                     float* __restrict__ dist,
                                     int* __restrict__ stamp,
                                     unsigned* __restrict__ far,
                                     int* __restrict__ queue_a,
                                     long long* __restrict__ chunks_a,
                                     int* __restrict__ members,
                                     long long* __restrict__ heavy,
                                     int* __restrict__ state,
                                     int source,
                                     float delta,
                                     float max_distance,
                                     int heavy_edges,
                                     long long n,
                                     long long n1,
                                     long long far_words,
                                     long long chunk_capacity)
{
    // n1 (the offsets' length) must be n + 1, or the source's list would be read
    // outside the offsets, and the far words must cover n vertices: else nothing runs.
    const bool bound = n1 == n + 1 && 4 * far_words >= n;
    const bool valid = bound && source >= 0 && source < n;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const bool mine = valid && i == source;
        dist[i] = mine ? 0.0f : __int_as_float(INF_BITS);
        stamp[i] = mine ? 0 : -1;
    }
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < far_words; i += stride) {
        far[i] = 0u;  // four vertices' far flags, one byte each
    }
    if (blockIdx.x != 0) {
        return;
    }
    const long long degree = valid ? __ldg(&offsets[source + 1]) - __ldg(&offsets[source]) : 0;
    const long long light =
        valid ? __ldg(&light_offsets[source + 1]) - __ldg(&light_offsets[source]) : 0;
    const long long light_chunks =
        light >= WIDE_MIN_DEGREE ? (light + CHUNK_EDGES - 1) / CHUNK_EDGES : 0;
    const long long heavy_chunks =
        degree >= WIDE_MIN_DEGREE ? (degree + CHUNK_EDGES - 1) / CHUNK_EDGES : 0;
    const bool overflow = light_chunks > chunk_capacity || heavy_chunks > chunk_capacity;
    const long long entry = (long long)source << 32;
    for (long long c = threadIdx.x; !overflow && c < light_chunks; c += blockDim.x) {
        chunks_a[c] = entry | c;
    }
    for (long long c = threadIdx.x; !overflow && c < heavy_chunks; c += blockDim.x) {
        heavy[c] = entry | c;
    }
    if (threadIdx.x != 0) {
        return;
    }
    const bool narrow = light > 0 && light < WIDE_MIN_DEGREE;
    const bool member = degree > 0 && degree < WIDE_MIN_DEGREE;
    for (int i = 0; i < STATE_WORDS; ++i) {
        state[i] = 0;
    }
    if (narrow) {
        queue_a[0] = source;
    }
    if (member) {
        members[0] = source;
    }
    state[STATE_DONE] = (degree == 0 || overflow) ? 1 : 0;
    state[STATE_MODE] = MODE_LIGHT;
    state[STATE_NARROW] = narrow ? 1 : 0;
    state[STATE_CHUNKS] = overflow ? 0 : (int)light_chunks;
    state[STATE_MEMBERS_FILL] = member ? 1 : 0;
    state[STATE_HEAVY_FILL] = overflow ? 0 : (int)heavy_chunks;
    state[STATE_THRESHOLD] = __float_as_int(delta);
    state[STATE_DELTA] = __float_as_int(delta);
    state[STATE_MAX_DISTANCE] = __float_as_int(max_distance);
    state[STATE_FAR_MIN] = INF_BITS;
    state[STATE_REACHED] = valid ? 1 : 0;
    state[STATE_SOURCE] = source;
    state[STATE_HEAVY_EDGES] = heavy_edges != 0 ? 1 : 0;
    state[STATE_OVERFLOW] = overflow ? 1 : (bound ? 0 : 2);
}
