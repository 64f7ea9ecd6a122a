"""CUDA C sources of the multi-source BFS kernels (see :mod:`._msbfs`)."""

from __future__ import annotations

from ._layout import (
    _COUNT_TILE,
    _UNROLL,
    _WIDE_MIN_DEGREE,
    MSBFS_HUB_LANE_EDGES,
    MSBFS_MAX_WORDS,
    STATE_ACTIVE,
    STATE_DISCOVERED,
    STATE_DONE,
    STATE_LANES,
    STATE_LEVEL,
    STATE_LEVELS_RUN,
    STATE_LIVE,
    STATE_MAX_LEVEL,
    STATE_NEXT_LIVE,
    STATE_REACHED,
    STATE_WIDTH,
)

_DEFINES = "".join(
    f"#define {name} {value}\n"
    for name, value in (
        ("MAX_WORDS", MSBFS_MAX_WORDS),
        ("HUB_LANE_EDGES", MSBFS_HUB_LANE_EDGES),
        ("WIDE_MIN_DEGREE", _WIDE_MIN_DEGREE),
        ("UNROLL", _UNROLL),
        ("COUNT_TILE", _COUNT_TILE),
        ("STATE_LEVEL", STATE_LEVEL),
        ("STATE_DONE", STATE_DONE),
        ("STATE_MAX_LEVEL", STATE_MAX_LEVEL),
        ("STATE_LEVELS_RUN", STATE_LEVELS_RUN),
        ("STATE_WIDTH", STATE_WIDTH),
        ("STATE_LANES", STATE_LANES),
        ("STATE_DISCOVERED", STATE_DISCOVERED),
        ("STATE_REACHED", STATE_REACHED),
        ("STATE_ACTIVE", STATE_ACTIVE),
        ("STATE_LIVE", STATE_LIVE),
        ("STATE_NEXT_LIVE", STATE_NEXT_LIVE),
    )
)

_PRELUDE = (
    "#define FULL_MASK 0xffffffffu\n"
    + _DEFINES
    + r"""
// Words per vertex: vw / n when that is a whole number in [1, MAX_WORDS], else 0 (the
// kernels then do nothing). Only bound lengths go in, so no binding reads out of bounds.
__device__ __forceinline__ int msbfs_words(long long n, long long vw)
{
    if (n <= 0 || vw <= 0 || vw % n != 0) {
        return 0;
    }
    const long long words = vw / n;
    return words <= MAX_WORDS ? (int)words : 0;
}

// Lanes per vertex team: the word count rounded up to a power of two, so that a team
// reads one vertex's consecutive words and 32 / group teams fill a warp exactly.
__device__ __forceinline__ int msbfs_group(int words)
{
    int group = 1;
    while (group < words) {
        group <<= 1;
    }
    return group;
}

__device__ __forceinline__ unsigned long long* state_u64(int* state, int index)
{
    return reinterpret_cast<unsigned long long*>(state + index);
}

__device__ __forceinline__ const unsigned long long* state_u64(const int* state, int index)
{
    return reinterpret_cast<const unsigned long long*>(state + index);
}

// Whether a lane had a valid source at init (lanes past MAX_WORDS words never do).
__device__ __forceinline__ bool lane_active(const int* state, long long lane)
{
    if (lane < 0 || lane >= 64LL * MAX_WORDS) {
        return false;
    }
    return ((state_u64(state, STATE_ACTIVE)[lane >> 6] >> (lane & 63)) & 1ull) != 0ull;
}
"""
)

