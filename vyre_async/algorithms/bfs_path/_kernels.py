"""The two kernels a shortest-path query adds to a BFS: the target, and the walk back.

A path query is the BFS of :mod:`..bfs` with ``bfs_path_init`` in its prefix (the
target, kept on the device: repeated steps take no per-query scalars) and
``bfs_path_step`` after each level's ``bfs_advance``. Once the target has a level,
the step walks back from it over in-edges and ends the traversal, so no level beyond
the target's runs and only the path comes back.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...kernels import BufferParam, Kernel, LaunchShape, ScalarParam, one_thread
from .._cuda_files import cuda_file
from ..bfs import BFS_STATE_WORDS
from ._reference import bfs_path_init_reference, bfs_path_step_reference

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]


def _one_warp(sizes: Mapping[str, int]) -> LaunchShape:
    """One block of one warp: the walk is a chain of dependent steps."""
    return LaunchShape(grid=(1, 1, 1), block=(32, 1, 1))


bfs_path_init = Kernel(
    name="bfs_path_init",
    source=cuda_file(_PACKAGE, "bfs_path_init.cu"),
    entry="bfs_path_init",
    params=(BufferParam("goal", np.int32, "inout", 1), ScalarParam("target", np.int32)),
    launch=one_thread,
    reference=bfs_path_init_reference,
)

bfs_path_step = Kernel(
    name="bfs_path_step",
    source=cuda_file(_PACKAGE, "bfs_path_step.cu"),
    entry="bfs_path_step",
    params=(
        BufferParam("in_offsets", np.int64, "in", "v1"),
        BufferParam("in_indices", np.int32, "in", "e"),
        BufferParam("levels", np.int32, "in", "v"),
        BufferParam("state", np.int32, "inout", BFS_STATE_WORDS),
        BufferParam("goal", np.int32, "in", 1),
        # "inout": only the path's own positions are written.
        BufferParam("path", np.int32, "inout", "v"),
        ScalarParam("n", np.int32, default="v"),
    ),
    launch=_one_warp,
    reference=bfs_path_step_reference,
)

#: The path kernels, in the order a query first runs them.
BFS_PATH_KERNELS: tuple[Kernel, ...] = (bfs_path_init, bfs_path_step)
