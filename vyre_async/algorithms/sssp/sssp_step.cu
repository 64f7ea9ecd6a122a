#include "sssp_prelude.cuh"

// Merged narrow edges each lane reads per batch (4 warp-wide passes at once).
#define NARROW_BATCH 4
// Passes of a chunk: all of its weights are read at once.
#define CHUNK_PASSES (CHUNK_EDGES / 32)
// Runs of 32 far flags a warp reads at once.
#define SWEEP_BATCH 8
// A staged vertex that was never scheduled before carries this bit.
#define STAGED_FIRST 0x80000000u

struct Step {
    // The lists this step expands: the light graph in a light step, the graph in a
    // heavy one.
    const long long* __restrict__ offsets;
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    // For the degrees that pick a scheduled vertex's lists.
    const long long* __restrict__ graph_offsets;
    const long long* __restrict__ light_offsets;
    float* dist;
    int* stamp;
    unsigned char* far;
    int* next_queue;
    long long* next_chunks;
    int* members;
    long long* heavy;
    int* state;
    long long n;
    long long chunk_capacity;
    long long blocks;  // blocks that take part in this step
    int next_round;
    float threshold;
    float delta;
    float max_distance;
    bool heavy_edges;
};

// Schedules v (its distance just dropped below the threshold) for the next step.
// Returns SCHEDULED (| FIRST) unless another thread scheduled it first.
__device__ __forceinline__ int schedule(const Step& s, int v)
{
    if (s.stamp[v] == s.next_round) {
        return 0;
    }
    const int previous = atomicExch(&s.stamp[v], s.next_round);
    if (previous == s.next_round) {
        return 0;
    }
    return SCHEDULED | (previous == -1 ? FIRST : 0);
}

// Lowers v's distance to nd if that is lower; then schedules v, or marks it far when
// nd is at or past the threshold.
__device__ __forceinline__ int lower(const Step& s, int v, float nd, Tally& t)
{
    const int bits = __float_as_int(nd);
    const int old = atomicMin(reinterpret_cast<int*>(s.dist) + v, bits);
    if (old <= bits) {
        return 0;
    }
    if (old == INF_BITS) {
        t.reached += 1;
    }
    if (nd < s.threshold) {
        return schedule(s, v);
    }
    s.far[v] = 1;
    t.far_min = fminf(t.far_min, nd);
    return 0;
}

// Appends a warp's staged vertices to the lists their degrees pick: by light degree
// the next step's narrow queue or chunk list (none without light edges), and the
// first-scheduled by degree also to the members or heavy list. Degrees are read here,
// 32 at a time, rather than once per scheduled vertex on the relaxing path.
// Warp-uniform.
__device__ __forceinline__ void flush_staged(const Step& s, const int* stage, int count,
                                             unsigned lane)
{
    __syncwarp();
    int* overflow = &s.state[STATE_OVERFLOW];
    for (int i0 = 0; i0 < count; i0 += 32) {
        const int i = i0 + (int)lane;
        const bool valid = i < count;
        const unsigned entry = valid ? (unsigned)stage[i] : 0u;
        const int v = (int)(entry & ~STAGED_FIRST);
        const bool first = valid && (entry & STAGED_FIRST) != 0u;
        const long long light =
            valid ? __ldg(&s.light_offsets[v + 1]) - __ldg(&s.light_offsets[v]) : 0;
        const long long degree =
            first ? __ldg(&s.graph_offsets[v + 1]) - __ldg(&s.graph_offsets[v]) : 0;
        append_vertices(light > 0 && light < WIDE_MIN_DEGREE, v, s.next_queue,
                        &s.state[STATE_NEXT_NARROW], s.n, overflow, lane);
        append_chunks(light >= WIDE_MIN_DEGREE, v, light, s.next_chunks,
                      &s.state[STATE_NEXT_CHUNKS], s.chunk_capacity, overflow, CHUNK_EDGES, lane);
        append_vertices(degree > 0 && degree < WIDE_MIN_DEGREE, v, s.members,
                        &s.state[STATE_MEMBERS_FILL], s.n, overflow, lane);
        append_chunks(degree >= WIDE_MIN_DEGREE, v, degree, s.heavy, &s.state[STATE_HEAVY_FILL],
                      s.chunk_capacity, overflow, CHUNK_EDGES, lane);
    }
    __syncwarp();
}

