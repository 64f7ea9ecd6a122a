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

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, grid_stride, one_thread
from .._cuda_files import cuda_file
from ._reference import (
    bfs_advance_reference,
    bfs_bottom_up_reference,
    bfs_init_reference,
    bfs_top_down_reference,
)
from ._state import _BLOCK, STATE_WORDS

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]


_LEVELS = BufferParam("levels", np.int32, "inout", "v")
_STATE = BufferParam("state", np.int32, "inout", STATE_WORDS)
_N = ScalarParam("n", np.int32, default="v")

bfs_init = Kernel(
    name="bfs_init",
    source=cuda_file(_PACKAGE, "bfs_init.cu"),
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
    source=cuda_file(_PACKAGE, "bfs_top_down.cu"),
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
    source=cuda_file(_PACKAGE, "bfs_bottom_up.cu"),
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
    source=cuda_file(_PACKAGE, "bfs_advance.cu"),
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
