"""Many-source shortest paths geometry: lanes, the state layout, sizes and launches.

See :mod:`._many_kernels` for how the kernels use them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...kernels import LaunchRule, LaunchShape

#: Most sources one traversal carries (one lane each, a lane mask per vertex is 32 bits).
MANY_MAX_LANES = 32
#: Edges of one listed item: a vertex's out-list is listed as chunks this long.
MANY_CHUNK_EDGES = 32

#: Nonzero once every lane has finished; every step then returns at once.
MANY_STATE_DONE = 0
#: What the next step does: ``MODE_RELAX`` or ``MODE_SPLIT``.
MANY_STATE_MODE = 1
#: Steps run so far; lane masks of the vertices a step expands carry its number.
MANY_STATE_ROUND = 2
#: Items (vertex << 32 | chunk) the next relax step expands (list ``ROUND & 1``).
MANY_STATE_ITEMS = 3
#: Items appended for the step after.
MANY_STATE_NEXT_ITEMS = 4
#: float: the bucket's end; a lane that drops below it is expanded next step.
MANY_STATE_THRESHOLD = 5
#: float: a split step drops far lanes below this (their bucket is done).
MANY_STATE_FAR_LO = 6
#: float: the bucket width.
MANY_STATE_DELTA = 7
#: float: distances above this are never written.
MANY_STATE_MAX_DISTANCE = 8
#: float: at most the smallest distance of a far lane (+inf: none is far).
MANY_STATE_FAR_MIN = 9
#: Relax and split steps run so far.
MANY_STATE_RELAX_ROUNDS = 10
MANY_STATE_SPLIT_ROUNDS = 11
#: Blocks of the current step that have finished.
MANY_STATE_ARRIVED = 12
#: Lanes with a valid source.
MANY_STATE_LANES = 13
#: Lanes W as the seed kernel derived them (0: bindings that do not fit, done at once).
MANY_STATE_WIDTH = 14
#: Nonzero if the item list was full (a bug: its capacity is an upper bound).
MANY_STATE_OVERFLOW = 15
#: uint64: (edge, lane) pairs relaxed.
MANY_STATE_RELAXED = 16
#: Words in the state buffer (``int32``).
MANY_STATE_WORDS = 32

#: Step modes.
MODE_RELAX = 0
MODE_SPLIT = 1

_BLOCK = 256
_STAGE = 160  # per warp: 31 staged + 4 passes of 32, then the item list is appended
_STEP_MAX_BLOCKS = 512
_MAX_BLOCKS = 4096

#: What ``sssp_many_defines.cuh`` defines for the kernels' CUDA C (tests check it).
MANY_CUDA_DEFINES: dict[str, int] = {
    "BLOCK": _BLOCK,
    "WARPS": _BLOCK // 32,
    "STAGE": _STAGE,
    "MAX_LANES": MANY_MAX_LANES,
    "CHUNK_EDGES": MANY_CHUNK_EDGES,
    "MODE_RELAX": MODE_RELAX,
    "MODE_SPLIT": MODE_SPLIT,
    "STATE_DONE": MANY_STATE_DONE,
    "STATE_MODE": MANY_STATE_MODE,
    "STATE_ROUND": MANY_STATE_ROUND,
    "STATE_ITEMS": MANY_STATE_ITEMS,
    "STATE_NEXT_ITEMS": MANY_STATE_NEXT_ITEMS,
    "STATE_THRESHOLD": MANY_STATE_THRESHOLD,
    "STATE_FAR_LO": MANY_STATE_FAR_LO,
    "STATE_DELTA": MANY_STATE_DELTA,
    "STATE_MAX_DISTANCE": MANY_STATE_MAX_DISTANCE,
    "STATE_FAR_MIN": MANY_STATE_FAR_MIN,
    "STATE_RELAX_ROUNDS": MANY_STATE_RELAX_ROUNDS,
    "STATE_SPLIT_ROUNDS": MANY_STATE_SPLIT_ROUNDS,
    "STATE_ARRIVED": MANY_STATE_ARRIVED,
    "STATE_LANES": MANY_STATE_LANES,
    "STATE_WIDTH": MANY_STATE_WIDTH,
    "STATE_OVERFLOW": MANY_STATE_OVERFLOW,
    "STATE_RELAXED": MANY_STATE_RELAXED,
    "STATE_WORDS": MANY_STATE_WORDS,
}


def many_lanes(n: int, vw: int) -> int:
    """Lanes the kernels derive from bound lengths: ``vw / n`` when it is a power of two
    in ``[1, MANY_MAX_LANES]``, else 0 (the kernels then do nothing)."""
    if n <= 0 or vw <= 0 or vw % n:
        return 0
    lanes = vw // n
    return lanes if lanes <= MANY_MAX_LANES and lanes & (lanes - 1) == 0 else 0


def item_capacity(num_vertices: int, num_edges: int) -> int:
    """Items a step can list: each vertex once, as ``ceil(d / MANY_CHUNK_EDGES)`` chunks."""
    return num_vertices + num_edges // MANY_CHUNK_EDGES + 1


def many_step_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """One block per 256 vertices, capped; the lists are walked by grid-stride loops."""
    blocks = max(1, min(_STEP_MAX_BLOCKS, -(-(sizes["v1"] - 1) // _BLOCK)))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def many_grid_launch(symbol: str) -> LaunchRule:
    """A grid-stride launch over ``sizes[symbol]`` elements, at least one block."""

    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        blocks = max(1, min(_MAX_BLOCKS, -(-sizes[symbol] // _BLOCK)))
        return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))

    return rule