// Appends the staged vertices once 32 or more are staged: called after at most
// STAGE / 32 - 1 commits, so the staging buffer never overflows. Warp-uniform.
__device__ __forceinline__ void flush_full(const Step& s, int* stage, int& count, unsigned lane)
{
    if (count >= 32) {
        flush_staged(s, stage, count, lane);
        count = 0;
    }
}

// Relaxes K edges per lane (positions j[k] where ok[k], from a vertex at distance
// du[k]): every load of one kind is issued for all K before the loads that depend on
// it, so a warp keeps K of each in flight instead of waiting on one at a time.
template <int K>
__device__ __forceinline__ void relax_edges(const Step& s, const long long (&j)[K],
                                            const bool (&ok)[K], const float (&du)[K],
                                            int* stage, int& count, Tally& t, unsigned lane)
{
    float w[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        w[k] = ok[k] ? __ldg(&s.weights[j[k]]) : 0.0f;
    }
    bool go[K];
    int v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        // Every edge of the light graph is light; a heavy step takes the heavy ones.
        go[k] = ok[k] && (!s.heavy_edges || w[k] >= s.delta);
        t.scanned += ok[k] ? 1ull : 0ull;
        t.relaxed += go[k] ? 1ull : 0ull;
        v[k] = go[k] ? __ldg(&s.indices[j[k]]) : 0;
    }
    float nd[K];
    float current[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        nd[k] = du[k] + w[k];
        go[k] = go[k] && nd[k] <= s.max_distance;
        // A plain read first: it may be stale, but only ever too high, so it can only
        // let through an atomic that then does nothing.
        current[k] = go[k] ? s.dist[v[k]] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int flags = (go[k] && nd[k] < current[k]) ? lower(s, v[k], nd[k], t) : 0;
        stage_push(stage, count, flags != 0,
                   (int)((unsigned)v[k] | ((flags & FIRST) ? STAGED_FIRST : 0u)), lane);
    }
    flush_full(s, stage, count, lane);
}

// Expands narrow vertices items[lo, hi): each warp merges its 32 vertices' lists, lane
// i taking the i-th edge of every 32, so no lane idles while another walks a longer list.
__device__ __forceinline__ void expand_narrow(const Step& s, const int* items, long long lo,
                                              long long hi, int* stage, int& count, Tally& t)
{
    const unsigned lane = threadIdx.x & 31u;
    const long long stride = s.blocks * BLOCK;
    for (long long base = lo + (long long)blockIdx.x * BLOCK + (threadIdx.x & ~31u); base < hi;
         base += stride) {
        const long long i = base + lane;
        long long begin = 0;
        long long end = 0;
        float du = 0.0f;
        if (i < hi) {
            const int u = items[i];
            begin = __ldg(&s.offsets[u]);
            end = __ldg(&s.offsets[u + 1]);
            du = s.dist[u];
        }
        long long total = 0;
        const long long start = warp_exclusive_scan(end - begin, lane, &total);
        for (long long k0 = 0; k0 < total; k0 += 32 * NARROW_BATCH) {
            long long j[NARROW_BATCH];
            bool ok[NARROW_BATCH];
            float owner_du[NARROW_BATCH];
#pragma unroll
            for (int b = 0; b < NARROW_BATCH; ++b) {
                const long long k = k0 + 32 * b + lane;
                const int owner = warp_owner(start, k);
                const long long owner_begin = __shfl_sync(FULL_MASK, begin, owner);
                const long long owner_start = __shfl_sync(FULL_MASK, start, owner);
                owner_du[b] = __shfl_sync(FULL_MASK, du, owner);
                ok[b] = k < total;
                j[b] = owner_begin + (k - owner_start);
            }
            relax_edges<NARROW_BATCH>(s, j, ok, owner_du, stage, count, t, lane);
        }
    }
}

