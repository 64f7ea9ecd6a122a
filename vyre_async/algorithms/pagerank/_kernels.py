"""Pull PageRank in float32 as five kernels that a resident repeated sequence runs.

The shares ``rank[u] / out_degree[u]`` that ``pr_gather`` reads at random are stored
in a vertex order of the caller's choice: share of ``u`` at ``rank_of[u]``, and the
in-lists hold the sources renumbered the same way (``pr_renumber`` makes that copy
on the device). Numbering sources by falling out-degree puts the most-read shares
in a few cache lines; ranks and sums stay in the graph's own order. The identity
order works too, with no copy.

A run is ``pr_init`` on rank buffers A and B (B zeroed), then the body
``[pr_dangling(A), pr_gather(A->B), pr_update(A, B), pr_check]`` followed by the same
with A and B swapped, repeated with fixed scalars: two power iterations per repeat,
ping-ponging between two rank buffers. ``pr_gather`` splits the edges, not the
vertices, over the grid (hubs are spread over many warps) and adds each vertex's
pulled shares to the zeroed target; ``pr_update`` turns those sums into ranks and
zeroes the source for the next gather. The iteration
count, the convergence test and the dangling mass live in an eight-word ``float32``
state buffer (see the ``STATE_*`` index constants); once it says done, every kernel
returns at once. After ``k`` completed iterations the ranks are in B when ``k`` is odd
and in A when it is even.

One iteration, for ``n`` vertices and damping ``d``::

    rank'[v] = (1 - d) / n + d * (sum(rank[u] / out_degree[u] for u in in(v)) + D / n)

where ``D`` is the rank held by vertices without out-edges, spread uniformly as
NetworkX does. The run stops once the L1 change ``sum |rank' - rank|`` is below
``tol`` (an absolute bound, where NetworkX compares with ``n * tol``) or after
``max_iter`` iterations. The device uses no double precision: sums are warp partials
added atomically, so their order (and last bits) vary from run to run.

float32 limits both ends. Settled iterates can keep alternating by an ulp, an L1
change of about ``2**-23`` (1.2e-7) of the total mass, so a ``tol`` below about 4e-7
may never be met and ``max_iter`` ends the run. And the float32 fixed point sits off
the exact ranks by rounding amplified up to ``1 / (1 - d)``: measured up to 3e-6 of
the top rank at ``d = 0.95``, 7e-7 at ``d = 0.85``.
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

#: Words in the PageRank state buffer (``float32``); the ``STATE_*`` constants index it.
STATE_WORDS = 8
#: Dangling mass of the current iteration (sum of ranks of vertices without out-edges).
STATE_DANGLING = 0
#: L1 change of the current iteration.
STATE_DIFF = 1
#: 1 once converged or out of iterations; every kernel then returns at once.
STATE_DONE = 2
#: Iterations completed; odd means the latest ranks are in the second buffer.
STATE_ITERATIONS = 3
#: The convergence bound on the L1 change.
STATE_TOL = 4
#: The iteration limit, as given (clamped to ``PR_MAX_ITER_LIMIT``).
STATE_MAX_ITER = 5
#: L1 change of the last completed iteration (``STATE_DIFF`` is cleared for the next one).
STATE_LAST_DIFF = 6
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
PR_STATE_WORDS = STATE_WORDS
#: Iteration limits beyond this are clamped: a float32 counter stops counting at 2**24.
PR_MAX_ITER_LIMIT = 2**24

_BLOCK = 256  # a multiple of 32: the reductions and warp paths use full-warp masks

_PRELUDE = r"""
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float x)
{
    // Butterfly: every lane ends with the total.
    for (int offset = 16; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(FULL_MASK, x, offset);
    }
    return x;
}

