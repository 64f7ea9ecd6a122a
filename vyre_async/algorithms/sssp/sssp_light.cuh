#define FULL_MASK 0xffffffffu
// Out-lists at least this long are walked by the whole warp, shorter ones by one lane.
#define LIGHT_WIDE 32

// Walks every vertex's out-list and calls light(v, j, rank) for each edge j lighter
// than delta, rank being its place among v's light edges (in list order), then
// done(v, count) once per vertex. A lane walks a short list alone; a long one is
// walked by its warp, one ballot per 32 edges.
template <typename Light, typename Done>
__device__ __forceinline__ void walk_light_edges(const long long* __restrict__ offsets,
                                                 const float* __restrict__ weights,
                                                 float delta, long long n, Light light, Done done)
{
    const unsigned lane = threadIdx.x & 31u;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n;
         base += stride) {
        const long long v = base + lane;
        long long begin = 0;
        long long end = 0;
        if (v < n) {
            begin = __ldg(&offsets[v]);
            end = __ldg(&offsets[v + 1]);
        }
        const bool wide = end - begin >= LIGHT_WIDE;
        if (!wide) {
            long long rank = 0;
            for (long long j = begin; j < end; ++j) {
                if (__ldg(&weights[j]) < delta) {
                    light(v, j, rank);
                    ++rank;
                }
            }
            if (v < n) {
                done(v, rank);
            }
        }
        unsigned wide_lanes = __ballot_sync(FULL_MASK, wide);
        while (wide_lanes != 0u) {
            const int leader = __ffs(wide_lanes) - 1;
            wide_lanes &= wide_lanes - 1u;
            const long long owner = __shfl_sync(FULL_MASK, v, leader);
            const long long first = __shfl_sync(FULL_MASK, begin, leader);
            const long long last = __shfl_sync(FULL_MASK, end, leader);
            long long rank = 0;
            for (long long j0 = first; j0 < last; j0 += 32) {
                const long long j = j0 + lane;
                const bool is_light = j < last && __ldg(&weights[j]) < delta;
                const unsigned mask = __ballot_sync(FULL_MASK, is_light);
                if (is_light) {
                    light(owner, j, rank + __popc(mask & ((1u << lane) - 1u)));
                }
                rank += __popc(mask);
            }
            if (lane == 0u) {
                done(owner, rank);
            }
        }
    }
}