// Expands chunks list[lo, hi) (vertex << 32 | chunk). Each warp takes a run of up to
// 32 consecutive entries, reads them and their vertices with one load per lane, then
// walks them one chunk at a time.
__device__ __forceinline__ void expand_chunks(const Step& s, const long long* list, long long lo,
                                              long long hi, int* stage, int& count, Tally& t)
{
    const unsigned lane = threadIdx.x & 31u;
    const long long warps = s.blocks * WARPS;
    const long long per = min(32ll, (hi - lo + warps - 1) / warps);
    for (long long e0 = lo + ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * per; e0 < hi;
         e0 += warps * per) {
        const long long e = e0 + lane;
        long long begin = 0;
        long long end = 0;
        float du = 0.0f;
        if (lane < per && e < hi) {
            const long long entry = list[e];
            const int u = (int)(entry >> 32);
            begin = __ldg(&s.offsets[u]) + (entry & 0xffffffffll) * CHUNK_EDGES;
            end = min(__ldg(&s.offsets[u + 1]), begin + CHUNK_EDGES);
            du = s.dist[u];
        }
        const int run = (int)min(per, hi - e0);
        for (int q = 0; q < run; ++q) {
            const long long chunk_begin = __shfl_sync(FULL_MASK, begin, q);
            const long long chunk_end = __shfl_sync(FULL_MASK, end, q);
            const float chunk_du = __shfl_sync(FULL_MASK, du, q);
            long long j[CHUNK_PASSES];
            bool ok[CHUNK_PASSES];
            float dus[CHUNK_PASSES];
#pragma unroll
            for (int k = 0; k < CHUNK_PASSES; ++k) {
                j[k] = chunk_begin + 32 * k + lane;
                ok[k] = j[k] < chunk_end;
                dus[k] = chunk_du;
            }
            relax_edges<CHUNK_PASSES>(s, j, ok, dus, stage, count, t, lane);
        }
    }
}

// The far vertices of a heavy step: those below far_lo are done (their bucket has
// ended), those below the new threshold start the new bucket, the rest stay far.
// Each warp reads SWEEP_BATCH runs of 32 flags at once, then the distances of the
// flagged ones at once, so a sweep over every vertex costs a few round trips.
__device__ __forceinline__ void sweep_far(const Step& s, float far_lo, int* stage, int& count,
                                          Tally& t)
{
    const unsigned lane = threadIdx.x & 31u;
    const long long span = 32 * SWEEP_BATCH;
    const long long stride = s.blocks * WARPS * span;
    for (long long base = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * span; base < s.n;
         base += stride) {
        unsigned flagged = 0u;
#pragma unroll
        for (int b = 0; b < SWEEP_BATCH; ++b) {
            const long long v = base + 32 * b + lane;
            flagged |= (v < s.n && s.far[v] != 0) ? 1u << b : 0u;
        }
        if (!__any_sync(FULL_MASK, flagged != 0u)) {
            continue;
        }
        float d[SWEEP_BATCH];
#pragma unroll
        for (int b = 0; b < SWEEP_BATCH; ++b) {
            d[b] = (flagged >> b) & 1u ? s.dist[base + 32 * b + lane] : 0.0f;
        }
        unsigned movers = 0u;
#pragma unroll
        for (int b = 0; b < SWEEP_BATCH; ++b) {
            if ((flagged >> b) & 1u) {
                const long long v = base + 32 * b + lane;
                if (d[b] < s.threshold) {
                    s.far[v] = 0;
                    movers |= d[b] >= far_lo ? 1u << b : 0u;
                } else {
                    t.far_min = fminf(t.far_min, d[b]);
                }
            }
        }
        while (__any_sync(FULL_MASK, movers != 0u)) {
            int flags = 0;
            int v = 0;
            if (movers != 0u) {
                v = (int)(base + 32 * (__ffs(movers) - 1) + lane);
                movers &= movers - 1u;
                flags = schedule(s, v);
            }
            stage_push(stage, count, flags != 0,
                       (int)((unsigned)v | ((flags & FIRST) ? STAGED_FIRST : 0u)), lane);
            flush_full(s, stage, count, lane);
        }
    }
}