_PULL = r"""
// ORs word w of the frontier over the in-list [first, last) of one vertex with the
// whole warp: 32 / group neighbours per pass, a team of `group` lanes reading one
// neighbour's consecutive words. Stops once every lane's `need` bits are found. Every
// lane returns the OR for its word across the warp. All 32 lanes must call it.
__device__ __forceinline__ unsigned long long warp_pull(
    long long first,
    long long last,
    const int* __restrict__ in_indices,
    const unsigned long long* __restrict__ frontier,
    unsigned long long need,
    int words,
    int group,
    int slot,
    int w)
{
    const long long slots = 32 / group;
    unsigned long long acc = 0ull;
    for (long long base = first; base < last; base += UNROLL * slots) {
        int u[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const long long j = base + k * slots + slot;
            u[k] = j < last ? __ldg(&in_indices[j]) : -1;
        }
        if (w < words) {
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                if (u[k] >= 0) {
                    acc |= __ldg(&frontier[(long long)u[k] * words + w]);
                }
            }
        }
        // Lanes of one word sit `group` apart: the butterfly leaves each with their OR.
        for (int offset = group; offset < 32; offset <<= 1) {
            acc |= __shfl_xor_sync(FULL_MASK, acc, offset);
        }
        if (__all_sync(FULL_MASK, (acc & need) == need)) {
            break;
        }
    }
    return acc;
}

// Adds the pairs found and the lanes gained to the state with one atomic per block
// and word. Every thread of the block must call it; lane l < words holds word l.
__device__ __forceinline__ void flush_progress(unsigned long long found,
                                               unsigned long long gained,
                                               int group,
                                               int words,
                                               int* state)
{
    __shared__ unsigned long long block_found;
    __shared__ unsigned long long block_gained[MAX_WORDS];
    if (threadIdx.x < MAX_WORDS) {
        block_gained[threadIdx.x] = 0ull;
    }
    if (threadIdx.x == 0) {
        block_found = 0ull;
    }
    __syncthreads();
    for (int offset = 16; offset > 0; offset >>= 1) {
        found += __shfl_down_sync(FULL_MASK, found, offset);
    }
    for (int offset = group; offset < 32; offset <<= 1) {
        gained |= __shfl_xor_sync(FULL_MASK, gained, offset);
    }
    const int lane = (int)(threadIdx.x & 31u);
    if (lane == 0 && found != 0ull) {
        atomicAdd(&block_found, found);
    }
    if (lane < words && gained != 0ull) {
        atomicOr(&block_gained[lane], gained);
    }
    __syncthreads();
    if (threadIdx.x == 0 && block_found != 0ull) {
        atomicAdd(state_u64(state, STATE_DISCOVERED), block_found);
    }
    if ((int)threadIdx.x < words && block_gained[threadIdx.x] != 0ull) {
        atomicOr(state_u64(state, STATE_NEXT_LIVE) + threadIdx.x, block_gained[threadIdx.x]);
    }
}
"""

_INIT_SOURCE = (
    _PRELUDE
    + r"""
#define INIT_TILE 1024

// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_init(const long long* __restrict__ offsets,
                                      const int* __restrict__ sources,
                                      unsigned long long* __restrict__ visited,
                                      unsigned long long* __restrict__ frontier,
                                      unsigned long long* __restrict__ next,
                                      int* __restrict__ state,
                                      int max_level,
                                      long long n1,
                                      int lanes,
                                      long long vw)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    const int used = (int)min((long long)lanes, 64LL * words);
    if (blockIdx.x == 0) {
        __shared__ unsigned long long active[MAX_WORDS];
        __shared__ int count;
        if (threadIdx.x < MAX_WORDS) {
            active[threadIdx.x] = 0ull;
        }
        if (threadIdx.x == 0) {
            count = 0;
        }
        __syncthreads();
        for (int lane = threadIdx.x; lane < used; lane += blockDim.x) {
            const int s = __ldg(&sources[lane]);
            if (s >= 0 && s < n) {
                atomicOr(&active[lane >> 6], 1ull << (lane & 63));
                atomicAdd(&count, 1);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 0; k < STATE_ACTIVE; ++k) {
                state[k] = 0;
            }
            state[STATE_MAX_LEVEL] = max_level;
            state[STATE_DONE] = (words == 0 || count == 0 || max_level <= 0) ? 1 : 0;
            state[STATE_WIDTH] = words;
            state[STATE_LANES] = count;
            *state_u64(state, STATE_REACHED) = (unsigned long long)count;
        }
        if (threadIdx.x < MAX_WORDS) {
            state_u64(state, STATE_ACTIVE)[threadIdx.x] = active[threadIdx.x];
            state_u64(state, STATE_LIVE)[threadIdx.x] = active[threadIdx.x];
            state_u64(state, STATE_NEXT_LIVE)[threadIdx.x] = 0ull;
        }
    }
    // Each block builds a tile of words in shared memory (cleared, then the source bits
    // that fall in it), then stores it: no word is both cleared and or-ed in global memory.
    __shared__ unsigned long long seeds[INIT_TILE];
    const long long tile = min((long long)blockDim.x, (long long)INIT_TILE);
    const long long stride = tile * gridDim.x;
    for (long long base = blockIdx.x * tile; base < vw; base += stride) {
        if (threadIdx.x < tile) {
            seeds[threadIdx.x] = 0ull;
        }
        __syncthreads();
        for (int lane = threadIdx.x; lane < used; lane += blockDim.x) {
            const int s = __ldg(&sources[lane]);
            if (s >= 0 && s < n) {
                const long long k = (long long)s * words + (lane >> 6) - base;
                if (k >= 0 && k < tile) {
                    atomicOr(&seeds[k], 1ull << (lane & 63));
                }
            }
        }
        __syncthreads();
        const long long i = base + threadIdx.x;
        if (threadIdx.x < tile && i < vw) {
            visited[i] = seeds[threadIdx.x];
            frontier[i] = seeds[threadIdx.x];
            next[i] = 0ull;
        }
        __syncthreads();
    }
}
"""
)

