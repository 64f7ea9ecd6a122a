"""Level-synchronous BFS as four kernels that a resident repeated sequence runs.

A traversal is ``bfs_init`` once, then the step ``[bfs_top_down, bfs_bottom_up,
bfs_advance]`` repeated with fixed scalars. Everything that changes from one level to
the next lives in an eight-word ``int32`` state buffer on the device (see the
``STATE_*`` index constants), so the host never has to look between repeats: once the
state says done, every kernel returns at once, and surplus repeats cost a few empty
launches.

Exactly one of the two expansion kernels works per level, chosen by the direction
word: top-down pushes from the frontier over out-edges, bottom-up lets each
undiscovered vertex pull from its in-edges and stop at the first parent found
(Beamer, Asanović and Patterson, "Direction-optimizing breadth-first search", SC 2012).
For a symmetric graph the caller binds the same CSR arrays to both; for a directed
one, bottom-up needs the transpose.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...kernels import (
    BufferParam,
    Kernel,
    ScalarParam,
    at_least_one_block,
    grid_stride,
    one_thread,
)
from .._warp import WARP_MERGE

#: Words in the BFS state buffer (``int32``); the ``STATE_*`` constants index it.
STATE_WORDS = 8
#: Level of the current frontier.
STATE_LEVEL = 0
#: Vertices discovered while expanding the current frontier (the next frontier's size).
STATE_DISCOVERED = 1
#: Nonzero once the traversal has finished; every kernel then returns at once.
STATE_DONE = 2
#: Direction of the next expansion: 0 top-down, 1 bottom-up.
STATE_DIRECTION = 3
#: Vertices reached so far, the source included.
STATE_REACHED = 4
#: Stop once this level has been discovered (``BFS_UNLIMITED`` for a full traversal).
STATE_MAX_LEVEL = 5
#: Size of the current frontier.
STATE_FRONTIER = 6
#: Levels expanded so far (the last, empty expansion of a full traversal included).
STATE_LEVELS_RUN = 7
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
BFS_STATE_WORDS = STATE_WORDS

#: ``max_level`` for a traversal limited only by the graph.
BFS_UNLIMITED = 2**31 - 1
#: Go bottom-up once the next frontier holds more than ``n / BFS_TO_BOTTOM_UP`` vertices.
BFS_TO_BOTTOM_UP = 16
#: Go back top-down once it holds fewer than ``n / BFS_TO_TOP_DOWN`` vertices.
BFS_TO_TOP_DOWN = 64

_BLOCK = 256  # a multiple of 32: the warp-cooperative paths use full-warp masks

_PRELUDE = r"""
#define FULL_MASK 0xffffffffu


// Adds every thread's `count` to *counter with one atomic per block: warp shuffles,
// then one word per warp in shared memory. Every thread of the block must call it.
__device__ __forceinline__ void block_add_count(int count, int* counter)
{
    __shared__ int warp_counts[32];
    for (int offset = 16; offset > 0; offset >>= 1) {
        count += __shfl_down_sync(FULL_MASK, count, offset);
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        warp_counts[warp] = count;
    }
    __syncthreads();
    if (warp == 0u) {
        count = lane < ((blockDim.x + 31u) >> 5) ? warp_counts[lane] : 0;
        for (int offset = 16; offset > 0; offset >>= 1) {
            count += __shfl_down_sync(FULL_MASK, count, offset);
        }
        if (lane == 0u && count != 0) {
            atomicAdd(counter, count);
        }
    }
}
"""

_INIT_SOURCE = r"""
extern "C" __global__ void bfs_init(int* __restrict__ levels,
                                    int* __restrict__ state,
                                    int source,
                                    int max_level,
                                    int n)
{
    // An out-of-range source reaches nothing: no write lands outside levels.
    const bool valid = source >= 0 && source < n;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        levels[i] = (valid && i == source) ? 0 : -1;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        state[0] = 0;
        state[1] = 0;
        state[2] = (!valid || max_level <= 0) ? 1 : 0;
        state[3] = 0;
        state[4] = valid ? 1 : 0;
        state[5] = max_level;
        state[6] = valid ? 1 : 0;
        state[7] = 0;
    }
}
"""

_TOP_DOWN_SOURCE = (
    _PRELUDE
    + WARP_MERGE
    + r"""