// Closes a step, by warp 0 of the last block after every block's counts are in: the
// state is read with one load per lane and written back the same way, since lane 0
// alone would wait on each of its dependent loads in turn.
__device__ __forceinline__ void advance(int* state, int* scratch, unsigned lane)
{
    scratch[lane] = __ldcg(&state[lane]);
    __syncwarp();
    if (lane == 0u) {
        int* s = scratch;
        const int mode = s[STATE_MODE];
        s[mode == MODE_LIGHT ? STATE_LIGHT_ROUNDS : STATE_HEAVY_ROUNDS] += 1;
        const int narrow = s[STATE_NEXT_NARROW];
        const int chunks = s[STATE_NEXT_CHUNKS];
        s[STATE_NARROW] = narrow;
        s[STATE_CHUNKS] = chunks;
        s[STATE_NEXT_NARROW] = 0;
        s[STATE_NEXT_CHUNKS] = 0;
        s[STATE_ROUND] += 1;
        s[STATE_ARRIVED] = 0;
        if (narrow > 0 || chunks > 0) {
            s[STATE_MODE] = MODE_LIGHT;
        } else {
            // The bucket is settled: its members' heavy edges, and the far vertices of
            // the next bucket, go next.
            const float far_min = __int_as_float(s[STATE_FAR_MIN]);
            const int members_start = s[STATE_MEMBERS_START];
            const int members_fill = s[STATE_MEMBERS_FILL];
            const int heavy_start = s[STATE_HEAVY_START];
            const int heavy_fill = s[STATE_HEAVY_FILL];
            const bool members = members_fill > members_start || heavy_fill > heavy_start;
            if (!members && s[STATE_FAR_MIN] == INF_BITS) {
                s[STATE_DONE] = 1;
            } else {
                s[STATE_READ_MEMBERS_LO] = members_start;
                s[STATE_READ_MEMBERS_HI] = members_fill;
                s[STATE_READ_HEAVY_LO] = heavy_start;
                s[STATE_READ_HEAVY_HI] = heavy_fill;
                s[STATE_MEMBERS_START] = members_fill;
                s[STATE_HEAVY_START] = heavy_fill;
                // No unsettled distance lies below `low`, so a bucket [low, low + delta)
                // is never wider than delta: a heavy edge from it lands at or past its end.
                const float threshold = __int_as_float(s[STATE_THRESHOLD]);
                const float low = members ? threshold : fmaxf(threshold, far_min);
                float next = low + __int_as_float(s[STATE_DELTA]);
                if (!(next > low)) {
                    next = nextafterf(low, __int_as_float(INF_BITS));
                }
                s[STATE_FAR_LO] = __float_as_int(threshold);
                s[STATE_THRESHOLD] = __float_as_int(next);
                // No far distance lies below far_min: when that is already past the new
                // end, no far vertex joins the bucket and the sweep is skipped (far_min
                // stays the bound it is); else the sweep recomputes it.
                const bool sweep = far_min < next;
                s[STATE_SWEEP] = sweep ? 1 : 0;
                if (sweep) {
                    s[STATE_FAR_MIN] = INF_BITS;
                }
                s[STATE_MODE] = MODE_HEAVY;
            }
        }
    }
    __syncwarp();
    state[lane] = scratch[lane];
}