_INIT_TARGETS_SOURCE = (
    _PRELUDE
    + r"""
extern "C" __global__ void msbfs_init_targets(const int* __restrict__ sources,
                                              const int* __restrict__ targets,
                                              int* __restrict__ target_levels,
                                              const int* __restrict__ state,
                                              int lanes,
                                              int k,
                                              long long lk)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < lk; i += stride) {
        int value = -1;
        if (k > 0) {
            const long long lane = i / k;
            const int t = (int)(i - lane * k);
            if (lane < lanes && lane_active(state, lane) &&
                __ldg(&sources[lane]) == __ldg(&targets[t])) {
                value = 0;
            }
        }
        target_levels[i] = value;
    }
}
"""
)

_INIT_LEVELS_SOURCE = (
    _PRELUDE
    + r"""
// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_init_levels(const long long* __restrict__ offsets,
                                             const int* __restrict__ sources,
                                             int* __restrict__ levels,
                                             const int* __restrict__ state,
                                             long long n1,
                                             int lanes,
                                             long long lv)
{
    const long long n = n1 - 1;
    const long long stride = (long long)blockDim.x * gridDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (n <= 0) {
        for (long long i = first; i < lv; i += stride) {
            levels[i] = -1;
        }
        return;
    }
    // Row (lane) and column (vertex) advance by fixed steps: one division per thread,
    // not one per element of a lanes * V array.
    const long long row_step = stride / n;
    const long long col_step = stride - row_step * n;
    long long lane = first / n;
    long long v = first - lane * n;
    for (long long i = first; i < lv; i += stride) {
        const bool source = lane < lanes && lane_active(state, lane) && __ldg(&sources[lane]) == v;
        levels[i] = source ? 0 : -1;
        lane += row_step;
        v += col_step;
        if (v >= n) {
            v -= n;
            lane += 1;
        }
    }
}
"""
)

