#include "sssp_many_prelude.cuh"

// Edges a team reads at once from its item.
#define BATCH 4

struct Many {
    const long long* __restrict__ offsets;
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    float* dist;  // [v * lanes + lane]
    unsigned long long* masks;       // lane masks of the step being run
    unsigned long long* next_masks;  // lane masks of the next step
    unsigned* far;                   // far lanes per vertex
    long long* next_items;
    int* state;
    long long n;
    long long capacity;
    long long blocks;
    int lanes;
    int round;
    float threshold;
    float max_distance;
};

struct ManyTally {
    float far_min;
    unsigned long long relaxed;
};

// ORs `bits` into v's lane mask for step `tag`; true when this call is the one that
// moved the mask to `tag`, so v is listed for that step exactly once.
__device__ __forceinline__ bool tag_lanes(unsigned long long* masks, int v, unsigned bits, int tag)
{
    const unsigned long long want = tagged(tag, 0u);
    unsigned long long old = masks[v];
    while (true) {
        const bool same = (old & TAG_BITS) == want;
        const unsigned long long next = same ? (old | bits) : (want | bits);
        if (next == old) {
            return false;
        }
        const unsigned long long seen = atomicCAS(&masks[v], old, next);
        if (seen == old) {
            return !same;
        }
        old = seen;
    }
}

// Appends the chunks of a warp's staged vertices to the next step's items. Warp-uniform.
__device__ __forceinline__ void flush_staged(const Many& s, const int* stage, int count,
                                             unsigned lane)
{
    __syncwarp();
    for (int i0 = 0; i0 < count; i0 += 32) {
        const int i = i0 + (int)lane;
        const int v = i < count ? stage[i] : 0;
        const long long degree = i < count ? __ldg(&s.offsets[v + 1]) - __ldg(&s.offsets[v]) : 0;
        append_chunks(degree > 0, v, degree, s.next_items, &s.state[STATE_NEXT_ITEMS], s.capacity,
                      &s.state[STATE_OVERFLOW], CHUNK_EDGES, lane);
    }
    __syncwarp();
}

__device__ __forceinline__ void flush_full(const Many& s, int* stage, int& count, unsigned lane)
{
    if (count >= 32) {
        flush_staged(s, stage, count, lane);
        count = 0;
    }
}

// One lane of every team relaxed an edge to v (its team's): the team's near lanes go
// into v's mask for the next step (listing v if it was not yet), its far lanes into
// v's far lanes. Warp-uniform.
__device__ __forceinline__ void settle(const Many& s, int v, bool near, bool far, int* stage,
                                       int& count, unsigned lane)
{
    const unsigned near_all = __ballot_sync(FULL_MASK, near);
    const unsigned far_all = __ballot_sync(FULL_MASK, far);
    const unsigned shift = lane & ~((unsigned)s.lanes - 1u);
    const unsigned mask = lanes_mask(s.lanes);
    const unsigned near_bits = (near_all >> shift) & mask;
    const unsigned far_bits = (far_all >> shift) & mask;
    bool listed = false;
    if (lane == shift) {
        if (far_bits != 0u) {
            atomicOr(&s.far[v], far_bits);
        }
        if (near_bits != 0u) {
            listed = tag_lanes(s.next_masks, v, near_bits, s.round + 1);
        }
    }
    stage_push(stage, count, listed, v, lane);
}

