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

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, grid_stride, one_thread
from .._cuda_files import cuda_file
from ._reference import (
    pr_check_reference,
    pr_dangling_reference,
    pr_gather_reference,
    pr_init_reference,
    pr_renumber_reference,
    pr_update_reference,
)
from ._state import STATE_WORDS

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]


_BLOCK = 256  # a multiple of 32: the reductions and warp paths use full-warp masks


_STATE = BufferParam("pr_state", np.float32, "inout", STATE_WORDS)
_N = ScalarParam("n", np.int32, default="v")
_OUT_DEGREE = BufferParam("out_degree", np.int32, "in", "v")
#: Where each vertex's share is stored (a permutation of ``0..v-1``).
_RANK_OF = BufferParam("rank_of", np.int32, "in", "v")
#: ``rank[v] / out_degree[v]`` of the current ranks (0 without out-edges).
_CONTRIB = BufferParam("contrib", np.float32, "inout", "v")

pr_init = Kernel(
    name="pr_init",
    source=cuda_file(_PACKAGE, "pr_init.cu"),
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
    source=cuda_file(_PACKAGE, "pr_dangling.cu"),
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
    source=cuda_file(_PACKAGE, "pr_gather.cu"),
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
    source=cuda_file(_PACKAGE, "pr_update.cu"),
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
    source=cuda_file(_PACKAGE, "pr_renumber.cu"),
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
    source=cuda_file(_PACKAGE, "pr_check.cu"),
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
