"""Personalized PageRank of W seeds at once, as kernels a resident repeated sequence runs.

Column ``c`` of a run is one personalized PageRank: its personalization ``p_c`` is 1
at its seed (or, for a run of one column, any dense distribution). One iteration, for
damping ``d``::

    rank'[v][c] = d * sum(rank[u][c] / out_degree[u] for u in in(v))
                  + ((1 - d) + d * D[c]) * p_c[v]

where ``D[c]`` is the rank column ``c`` holds on vertices without out-edges: a walk
that reaches one restarts from the personalization (NetworkX's ``dangling=None``), so
each column sums to 1. The ranks are float32, W columns side by side per vertex
(``rank[v * W + c]``): one iteration is a sparse-times-dense product over the
in-lists, reading each in-edge once for all W columns.

A run is ``ppr_init`` (ranks = personalization, the other buffer zeroed), then the
body ``[ppr_gather(A->B), ppr_update(A, B), ppr_check]`` and the same with A and B
swapped, repeated until the state says done: two iterations per repeat. After ``k``
iterations the ranks are in B when ``k`` is odd. ``ppr_gather`` walks chunks of
:data:`~._layout.GATHER_CHUNK` in-edges, one warp per chunk and tile of columns,
adding each edge's source row times its share (``ppr_shares``: ``1 / out_degree``,
made once per graph) into the zeroed target; ``ppr_update`` turns the sums into
ranks, sums each column's L1 change and dangling mass, and zeroes the source for the
next gather. ``ppr_check`` stops each column whose L1 change fell below ``tol``: it
then keeps its ranks (``ppr_update`` copies them) and a tile of columns that have all
stopped is not gathered again; the run is done when every column has stopped or
after ``max_iter`` iterations. ``ppr_rows`` then turns the columns into one row per
seed, or the top-k kernels (:mod:`._top_kernels`) select each column's largest.

The device uses no double precision: sums are float32, some added atomically, so
their order (and last bits) vary from run to run; the L1 change of settled float32
iterates stays near ``2**-23``, so a ``tol`` below about 4e-7 may never be met and
``max_iter`` ends the run.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, grid_stride
from .._cuda_files import cuda_file
from ._layout import (
    STATE_WORDS,
    gather_launch,
    grid_launch,
    one_block,
    rows_launch,
    update_launch,
)
from ._reference import (
    ppr_check_reference,
    ppr_gather_reference,
    ppr_init_reference,
    ppr_rows_reference,
    ppr_shares_reference,
    ppr_update_reference,
)

_PACKAGE = __name__.rpartition(".")[0]

_STATE = BufferParam("state", np.float32, "inout", STATE_WORDS)
_STATE_IN = BufferParam("state", np.float32, "in", STATE_WORDS)
_OUT_DEGREE = BufferParam("out_degree", np.int32, "in", "v")
#: The seed of each column (-1: a padding column); its length is W.
_SEEDS = BufferParam("seeds", np.int32, "in", "w")
#: The dense personalization of a one-column run (one element otherwise).
_PERSONAL = BufferParam("personal", np.float32, "in", "p")
_MASS = BufferParam("mass", np.float32, "inout", "w")
_MASS_NEXT = BufferParam("mass_next", np.float32, "inout", "w")
_DIFF = BufferParam("diff", np.float32, "inout", "w")
_ACTIVE = BufferParam("active", np.int32, "inout", "w")
_N = ScalarParam("n", np.int64, default="v")
_W = ScalarParam("w", np.int64, default="w")
_VW = ScalarParam("vw", np.int64, default="vw")
_PLEN = ScalarParam("plen", np.int64, default="p")

ppr_shares = Kernel(
    name="ppr_shares",
    source=cuda_file(_PACKAGE, "ppr_shares.cu"),
    entry="ppr_shares",
    params=(
        BufferParam("in_indices", np.int32, "in", "e"),
        _OUT_DEGREE,
        BufferParam("shares", np.float32, "inout", "e"),
        ScalarParam("edges", np.int64, default="e"),
        ScalarParam("n", np.int32, default="v"),
    ),
    launch=grid_stride("e", items_per_thread=8, max_blocks=65535),
    reference=ppr_shares_reference,
)

ppr_init = Kernel(
    name="ppr_init",
    source=cuda_file(_PACKAGE, "ppr_init.cu"),
    entry="ppr_init",
    params=(
        _OUT_DEGREE,
        _SEEDS,
        _PERSONAL,
        BufferParam("rank", np.float32, "inout", "vw"),
        BufferParam("other", np.float32, "inout", "vw"),
        _MASS,
        _MASS_NEXT,
        _DIFF,
        _ACTIVE,
        _STATE,
        ScalarParam("damping", np.float32),
        ScalarParam("tol", np.float32),
        ScalarParam("max_iter", np.int32),
        ScalarParam("dense", np.int32),
        ScalarParam("dense_mass", np.float32),
        _N,
        _W,
        _VW,
        _PLEN,
    ),
    launch=grid_launch("vw"),
    reference=ppr_init_reference,
)

ppr_gather = Kernel(
    name="ppr_gather",
    source=cuda_file(_PACKAGE, "ppr_gather.cu"),
    entry="ppr_gather",
    params=(
        BufferParam("in_offsets", np.int64, "in", "v1"),
        BufferParam("in_indices", np.int32, "in", "e"),
        BufferParam("shares", np.float32, "in", "e"),
        BufferParam("src", np.float32, "in", "vw"),
        BufferParam("dst", np.float32, "inout", "vw"),
        BufferParam("active", np.int32, "in", "w"),
        _STATE_IN,
        ScalarParam("n1", np.int64, default="v1"),
        _W,
        _VW,
        ScalarParam("edges", np.int64, default="e"),
    ),
    launch=gather_launch,
    reference=ppr_gather_reference,
)

ppr_update = Kernel(
    name="ppr_update",
    source=cuda_file(_PACKAGE, "ppr_update.cu"),
    entry="ppr_update",
    params=(
        BufferParam("rank_in", np.float32, "inout", "vw"),
        BufferParam("rank_out", np.float32, "inout", "vw"),
        _OUT_DEGREE,
        _SEEDS,
        _PERSONAL,
        BufferParam("mass", np.float32, "in", "w"),
        _MASS_NEXT,
        _DIFF,
        BufferParam("active", np.int32, "in", "w"),
        _STATE_IN,
        _N,
        _W,
        _VW,
        _PLEN,
    ),
    launch=update_launch,
    reference=ppr_update_reference,
)

ppr_check = Kernel(
    name="ppr_check",
    source=cuda_file(_PACKAGE, "ppr_check.cu"),
    entry="ppr_check",
    params=(_MASS, _MASS_NEXT, _DIFF, _ACTIVE, _STATE, _W),
    launch=one_block,
    reference=ppr_check_reference,
)

ppr_rows = Kernel(
    name="ppr_rows",
    source=cuda_file(_PACKAGE, "ppr_rows.cu"),
    entry="ppr_rows",
    params=(
        BufferParam("ranks", np.float32, "in", "vw"),
        BufferParam("rows", np.float32, "inout", "vw"),
        _SEEDS,
        ScalarParam("count", np.int32),
        _W,
        _VW,
    ),
    launch=rows_launch,
    reference=ppr_rows_reference,
)

#: The power-iteration kernels, in the order a run first uses them.
PPR_KERNELS: tuple[Kernel, ...] = (
    ppr_shares,
    ppr_init,
    ppr_gather,
    ppr_update,
    ppr_check,
    ppr_rows,
)