// Adds every thread's `value` to *total with one atomic per block. Every thread of the
// block must call it.
__device__ __forceinline__ void block_add_sum(float value, float* total)
{
    __shared__ float warp_sums[32];
    value = warp_sum(value);
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        warp_sums[warp] = value;
    }
    __syncthreads();
    if (warp == 0u) {
        value = warp_sum(lane < ((blockDim.x + 31u) >> 5) ? warp_sums[lane] : 0.0f);
        if (lane == 0u && value != 0.0f) {
            atomicAdd(total, value);
        }
    }
}
"""

_INIT_SOURCE = r"""
extern "C" __global__ void pr_init(float* __restrict__ rank,
                                   float* __restrict__ other,
                                   float* __restrict__ contrib,
                                   const int* __restrict__ out_degree,
                                   const int* __restrict__ rank_of,
                                   float* __restrict__ state,
                                   float tol,
                                   int max_iter,
                                   int n)
{
    const float uniform = n > 0 ? 1.0f / (float)n : 0.0f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        rank[i] = uniform;
        other[i] = 0.0f;  // the first pr_gather accumulates into it
        const int degree = __ldg(&out_degree[i]);
        contrib[__ldg(&rank_of[i])] = degree > 0 ? uniform / (float)degree : 0.0f;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        state[0] = 0.0f;
        state[1] = 0.0f;
        state[2] = (max_iter <= 0 || n <= 0) ? 1.0f : 0.0f;
        state[3] = 0.0f;
        state[4] = tol;
        state[5] = (float)min(max_iter, 1 << 24);
        state[6] = 0.0f;
        state[7] = 0.0f;
    }
}
"""

_DANGLING_SOURCE = (
    _PRELUDE
    + r"""
extern "C" __global__ void pr_dangling(const float* __restrict__ rank,
                                       const int* __restrict__ out_degree,
                                       float* __restrict__ state,
                                       int n)
{
    // Uniform exit: only pr_init and pr_check write the done word.
    if (state[2] != 0.0f) {
        return;
    }
    float mass = 0.0f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        if (__ldg(&out_degree[v]) == 0) {
            mass += __ldg(&rank[v]);
        }
    }
    block_add_sum(mass, &state[0]);
}
"""
)

_GATHER_SOURCE = (
    _PRELUDE
    + r"""
// Edges per warp task. A hub's in-list is cut into many tasks spread over the grid,
// so no warp holds the launch open for a hub (one did: 6.4 ms per iteration at R-MAT
// scale 22, SMs active 43% of the time).
#define CHUNK 1024
// Groups of 32 edges a warp gathers at once: their loads are in flight together.
#define STEPS 2

// The vertex whose in-list holds edge j: the largest v with offsets[v] <= j.
__device__ __forceinline__ long long owning_vertex(const long long* offsets, int n, long long j)
{
    long long lo = 0;
    long long hi = n;  // offsets[hi] = E > j for any valid edge
    while (hi - lo > 1) {
        const long long mid = (lo + hi) >> 1;
        if (__ldg(&offsets[mid]) <= j) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Positions inside one chunk fit in 32 bits, so every shuffle below moves one word
// (the 64-bit merge helpers cost two per shuffle, and shuffles bounded the gather).
__device__ __forceinline__ int exclusive_scan32(int x, unsigned lane, int* total)
{
    int inclusive = x;
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(FULL_MASK, inclusive, d);
        if (lane >= (unsigned)d) {
            inclusive += y;
        }
    }
    *total = __shfl_sync(FULL_MASK, inclusive, 31);
    return inclusive - x;
}

// The largest lane whose merged start is <= k (starts never decrease across lanes).
__device__ __forceinline__ int owner32(int start, int k)
{
    int owner = 0;
    for (int step = 16; step > 0; step >>= 1) {
        if (__shfl_sync(FULL_MASK, start, owner + step) <= k) {
            owner += step;
        }
    }
    return owner;
}

extern "C" __global__ void pr_gather(const long long* __restrict__ in_offsets,
                                     const int* __restrict__ in_indices,
                                     const float* __restrict__ contrib,
                                     float* __restrict__ sums,
                                     const float* __restrict__ state,
                                     int n)
{
    if (state[2] != 0.0f || n <= 0) {
        return;
    }
    const long long edges = __ldg(&in_offsets[n]);
    const unsigned lane = threadIdx.x & 31u;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long cs = warp * CHUNK; cs < edges; cs += warps * CHUNK) {
        const long long ce = min(cs + (long long)CHUNK, edges);
        const long long v0 = owning_vertex(in_offsets, n, cs);
        const long long v1 = owning_vertex(in_offsets, n, ce - 1);
        // The chunk's vertices, 32 at a time: their lists (clipped to the chunk) merged,
        // lane i taking the i-th edge of each 32, then a sum over each run of lanes
        // with the same owner; each run's last lane adds it to the owner's sum.
        for (long long vw = v0; vw <= v1; vw += 32) {
            const long long v = vw + lane;
            int begin = (int)(ce - cs);  // chunk-relative; lanes past v1 hold no edges
            int end = begin;
            if (v <= v1) {
                begin = (int)(max(__ldg(&in_offsets[v]), cs) - cs);
                end = (int)(min(__ldg(&in_offsets[v + 1]), ce) - cs);
            }
            int total = 0;
            const int start = exclusive_scan32(end - begin, lane, &total);
            const int shift = begin - start;  // merged position k is chunk edge k + shift
            for (int k0 = 0; k0 < total; k0 += 32 * STEPS) {
                int owner[STEPS];
                int first[STEPS];
                float x[STEPS];
#pragma unroll
                for (int s = 0; s < STEPS; ++s) {
                    const int k = k0 + 32 * s + (int)lane;
                    owner[s] = owner32(start, k);
                    // The first lane of this step whose edge belongs to the owner.
                    first[s] = max(__shfl_sync(FULL_MASK, start, owner[s]) - (k - (int)lane), 0);
                    const int edge = k + __shfl_sync(FULL_MASK, shift, owner[s]);
                    // One gather per edge: rank[u] / out_degree[u] was stored by the last
                    // pr_update (or pr_init), not recomputed from two gathers here.
                    x[s] = k < total ? __ldg(&contrib[__ldg(&in_indices[cs + edge])]) : 0.0f;
                }
#pragma unroll
                for (int s = 0; s < STEPS; ++s) {
                    const int k = k0 + 32 * s + (int)lane;
                    // Inclusive scan within each run: lane i ends with lanes first..i.
                    float sum = x[s];
                    for (int d = 1; d < 32; d <<= 1) {
                        const float y = __shfl_up_sync(FULL_MASK, sum, d);
                        if ((int)lane - d >= first[s]) {
                            sum += y;
                        }
                    }
                    // A run ends where the next lane starts another run or has no edge.
                    const int next_first = __shfl_down_sync(FULL_MASK, first[s], 1);
                    if (k < total && (lane == 31u || next_first != first[s] || k + 1 == total)) {
                        atomicAdd(&sums[vw + owner[s]], sum);
                    }
                }
            }
        }
    }
}
"""
)

_UPDATE_SOURCE = (
    _PRELUDE
    + r"""
