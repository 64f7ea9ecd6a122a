"""Shortest paths from up to 32 sources at once, one lane per source.

Each vertex carries a float32 distance per lane, side by side (``dist[v * W + lane]``,
W lanes, a power of two up to 32), so a team of W threads reads and writes one
vertex's lanes in one coalesced access, and a graph edge is read once for all the
lanes that need it. The algorithm is near-far delta-stepping (Davidson et al., IPDPS
2014) with one bucket boundary shared by all lanes: every lane's distances grow
from 0 at the same pace, so the lanes' frontiers reach each bucket together and one
step carries them all.

A vertex whose distance dropped in some lanes below the bucket's end is listed for
the next step, as chunks of ``MANY_CHUNK_EDGES`` edges, once: its lane mask for that
step (``tag << 32 | lanes``, in a uint64 per vertex, two arrays by step parity) moves
to the step's tag with one compare-and-swap, and the swap that moves it lists the
vertex. A drop at or past the end only sets the lane in the vertex's far lanes. When
no step is listed, a split step sweeps the far lanes: those below the next bucket's
end go into their vertex's mask.

Driver order (every step binds the same buffers on every repeat)::

    prefix:   sssp_many_init, sssp_many_seed
    repeated: sssp_many_step
    final:    sssp_many_count (reach counts) or sssp_many_rows (distances, one row per
              lane), then read them

W is never a parameter: the kernels derive it as ``vw / n`` from the bound lengths of
``dist`` and of the CSR offsets (``n1 = V + 1``), and the seed kernel checks that the
sources have W entries, so no binding can make a kernel index outside a buffer.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, LaunchShape, ScalarParam
from .._cuda_files import cuda_file
from ._many_layout import MANY_MAX_LANES, MANY_STATE_WORDS, many_grid_launch, many_step_launch
from ._many_reference import (
    sssp_many_count_reference,
    sssp_many_init_reference,
    sssp_many_rows_reference,
    sssp_many_seed_reference,
    sssp_many_step_reference,
)

_PACKAGE = __name__.rpartition(".")[0]

_OFFSETS = BufferParam("offsets", np.int64, "in", "v1")
_DIST = BufferParam("dist", np.float32, "inout", "vw")
_MASKS_A = BufferParam("masks_a", np.uint64, "inout", "v")
_MASKS_B = BufferParam("masks_b", np.uint64, "inout", "v")
_FAR = BufferParam("far", np.uint32, "inout", "v")
_ITEMS_A = BufferParam("items_a", np.int64, "inout", "c")
_ITEMS_B = BufferParam("items_b", np.int64, "inout", "c")
_STATE = BufferParam("state", np.int32, "inout", MANY_STATE_WORDS)
_N1 = ScalarParam("n1", np.int64, default="v1")
_VW = ScalarParam("vw", np.int64, default="vw")
_CAPACITY = ScalarParam("capacity", np.int64, default="c")

sssp_many_init = Kernel(
    name="sssp_many_init",
    source=cuda_file(_PACKAGE, "sssp_many_init.cu"),
    entry="sssp_many_init",
    params=(_DIST, _MASKS_A, _MASKS_B, _FAR, ScalarParam("n", np.int64, default="v"), _VW),
    launch=many_grid_launch("vw"),
    reference=sssp_many_init_reference,
)

sssp_many_seed = Kernel(
    name="sssp_many_seed",
    source=cuda_file(_PACKAGE, "sssp_many_seed.cu"),
    entry="sssp_many_seed",
    params=(
        _OFFSETS,
        BufferParam("sources", np.int32, "in", "w"),
        _DIST,
        _MASKS_A,
        _ITEMS_A,
        _STATE,
        ScalarParam("delta", np.float32),
        ScalarParam("max_distance", np.float32),
        _N1,
        _VW,
        ScalarParam("lanes_bound", np.int32, default="w"),
        _CAPACITY,
    ),
    launch=lambda sizes: LaunchShape(grid=(1, 1, 1), block=(256, 1, 1)),
    reference=sssp_many_seed_reference,
)

sssp_many_step = Kernel(
    name="sssp_many_step",
    source=cuda_file(_PACKAGE, "sssp_many_step.cu"),
    entry="sssp_many_step",
    params=(
        _OFFSETS,
        BufferParam("indices", np.int32, "in", "e"),
        BufferParam("weights", np.float32, "in", "e"),
        _DIST,
        _MASKS_A,
        _MASKS_B,
        _FAR,
        _ITEMS_A,
        _ITEMS_B,
        _STATE,
        _N1,
        _VW,
        _CAPACITY,
    ),
    launch=many_step_launch,
    reference=sssp_many_step_reference,
)

sssp_many_count = Kernel(
    name="sssp_many_count",
    source=cuda_file(_PACKAGE, "sssp_many_count.cu"),
    entry="sssp_many_count",
    params=(
        _OFFSETS,
        BufferParam("dist", np.float32, "in", "vw"),
        # "out": zeroed before the launch, then one atomic per lane and block.
        BufferParam("counts", np.int32, "out", MANY_MAX_LANES),
        ScalarParam("max_distance", np.float32),
        _N1,
        _VW,
    ),
    launch=many_grid_launch("vw"),
    reference=sssp_many_count_reference,
)

sssp_many_rows = Kernel(
    name="sssp_many_rows",
    source=cuda_file(_PACKAGE, "sssp_many_rows.cu"),
    entry="sssp_many_rows",
    params=(
        _OFFSETS,
        BufferParam("dist", np.float32, "in", "vw"),
        BufferParam("rows", np.float32, "inout", "vw"),
        _N1,
        _VW,
    ),
    # One block per 32 vertices (capped; the kernel loops over the rest).
    launch=many_grid_launch("v1"),
    reference=sssp_many_rows_reference,
)

#: The many-source kernels, in the order a traversal first runs them.
SSSP_MANY_KERNELS: tuple[Kernel, ...] = (
    sssp_many_init,
    sssp_many_seed,
    sssp_many_step,
    sssp_many_count,
    sssp_many_rows,
)
