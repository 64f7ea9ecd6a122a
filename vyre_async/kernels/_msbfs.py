"""Multi-source BFS: up to 64 * W queries per traversal, one bit lane per query.

Each vertex carries W 64-bit words of visited bits and W of frontier bits; lane
``64 * w + b`` is bit ``b`` of word ``w``. A level is one pull over the in-edges:
for every vertex ``v``, ``next[v] = OR(frontier[u] for u in in(v)) & ~visited[v]``,
so a vertex and its in-list are read once per level for all queries at once, and no
atomic touches global memory per edge. A vertex's scan stops as soon as every lane
it still needs (unvisited, with a non-empty frontier) is found, and a vertex that
needs none is skipped. There is no top-down (push) step: with W words per vertex it
would need an atomic OR per edge. For a symmetric graph the caller binds the CSR
arrays as ``in_offsets``/``in_indices``; for a directed one, its transpose.

Who walks an in-list depends on its length ``d``, with ``group`` lanes (W rounded
up to a power of two) reading one neighbour's consecutive words: a team of
``group`` lanes when ``d < 32``; the whole warp when ``32 <= d < hub_min``; and
above that (``d * group >= MSBFS_HUB_LANE_EDGES``, see :func:`msbfs_hub_min_degree`)
``msbfs_expand_hubs`` splits the list into chunks spread over the grid, merging them
with one atomic OR per chunk and word.

Driver order (every step binds the same buffers on every repeat; ``A``/``B`` are
the two frontier buffers, ``[...]`` steps only when that output is wanted)::

    prefix:   msbfs_init(frontier=A, next=B)
              [msbfs_init_targets] [msbfs_init_levels]
    repeated: msbfs_expand(frontier=A, next=B)   msbfs_expand_hubs(frontier=A, next=B)
              [msbfs_record_targets(next=B)] [msbfs_record_levels(next=B)]
              msbfs_advance
              msbfs_expand(frontier=B, next=A)   msbfs_expand_hubs(frontier=B, next=A)
              [msbfs_record_targets(next=A)] [msbfs_record_levels(next=A)]
              msbfs_advance
    final:    [msbfs_count]  (once the done word is set), then read the outputs

One repeat runs two levels. Once the state says done every repeated kernel returns
at once, so surplus repeats cost a few empty launches. Outputs are compact and chosen
by the caller: ``counts`` (int32 per lane, reduced once from ``visited`` at the end
rather than per level, which would cost the same pass every level),
``target_levels`` (int32 ``[lane * K + t]`` for K targets) and, only when asked,
``levels`` (int32 ``[lane * V + v]``); -1 means not reached.

The state is ``MSBFS_STATE_WORDS`` (112) int32 words; uint64 values take two words,
low first, at 8-byte aligned offsets::

    0 STATE_LEVEL       level of the current frontier
    1 STATE_DONE        nonzero: finished, every repeated kernel returns at once
    2 STATE_MAX_LEVEL   stop once this level is discovered (MSBFS_UNLIMITED: never)
    3 STATE_LEVELS_RUN  expansions run, the last empty one included
    4 STATE_WIDTH       W as msbfs_init derived it (0: invalid bindings, done at once)
    5 STATE_LANES       lanes with a valid source
    8 STATE_DISCOVERED  uint64 (vertex, lane) pairs found by the current expansion
   10 STATE_REACHED     uint64 pairs reached so far, sources included (= sum of counts)
   16 STATE_ACTIVE      uint64[16] lanes with a valid source
   48 STATE_LIVE        uint64[16] lanes whose current frontier is not empty
   80 STATE_NEXT_LIVE   uint64[16] lanes that gained a vertex in this expansion
   6, 7, 12-15          zero

W is never a parameter: every kernel derives it as ``vw / n`` from the bound lengths
of a bitset and of the CSR offsets (``n1 = V + 1``), so no binding can make a kernel
index outside a buffer. Lanes beyond ``64 * W`` and lanes whose source is outside
``[0, V)`` (such as -1) are unused: they reach nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._kernel import Kernel, LaunchShape, grid_stride
from ._signature import BufferParam, ScalarParam
from ._warp import at_least_one_block, one_thread

#: Most 64-bit words per vertex (1024 lanes); other widths make every kernel a no-op.
MSBFS_MAX_WORDS = 16
#: Query lanes one 64-bit word carries.
MSBFS_LANES_PER_WORD = 64
#: ``max_level`` for a traversal limited only by the graph.
MSBFS_UNLIMITED = 2**31 - 1
#: A vertex whose in-degree times its team width reaches this is a hub: its in-list is
#: cut into chunks of ``MSBFS_HUB_LANE_EDGES / group`` edges (256 warp passes each).
MSBFS_HUB_LANE_EDGES = 8192

#: Level of the current frontier.
STATE_LEVEL = 0
#: Nonzero once the traversal has finished; every repeated kernel then returns at once.
STATE_DONE = 1
#: Stop once this level has been discovered (``MSBFS_UNLIMITED`` for a full traversal).
STATE_MAX_LEVEL = 2
#: Expansions run so far (the last, empty expansion of a full traversal included).
STATE_LEVELS_RUN = 3
#: Words per vertex W as ``msbfs_init`` derived it; 0 when the bindings were invalid.
STATE_WIDTH = 4
#: Lanes with a valid source.
STATE_LANES = 5
#: uint64: (vertex, lane) pairs found by the current expansion.
STATE_DISCOVERED = 8
#: uint64: (vertex, lane) pairs reached so far, sources included (sum of the counts).
STATE_REACHED = 10
#: uint64[MSBFS_MAX_WORDS]: lanes with a valid source (never changes after init).
STATE_ACTIVE = 16
#: uint64[MSBFS_MAX_WORDS]: lanes whose current frontier is not empty.
STATE_LIVE = STATE_ACTIVE + 2 * MSBFS_MAX_WORDS
#: uint64[MSBFS_MAX_WORDS]: lanes that gained a vertex in the current expansion.
STATE_NEXT_LIVE = STATE_LIVE + 2 * MSBFS_MAX_WORDS
#: Words in the state buffer (``int32``).
STATE_WORDS = STATE_NEXT_LIVE + 2 * MSBFS_MAX_WORDS
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
MSBFS_STATE_WORDS = STATE_WORDS

_BLOCK = 256  # a multiple of 32: every warp path uses full-warp masks
_MAX_BLOCKS = 4096
_WIDE_MIN_DEGREE = 32  # shorter in-lists are walked by a team, longer by the whole warp
_UNROLL = 4  # neighbours each lane loads before the dependent frontier reads
_COUNT_TILE = 1024  # vertices per msbfs_count task: 64 atomics per 1024 words

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


# ----------------------------------------------------------------------------- geometry


def msbfs_words(n: int, vw: int) -> int:
    """Words per vertex the kernels derive from bound lengths: ``vw / n``, or 0 if invalid.

    Args:
        n: Vertex count (the CSR offsets' length minus one).
        vw: Length of the bitset buffers.

    Returns:
        W in ``[1, MSBFS_MAX_WORDS]``, or 0 when ``vw`` is not such a multiple of ``n``.
    """
    if n <= 0 or vw <= 0 or vw % n:
        return 0
    words = vw // n
    return words if words <= MSBFS_MAX_WORDS else 0


def _group(words: int) -> int:
    return 1 << (words - 1).bit_length()


def msbfs_hub_min_degree(words: int) -> int:
    """In-degree from which ``msbfs_expand_hubs`` expands a vertex instead of ``msbfs_expand``.

    Args:
        words: Words per vertex, in ``[1, MSBFS_MAX_WORDS]``.

    Returns:
        ``MSBFS_HUB_LANE_EDGES`` divided by W rounded up to a power of two.
    """
    return MSBFS_HUB_LANE_EDGES // _group(words)


def _size_words(sizes: Mapping[str, int]) -> int:
    return msbfs_words(sizes["v1"] - 1, sizes["vw"])


def _warps(count: int) -> LaunchShape:
    """One warp per task, capped; the kernels' warp-stride loops cover the rest."""
    blocks = min(_MAX_BLOCKS, -(-count * 32 // _BLOCK))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def _expand_launch(sizes: Mapping[str, int]) -> LaunchShape:
    words = _size_words(sizes)
    if not words:
        return _warps(0)
    return _warps(-(-(sizes["v1"] - 1) // (32 // _group(words))))


def _hubs_launch(sizes: Mapping[str, int]) -> LaunchShape:
    words = _size_words(sizes)
    return _warps(-(-sizes["e"] // msbfs_hub_min_degree(words)) if words else 0)


def _record_targets_launch(sizes: Mapping[str, int]) -> LaunchShape:
    items = sizes["k"] * _size_words(sizes)
    blocks = min(_MAX_BLOCKS, -(-items // _BLOCK))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def _count_launch(sizes: Mapping[str, int]) -> LaunchShape:
    return _warps(-(-(sizes["v1"] - 1) // _COUNT_TILE) * _size_words(sizes))


# --------------------------------------------------------------------------- references


def _u64(state: np.ndarray, index: int, count: int = 1) -> np.ndarray:
    """The uint64 values stored in state words ``[index, index + 2 * count)`` (a view)."""
    return state[index : index + 2 * count].view(np.uint64)


def _geometry(scalars: Mapping[str, np.generic]) -> tuple[int, int]:
    n = int(scalars["n1"].item()) - 1
    return n, msbfs_words(n, int(scalars["vw"].item()))


def _lane_bits(lanes: np.ndarray) -> np.ndarray:
    return np.left_shift(np.uint64(1), (lanes % 64).astype(np.uint64))


def _bits(rows: np.ndarray) -> np.ndarray:
    """``(r, W)`` uint64 words as ``(r, 64 * W)`` booleans; column ``64 * w + b`` is bit b."""
    as_bytes = np.ascontiguousarray(rows, dtype="<u8").view(np.uint8)
    as_bytes = as_bytes.reshape(rows.shape[0], 8 * rows.shape[1])
    return np.unpackbits(as_bytes, axis=1, bitorder="little").view(bool)


def _popcount(words: np.ndarray) -> int:
    return int(np.unpackbits(np.ascontiguousarray(words, dtype="<u8").view(np.uint8)).sum())


def _active_lanes(state: np.ndarray, lanes: int) -> np.ndarray:
    """Lanes below ``lanes`` whose source was valid at init."""
    active = _bits(_u64(state, STATE_ACTIVE, MSBFS_MAX_WORDS).reshape(1, -1))[0]
    return np.flatnonzero(active[:lanes])


def _pull(
    offsets: np.ndarray, indices: np.ndarray, frontier: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """OR of the frontier words of each row's in-neighbours; every row has in-edges."""
    begins = offsets[rows]
    counts = offsets[rows + 1] - begins
    starts = np.cumsum(counts) - counts
    positions = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(begins - starts, counts)
    result: np.ndarray = np.bitwise_or.reduceat(frontier[indices[positions]], starts, axis=0)
    return result


def _add_progress(state: np.ndarray, gained: np.ndarray) -> None:
    """Count the new pairs in ``gained`` (rows of W words) and mark their lanes live."""
    if not gained.size:
        return
    _u64(state, STATE_DISCOVERED)[0] += np.uint64(_popcount(gained))
    words = gained.shape[1]
    _u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS)[:words] |= np.bitwise_or.reduce(gained, axis=0)


def msbfs_init_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_init``: source bits in ``visited`` and ``frontier``, ``next`` cleared.

    Args:
        arrays: ``offsets`` (length only), ``sources`` (read), ``visited``,
            ``frontier``, ``next`` (uint64, written) and ``state`` (written).
        scalars: ``max_level`` and the derived ``n1``, ``lanes`` and ``vw``.
    """
    sources, visited, state = arrays["sources"], arrays["visited"], arrays["state"]
    n, words = _geometry(scalars)
    used = min(sources.size, MSBFS_LANES_PER_WORD * words)
    lanes = np.arange(used)
    starts = sources[:used].astype(np.int64)
    valid = (starts >= 0) & (starts < n)
    lanes, starts = lanes[valid], starts[valid]
    bits = _lane_bits(lanes)
    visited.fill(0)
    np.bitwise_or.at(visited, starts * words + lanes // 64, bits)
    arrays["frontier"][:] = visited
    arrays["next"].fill(0)
    active = np.zeros(MSBFS_MAX_WORDS, dtype=np.uint64)
    np.bitwise_or.at(active, lanes // 64, bits)
    max_level = int(scalars["max_level"].item())
    state.fill(0)
    state[STATE_MAX_LEVEL] = max_level
    state[STATE_DONE] = int(words == 0 or lanes.size == 0 or max_level <= 0)
    state[STATE_WIDTH] = words
    state[STATE_LANES] = lanes.size
    _u64(state, STATE_REACHED)[0] = lanes.size
    _u64(state, STATE_ACTIVE, MSBFS_MAX_WORDS)[:] = active
    _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:] = active


def msbfs_init_targets_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_init_targets``: level 0 where a lane's source is the target, else -1.

    Args:
        arrays: ``sources``, ``targets`` (read), ``target_levels`` (int32 ``[lane * K +
            t]``, written) and ``state`` (read: the active lanes).
        scalars: The derived ``lanes``, ``k`` and ``lk``.
    """
    sources, targets, out = arrays["sources"], arrays["targets"], arrays["target_levels"]
    out.fill(-1)
    k = targets.size
    if k == 0:
        return
    lanes = _active_lanes(arrays["state"], sources.size)
    hit_lane, hit_target = np.nonzero(sources[lanes][:, None] == targets[None, :])
    at = lanes[hit_lane].astype(np.int64) * k + hit_target
    out[at[at < out.size]] = 0


def msbfs_init_levels_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_init_levels``: level 0 at each active lane's source, else -1.

    Args:
        arrays: ``offsets`` (length only), ``sources`` (read), ``levels`` (int32
            ``[lane * V + v]``, written) and ``state`` (read: the active lanes).
        scalars: The derived ``n1``, ``lanes`` and ``lv``.
    """
    sources, levels = arrays["sources"], arrays["levels"]
    n = int(scalars["n1"].item()) - 1
    levels.fill(-1)
    if n <= 0:
        return
    lanes = _active_lanes(arrays["state"], sources.size)
    starts = sources[lanes].astype(np.int64)
    keep = (starts >= 0) & (starts < n)
    at = lanes[keep].astype(np.int64) * n + starts[keep]
    levels[at[at < levels.size]] = 0


def msbfs_expand_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_expand``: pull one level into ``next`` for every vertex but the hubs.

    Hubs (in-degree at least :func:`msbfs_hub_min_degree`) get zero ``next`` words and
    keep their ``visited`` words, for ``msbfs_expand_hubs``.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``frontier`` (read), ``next`` (written),
            ``visited`` and ``state`` (updated).
        scalars: The derived ``n1`` and ``vw``.
    """
    state = arrays["state"]
    n, words = _geometry(scalars)
    if state[STATE_DONE] != 0 or words == 0:
        return
    offsets, visited = arrays["in_offsets"], arrays["visited"].reshape(n, words)
    live = _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:words]
    need = ~visited & live
    degree = np.diff(offsets)
    rows = np.flatnonzero(
        (need != 0).any(axis=1) & (degree > 0) & (degree < msbfs_hub_min_degree(words))
    )
    fresh = np.zeros((n, words), dtype=np.uint64)
    if rows.size:
        frontier = arrays["frontier"].reshape(n, words)
        fresh[rows] = _pull(offsets, arrays["in_indices"], frontier, rows) & need[rows]
    arrays["next"][:] = fresh.reshape(-1)
    visited |= fresh
    _add_progress(state, fresh[rows])


def msbfs_expand_hubs_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_expand_hubs``: pull one level for the hubs, or-ing into ``next``.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``frontier`` (read), ``next``,
            ``visited`` and ``state`` (updated).
        scalars: The derived ``n1`` and ``vw``.
    """
    state = arrays["state"]
    n, words = _geometry(scalars)
    if state[STATE_DONE] != 0 or words == 0:
        return
    offsets, visited = arrays["in_offsets"], arrays["visited"].reshape(n, words)
    hubs = np.flatnonzero(np.diff(offsets) >= msbfs_hub_min_degree(words))
    live = _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:words]
    need = ~visited[hubs] & live
    needy = (need != 0).any(axis=1)
    hubs, need = hubs[needy], need[needy]
    if not hubs.size:
        return
    found = _pull(offsets, arrays["in_indices"], arrays["frontier"].reshape(n, words), hubs)
    fresh = found & need
    following = arrays["next"].reshape(n, words)
    before = following[hubs]
    following[hubs] = before | fresh
    visited[hubs] |= fresh
    _add_progress(state, fresh & ~before)


def _recorded(state: np.ndarray, words: int) -> bool:
    return state[STATE_DONE] == 0 and _u64(state, STATE_DISCOVERED)[0] != 0 and words > 0


def msbfs_record_targets_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_record_targets``: the new level where ``next`` has a target's lane bit.

    Args:
        arrays: ``offsets`` (length only), ``next``, ``targets`` (read),
            ``target_levels`` (int32 ``[lane * K + t]``, updated) and ``state`` (read).
        scalars: The derived ``n1``, ``vw``, ``k`` and ``lk``.
    """
    state, targets, out = arrays["state"], arrays["targets"], arrays["target_levels"]
    n, words = _geometry(scalars)
    if not _recorded(state, words) or not targets.size:
        return
    valid = np.flatnonzero((targets >= 0) & (targets < n))
    rows = arrays["next"].reshape(n, words)[targets[valid]]
    hit_target, hit_lane = np.nonzero(_bits(rows))
    at = hit_lane.astype(np.int64) * targets.size + valid[hit_target]
    out[at[at < out.size]] = state[STATE_LEVEL] + 1


def msbfs_record_levels_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_record_levels``: the new level at every (lane, vertex) bit of ``next``.

    Args:
        arrays: ``offsets`` (length only), ``next`` (read), ``levels`` (int32
            ``[lane * V + v]``, updated) and ``state`` (read).
        scalars: The derived ``n1``, ``vw`` and ``lv``.
    """
    state, levels = arrays["state"], arrays["levels"]
    n, words = _geometry(scalars)
    if not _recorded(state, words):
        return
    following = arrays["next"].reshape(n, words)
    vertices = np.flatnonzero((following != 0).any(axis=1))
    hit_vertex, hit_lane = np.nonzero(_bits(following[vertices]))
    at = hit_lane.astype(np.int64) * n + vertices[hit_vertex]
    levels[at[at < levels.size]] = state[STATE_LEVEL] + 1


def msbfs_advance_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_advance``: close the level; done when nothing was found or at max_level.

    Args:
        arrays: ``state`` (updated).
        scalars: None.
    """
    state = arrays["state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_LEVELS_RUN] += 1
    discovered = _u64(state, STATE_DISCOVERED)
    if discovered[0] == 0:
        state[STATE_DONE] = 1
        return
    _u64(state, STATE_REACHED)[0] += discovered[0]
    discovered[0] = 0
    state[STATE_LEVEL] += 1
    next_live = _u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS)
    _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:] = next_live
    next_live.fill(0)
    if state[STATE_LEVEL] >= state[STATE_MAX_LEVEL]:
        state[STATE_DONE] = 1


def msbfs_count_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_count``: vertices reached per lane, from ``visited``.

    Args:
        arrays: ``offsets``, ``sources`` (lengths only), ``visited`` (read) and
            ``counts`` (int32 per lane, arrives zeroed, written).
        scalars: The derived ``n1``, ``vw`` and ``lanes``.
    """
    counts = arrays["counts"]
    n, words = _geometry(scalars)
    if words == 0:
        return
    visited = arrays["visited"].reshape(n, words)
    per_lane = np.empty((words, 64), dtype=np.int64)
    for b in range(64):  # one bit at a time: no n x 64W boolean matrix
        per_lane[:, b] = ((visited >> np.uint64(b)) & np.uint64(1)).sum(axis=0)
    used = min(counts.size, MSBFS_LANES_PER_WORD * words)
    counts[:used] = per_lane.reshape(-1)[:used]


# ------------------------------------------------------------------------------ kernels

_OFFSETS = BufferParam("offsets", np.int64, "in", "v1")  # length only: n = V
_SOURCES = BufferParam("sources", np.int32, "in", "lanes")
_STATE = BufferParam("state", np.int32, "inout", STATE_WORDS)
_STATE_IN = BufferParam("state", np.int32, "in", STATE_WORDS)
_N1 = ScalarParam("n1", np.int64, default="v1")
_VW = ScalarParam("vw", np.int64, default="vw")
_LANES = ScalarParam("lanes", np.int32, default="lanes")
_PULL_PARAMS = (
    BufferParam("in_offsets", np.int64, "in", "v1"),
    BufferParam("in_indices", np.int32, "in", "e"),
    BufferParam("frontier", np.uint64, "in", "vw"),
    BufferParam("next", np.uint64, "inout", "vw"),
    BufferParam("visited", np.uint64, "inout", "vw"),
    _STATE,
    _N1,
    _VW,
)

msbfs_init = Kernel(
    name="msbfs_init",
    source=_INIT_SOURCE,
    entry="msbfs_init",
    params=(
        _OFFSETS,
        _SOURCES,
        BufferParam("visited", np.uint64, "inout", "vw"),
        BufferParam("frontier", np.uint64, "inout", "vw"),
        BufferParam("next", np.uint64, "inout", "vw"),
        _STATE,
        ScalarParam("max_level", np.int32),
        _N1,
        _LANES,
        _VW,
    ),
    # At least one block even for empty bitsets: block 0 writes the state.
    launch=at_least_one_block("vw", _BLOCK),
    reference=msbfs_init_reference,
)

msbfs_init_targets = Kernel(
    name="msbfs_init_targets",
    source=_INIT_TARGETS_SOURCE,
    entry="msbfs_init_targets",
    params=(
        _SOURCES,
        BufferParam("targets", np.int32, "in", "k"),
        BufferParam("target_levels", np.int32, "inout", "lk"),
        _STATE_IN,
        _LANES,
        ScalarParam("k", np.int32, default="k"),
        ScalarParam("lk", np.int64, default="lk"),
    ),
    launch=grid_stride("lk", block=_BLOCK),
    reference=msbfs_init_targets_reference,
)

msbfs_init_levels = Kernel(
    name="msbfs_init_levels",
    source=_INIT_LEVELS_SOURCE,
    entry="msbfs_init_levels",
    params=(
        _OFFSETS,
        _SOURCES,
        BufferParam("levels", np.int32, "inout", "lv"),
        _STATE_IN,
        _N1,
        _LANES,
        ScalarParam("lv", np.int64, default="lv"),
    ),
    launch=grid_stride("lv", block=_BLOCK, items_per_thread=4, max_blocks=16384),
    reference=msbfs_init_levels_reference,
)

msbfs_expand = Kernel(
    name="msbfs_expand",
    source=_EXPAND_SOURCE,
    entry="msbfs_expand",
    params=_PULL_PARAMS,
    # One warp per `32 / group` vertices (one lane per word slot), capped.
    launch=_expand_launch,
    reference=msbfs_expand_reference,
)

msbfs_expand_hubs = Kernel(
    name="msbfs_expand_hubs",
    source=_EXPAND_HUBS_SOURCE,
    entry="msbfs_expand_hubs",
    params=_PULL_PARAMS,
    # One warp per chunk of in-edges, capped.
    launch=_hubs_launch,
    reference=msbfs_expand_hubs_reference,
)

msbfs_record_targets = Kernel(
    name="msbfs_record_targets",
    source=_RECORD_TARGETS_SOURCE,
    entry="msbfs_record_targets",
    params=(
        _OFFSETS,
        BufferParam("next", np.uint64, "in", "vw"),
        BufferParam("targets", np.int32, "in", "k"),
        BufferParam("target_levels", np.int32, "inout", "lk"),
        _STATE_IN,
        _N1,
        _VW,
        ScalarParam("k", np.int32, default="k"),
        ScalarParam("lk", np.int64, default="lk"),
    ),
    # One thread per (target, word).
    launch=_record_targets_launch,
    reference=msbfs_record_targets_reference,
)

msbfs_record_levels = Kernel(
    name="msbfs_record_levels",
    source=_RECORD_LEVELS_SOURCE,
    entry="msbfs_record_levels",
    params=(
        _OFFSETS,
        BufferParam("next", np.uint64, "in", "vw"),
        BufferParam("levels", np.int32, "inout", "lv"),
        _STATE_IN,
        _N1,
        _VW,
        ScalarParam("lv", np.int64, default="lv"),
    ),
    launch=grid_stride("vw", block=_BLOCK),
    reference=msbfs_record_levels_reference,
)

msbfs_advance = Kernel(
    name="msbfs_advance",
    source=_ADVANCE_SOURCE,
    entry="msbfs_advance",
    params=(_STATE,),
    launch=one_thread,
    reference=msbfs_advance_reference,
)

msbfs_count = Kernel(
    name="msbfs_count",
    source=_COUNT_SOURCE,
    entry="msbfs_count",
    params=(
        _OFFSETS,
        _SOURCES,
        BufferParam("visited", np.uint64, "in", "vw"),
        # "out": zeroed before the launch, then one atomic add per lane and task.
        BufferParam("counts", np.int32, "out", "lanes"),
        _N1,
        _VW,
        _LANES,
    ),
    # One warp per word of COUNT_TILE vertices, capped.
    launch=_count_launch,
    reference=msbfs_count_reference,
)

#: The multi-source BFS kernels, in the order a traversal first runs them.
MSBFS_KERNELS: tuple[Kernel, ...] = (
    msbfs_init,
    msbfs_init_targets,
    msbfs_init_levels,
    msbfs_expand,
    msbfs_expand_hubs,
    msbfs_record_targets,
    msbfs_record_levels,
    msbfs_advance,
    msbfs_count,
)