// A frontier vertex with at least this many out-edges is expanded by its whole warp,
// so one hub does not hold 31 idle lanes for its whole adjacency list.
#define WARP_EXPAND_MIN_DEGREE 32
// One with at least this many (4 per thread of a 256-thread block) by its whole block:
// R-MAT hubs have 10^4-10^5 out-edges, which one warp would walk alone for up to a
// millisecond while the rest of the grid has long finished (Merrill, Garland and
// Grimshaw's CTA-wide gathering, PPoPP 2012).
#define BLOCK_EXPAND_MIN_DEGREE 1024

__device__ __forceinline__ int discover(int* levels, int u, int next)
{
    // The plain read skips the atomic for vertices already seen; a stale -1 only
    // costs a CAS that fails.
    return (levels[u] == -1 && atomicCAS(&levels[u], -1, next) == -1) ? 1 : 0;
}

extern "C" __global__ void bfs_top_down(const long long* __restrict__ offsets,
                                        const int* __restrict__ indices,
                                        int* __restrict__ levels,
                                        int* __restrict__ state,
                                        int n)
{
    // Uniform exit: only bfs_init and bfs_advance write these words, never during this launch.
    if (state[2] != 0 || state[3] != 0) {
        return;
    }
    __shared__ int block_owner;
    __shared__ long long block_first;
    __shared__ long long block_last;
    const int level = state[0];
    const int next = level + 1;
    const unsigned lane = threadIdx.x & 31u;
    const long long block = blockDim.x;
    const long long stride = block * gridDim.x;
    int found = 0;
    // Loop per block, not per thread: all threads run the same trips, so the block
    // barriers and the warp ballots and shuffles below always see every thread.
    for (long long base = (long long)blockIdx.x * block; base < n; base += stride) {
        const long long v = base + threadIdx.x;
        long long begin = 0;
        long long end = 0;
        if (v < n && levels[v] == level) {
            begin = __ldg(&offsets[v]);
            end = __ldg(&offsets[v + 1]);
        }
        const long long degree = end - begin;
        // Hub lists, one at a time, by the whole block: each thread reads four
        // neighbours per trip, independently, before the dependent level checks.
        bool hub = degree >= BLOCK_EXPAND_MIN_DEGREE;
        while (__syncthreads_or(hub)) {
            if (hub) {
                block_owner = threadIdx.x;  // racing writes: any one winner will do
            }
            __syncthreads();
            if (block_owner == (int)threadIdx.x) {
                block_first = begin;
                block_last = end;
                hub = false;
            }
            __syncthreads();
            const long long last = block_last;
            long long j = block_first + threadIdx.x;
            for (; j + 3 * block < last; j += 4 * block) {
                int u[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    u[k] = __ldg(&indices[j + k * block]);
                }
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    found += discover(levels, u[k], next);
                }
            }
            for (; j < last; j += block) {
                found += discover(levels, __ldg(&indices[j]), next);
            }
            // The next __syncthreads_or orders these reads of block_first/last
            // before the next owner overwrites them.
        }
        const bool wide = degree >= WARP_EXPAND_MIN_DEGREE && degree < BLOCK_EXPAND_MIN_DEGREE;
        unsigned wide_lanes = __ballot_sync(FULL_MASK, wide);
        while (wide_lanes != 0u) {
            const int leader = __ffs(wide_lanes) - 1;
            wide_lanes &= wide_lanes - 1u;
            const long long first = __shfl_sync(FULL_MASK, begin, leader);
            const long long last = __shfl_sync(FULL_MASK, end, leader);
            // A wide list holds the whole warp: read eight neighbours per lane per
            // trip, independently, before the dependent level checks.
            long long j = first + lane;
            for (; j + 7 * 32 < last; j += 8 * 32) {
                int u[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    u[k] = __ldg(&indices[j + k * 32]);
                }
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    found += discover(levels, u[k], next);
                }
            }
            for (; j < last; j += 32) {
                found += discover(levels, __ldg(&indices[j]), next);
            }
        }
        // The narrow lists of the warp's frontier vertices, merged: lane i takes the
        // i-th edge of each 32, so index reads are coalesced and no lane idles while
        // another walks a longer list.
        long long total = 0;
        const long long narrow = degree < WARP_EXPAND_MIN_DEGREE ? degree : 0;
        const long long start = warp_exclusive_scan(narrow, lane, &total);
        for (long long k0 = 0; k0 < total; k0 += 32) {
            const long long k = k0 + lane;
            const int owner = warp_owner(start, k);
            const long long owner_begin = __shfl_sync(FULL_MASK, begin, owner);
            const long long owner_start = __shfl_sync(FULL_MASK, start, owner);
            if (k < total) {
                found += discover(levels, __ldg(&indices[owner_begin + (k - owner_start)]), next);
            }
        }
    }
    block_add_count(found, &state[1]);
}
"""
)

_BOTTOM_UP_SOURCE = (
    _PRELUDE
    + r"""