// One step of near-far delta-stepping with light and heavy edges (see _kernels.py).
extern "C" __global__ void __launch_bounds__(BLOCK, 4)
sssp_step(const long long* __restrict__ offsets,
          const int* __restrict__ indices,
          const float* __restrict__ weights,
          const long long* __restrict__ light_offsets,
          const int* __restrict__ light_indices,
          const float* __restrict__ light_weights,
          float* dist,
          int* stamp,
          unsigned* far,
          int* queue_a,
          int* queue_b,
          long long* chunks_a,
          long long* chunks_b,
          int* members,
          long long* heavy,
          int* state,
          long long n,
          long long n1,
          long long far_words,
          long long chunk_capacity)
{
    // The whole state in one load per lane; the words below are shuffled out of it.
    const unsigned lane = threadIdx.x & 31u;
    const int word = state[lane];
#define WORD(index) __shfl_sync(FULL_MASK, word, (index))
    // Uniform exit: only the last block of a step writes the state, after every block
    // has read it. Bindings that do not cover n vertices run nothing.
    if (WORD(STATE_DONE) != 0 || n1 != n + 1 || 4 * far_words < n) {
        return;
    }
    const int mode = WORD(STATE_MODE);
    const int round = WORD(STATE_ROUND);
    const bool odd = (round & 1) != 0;
    const bool light_step = mode == MODE_LIGHT;
    const bool sweep = !light_step && WORD(STATE_SWEEP) != 0;
    const long long narrow =
        min((long long)WORD(light_step ? STATE_NARROW : STATE_READ_MEMBERS_HI) -
                (light_step ? 0ll : (long long)WORD(STATE_READ_MEMBERS_LO)),
            n);
    const long long chunks =
        min((long long)WORD(light_step ? STATE_CHUNKS : STATE_READ_HEAVY_HI) -
                (light_step ? 0ll : (long long)WORD(STATE_READ_HEAVY_LO)),
            chunk_capacity);
    // A step needs a warp per 32 narrow vertices and per chunk, and the blocks past
    // those return at once; a sweep of every far flag takes the whole grid.
    long long blocks = gridDim.x;
    if (!sweep) {
        const long long warps = max((narrow + 31) / 32, chunks);
        blocks = max(1ll, min((long long)gridDim.x, (warps + WARPS - 1) / WARPS));
    }
    if (blockIdx.x >= blocks) {
        return;
    }
    __shared__ int stage_lists[WARPS][STAGE];
    __shared__ int words[STATE_WORDS];
    __shared__ bool last;
    int* stage = stage_lists[threadIdx.x >> 5];
    int count = 0;
    Step s;
    s.offsets = light_step ? light_offsets : offsets;
    s.indices = light_step ? light_indices : indices;
    s.weights = light_step ? light_weights : weights;
    s.graph_offsets = offsets;
    s.light_offsets = light_offsets;
    s.dist = dist;
    s.stamp = stamp;
    s.far = reinterpret_cast<unsigned char*>(far);
    s.next_queue = odd ? queue_a : queue_b;
    s.next_chunks = odd ? chunks_a : chunks_b;
    s.members = members;
    s.heavy = heavy;
    s.state = state;
    s.n = n;
    s.chunk_capacity = chunk_capacity;
    s.blocks = blocks;
    s.next_round = round + 1;
    s.threshold = __int_as_float(WORD(STATE_THRESHOLD));
    s.delta = __int_as_float(WORD(STATE_DELTA));
    s.max_distance = __int_as_float(WORD(STATE_MAX_DISTANCE));
    s.heavy_edges = mode == MODE_HEAVY;
    Tally t = fresh_tally();
    if (light_step) {
        expand_narrow(s, odd ? queue_b : queue_a, 0, max(narrow, 0ll), stage, count, t);
        expand_chunks(s, odd ? chunks_b : chunks_a, 0, max(chunks, 0ll), stage, count, t);
    } else {
        const long long members_lo = WORD(STATE_READ_MEMBERS_LO);
        const long long members_hi = min((long long)WORD(STATE_READ_MEMBERS_HI), n);
        const long long heavy_lo = WORD(STATE_READ_HEAVY_LO);
        const long long heavy_hi = min((long long)WORD(STATE_READ_HEAVY_HI), chunk_capacity);
        const float far_lo = __int_as_float(WORD(STATE_FAR_LO));
        // Without heavy edges (every edge is in the light graph) there is nothing to relax.
        if (WORD(STATE_HEAVY_EDGES) != 0) {
            expand_narrow(s, members, members_lo, members_hi, stage, count, t);
            expand_chunks(s, heavy, heavy_lo, heavy_hi, stage, count, t);
        }
        if (sweep) {
            sweep_far(s, far_lo, stage, count, t);
        }
    }
#undef WORD
    if (count > 0) {
        flush_staged(s, stage, count, lane);
    }
    block_add_tally(t, state);
    if (threadIdx.x == 0) {
        last = last_block(&state[STATE_ARRIVED], (unsigned)blocks);
    }
    __syncthreads();
    if (last && threadIdx.x < 32) {
        advance(state, words, lane);
    }
}