extern "C" __global__ void pr_update(float* __restrict__ rank_in,
                                     float* __restrict__ rank_out,
                                     const int* __restrict__ out_degree,
                                     const int* __restrict__ rank_of,
                                     float* __restrict__ contrib,
                                     float* __restrict__ state,
                                     float damping,
                                     int n)
{
    if (state[2] != 0.0f) {
        return;
    }
    const float teleport = (1.0f - damping) / (float)n;
    const float dangling = state[0] / (float)n;
    const long long stride = (long long)blockDim.x * gridDim.x;
    float diff = 0.0f;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        const float fresh = teleport + damping * (rank_out[v] + dangling);
        diff += fabsf(fresh - rank_in[v]);
        rank_out[v] = fresh;
        rank_in[v] = 0.0f;  // the next pr_gather accumulates into it
        const int degree = __ldg(&out_degree[v]);
        // What the next gather reads, at the vertex's place in the shares order.
        contrib[__ldg(&rank_of[v])] = degree > 0 ? fresh / (float)degree : 0.0f;
    }
    block_add_sum(diff, &state[1]);
}
"""
)

_RENUMBER_SOURCE = r"""
extern "C" __global__ void pr_renumber(const int* __restrict__ in_indices,
                                       const int* __restrict__ rank_of,
                                       int* __restrict__ renumbered,
                                       long long edges)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < edges; j += stride) {
        renumbered[j] = __ldg(&rank_of[__ldg(&in_indices[j])]);
    }
}
"""

_CHECK_SOURCE = r"""
extern "C" __global__ void pr_check(float* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[2] != 0.0f) {
        return;
    }
    state[3] += 1.0f;
    state[6] = state[1];
    if (state[1] < state[4] || state[3] >= state[5]) {
        state[2] = 1.0f;
    }
    state[0] = 0.0f;
    state[1] = 0.0f;
}
"""


def _f32(value: object) -> np.float32:
    return np.float32(value)  # type: ignore[arg-type]


def pr_init_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``pr_init``: uniform ranks, a zeroed second buffer and a fresh state.

    Args:
        arrays: ``rank``, ``other``, ``contrib`` (float32, written), ``out_degree``,
            ``rank_of`` (read) and ``pr_state`` (8 float32, written).
        scalars: ``tol``, ``max_iter`` and the derived ``n``.
    """
    rank, state = arrays["rank"], arrays["pr_state"]
    n, max_iter = int(scalars["n"].item()), int(scalars["max_iter"].item())
    if n > 0:
        rank.fill(_f32(1.0) / _f32(n))
    arrays["other"].fill(0)
    _store_shares(arrays["contrib"], rank, arrays["out_degree"], arrays["rank_of"])
    done = 1.0 if max_iter <= 0 or n <= 0 else 0.0
    limit = float(min(max_iter, PR_MAX_ITER_LIMIT))
    state[:] = (0.0, 0.0, done, 0.0, scalars["tol"].item(), limit, 0.0, 0.0)