extern "C" __global__ void bfs_bottom_up(const long long* __restrict__ in_offsets,
                                         const int* __restrict__ in_indices,
                                         int* __restrict__ levels,
                                         int* __restrict__ state,
                                         int n)
{
    if (state[2] != 0 || state[3] != 1) {
        return;
    }
    const int level = state[0];
    const int next = level + 1;
    const long long stride = (long long)blockDim.x * gridDim.x;
    int found = 0;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        if (levels[v] != -1) {
            continue;
        }
        // Vertices written during this launch go from -1 to next, never to level, so
        // racing with those writes cannot change what this scan finds.
        const long long end = __ldg(&in_offsets[v + 1]);
        for (long long j = __ldg(&in_offsets[v]); j < end; ++j) {
            if (levels[__ldg(&in_indices[j])] == level) {
                levels[v] = next;
                ++found;
                break;
            }
        }
    }
    block_add_count(found, &state[1]);
}
"""
)

_ADVANCE_SOURCE = r"""
// levels is never read: it is bound so that n derives from its length.
extern "C" __global__ void bfs_advance(const int* __restrict__ levels,
                                       int* __restrict__ state,
                                       int n,
                                       int bottom_up)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[2] != 0) {
        return;
    }
    state[7] += 1;
    const int count = state[1];
    if (count == 0) {
        state[2] = 1;
        return;
    }
    state[4] += count;
    state[0] += 1;
    state[6] = count;
    state[1] = 0;
    if (state[0] >= state[5]) {
        state[2] = 1;
    }
    // Beamer's vertex-count rule with hysteresis, in exact integers: bottom-up while
    // the frontier is large, top-down again once it has shrunk well below that.
    int direction = state[3];
    if (bottom_up == 0) {
        direction = 0;
    } else if (direction == 0 && 16LL * count > (long long)n) {
        direction = 1;
    } else if (direction == 1 && 64LL * count < (long long)n) {
        direction = 0;
    }
    state[3] = direction;
}
"""


def _expand(
    offsets: np.ndarray, indices: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For CSR ``rows``: the position in ``rows`` of each edge's row, and its column."""
    begins = offsets[rows]
    counts = offsets[rows + 1] - begins
    total = int(counts.sum())
    owner = np.repeat(np.arange(rows.size), counts)
    first = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) + np.repeat(begins - first, counts)
    return owner, indices[positions]


def bfs_init_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``bfs_init``: only the source at level 0, and a fresh state.

    An out-of-range source leaves every level at -1 and the state done with nothing
    reached.

    Args:
        arrays: ``levels`` (int32, written) and ``state`` (8 int32, written).
        scalars: ``source``, ``max_level`` and the derived ``n``.
    """
    levels, state = arrays["levels"], arrays["state"]
    source, max_level, n = (int(scalars[k].item()) for k in ("source", "max_level", "n"))
    valid = 0 <= source < n
    levels.fill(-1)
    if valid:
        levels[source] = 0
    done = int(not valid or max_level <= 0)
    state[:] = (0, 0, done, 0, int(valid), max_level, int(valid), 0)


def bfs_top_down_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_top_down``: label the unseen out-neighbours of the frontier.

    Args:
        arrays: ``offsets``, ``indices`` (read), ``levels`` and ``state`` (updated).
        scalars: The derived ``n``.
    """
    levels, state = arrays["levels"], arrays["state"]
    if state[STATE_DONE] != 0 or state[STATE_DIRECTION] != 0:
        return
    level = int(state[STATE_LEVEL])
    _, neighbours = _expand(arrays["offsets"], arrays["indices"], np.flatnonzero(levels == level))
    fresh = neighbours[levels[neighbours] == -1]
    if fresh.size:
        # Label, then count: np.unique's sort costs ~10x this on large frontiers.
        levels[fresh] = level + 1
        state[STATE_DISCOVERED] += int(np.count_nonzero(levels == level + 1))