_EXPAND_SOURCE = (
    _PRELUDE
    + _PULL
    + r"""
extern "C" __global__ void msbfs_expand(const long long* __restrict__ in_offsets,
                                        const int* __restrict__ in_indices,
                                        const unsigned long long* __restrict__ frontier,
                                        unsigned long long* __restrict__ next,
                                        unsigned long long* __restrict__ visited,
                                        int* __restrict__ state,
                                        long long n1,
                                        long long vw)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    // Uniform exit: only msbfs_init and msbfs_advance write the done word.
    if (state[STATE_DONE] != 0 || words == 0) {
        return;
    }
    const int group = msbfs_group(words);
    const int slots = 32 / group;
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned team = group == 32 ? FULL_MASK : ((1u << group) - 1u) << (slot * group);
    const unsigned long long live = w < words ? state_u64(state, STATE_LIVE)[w] : 0ull;
    const long long hub_min = HUB_LANE_EDGES / group;
    unsigned long long found = 0ull;
    unsigned long long gained = 0ull;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long tiles = (n + slots - 1) / slots;
    // A warp takes `slots` consecutive vertices, one team each: lane (slot, w) owns word
    // w of its vertex, so the warp reads and writes consecutive words.
    for (long long tile = warp; tile < tiles; tile += warps) {
        const long long v = tile * slots + slot;
        const bool mine = v < n && w < words;
        const long long i = v * words + w;
        const unsigned long long seen = mine ? visited[i] : ~0ull;
        unsigned long long need = ~seen & live;
        const bool needy = (__ballot_sync(FULL_MASK, need != 0ull) & team) != 0u;
        long long begin = 0;
        long long end = 0;
        if (needy) {
            begin = __ldg(&in_offsets[v]);
            end = __ldg(&in_offsets[v + 1]);
        }
        const long long degree = end - begin;
        if (degree >= hub_min) {
            need = 0ull;  // msbfs_expand_hubs expands it; its next words are zeroed below
        }
        const bool wide = degree >= WIDE_MIN_DEGREE && degree < hub_min;
        const bool narrow = needy && degree > 0 && degree < WIDE_MIN_DEGREE;
        unsigned long long acc = 0ull;
        unsigned wide_leaders = __ballot_sync(FULL_MASK, wide && w == 0);
        while (wide_leaders != 0u) {
            const int leader = __ffs(wide_leaders) - 1;
            wide_leaders &= wide_leaders - 1u;
            const long long first = __shfl_sync(FULL_MASK, begin, leader);
            const long long last = __shfl_sync(FULL_MASK, end, leader);
            const unsigned long long leader_need = __shfl_sync(FULL_MASK, need, leader + w);
            const unsigned long long got =
                warp_pull(first, last, in_indices, frontier, leader_need, words, group, slot, w);
            if (slot == leader / group) {
                acc = got;
            }
        }
        // Short lists: each team walks its own, all in step so the votes see every lane;
        // a team stops once its vertex has every lane it needs.
        long long j = narrow ? begin : 0;
        const long long stop = narrow ? end : 0;
        bool covered = !narrow;
        while (__any_sync(FULL_MASK, !covered)) {
            if (!covered) {
                int u[UNROLL];
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) {
                    u[k] = j + k < stop ? __ldg(&in_indices[j + k]) : -1;
                }
                if (w < words) {
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) {
                        if (u[k] >= 0) {
                            acc |= __ldg(&frontier[(long long)u[k] * words + w]);
                        }
                    }
                }
                j += UNROLL;
            }
            const unsigned have = __ballot_sync(FULL_MASK, (acc & need) == need);
            covered = covered || (have & team) == team || j >= stop;
        }
        if (mine) {
            const unsigned long long fresh = acc & need;
            next[i] = fresh;
            if (fresh != 0ull) {
                visited[i] = seen | fresh;
                found += __popcll(fresh);
                gained |= fresh;
            }
        }
    }
    flush_progress(found, gained, group, words, state);
}
"""
)

