"""Each seed's top-k vertices on the device: a radix select over (rank, vertex) keys.

A column's key for vertex ``v`` is ``rank bits << 32 | (V - 1 - v)`` (uint64; ranks
are >= 0, so their float32 bits order like the ranks), so keys are unique and the k
largest are the k largest ranks with ties going to the smaller vertex. The select
finds, per column, the k-th largest key one 8-bit digit at a time from the top:
``ppr_top_hist`` counts the keys that match the digits found so far by their next
digit, ``ppr_top_select`` picks the digit where the k-th falls. A column is settled as
soon as the keys in its chosen digit are exactly the ones still wanted (ranks rarely
tie, so most columns settle within the rank's four digits; the vertex number's digits
only split ties). ``ppr_top_collect`` then takes every key at or above the settled
prefix: exactly k per column, in no particular order, which the host sorts.

Driver order over the final ranks (one submission, then the outputs are read)::

    ppr_top_init, (ppr_top_hist, ppr_top_select) x passes, ppr_top_collect

where ``passes`` is :func:`~._layout.top_passes` of the graph's size. Every pass
reads the ranks of the unsettled columns' tiles once.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam
from .._cuda_files import cuda_file
from ._layout import grid_launch, hist_launch
from ._top_reference import (
    ppr_top_collect_reference,
    ppr_top_hist_reference,
    ppr_top_init_reference,
    ppr_top_select_reference,
)

_PACKAGE = __name__.rpartition(".")[0]

_RANKS = BufferParam("ranks", np.float32, "in", "vw")
#: The digits found so far of each column's k-th key (settled: the bound itself).
_PREFIX = BufferParam("prefix", np.uint64, "inout", "w")
#: Keys each column still wants among those matching its prefix.
_NEED = BufferParam("need", np.int32, "inout", "w")
#: The digit each column looks at next (-1: settled).
_SHIFT = BufferParam("shift", np.int32, "inout", "w")
#: Keys each column collected.
_TAKEN = BufferParam("taken", np.int32, "inout", "w")
#: 256 bins per column.
_HIST = BufferParam("hist", np.uint32, "inout", "wh")
_W = ScalarParam("w", np.int64, default="w")
_VW = ScalarParam("vw", np.int64, default="vw")
_WH = ScalarParam("wh", np.int64, default="wh")
_COUNT = ScalarParam("count", np.int32)
_K = ScalarParam("k", np.int32)

ppr_top_init = Kernel(
    name="ppr_top_init",
    source=cuda_file(_PACKAGE, "ppr_top_init.cu"),
    entry="ppr_top_init",
    params=(_PREFIX, _NEED, _SHIFT, _TAKEN, _HIST, _COUNT, _K, _W, _WH),
    launch=grid_launch("wh", cap=1024),
    reference=ppr_top_init_reference,
)

ppr_top_hist = Kernel(
    name="ppr_top_hist",
    source=cuda_file(_PACKAGE, "ppr_top_hist.cu"),
    entry="ppr_top_hist",
    params=(
        _RANKS,
        BufferParam("prefix", np.uint64, "in", "w"),
        BufferParam("shift", np.int32, "in", "w"),
        _HIST,
        _W,
        _VW,
        _WH,
    ),
    launch=hist_launch,
    reference=ppr_top_hist_reference,
)

ppr_top_select = Kernel(
    name="ppr_top_select",
    source=cuda_file(_PACKAGE, "ppr_top_select.cu"),
    entry="ppr_top_select",
    params=(_PREFIX, _NEED, _SHIFT, _HIST, ScalarParam("id_shift", np.int32), _W, _WH),
    launch=grid_launch("w", cap=64),
    reference=ppr_top_select_reference,
)

ppr_top_collect = Kernel(
    name="ppr_top_collect",
    source=cuda_file(_PACKAGE, "ppr_top_collect.cu"),
    entry="ppr_top_collect",
    params=(
        _RANKS,
        BufferParam("prefix", np.uint64, "in", "w"),
        _TAKEN,
        BufferParam("top_vertex", np.int32, "inout", "wk"),
        BufferParam("top_rank", np.float32, "inout", "wk"),
        _COUNT,
        _K,
        _W,
        _VW,
        ScalarParam("wk", np.int64, default="wk"),
    ),
    launch=grid_launch("vw"),
    reference=ppr_top_collect_reference,
)

#: The top-k select kernels, in the order a select runs them.
PPR_TOP_KERNELS: tuple[Kernel, ...] = (
    ppr_top_init,
    ppr_top_hist,
    ppr_top_select,
    ppr_top_collect,
)
