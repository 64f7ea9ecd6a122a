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
    final:    [msbfs_count] [msbfs_parents]  (once the done word is set), then read
              the outputs

One repeat runs two levels. Once the state says done every repeated kernel returns
at once, so surplus repeats cost a few empty launches. Outputs are compact and chosen
by the caller: ``counts`` (int32 per lane, reduced once from ``visited`` at the end
rather than per level, which would cost the same pass every level),
``target_levels`` (int32 ``[lane * K + t]`` for K targets) and, only when asked,
``levels`` (int32 ``[lane * V + v]``); -1 means not reached. ``msbfs_parents`` turns
levels into ``parents`` of the same layout once the traversal is done: each vertex's
first in-neighbour (in in-list order) one level closer to its lane's source, -1 for the
source and where unreached.

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

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, grid_stride, one_thread
from .._cuda_files import cuda_file
from ._layout import (
    _BLOCK,
    STATE_WORDS,
    _count_launch,
    _expand_launch,
    _hubs_launch,
    _record_targets_launch,
)
from ._reference import (
    msbfs_advance_reference,
    msbfs_count_reference,
    msbfs_expand_hubs_reference,
    msbfs_expand_reference,
    msbfs_init_levels_reference,
    msbfs_init_reference,
    msbfs_init_targets_reference,
    msbfs_parents_reference,
    msbfs_record_levels_reference,
    msbfs_record_targets_reference,
)

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]

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
    source=cuda_file(_PACKAGE, "msbfs_init.cu"),
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
    source=cuda_file(_PACKAGE, "msbfs_init_targets.cu"),
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
    source=cuda_file(_PACKAGE, "msbfs_init_levels.cu"),
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
    source=cuda_file(_PACKAGE, "msbfs_expand.cu"),
    entry="msbfs_expand",
    params=_PULL_PARAMS,
    # One warp per `32 / group` vertices (one lane per word slot), capped.
    launch=_expand_launch,
    reference=msbfs_expand_reference,
)

msbfs_expand_hubs = Kernel(
    name="msbfs_expand_hubs",
    source=cuda_file(_PACKAGE, "msbfs_expand_hubs.cu"),
    entry="msbfs_expand_hubs",
    params=_PULL_PARAMS,
    # One warp per chunk of in-edges, capped.
    launch=_hubs_launch,
    reference=msbfs_expand_hubs_reference,
)

msbfs_record_targets = Kernel(
    name="msbfs_record_targets",
    source=cuda_file(_PACKAGE, "msbfs_record_targets.cu"),
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
    source=cuda_file(_PACKAGE, "msbfs_record_levels.cu"),
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
    source=cuda_file(_PACKAGE, "msbfs_advance.cu"),
    entry="msbfs_advance",
    params=(_STATE,),
    launch=one_thread,
    reference=msbfs_advance_reference,
)

msbfs_count = Kernel(
    name="msbfs_count",
    source=cuda_file(_PACKAGE, "msbfs_count.cu"),
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

msbfs_parents = Kernel(
    name="msbfs_parents",
    source=cuda_file(_PACKAGE, "msbfs_parents.cu"),
    entry="msbfs_parents",
    params=(
        BufferParam("in_offsets", np.int64, "in", "v1"),
        BufferParam("in_indices", np.int32, "in", "e"),
        BufferParam("levels", np.int32, "in", "lv"),
        # "inout", not "out": every entry is written, so zeroing it first would be waste.
        BufferParam("parents", np.int32, "inout", "lv"),
        _N1,
        ScalarParam("lv", np.int64, default="lv"),
    ),
    # One warp per 32 entries per trip, capped.
    launch=grid_stride("lv", block=_BLOCK, max_blocks=16384),
    reference=msbfs_parents_reference,
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
    msbfs_parents,
)
