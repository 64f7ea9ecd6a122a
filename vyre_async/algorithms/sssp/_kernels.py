"""Single-source shortest paths as kernels a resident repeated sequence runs.

The algorithm is near-far delta-stepping (Davidson, Baxter, Garland and Owens,
"Work-efficient parallel GPU methods for single-source shortest paths", IPDPS 2014)
with Meyer and Sanders' light and heavy edges ("Delta-stepping", J. Algorithms 2003).
Distances live in buckets ``[low, low + delta)``. Within a bucket, light steps relax
the light edges (weight below delta) of the vertices whose distance dropped, until no
distance below the bucket's end drops any more; an improvement at or past the end
only marks its vertex *far*. Then one heavy step relaxes the heavy edges of the
bucket's members (their distances are final now, and a heavy edge always lands past
the bucket, so each is relaxed once per run) and moves the far vertices below the
next bucket's end into it (a sweep of every vertex's far flag, skipped when the far
distances' lower bound already lies past that end). A bucket with nothing in it is
skipped: the next starts at the smallest far distance.

Light steps walk a *light graph*, a CSR of the edges lighter than delta only, built
once per graph and delta (``sssp_light_count``, an offset sum on the host, then
``sssp_light_fill``): a hub whose distance drops again reads its few light edges, not
its whole list. Heavy steps walk the graph and skip its light edges.

Frontiers are compact lists, never a scan of every vertex: a vertex with fewer than
``WIDE_MIN_DEGREE`` (light, for light steps) out-edges is listed whole and expanded
with its warp's others merged, one with more as chunks of ``CHUNK_EDGES`` edges, one
warp each, so a hub's list is spread over the grid; a step launches only the blocks
its lists need. A per-vertex stamp (the step that expands it next)
lists a vertex once per step; the first time it is ever listed it joins the current
bucket's members (each vertex once per run). Warps stage what they list in shared
memory and append 32 at a time with one atomic.

Distances are float32, +inf where unreached, updated with ``atomicMin`` on their
bits (non-negative floats order as their bit patterns). An improvement past
``max_distance`` is never written, so a bounded run reaches exactly the vertices
within the bound.

Driver order (every step binds the same buffers on every repeat)::

    once per graph:  sssp_graph_stats (delta), sssp_light_count, sssp_light_fill
    prefix:          sssp_init
    repeated:        sssp_step

One ``sssp_step`` launch is one light or heavy step: the last block to finish it
advances the state (``STATE_*`` in ``_layout``), so the host reads the state back
only between submissions. Once the state says done every step returns at once.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, grid_stride
from .._cuda_files import cuda_file
from ._layout import STATE_WORDS, init_launch, step_launch
from ._reference import (
    sssp_graph_stats_reference,
    sssp_init_reference,
    sssp_light_count_reference,
    sssp_light_fill_reference,
    sssp_step_reference,
)

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]

_OFFSETS = BufferParam("offsets", np.int64, "in", "v1")
_N = ScalarParam("n", np.int64, default="v")
_N1 = ScalarParam("n1", np.int64, default="v1")
_FAR_WORDS = ScalarParam("far_words", np.int64, default="fw")
_CAPACITY = ScalarParam("chunk_capacity", np.int64, default="c")


def _lists(*names: str) -> tuple[BufferParam, ...]:
    kinds = {
        "dist": (np.float32, "v"),
        "stamp": (np.int32, "v"),
        "far": (np.uint32, "fw"),
        "queue_a": (np.int32, "v"),
        "queue_b": (np.int32, "v"),
        "chunks_a": (np.int64, "c"),
        "chunks_b": (np.int64, "c"),
        "members": (np.int32, "v"),
        "heavy": (np.int64, "c"),
    }
    return tuple(BufferParam(name, kinds[name][0], "inout", kinds[name][1]) for name in names)


_LIGHT_OFFSETS = BufferParam("light_offsets", np.int64, "in", "v1")

sssp_init = Kernel(
    name="sssp_init",
    source=cuda_file(_PACKAGE, "sssp_init.cu"),
    entry="sssp_init",
    params=(
        _OFFSETS,
        _LIGHT_OFFSETS,
        *_lists("dist", "stamp", "far", "queue_a", "chunks_a", "members", "heavy"),
        BufferParam("state", np.int32, "inout", STATE_WORDS),
        ScalarParam("source", np.int32),
        ScalarParam("delta", np.float32),
        ScalarParam("max_distance", np.float32),
        ScalarParam("heavy_edges", np.int32),
        _N,
        _N1,
        _FAR_WORDS,
        _CAPACITY,
    ),
    launch=init_launch,
    reference=sssp_init_reference,
)

sssp_step = Kernel(
    name="sssp_step",
    source=cuda_file(_PACKAGE, "sssp_step.cu"),
    entry="sssp_step",
    params=(
        _OFFSETS,
        BufferParam("indices", np.int32, "in", "e"),
        BufferParam("weights", np.float32, "in", "e"),
        _LIGHT_OFFSETS,
        BufferParam("light_indices", np.int32, "in", "el"),
        BufferParam("light_weights", np.float32, "in", "el"),
        *_lists(
            "dist",
            "stamp",
            "far",
            "queue_a",
            "queue_b",
            "chunks_a",
            "chunks_b",
            "members",
            "heavy",
        ),
        BufferParam("state", np.int32, "inout", STATE_WORDS),
        _N,
        _N1,
        _FAR_WORDS,
        _CAPACITY,
    ),
    launch=step_launch,
    reference=sssp_step_reference,
)

sssp_graph_stats = Kernel(
    name="sssp_graph_stats",
    source=cuda_file(_PACKAGE, "sssp_graph_stats.cu"),
    entry="sssp_graph_stats",
    params=(
        _OFFSETS,
        BufferParam("weights", np.float32, "in", "e"),
        BufferParam("weight_sum", np.float64, "out", 1),
        BufferParam("max_degree", np.uint64, "out", 1),
        _N1,
        ScalarParam("e", np.int64, default="e"),
    ),
    # Four weights per thread and a capped grid: one atomic per block and output.
    launch=grid_stride("e", block=256, items_per_thread=4, max_blocks=1024),
    reference=sssp_graph_stats_reference,
)

sssp_light_count = Kernel(
    name="sssp_light_count",
    source=cuda_file(_PACKAGE, "sssp_light_count.cu"),
    entry="sssp_light_count",
    params=(
        _OFFSETS,
        BufferParam("weights", np.float32, "in", "e"),
        # One more than the vertices (the last stays 0): "out" lengths come from inputs.
        BufferParam("counts", np.int32, "out", "v1"),
        ScalarParam("delta", np.float32),
        _N1,
    ),
    # A lane per vertex, capped; long lists are walked by the lane's whole warp.
    launch=grid_stride("v1", block=256, max_blocks=4096),
    reference=sssp_light_count_reference,
)

sssp_light_fill = Kernel(
    name="sssp_light_fill",
    source=cuda_file(_PACKAGE, "sssp_light_fill.cu"),
    entry="sssp_light_fill",
    params=(
        _OFFSETS,
        BufferParam("indices", np.int32, "in", "e"),
        BufferParam("weights", np.float32, "in", "e"),
        _LIGHT_OFFSETS,
        BufferParam("light_indices", np.int32, "inout", "el"),
        BufferParam("light_weights", np.float32, "inout", "el"),
        ScalarParam("delta", np.float32),
        _N1,
        ScalarParam("light_edges", np.int64, default="el"),
    ),
    launch=grid_stride("v1", block=256, max_blocks=4096),
    reference=sssp_light_fill_reference,
)

#: The single-source kernels, in the order a run first uses them.
SSSP_KERNELS: tuple[Kernel, ...] = (
    sssp_graph_stats,
    sssp_light_count,
    sssp_light_fill,
    sssp_init,
    sssp_step,
)
