#include "sssp_many_prelude.cuh"

// Places each lane's source at distance 0, in its vertex's lane mask for step 0, and
// lists each source vertex's chunks once for step 0; writes a fresh state. Lanes whose
// source is outside [0, n) (such as -1) reach nothing. One block; thread 0 does the
// lanes in order (at most MAX_LANES), the block writes the chunks.
extern "C" __global__ void sssp_many_seed(const long long* __restrict__ offsets,
                                          const int* __restrict__ sources,
                                          float* __restrict__ dist,
                                          unsigned long long* __restrict__ masks_a,
                                          long long* __restrict__ items_a,
                                          int* __restrict__ state,
                                          float delta,
                                          float max_distance,
                                          long long n1,
                                          long long vw,
                                          int lanes_bound,
                                          long long capacity)
{
    __shared__ int listed[MAX_LANES];
    __shared__ int count;
    __shared__ int width;
    const long long n = n1 - 1;
    if (threadIdx.x == 0) {
        int w = many_lanes(n, vw);
        if (w != lanes_bound) {
            w = 0;  // sources and distances disagree on the lanes: run nothing
        }
        width = w;
        count = 0;
        for (int i = 0; i < STATE_WORDS; ++i) {
            state[i] = 0;
        }
        int lanes = 0;
        for (int l = 0; l < w; ++l) {
            const int s = sources[l];
            if (s < 0 || s >= n) {
                continue;
            }
            ++lanes;
            dist[(long long)s * w + l] = 0.0f;
            const unsigned long long mask = masks_a[s];
            const bool seen = (mask & TAG_BITS) == tagged(0, 0u);
            masks_a[s] = (seen ? mask : tagged(0, 0u)) | (1u << l);
            if (!seen) {
                listed[count++] = s;
            }
        }
        state[STATE_WIDTH] = w;
        state[STATE_LANES] = lanes;
        state[STATE_MODE] = MODE_RELAX;
        state[STATE_THRESHOLD] = __float_as_int(delta);
        state[STATE_DELTA] = __float_as_int(delta);
        state[STATE_MAX_DISTANCE] = __float_as_int(max_distance);
        state[STATE_FAR_MIN] = INF_BITS;
    }
    __syncthreads();
    // Each listed source's chunks, in order: thread 0 sums the counts, all write.
    __shared__ long long starts[MAX_LANES + 1];
    if (threadIdx.x == 0) {
        starts[0] = 0;
        for (int i = 0; i < count; ++i) {
            const long long degree = __ldg(&offsets[listed[i] + 1]) - __ldg(&offsets[listed[i]]);
            starts[i + 1] = starts[i] + (degree + CHUNK_EDGES - 1) / CHUNK_EDGES;
        }
        const long long total = starts[count];
        const bool overflow = total > capacity;
        state[STATE_ITEMS] = overflow ? 0 : (int)total;
        state[STATE_OVERFLOW] = overflow ? 1 : 0;
        state[STATE_DONE] = (width == 0 || total == 0 || overflow) ? 1 : 0;
    }
    __syncthreads();
    if (starts[count] > capacity) {
        return;
    }
    for (int i = 0; i < count; ++i) {
        const long long first = starts[i];
        const long long chunks = starts[i + 1] - first;
        for (long long c = threadIdx.x; c < chunks; c += blockDim.x) {
            items_a[first + c] = ((long long)listed[i] << 32) | c;
        }
    }
}