_EXPAND_HUBS_SOURCE = (
    _PRELUDE
    + _PULL
    + r"""
// The vertex whose in-list holds edge j, given offsets[lo] <= j < offsets[hi] (or
// hi == n): a 32-way search, one probe per lane, so about log32(n) dependent loads.
__device__ __forceinline__ long long warp_owner_vertex(const long long* __restrict__ offsets,
                                                       long long lo,
                                                       long long hi,
                                                       long long j,
                                                       int lane)
{
    while (hi - lo > 1) {
        const long long step = (hi - lo + 31) / 32;
        const long long probe = lo + lane * step;
        const bool below = probe < hi && __ldg(&offsets[probe]) <= j;
        // Offsets never decrease: the probes at or below j are a prefix of the lanes.
        const unsigned ballot = __ballot_sync(FULL_MASK, below);
        lo += (31 - __clz(ballot)) * step;
        hi = min(lo + step, hi);
    }
    return lo;
}

// Pulls the part of hub h's in-list inside chunk [cs, ce) and merges it into next and
// visited. Chunks race on a hub's words, but next only gains bits (reading visited
// early or late only changes which chunk sets a bit), and the old value of next tells
// which chunk found a bit first, so each pair is counted once.
__device__ __forceinline__ void pull_hub_chunk(long long h,
                                               long long cs,
                                               long long ce,
                                               const long long* __restrict__ in_offsets,
                                               const int* __restrict__ in_indices,
                                               const unsigned long long* __restrict__ frontier,
                                               unsigned long long* __restrict__ next,
                                               unsigned long long* __restrict__ visited,
                                               unsigned long long live,
                                               long long hub_min,
                                               int words,
                                               int group,
                                               int slot,
                                               int w,
                                               unsigned long long* found,
                                               unsigned long long* gained)
{
    const long long begin = __ldg(&in_offsets[h]);
    const long long end = __ldg(&in_offsets[h + 1]);
    if (end - begin < hub_min) {
        return;  // msbfs_expand took it
    }
    const long long i = h * words + w;
    const unsigned long long need = w < words ? ~visited[i] & live : 0ull;
    if (!__any_sync(FULL_MASK, need != 0ull)) {
        return;
    }
    const unsigned long long got =
        warp_pull(max(begin, cs), min(end, ce), in_indices, frontier, need, words, group, slot, w);
    const unsigned long long fresh = got & need;
    if (slot == 0 && fresh != 0ull) {
        const unsigned long long before = atomicOr(&next[i], fresh);
        atomicOr(&visited[i], fresh);
        const unsigned long long gain = fresh & ~before;
        *found += __popcll(gain);
        *gained |= gain;
    }
}

extern "C" __global__ void msbfs_expand_hubs(const long long* __restrict__ in_offsets,
                                             const int* __restrict__ in_indices,
                                             const unsigned long long* __restrict__ frontier,
                                             unsigned long long* __restrict__ next,
                                             unsigned long long* __restrict__ visited,
                                             int* __restrict__ state,
                                             long long n1,
                                             long long vw)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (state[STATE_DONE] != 0 || words == 0) {
        return;
    }
    const int group = msbfs_group(words);
    const int lane = (int)(threadIdx.x & 31u);
    const int slot = lane / group;
    const int w = lane % group;
    const unsigned long long live = w < words ? state_u64(state, STATE_LIVE)[w] : 0ull;
    // A hub holds at least one chunk of edges, so at most two hubs meet a chunk: the
    // owner of its first edge and the owner of its last.
    const long long chunk = HUB_LANE_EDGES / group;
    const long long edges = __ldg(&in_offsets[n]);
    const long long chunks = (edges + chunk - 1) / chunk;
    unsigned long long found = 0ull;
    unsigned long long gained = 0ull;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long c = warp; c < chunks; c += warps) {
        const long long cs = c * chunk;
        const long long ce = min(cs + chunk, edges);
        const long long first = warp_owner_vertex(in_offsets, 0, n, cs, lane);
        pull_hub_chunk(first, cs, ce, in_offsets, in_indices, frontier, next, visited, live,
                       chunk, words, group, slot, w, &found, &gained);
        if (__ldg(&in_offsets[first + 1]) < ce) {
            const long long last = warp_owner_vertex(in_offsets, first + 1, n, ce - 1, lane);
            pull_hub_chunk(last, cs, ce, in_offsets, in_indices, frontier, next, visited, live,
                           chunk, words, group, slot, w, &found, &gained);
        }
    }
    flush_progress(found, gained, group, words, state);
}
"""
)

_RECORD_TARGETS_SOURCE = (
    _PRELUDE
    + r"""
// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_record_targets(const long long* __restrict__ offsets,
                                                const unsigned long long* __restrict__ next,
                                                const int* __restrict__ targets,
                                                int* __restrict__ target_levels,
                                                const int* __restrict__ state,
                                                long long n1,
                                                long long vw,
                                                int k,
                                                long long lk)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (state[STATE_DONE] != 0 || *state_u64(state, STATE_DISCOVERED) == 0ull || words == 0) {
        return;
    }
    const int level = state[STATE_LEVEL] + 1;
    const long long items = (long long)k * words;
    const long long stride = (long long)blockDim.x * gridDim.x;
    // Consecutive threads read consecutive words of one target.
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < items; i += stride) {
        const long long t = i / words;
        const int w = (int)(i - t * words);
        const int target = __ldg(&targets[t]);
        if (target < 0 || target >= n) {
            continue;
        }
        unsigned long long bits = __ldg(&next[(long long)target * words + w]);
        while (bits != 0ull) {
            const long long lane = 64LL * w + (__ffsll((long long)bits) - 1);
            bits &= bits - 1ull;
            const long long at = lane * k + t;
            if (at < lk) {
                target_levels[at] = level;
            }
        }
    }
}
"""
)