def bfs_bottom_up_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_bottom_up``: label each unseen vertex with an in-neighbour in the frontier.

    Args:
        arrays: ``in_offsets``, ``in_indices`` (read), ``levels`` and ``state`` (updated).
        scalars: The derived ``n``.
    """
    levels, state = arrays["levels"], arrays["state"]
    if state[STATE_DONE] != 0 or state[STATE_DIRECTION] != 1:
        return
    level = int(state[STATE_LEVEL])
    unseen = np.flatnonzero(levels == -1)
    owner, parents = _expand(arrays["in_offsets"], arrays["in_indices"], unseen)
    hit = np.zeros(unseen.size, dtype=bool)
    hit[owner[levels[parents] == level]] = True  # a mask, not np.unique: no sort
    found = unseen[hit]
    levels[found] = level + 1
    state[STATE_DISCOVERED] += found.size


def bfs_advance_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_advance``: close the level, decide whether to stop and which way to go.

    Args:
        arrays: ``levels`` (only its length matters) and ``state`` (8 int32, updated).
        scalars: ``bottom_up`` (nonzero: bottom-up allowed) and the derived ``n``.
    """
    state = arrays["state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_LEVELS_RUN] += 1
    count = int(state[STATE_DISCOVERED])
    if count == 0:
        state[STATE_DONE] = 1
        return
    n = int(scalars["n"].item())
    state[STATE_REACHED] += count
    state[STATE_LEVEL] += 1
    state[STATE_FRONTIER] = count
    state[STATE_DISCOVERED] = 0
    if state[STATE_LEVEL] >= state[STATE_MAX_LEVEL]:
        state[STATE_DONE] = 1
    direction = int(state[STATE_DIRECTION])
    if int(scalars["bottom_up"].item()) == 0:
        direction = 0
    elif direction == 0 and BFS_TO_BOTTOM_UP * count > n:
        direction = 1
    elif direction == 1 and BFS_TO_TOP_DOWN * count < n:
        direction = 0
    state[STATE_DIRECTION] = direction


_LEVELS = BufferParam("levels", np.int32, "inout", "v")
_STATE = BufferParam("state", np.int32, "inout", STATE_WORDS)
_N = ScalarParam("n", np.int32, default="v")

bfs_init = Kernel(
    name="bfs_init",
    source=_INIT_SOURCE,
    entry="bfs_init",
    params=(
        _LEVELS,
        _STATE,
        ScalarParam("source", np.int32),
        ScalarParam("max_level", np.int32),
        _N,
    ),
    launch=at_least_one_block("v", _BLOCK),
    reference=bfs_init_reference,
)

bfs_top_down = Kernel(
    name="bfs_top_down",
    source=_TOP_DOWN_SOURCE,
    entry="bfs_top_down",
    params=(
        BufferParam("offsets", np.int64, "in", "v1"),
        BufferParam("indices", np.int32, "in", "e"),
        _LEVELS,
        _STATE,
        _N,
    ),
    launch=grid_stride("v", block=_BLOCK),
    reference=bfs_top_down_reference,
)

bfs_bottom_up = Kernel(
    name="bfs_bottom_up",
    source=_BOTTOM_UP_SOURCE,
    entry="bfs_bottom_up",
    params=(
        BufferParam("in_offsets", np.int64, "in", "v1"),
        BufferParam("in_indices", np.int32, "in", "e"),
        _LEVELS,
        _STATE,
        _N,
    ),
    launch=grid_stride("v", block=_BLOCK),
    reference=bfs_bottom_up_reference,
)

bfs_advance = Kernel(
    name="bfs_advance",
    source=_ADVANCE_SOURCE,
    entry="bfs_advance",
    # levels only carries the vertex count: n derives from it rather than being passed,
    # so it cannot disagree with the graph.
    params=(
        BufferParam("levels", np.int32, "in", "v"),
        _STATE,
        _N,
        ScalarParam("bottom_up", np.int32),
    ),
    launch=one_thread,
    reference=bfs_advance_reference,
)

#: The BFS kernels, in the order a traversal first runs them.
BFS_KERNELS: tuple[Kernel, ...] = (bfs_init, bfs_top_down, bfs_bottom_up, bfs_advance)
