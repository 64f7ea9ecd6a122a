"""Single-source shortest paths geometry: the state layout, list capacities, launches.

See :mod:`._kernels` for how the kernels use them. Float state words hold the bits of
a float32 (``np.float32(x).view(np.int32)``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...kernels import LaunchShape

#: A frontier vertex with at least this many out-edges is cut into chunks of
#: ``CHUNK_EDGES`` edges, each expanded by one warp; shorter lists are merged per warp.
WIDE_MIN_DEGREE = 32
#: Edges of one chunk (eight warp-wide passes).
CHUNK_EDGES = 256
#: Largest float32: as ``max_distance``, no bound; as ``delta``, every edge is light.
SSSP_UNBOUNDED = float(np.finfo(np.float32).max)

#: Nonzero once the run has finished; every step then returns at once.
STATE_DONE = 0
#: What the next step does: ``MODE_LIGHT`` or ``MODE_HEAVY``.
STATE_MODE = 1
#: Steps run so far; a vertex is expanded by the step whose number its stamp holds.
STATE_ROUND = 2
#: Narrow vertices the next light step expands (queue ``ROUND & 1``).
STATE_NARROW = 3
#: Chunks the next light step expands (chunk list ``ROUND & 1``).
STATE_CHUNKS = 4
#: Narrow vertices appended for the step after (queue ``(ROUND + 1) & 1``).
STATE_NEXT_NARROW = 5
#: Chunks appended for the step after.
STATE_NEXT_CHUNKS = 6
#: Narrow vertices appended to the members list so far (each once per run).
STATE_MEMBERS_FILL = 7
#: Chunks appended to the heavy list so far (each wide vertex's once per run).
STATE_HEAVY_FILL = 8
#: Where the current bucket's members start in the members list.
STATE_MEMBERS_START = 9
#: Where the current bucket's chunks start in the heavy list.
STATE_HEAVY_START = 10
#: ``[lo, hi)`` of the members list a heavy step expands.
STATE_READ_MEMBERS_LO = 11
STATE_READ_MEMBERS_HI = 12
#: ``[lo, hi)`` of the heavy list a heavy step expands.
STATE_READ_HEAVY_LO = 13
STATE_READ_HEAVY_HI = 14
#: float: the current bucket's end; an improved vertex below it is expanded next step.
STATE_THRESHOLD = 15
#: float: a heavy step drops far vertices below this (their bucket is done).
STATE_FAR_LO = 16
#: float: the bucket width; edges lighter than it are light.
STATE_DELTA = 17
#: float: distances above this are never written (``SSSP_UNBOUNDED``: no bound).
STATE_MAX_DISTANCE = 18
#: float: at most the smallest distance of a far vertex (+inf: none is far).
STATE_FAR_MIN = 19
#: Light and heavy steps run so far.
STATE_LIGHT_ROUNDS = 20
STATE_HEAVY_ROUNDS = 21
#: Vertices reached so far, the source included.
STATE_REACHED = 22
#: Blocks of the current step that have finished (the last one advances the state).
STATE_ARRIVED = 23
#: uint64: edge weights read (every edge of every expansion).
STATE_SCANNED = 24
#: uint64: edges relaxed (those an expansion's light or heavy filter passed).
STATE_RELAXED = 26
#: The source vertex.
STATE_SOURCE = 28
#: Nonzero if a list was full (a bug: the capacities are upper bounds).
STATE_OVERFLOW = 29
#: Nonzero when some edge is heavy (the light graph is not the whole graph): only
#: then do heavy steps walk their members' lists.
STATE_HEAVY_EDGES = 30
#: Nonzero when a heavy step sweeps the far flags (some far distance may lie below the
#: new bucket's end).
STATE_SWEEP = 31
#: Words in the state buffer (``int32``).
STATE_WORDS = 32
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
SSSP_STATE_WORDS = STATE_WORDS

#: Step modes.
MODE_LIGHT = 0
MODE_HEAVY = 1

_BLOCK = 256  # a multiple of 32: the warp paths use full-warp masks
_STAGE = 288  # per warp: 31 staged + 8 passes of 32, then the lists are appended
_STEP_MAX_BLOCKS = 512
_INIT_MAX_BLOCKS = 4096

#: What ``sssp_defines.cuh`` defines for the kernels' CUDA C: these constants, by the
#: names the CUDA C uses (tests check the header says the same).
CUDA_DEFINES: dict[str, int] = {
    "BLOCK": _BLOCK,
    "WARPS": _BLOCK // 32,
    "STAGE": _STAGE,
    "WIDE_MIN_DEGREE": WIDE_MIN_DEGREE,
    "CHUNK_EDGES": CHUNK_EDGES,
    "MODE_LIGHT": MODE_LIGHT,
    "MODE_HEAVY": MODE_HEAVY,
    "STATE_DONE": STATE_DONE,
    "STATE_MODE": STATE_MODE,
    "STATE_ROUND": STATE_ROUND,
    "STATE_NARROW": STATE_NARROW,
    "STATE_CHUNKS": STATE_CHUNKS,
    "STATE_NEXT_NARROW": STATE_NEXT_NARROW,
    "STATE_NEXT_CHUNKS": STATE_NEXT_CHUNKS,
    "STATE_MEMBERS_FILL": STATE_MEMBERS_FILL,
    "STATE_HEAVY_FILL": STATE_HEAVY_FILL,
    "STATE_MEMBERS_START": STATE_MEMBERS_START,
    "STATE_HEAVY_START": STATE_HEAVY_START,
    "STATE_READ_MEMBERS_LO": STATE_READ_MEMBERS_LO,
    "STATE_READ_MEMBERS_HI": STATE_READ_MEMBERS_HI,
    "STATE_READ_HEAVY_LO": STATE_READ_HEAVY_LO,
    "STATE_READ_HEAVY_HI": STATE_READ_HEAVY_HI,
    "STATE_THRESHOLD": STATE_THRESHOLD,
    "STATE_FAR_LO": STATE_FAR_LO,
    "STATE_DELTA": STATE_DELTA,
    "STATE_MAX_DISTANCE": STATE_MAX_DISTANCE,
    "STATE_FAR_MIN": STATE_FAR_MIN,
    "STATE_LIGHT_ROUNDS": STATE_LIGHT_ROUNDS,
    "STATE_HEAVY_ROUNDS": STATE_HEAVY_ROUNDS,
    "STATE_REACHED": STATE_REACHED,
    "STATE_ARRIVED": STATE_ARRIVED,
    "STATE_SCANNED": STATE_SCANNED,
    "STATE_RELAXED": STATE_RELAXED,
    "STATE_SOURCE": STATE_SOURCE,
    "STATE_OVERFLOW": STATE_OVERFLOW,
    "STATE_HEAVY_EDGES": STATE_HEAVY_EDGES,
    "STATE_SWEEP": STATE_SWEEP,
    "STATE_WORDS": STATE_WORDS,
}


def chunk_capacity(num_edges: int) -> int:
    """Entries a chunk list can need: ``ceil(E / CHUNK_EDGES) + E // WIDE_MIN_DEGREE + 1``.

    A step lists each wide vertex once, as ``ceil(d / CHUNK_EDGES) <= d / CHUNK_EDGES + 1``
    chunks, and at most ``E / WIDE_MIN_DEGREE`` vertices have ``d >= WIDE_MIN_DEGREE``;
    the heavy list holds each wide vertex once per run, so the same bound holds for it.

    Args:
        num_edges: Edges of the graph.
    """
    return -(-num_edges // CHUNK_EDGES) + num_edges // WIDE_MIN_DEGREE + 1


def step_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """One block per 256 vertices, capped: the lists are walked by grid-stride loops."""
    blocks = max(1, min(_STEP_MAX_BLOCKS, -(-sizes["v"] // _BLOCK)))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def init_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """A grid-stride launch over the vertices, at least one block (block 0 sets the state)."""
    blocks = max(1, min(_INIT_MAX_BLOCKS, -(-sizes["v"] // _BLOCK)))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))