_RECORD_LEVELS_SOURCE = (
    _PRELUDE
    + r"""
// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_record_levels(const long long* __restrict__ offsets,
                                               const unsigned long long* __restrict__ next,
                                               int* __restrict__ levels,
                                               const int* __restrict__ state,
                                               long long n1,
                                               long long vw,
                                               long long lv)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (state[STATE_DONE] != 0 || *state_u64(state, STATE_DISCOVERED) == 0ull || words == 0) {
        return;
    }
    const int level = state[STATE_LEVEL] + 1;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < vw; i += stride) {
        unsigned long long bits = __ldg(&next[i]);
        if (bits == 0ull) {
            continue;
        }
        const long long v = i / words;
        const int w = (int)(i - v * words);
        while (bits != 0ull) {
            const long long lane = 64LL * w + (__ffsll((long long)bits) - 1);
            bits &= bits - 1ull;
            const long long at = lane * n + v;
            if (at < lv) {
                levels[at] = level;
            }
        }
    }
}
"""
)

_ADVANCE_SOURCE = (
    _PRELUDE
    + r"""
extern "C" __global__ void msbfs_advance(int* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[STATE_DONE] != 0) {
        return;
    }
    state[STATE_LEVELS_RUN] += 1;
    unsigned long long* discovered = state_u64(state, STATE_DISCOVERED);
    if (*discovered == 0ull) {
        state[STATE_DONE] = 1;
        return;
    }
    *state_u64(state, STATE_REACHED) += *discovered;
    *discovered = 0ull;
    state[STATE_LEVEL] += 1;
    // All MAX_WORDS words: the state's own layout, not a width taken on trust.
    unsigned long long* live = state_u64(state, STATE_LIVE);
    unsigned long long* next_live = state_u64(state, STATE_NEXT_LIVE);
    for (int w = 0; w < MAX_WORDS; ++w) {
        live[w] = next_live[w];
        next_live[w] = 0ull;
    }
    if (state[STATE_LEVEL] >= state[STATE_MAX_LEVEL]) {
        state[STATE_DONE] = 1;
    }
}
"""
)

_COUNT_SOURCE = (
    _PRELUDE
    + r"""
// offsets and sources are never read: they are bound so that n and lanes derive from
// their lengths.
extern "C" __global__ void msbfs_count(const long long* __restrict__ offsets,
                                       const int* __restrict__ sources,
                                       const unsigned long long* __restrict__ visited,
                                       int* __restrict__ counts,
                                       long long n1,
                                       long long vw,
                                       int lanes)
{
    const long long n = n1 - 1;
    const int words = msbfs_words(n, vw);
    if (words == 0) {
        return;
    }
    const int lane = (int)(threadIdx.x & 31u);
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const long long tasks = (n + COUNT_TILE - 1) / COUNT_TILE * words;
    // A task is one word of COUNT_TILE vertices; neighbouring warps take the other words
    // of the same vertices, which share cache lines.
    for (long long task = warp; task < tasks; task += warps) {
        const long long tile = task / words;
        const int w = (int)(task - tile * words);
        const long long first = tile * COUNT_TILE;
        const long long last = min(first + COUNT_TILE, n);
        int low = 0;   // lane 64w + lane
        int high = 0;  // lane 64w + 32 + lane
        for (long long base = first; base < last; base += 32) {
            const long long v = base + lane;
            const unsigned long long x = v < last ? __ldg(&visited[v * words + w]) : 0ull;
            if (!__any_sync(FULL_MASK, x != 0ull)) {
                continue;
            }
            // Ballot b holds bit b of the 32 words: its popcount is lane b's share.
#pragma unroll 8
            for (int b = 0; b < 32; ++b) {
                const int lo = __popc(__ballot_sync(FULL_MASK, (unsigned)(x >> b) & 1u));
                const int hi = __popc(__ballot_sync(FULL_MASK, (unsigned)(x >> (b + 32)) & 1u));
                if (lane == b) {
                    low += lo;
                    high += hi;
                }
            }
        }
        const int lane_low = 64 * w + lane;
        if (low != 0 && lane_low < lanes) {
            atomicAdd(&counts[lane_low], low);
        }
        if (high != 0 && lane_low + 32 < lanes) {
            atomicAdd(&counts[lane_low + 32], high);
        }
    }
}
"""
)