def pr_dangling_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_dangling``: add the rank of vertices without out-edges to the state.

    The device adds in float32 in an unspecified order; this adds in float64 and
    rounds once, so the two agree to a few float32 ulps.

    Args:
        arrays: ``rank``, ``out_degree`` (read) and ``pr_state`` (updated).
        scalars: The derived ``n``.
    """
    state = arrays["pr_state"]
    if state[STATE_DONE] != 0:
        return
    mass = arrays["rank"][arrays["out_degree"] == 0].sum(dtype=np.float64)
    state[STATE_DANGLING] += _f32(mass)


def _store_shares(
    contrib: np.ndarray, rank: np.ndarray, degree: np.ndarray, rank_of: np.ndarray
) -> None:
    """``contrib[rank_of[v]] = rank[v] / out_degree[v]`` in float32, 0 without out-edges."""
    shares = np.zeros_like(contrib)
    has_edges = degree > 0
    shares[has_edges] = rank[has_edges] / degree[has_edges].astype(np.float32)
    contrib[rank_of] = shares


def pr_gather_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_gather``: add each vertex's pulled shares ``contrib[u]`` to ``sums``.

    Each vertex's sum is taken in float64 and rounded once, standing in for the
    device's warp partial sums and atomic adds.

    Args:
        arrays: ``in_offsets``, ``in_indices`` (sources in the shares order),
            ``contrib`` (read), ``sums`` (added to) and ``pr_state`` (read).
        scalars: The derived ``n``.
    """
    n = int(scalars["n"].item())
    if arrays["pr_state"][STATE_DONE] != 0 or n == 0:
        return
    owner = np.repeat(np.arange(n), np.diff(arrays["in_offsets"]))
    pulled = np.bincount(owner, weights=arrays["contrib"][arrays["in_indices"]], minlength=n)
    arrays["sums"][:] = (arrays["sums"] + pulled).astype(np.float32)


def pr_update_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_update``: sums into ranks, the L1 change, shares for the next gather.

    Args:
        arrays: ``rank_in`` (read, then zeroed), ``rank_out`` (sums in, ranks out),
            ``out_degree``, ``rank_of`` (read), ``contrib`` (written) and ``pr_state``
            (updated).
        scalars: ``damping`` and the derived ``n``.
    """
    state = arrays["pr_state"]
    n = int(scalars["n"].item())
    if state[STATE_DONE] != 0 or n == 0:
        return
    rank_in, rank_out = arrays["rank_in"], arrays["rank_out"]
    damping = _f32(scalars["damping"].item())
    teleport = (_f32(1.0) - damping) / _f32(n)
    dangling = _f32(state[STATE_DANGLING]) / _f32(n)
    fresh = teleport + damping * (rank_out + dangling)
    state[STATE_DIFF] += _f32(np.abs(fresh - rank_in).sum(dtype=np.float64))
    rank_out[:] = fresh
    rank_in.fill(0)
    _store_shares(arrays["contrib"], rank_out, arrays["out_degree"], arrays["rank_of"])


def pr_renumber_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_renumber``: ``renumbered[j] = rank_of[in_indices[j]]``.

    Args:
        arrays: ``in_indices``, ``rank_of`` (read) and ``renumbered`` (written).
        scalars: The derived ``edges``.
    """
    arrays["renumbered"][:] = arrays["rank_of"][arrays["in_indices"]]


