"""Compaction of a traversal's levels into its sorted vertex set, on the device.

A k-hop query's answer is the vertices its traversal reached (level >= 0), sorted. Three
kernels make it from the levels without the host seeing them: ``khop_count`` counts
the reached vertices of each tile of ``KHOP_TILE`` vertices, ``khop_scan`` turns the
counts into each tile's first output position (and the total), and ``khop_scatter``
writes each reached vertex at its tile's position plus its rank within the tile, so
the output is sorted. ``tile_counts`` holds one word per tile plus one for the total:
``compact_tiles(V) + 1`` words. The scatter's output may be longer than the set (an
int32 array of at least V elements, say): positions past its end are never written.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...kernels import BufferParam, Kernel, LaunchShape, ScalarParam
from .._cuda_files import cuda_file
from ._compact_layout import KHOP_BLOCK, KHOP_SCAN_BLOCK, MAX_TILE_BLOCKS
from ._compact_reference import (
    khop_count_reference,
    khop_scan_reference,
    khop_scatter_reference,
)

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]

_LEVELS = BufferParam("levels", np.int32, "in", "v")
_N = ScalarParam("n", np.int32, default="v")
_T1 = ScalarParam("t1", np.int64, default="t1")


def _tile_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """One block of ``KHOP_BLOCK`` threads per tile, capped (blocks stride over the rest);
    no blocks for no tiles."""
    tiles = max(sizes["t1"] - 1, 0)
    return LaunchShape(grid=(min(tiles, MAX_TILE_BLOCKS), 1, 1), block=(KHOP_BLOCK, 1, 1))


def _scan_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """One block of ``KHOP_SCAN_BLOCK`` threads (it writes the total even for no tiles)."""
    return LaunchShape(grid=(1, 1, 1), block=(KHOP_SCAN_BLOCK, 1, 1))


khop_count = Kernel(
    name="khop_count",
    source=cuda_file(_PACKAGE, "khop_count.cu"),
    entry="khop_count",
    params=(
        _LEVELS,
        # "inout": every tile's word is written, and the total's is the scan's.
        BufferParam("tile_counts", np.int32, "inout", "t1"),
        _N,
        _T1,
    ),
    launch=_tile_launch,
    reference=khop_count_reference,
)

khop_scan = Kernel(
    name="khop_scan",
    source=cuda_file(_PACKAGE, "khop_scan.cu"),
    entry="khop_scan",
    params=(BufferParam("tile_counts", np.int32, "inout", "t1"), _T1),
    launch=_scan_launch,
    reference=khop_scan_reference,
)

khop_scatter = Kernel(
    name="khop_scatter",
    source=cuda_file(_PACKAGE, "khop_scatter.cu"),
    entry="khop_scatter",
    params=(
        _LEVELS,
        BufferParam("tile_offsets", np.int32, "in", "t1"),
        # "inout", not "out": only the set's positions are written; the rest of a longer
        # output (and zeroing it first) is left alone.
        BufferParam("out", np.int32, "inout", "cap"),
        _N,
        _T1,
        ScalarParam("cap", np.int64, default="cap"),
    ),
    launch=_tile_launch,
    reference=khop_scatter_reference,
)

#: The compaction kernels, in the order a compaction runs them.
KHOP_KERNELS: tuple[Kernel, ...] = (khop_count, khop_scan, khop_scatter)