// Relax step: each team of `lanes` threads takes an item (a chunk of at most
// CHUNK_EDGES edges of one vertex) and relaxes its edges for the vertex's lanes in
// this step's mask, BATCH edges at a time; thread i of a team is lane i.
__device__ __forceinline__ void relax_items(const Many& s, const long long* items, long long count,
                                            int* stage, int& staged, ManyTally& t)
{
    const unsigned lane = threadIdx.x & 31u;
    const int teams = 32 / s.lanes;
    const int team = (int)lane / s.lanes;
    const int my_lane = (int)lane % s.lanes;
    const long long stride = s.blocks * WARPS * teams;
    for (long long base = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * teams;
         base < count; base += stride) {
        const long long item = base + team;
        long long begin = 0;
        long long end = 0;
        bool active = false;
        float du = 0.0f;
        if (item < count) {
            const long long entry = items[item];
            const int u = (int)(entry >> 32);
            begin = __ldg(&s.offsets[u]) + (entry & 0xffffffffll) * CHUNK_EDGES;
            end = min(__ldg(&s.offsets[u + 1]), begin + CHUNK_EDGES);
            const unsigned long long mask = s.masks[u];
            active = (mask & TAG_BITS) == tagged(s.round, 0u) && ((mask >> my_lane) & 1ull) != 0ull;
            du = active ? s.dist[(long long)u * s.lanes + my_lane] : 0.0f;
        }
        int span = (int)(end - begin);
        for (int offset = 16; offset > 0; offset >>= 1) {
            span = max(span, __shfl_xor_sync(FULL_MASK, span, offset));
        }
        for (int k0 = 0; k0 < span; k0 += BATCH) {
            float w[BATCH];
            int v[BATCH];
            bool go[BATCH];
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                const long long j = begin + k0 + b;
                const bool ok = j < end;
                w[b] = ok ? __ldg(&s.weights[j]) : 0.0f;
                v[b] = ok ? __ldg(&s.indices[j]) : 0;
                go[b] = ok && active;
            }
            float nd[BATCH];
            float current[BATCH];
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                nd[b] = du + w[b];
                go[b] = go[b] && nd[b] <= s.max_distance;
                t.relaxed += go[b] ? 1ull : 0ull;
                current[b] = go[b] ? s.dist[(long long)v[b] * s.lanes + my_lane] : 0.0f;
            }
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                bool improved = false;
                if (go[b] && nd[b] < current[b]) {
                    const int bits = __float_as_int(nd[b]);
                    improved = atomicMin(reinterpret_cast<int*>(s.dist) +
                                             ((long long)v[b] * s.lanes + my_lane),
                                         bits) > bits;
                }
                const bool near = improved && nd[b] < s.threshold;
                if (improved && !near) {
                    t.far_min = fminf(t.far_min, nd[b]);
                }
                settle(s, v[b], near, improved && !near, stage, staged, lane);
            }
            flush_full(s, stage, staged, lane);
        }
    }
}

// Split step: every vertex with far lanes, a team per vertex: lanes below far_lo are
// done (their bucket has ended), lanes below the new threshold go into the vertex's
// mask for the next step, the rest stay far.
__device__ __forceinline__ void split_far(const Many& s, float far_lo, int* stage, int& staged,
                                          ManyTally& t)
{
    const unsigned lane = threadIdx.x & 31u;
    const int teams = 32 / s.lanes;
    const int team = (int)lane / s.lanes;
    const int my_lane = (int)lane % s.lanes;
    const unsigned shift = lane & ~((unsigned)s.lanes - 1u);
    const unsigned mask = lanes_mask(s.lanes);
    const long long stride = s.blocks * WARPS * 32;
    for (long long base = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * 32; base < s.n;
         base += stride) {
        const long long mine = base + lane;
        const unsigned bits = mine < s.n ? s.far[mine] : 0u;
        unsigned flagged = __ballot_sync(FULL_MASK, bits != 0u);
        while (flagged != 0u) {
            // Team t takes the t-th flagged vertex left.
            int pick = -1;
            for (int k = 0; k < teams; ++k) {
                if (flagged != 0u) {
                    if (k == team) {
                        pick = __ffs(flagged) - 1;
                    }
                    flagged &= flagged - 1u;
                }
            }
            const unsigned far_lanes = __shfl_sync(FULL_MASK, bits, pick < 0 ? 0 : pick);
            const int v = (int)(base + (pick < 0 ? 0 : pick));
            const bool mine_far = pick >= 0 && ((far_lanes >> my_lane) & 1u) != 0u;
            const float d = mine_far ? s.dist[(long long)v * s.lanes + my_lane] : 0.0f;
            const bool keep = mine_far && d >= s.threshold;
            const bool near = mine_far && d < s.threshold && d >= far_lo;
            if (keep) {
                t.far_min = fminf(t.far_min, d);
            }
            const unsigned keep_bits = (__ballot_sync(FULL_MASK, keep) >> shift) & mask;
            const unsigned near_bits = (__ballot_sync(FULL_MASK, near) >> shift) & mask;
            bool listed = false;
            if (pick >= 0 && lane == shift) {
                s.far[v] = keep_bits;
                if (near_bits != 0u) {
                    listed = tag_lanes(s.next_masks, v, near_bits, s.round + 1);
                }
            }
            stage_push(stage, staged, listed, v, lane);
            flush_full(s, stage, staged, lane);
        }
    }
}