def pr_check_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``pr_check``: count the iteration, test convergence, clear the accumulators.

    Args:
        arrays: ``pr_state`` (8 float32, updated).
        scalars: None.
    """
    state = arrays["pr_state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_ITERATIONS] += 1
    state[STATE_LAST_DIFF] = state[STATE_DIFF]
    if state[STATE_DIFF] < state[STATE_TOL] or state[STATE_ITERATIONS] >= state[STATE_MAX_ITER]:
        state[STATE_DONE] = 1
    state[STATE_DANGLING] = 0
    state[STATE_DIFF] = 0


_STATE = BufferParam("pr_state", np.float32, "inout", STATE_WORDS)
_N = ScalarParam("n", np.int32, default="v")
_OUT_DEGREE = BufferParam("out_degree", np.int32, "in", "v")
#: Where each vertex's share is stored (a permutation of ``0..v-1``).
_RANK_OF = BufferParam("rank_of", np.int32, "in", "v")
#: ``rank[v] / out_degree[v]`` of the current ranks (0 without out-edges).
_CONTRIB = BufferParam("contrib", np.float32, "inout", "v")

pr_init = Kernel(
    name="pr_init",
    source=_INIT_SOURCE,
    entry="pr_init",
    params=(
        BufferParam("rank", np.float32, "inout", "v"),
        BufferParam("other", np.float32, "inout", "v"),
        _CONTRIB,
        _OUT_DEGREE,
        _RANK_OF,
        _STATE,
        ScalarParam("tol", np.float32),
        ScalarParam("max_iter", np.int32),
        _N,
    ),
    launch=at_least_one_block("v", _BLOCK),
    reference=pr_init_reference,
)

pr_dangling = Kernel(
    name="pr_dangling",
    source=_DANGLING_SOURCE,
    entry="pr_dangling",
    params=(BufferParam("rank", np.float32, "in", "v"), _OUT_DEGREE, _STATE, _N),
    # Several vertices per thread and a capped grid keep the atomics per launch few.
    launch=grid_stride("v", block=_BLOCK, items_per_thread=8, max_blocks=1024),
    reference=pr_dangling_reference,
)

#: Edges per warp task in ``pr_gather`` (the ``CHUNK`` of its source).
_GATHER_CHUNK = 1024

pr_gather = Kernel(
    name="pr_gather",
    source=_GATHER_SOURCE,
    entry="pr_gather",
    params=(
        BufferParam("in_offsets", np.int64, "in", "v1"),
        BufferParam("in_indices", np.int32, "in", "e"),
        BufferParam("contrib", np.float32, "in", "v"),
        BufferParam("sums", np.float32, "inout", "v"),
        BufferParam("pr_state", np.float32, "in", STATE_WORDS),
        _N,
    ),
    # One warp per chunk of edges (grid-stride beyond the cap).
    launch=grid_stride("e", block=_BLOCK, items_per_thread=_GATHER_CHUNK // 32, max_blocks=65535),
    reference=pr_gather_reference,
)

pr_update = Kernel(
    name="pr_update",
    source=_UPDATE_SOURCE,
    entry="pr_update",
    params=(
        BufferParam("rank_in", np.float32, "inout", "v"),
        BufferParam("rank_out", np.float32, "inout", "v"),
        _OUT_DEGREE,
        _RANK_OF,
        _CONTRIB,
        _STATE,
        ScalarParam("damping", np.float32),
        _N,
    ),
    launch=grid_stride("v", block=_BLOCK, items_per_thread=8, max_blocks=1024),
    reference=pr_update_reference,
)

pr_renumber = Kernel(
    name="pr_renumber",
    source=_RENUMBER_SOURCE,
    entry="pr_renumber",
    params=(
        BufferParam("in_indices", np.int32, "in", "e"),
        _RANK_OF,
        BufferParam("renumbered", np.int32, "inout", "e"),
        ScalarParam("edges", np.int64, default="e"),
    ),
    launch=grid_stride("e", block=_BLOCK, items_per_thread=8, max_blocks=65535),
    reference=pr_renumber_reference,
)

pr_check = Kernel(
    name="pr_check",
    source=_CHECK_SOURCE,
    entry="pr_check",
    params=(_STATE,),
    launch=one_thread,
    reference=pr_check_reference,
)

#: The PageRank kernels, in the order a run first uses them.
PAGERANK_KERNELS: tuple[Kernel, ...] = (
    pr_renumber,
    pr_init,
    pr_dangling,
    pr_gather,
    pr_update,
    pr_check,
)
