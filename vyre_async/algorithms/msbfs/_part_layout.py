"""Partitioned multi-source BFS geometry: the state and statistics layouts, launch shapes.

See :mod:`._part_kernels` for how the kernels use them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...kernels import LaunchShape
from ._layout import MSBFS_HUB_LANE_EDGES, MSBFS_MAX_WORDS

#: Level of the current frontier.
PSTATE_LEVEL = 0
#: Nonzero once the traversal has finished on every device.
PSTATE_DONE = 1
#: Stop once this level has been discovered.
PSTATE_MAX_LEVEL = 2
#: Expansions run so far.
PSTATE_LEVELS_RUN = 3
#: Words per vertex; 0 when the bindings were invalid.
PSTATE_WIDTH = 4
#: Lanes with a valid source.
PSTATE_LANES = 5
#: The direction of the level being expanded: :data:`TOP_DOWN` or :data:`BOTTOM_UP`.
PSTATE_DIRECTION = 6
#: Nonzero between a level's direction step and the next one (the level then counts).
PSTATE_PENDING = 7
#: uint64[MSBFS_MAX_WORDS]: lanes with a valid source.
PSTATE_ACTIVE = 16
#: uint64[MSBFS_MAX_WORDS]: lanes whose frontier is not empty on some device (the
#: sources' lanes at first, then the lanes any device's last expansion gained): the only
#: lanes a bottom-up level looks for, so a lane that reaches nothing more (its source
#: isolated, its traversal over) stops costing in-list scans.
PSTATE_LIVE = PSTATE_ACTIVE + 2 * MSBFS_MAX_WORDS
#: int32 words of the state.
PSTATE_WORDS = PSTATE_LIVE + 2 * MSBFS_MAX_WORDS

#: uint64 statistics one device reports of its share of the frontier, per level:
#: frontier vertices (any lane), their out-edges, in-edges of vertices some lane has
#: not visited yet, (vertex, lane) pairs discovered by the last expansion, and from
#: ``STAT_GAINED`` on, ``MSBFS_MAX_WORDS`` words of the lanes that expansion gained.
STAT_FRONTIER = 0
STAT_FRONTIER_EDGES = 1
STAT_UNEXPLORED_EDGES = 2
STAT_DISCOVERED = 3
STAT_GAINED = 4
#: uint64 words of one device's statistics.
PART_STATS = STAT_GAINED + MSBFS_MAX_WORDS

#: Directions of a level.
TOP_DOWN = 0
BOTTOM_UP = 1
#: Direction rules (``mode`` scalar of ``msbfs_part_direction``): by frontier size, or
#: forced (tests run both directions on every level).
DIRECTION_MODES = {"auto": 0, "top_down": 1, "bottom_up": 2}
#: Top-down turns bottom-up once the frontier's out-edges exceed the unexplored in-edges
#: (weighed by the words they read, see ``SECTOR_WORDS``) divided by this; bottom-up
#: turns back once fewer than ``V / PULL_BETA`` vertices are in the frontier (Beamer,
#: Asanovic and Patterson, SC 2012).
PUSH_ALPHA = 14
PULL_BETA = 24
#: Lane words per 32-byte sector. With ``W`` lane words the unexplored in-edges count
#: ``ceil(W / SECTOR_WORDS)`` times against the frontier's out-edges: a bottom-up scan
#: reads that many sectors of frontier words per in-edge, a top-down push writes one per
#: out-edge and non-zero word, and a young frontier's vertices hold few lanes each (at
#: R-MAT 24 with 16 words the second level pushed in 4.5 ms what pulling took 19 ms).
SECTOR_WORDS = 4

_BLOCK = 256
_INIT_TILE = 1024
#: Vertices of one msbfs_part_count task (a warp's): 64 atomics per 1,024 words.
_COUNT_TILE = 1024
#: Lists of fewer edges are walked by their vertex's team of lanes, longer ones by the
#: whole warp; from ``msbfs_hub_min_degree(words)`` edges on, a hub's list is cut into
#: chunks of that many edges over the grid (the ``*_hubs`` kernels), as on one device.
_WIDE_MIN_DEGREE = 32
#: Edges a lane loads before its next vote.
_UNROLL = 4

#: What ``msbfs_part_defines.cuh`` defines for the kernels' CUDA C (tests check it).
PART_CUDA_DEFINES: dict[str, int] = {
    "PART_MAX_WORDS": MSBFS_MAX_WORDS,
    "PART_STATS": PART_STATS,
    "PSTATE_LEVEL": PSTATE_LEVEL,
    "PSTATE_DONE": PSTATE_DONE,
    "PSTATE_MAX_LEVEL": PSTATE_MAX_LEVEL,
    "PSTATE_LEVELS_RUN": PSTATE_LEVELS_RUN,
    "PSTATE_WIDTH": PSTATE_WIDTH,
    "PSTATE_LANES": PSTATE_LANES,
    "PSTATE_DIRECTION": PSTATE_DIRECTION,
    "PSTATE_PENDING": PSTATE_PENDING,
    "PSTATE_ACTIVE": PSTATE_ACTIVE,
    "PSTATE_LIVE": PSTATE_LIVE,
    "STAT_FRONTIER": STAT_FRONTIER,
    "STAT_FRONTIER_EDGES": STAT_FRONTIER_EDGES,
    "STAT_UNEXPLORED_EDGES": STAT_UNEXPLORED_EDGES,
    "STAT_DISCOVERED": STAT_DISCOVERED,
    "STAT_GAINED": STAT_GAINED,
    "PART_TOP_DOWN": TOP_DOWN,
    "PART_BOTTOM_UP": BOTTOM_UP,
    "PUSH_ALPHA": PUSH_ALPHA,
    "PULL_BETA": PULL_BETA,
    "PART_SECTOR_WORDS": SECTOR_WORDS,
    "PART_INIT_TILE": _INIT_TILE,
    "PART_COUNT_TILE": _COUNT_TILE,
    "PART_HUB_LANE_EDGES": MSBFS_HUB_LANE_EDGES,
    "PART_WIDE_MIN_DEGREE": _WIDE_MIN_DEGREE,
    "PART_UNROLL": _UNROLL,
}


def part_valid(
    nd: int, n_total: int, parts: int, part: int, chunk: int, words: int, lw: int, gw: int
) -> bool:
    """Whether bindings describe part ``part`` of a split whose every index stays inside
    the bound buffers (``part_valid`` in the CUDA C); the kernels do nothing otherwise."""
    return (
        parts >= 1
        and 0 <= part < parts
        and chunk >= 1
        and 1 <= words <= MSBFS_MAX_WORDS
        and 0 <= nd <= chunk
        and part * chunk + nd <= n_total
        and n_total <= parts * chunk
        and lw >= nd * words
        and gw >= parts * chunk * words
    )


def _blocks(items: int, per_block: int) -> LaunchShape:
    blocks = max(1, min(4096, -(-items // per_block)))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def team_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """Up to 16 lanes (a team of up to 16 words) per local vertex, capped; the kernels'
    warp-stride loops cover the rest."""
    return _blocks(MSBFS_MAX_WORDS * (sizes["v1"] - 1), _BLOCK)


def hubs_launch(edges: str) -> Callable[[Mapping[str, int]], LaunchShape]:
    """A warp per chunk of the smallest hub degree (16 words) of the ``edges`` list,
    capped at 4,096 blocks (a level launches both hub kernels, one of which returns at
    once); the kernels' warp-stride loops cover the rest."""

    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        chunks = -(-sizes[edges] // (MSBFS_HUB_LANE_EDGES // MSBFS_MAX_WORDS))
        return _blocks(32 * chunks, _BLOCK)

    return rule


def local_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """A thread per local (vertex, word), capped; grid-stride loops cover the rest."""
    return _blocks(sizes["lw"], _BLOCK)


def global_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """A thread per word of the group-wide frontier buffers, capped."""
    return _blocks(sizes["gw"], _BLOCK)


def count_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """A warp per word of ``_COUNT_TILE`` local vertices, capped; the kernel's warp-stride
    loop covers the rest."""
    nd = sizes["v1"] - 1
    words = max(1, sizes["lw"] // max(nd, 1))
    return _blocks(32 * -(-nd // _COUNT_TILE) * words, _BLOCK)