// Closes a step (warp 0 of the last block; one load and one store per lane).
__device__ __forceinline__ void advance(int* state, int* scratch, unsigned lane)
{
    scratch[lane] = __ldcg(&state[lane]);
    __syncwarp();
    if (lane == 0u) {
        int* s = scratch;
        s[s[STATE_MODE] == MODE_RELAX ? STATE_RELAX_ROUNDS : STATE_SPLIT_ROUNDS] += 1;
        const int items = s[STATE_NEXT_ITEMS];
        s[STATE_ITEMS] = items;
        s[STATE_NEXT_ITEMS] = 0;
        s[STATE_ROUND] += 1;
        s[STATE_ARRIVED] = 0;
        if (items > 0) {
            s[STATE_MODE] = MODE_RELAX;
        } else if (s[STATE_FAR_MIN] == INF_BITS) {
            s[STATE_DONE] = 1;
        } else {
            const float threshold = __int_as_float(s[STATE_THRESHOLD]);
            const float low = fmaxf(threshold, __int_as_float(s[STATE_FAR_MIN]));
            float next = low + __int_as_float(s[STATE_DELTA]);
            if (!(next > low)) {
                next = nextafterf(low, __int_as_float(INF_BITS));
            }
            s[STATE_FAR_LO] = __float_as_int(threshold);
            s[STATE_THRESHOLD] = __float_as_int(next);
            s[STATE_FAR_MIN] = INF_BITS;
            s[STATE_MODE] = MODE_SPLIT;
        }
    }
    __syncwarp();
    state[lane] = scratch[lane];
}

// One step of near-far delta-stepping for up to MAX_LANES sources at once (see
// _many_kernels.py).
extern "C" __global__ void __launch_bounds__(BLOCK, 4)
sssp_many_step(const long long* __restrict__ offsets,
               const int* __restrict__ indices,
               const float* __restrict__ weights,
               float* dist,
               unsigned long long* masks_a,
               unsigned long long* masks_b,
               unsigned* far,
               long long* items_a,
               long long* items_b,
               int* state,
               long long n1,
               long long vw,
               long long capacity)
{
    const unsigned lane = threadIdx.x & 31u;
    const int word = state[lane];
#define WORD(index) __shfl_sync(FULL_MASK, word, (index))
    const long long n = n1 - 1;
    const int lanes = WORD(STATE_WIDTH);
    if (WORD(STATE_DONE) != 0 || lanes == 0 || many_lanes(n, vw) != lanes) {
        return;
    }
    const int mode = WORD(STATE_MODE);
    const int round = WORD(STATE_ROUND);
    const bool odd = (round & 1) != 0;
    const long long count = min((long long)WORD(STATE_ITEMS), capacity);
    long long blocks = gridDim.x;
    if (mode == MODE_RELAX) {
        const long long warps = (count + 32 / lanes - 1) / (32 / lanes);
        blocks = max(1ll, min((long long)gridDim.x, (warps + WARPS - 1) / WARPS));
    }
    if (blockIdx.x >= blocks) {
        return;
    }
    __shared__ int stage_lists[WARPS][STAGE];
    __shared__ int words[STATE_WORDS];
    __shared__ float far_mins[WARPS];
    __shared__ unsigned long long relaxed[WARPS];
    __shared__ bool last;
    int* stage = stage_lists[threadIdx.x >> 5];
    int staged = 0;
    Many s;
    s.offsets = offsets;
    s.indices = indices;
    s.weights = weights;
    s.dist = dist;
    s.masks = odd ? masks_b : masks_a;
    s.next_masks = odd ? masks_a : masks_b;
    s.far = far;
    s.next_items = odd ? items_a : items_b;
    s.state = state;
    s.n = n;
    s.capacity = capacity;
    s.blocks = blocks;
    s.lanes = lanes;
    s.round = round;
    s.threshold = __int_as_float(WORD(STATE_THRESHOLD));
    s.max_distance = __int_as_float(WORD(STATE_MAX_DISTANCE));
    const float far_lo = __int_as_float(WORD(STATE_FAR_LO));
#undef WORD
    ManyTally t;
    t.far_min = __int_as_float(INF_BITS);
    t.relaxed = 0ull;
    if (mode == MODE_RELAX) {
        relax_items(s, odd ? items_b : items_a, count, stage, staged, t);
    } else {
        split_far(s, far_lo, stage, staged, t);
    }
    if (staged > 0) {
        flush_staged(s, stage, staged, lane);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        t.far_min = fminf(t.far_min, __shfl_down_sync(FULL_MASK, t.far_min, offset));
        t.relaxed += __shfl_down_sync(FULL_MASK, t.relaxed, offset);
    }
    if (lane == 0u) {
        far_mins[threadIdx.x >> 5] = t.far_min;
        relaxed[threadIdx.x >> 5] = t.relaxed;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < WARPS; ++w) {
            t.far_min = fminf(t.far_min, far_mins[w]);
            t.relaxed += relaxed[w];
        }
        if (__float_as_int(t.far_min) != INF_BITS) {
            atomicMin(&state[STATE_FAR_MIN], __float_as_int(t.far_min));
        }
        if (t.relaxed != 0ull) {
            atomicAdd(reinterpret_cast<unsigned long long*>(&state[STATE_RELAXED]), t.relaxed);
        }
        last = last_block(&state[STATE_ARRIVED], (unsigned)blocks);
    }
    __syncthreads();
    if (last && threadIdx.x < 32) {
        advance(state, words, lane);
    }
}
