"""Weakly connected components as four kernels that a resident repeated sequence runs.

The algorithm is label propagation with hooking and pointer jumping, in the manner of
Shiloach and Vishkin ("An O(log n) parallel connectivity algorithm", J. Algorithms
1982) as FastSV runs it (Zhang, Azad and Hu, "FastSV: a distributed-memory connected
component algorithm with fast convergence", SIAM PP 2020). Every vertex keeps a
``parent``; ``cc_init`` makes each vertex its own. A round is:

- ``cc_hook``, over every edge ``u -> v`` (either direction joins: the components are
  weak, so the out-lists alone hold every edge once and the transpose is not read):
  where ``parent[u] != parent[v]``, the larger of the two parents and the end point
  that pointed at it both get the smaller one, by ``atomicMin``;
- ``cc_jump`` twice: every parent becomes its grandparent (pointer jumping), which
  halves the depth of the trees the hooks build;
- ``cc_check``: the round is counted, and once its hook found no edge whose end points'
  parents differ the state says done and every kernel returns at once.

A parent only falls, and only to a vertex of the same component (a hook takes the
parent of a neighbour, a jump an ancestor), so no cycle forms. A hook that finds the
parents of an edge's end points differ lowers a parent for good (the larger one's
end point ends below it), so each round that goes on lowers the sum of the parents:
the rounds end. A hook that finds no such edge changed nothing, so it saw one state,
in which the parent is equal along every edge, so constant over each component, and
is a vertex of it no larger than any of its vertices (parents never rise above their
vertex): the smallest vertex id of the component, whatever order the device ran the
updates in. The parents are the labels. The jumps only speed this up: a run without
them ends at the same labels, after more rounds.

A symmetric graph stores each edge both ways; ``skip_reverse`` takes only ``u -> v``
with ``v < u``, half the random reads. On R-MAT graphs the rounds are few (3 or 4 at
scales 12 to 20, the last one finding nothing to do); a path through ``n`` vertices in
a random order takes a few more than ``log4(n)`` (14 for a million vertices).
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, grid_stride, one_thread
from .._cuda_files import cuda_file
from ._layout import BLOCK, EDGES_PER_THREAD, STATE_WORDS
from ._reference import (
    cc_check_reference,
    cc_hook_reference,
    cc_init_reference,
    cc_jump_reference,
)

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]

_STATE = BufferParam("state", np.int32, "inout", STATE_WORDS)
_STATE_READ = BufferParam("state", np.int32, "in", STATE_WORDS)
_PARENT = BufferParam("parent", np.int32, "inout", "v")
_N = ScalarParam("n", np.int32, default="v")

cc_init = Kernel(
    name="cc_init",
    source=cuda_file(_PACKAGE, "cc_init.cu"),
    entry="cc_init",
    params=(_PARENT, _STATE, _N),
    launch=at_least_one_block("v", BLOCK),
    reference=cc_init_reference,
)

cc_hook = Kernel(
    name="cc_hook",
    source=cuda_file(_PACKAGE, "cc_hook.cu"),
    entry="cc_hook",
    params=(
        BufferParam("offsets", np.int64, "in", "v1"),
        BufferParam("indices", np.int32, "in", "e"),
        _PARENT,
        _STATE,
        ScalarParam("skip_reverse", np.int32, default=0),
        _N,
    ),
    # A capped grid (the loop strides over the rest): the rounds a submission runs past
    # done launch it too, and each of its blocks then only reads the done word.
    launch=grid_stride("e", block=BLOCK, items_per_thread=EDGES_PER_THREAD, max_blocks=4096),
    reference=cc_hook_reference,
)

cc_jump = Kernel(
    name="cc_jump",
    source=cuda_file(_PACKAGE, "cc_jump.cu"),
    entry="cc_jump",
    params=(_PARENT, _STATE_READ, _N),
    launch=grid_stride("v", block=BLOCK, items_per_thread=4, max_blocks=4096),
    reference=cc_jump_reference,
)

cc_check = Kernel(
    name="cc_check",
    source=cuda_file(_PACKAGE, "cc_check.cu"),
    entry="cc_check",
    params=(_STATE,),
    launch=one_thread,
    reference=cc_check_reference,
)

#: The connected-components kernels, in the order a run first uses them.
COMPONENTS_KERNELS: tuple[Kernel, ...] = (cc_init, cc_hook, cc_jump, cc_check)
