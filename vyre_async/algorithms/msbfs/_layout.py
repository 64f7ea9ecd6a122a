"""Multi-source BFS geometry: lane words, the state layout, and launch shapes.

See :mod:`._kernels` for how the kernels use them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...kernels import LaunchShape

#: Most 64-bit words per vertex (1024 lanes); other widths make every kernel a no-op.
MSBFS_MAX_WORDS = 16
#: Query lanes one 64-bit word carries.
MSBFS_LANES_PER_WORD = 64
#: ``max_level`` for a traversal limited only by the graph.
MSBFS_UNLIMITED = 2**31 - 1
#: A vertex whose in-degree times its team width reaches this is a hub: its in-list is
#: cut into chunks of ``MSBFS_HUB_LANE_EDGES / group`` edges (256 warp passes each).
MSBFS_HUB_LANE_EDGES = 8192

#: Level of the current frontier.
STATE_LEVEL = 0
#: Nonzero once the traversal has finished; every repeated kernel then returns at once.
STATE_DONE = 1
#: Stop once this level has been discovered (``MSBFS_UNLIMITED`` for a full traversal).
STATE_MAX_LEVEL = 2
#: Expansions run so far (the last, empty expansion of a full traversal included).
STATE_LEVELS_RUN = 3
#: Words per vertex W as ``msbfs_init`` derived it; 0 when the bindings were invalid.
STATE_WIDTH = 4
#: Lanes with a valid source.
STATE_LANES = 5
#: uint64: (vertex, lane) pairs found by the current expansion.
STATE_DISCOVERED = 8
#: uint64: (vertex, lane) pairs reached so far, sources included (sum of the counts).
STATE_REACHED = 10
#: uint64[MSBFS_MAX_WORDS]: lanes with a valid source (never changes after init).
STATE_ACTIVE = 16
#: uint64[MSBFS_MAX_WORDS]: lanes whose current frontier is not empty.
STATE_LIVE = STATE_ACTIVE + 2 * MSBFS_MAX_WORDS
#: uint64[MSBFS_MAX_WORDS]: lanes that gained a vertex in the current expansion.
STATE_NEXT_LIVE = STATE_LIVE + 2 * MSBFS_MAX_WORDS
#: Words in the state buffer (``int32``).
STATE_WORDS = STATE_NEXT_LIVE + 2 * MSBFS_MAX_WORDS
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
MSBFS_STATE_WORDS = STATE_WORDS

_BLOCK = 256  # a multiple of 32: every warp path uses full-warp masks
_MAX_BLOCKS = 4096
_WIDE_MIN_DEGREE = 32  # shorter in-lists are walked by a team, longer by the whole warp
_UNROLL = 4  # neighbours each lane loads before the dependent frontier reads
_COUNT_TILE = 1024  # vertices per msbfs_count task: 64 atomics per 1024 words

#: What ``msbfs_defines.cuh`` defines for the kernels' CUDA C: these constants, by the
#: names the CUDA C uses (tests check the header says the same).
CUDA_DEFINES: dict[str, int] = {
    "MAX_WORDS": MSBFS_MAX_WORDS,
    "HUB_LANE_EDGES": MSBFS_HUB_LANE_EDGES,
    "WIDE_MIN_DEGREE": _WIDE_MIN_DEGREE,
    "UNROLL": _UNROLL,
    "COUNT_TILE": _COUNT_TILE,
    "STATE_LEVEL": STATE_LEVEL,
    "STATE_DONE": STATE_DONE,
    "STATE_MAX_LEVEL": STATE_MAX_LEVEL,
    "STATE_LEVELS_RUN": STATE_LEVELS_RUN,
    "STATE_WIDTH": STATE_WIDTH,
    "STATE_LANES": STATE_LANES,
    "STATE_DISCOVERED": STATE_DISCOVERED,
    "STATE_REACHED": STATE_REACHED,
    "STATE_ACTIVE": STATE_ACTIVE,
    "STATE_LIVE": STATE_LIVE,
    "STATE_NEXT_LIVE": STATE_NEXT_LIVE,
}


def msbfs_words(n: int, vw: int) -> int:
    """Words per vertex the kernels derive from bound lengths: ``vw / n``, or 0 if invalid.

    Args:
        n: Vertex count (the CSR offsets' length minus one).
        vw: Length of the bitset buffers.

    Returns:
        W in ``[1, MSBFS_MAX_WORDS]``, or 0 when ``vw`` is not such a multiple of ``n``.
    """
    if n <= 0 or vw <= 0 or vw % n:
        return 0
    words = vw // n
    return words if words <= MSBFS_MAX_WORDS else 0


def _group(words: int) -> int:
    return 1 << (words - 1).bit_length()


def msbfs_hub_min_degree(words: int) -> int:
    """In-degree from which ``msbfs_expand_hubs`` expands a vertex instead of ``msbfs_expand``.

    Args:
        words: Words per vertex, in ``[1, MSBFS_MAX_WORDS]``.

    Returns:
        ``MSBFS_HUB_LANE_EDGES`` divided by W rounded up to a power of two.
    """
    return MSBFS_HUB_LANE_EDGES // _group(words)


def _size_words(sizes: Mapping[str, int]) -> int:
    return msbfs_words(sizes["v1"] - 1, sizes["vw"])


def _warps(count: int) -> LaunchShape:
    """One warp per task, capped; the kernels' warp-stride loops cover the rest."""
    blocks = min(_MAX_BLOCKS, -(-count * 32 // _BLOCK))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def _expand_launch(sizes: Mapping[str, int]) -> LaunchShape:
    words = _size_words(sizes)
    if not words:
        return _warps(0)
    return _warps(-(-(sizes["v1"] - 1) // (32 // _group(words))))


def _hubs_launch(sizes: Mapping[str, int]) -> LaunchShape:
    words = _size_words(sizes)
    return _warps(-(-sizes["e"] // msbfs_hub_min_degree(words)) if words else 0)


def _record_targets_launch(sizes: Mapping[str, int]) -> LaunchShape:
    items = sizes["k"] * _size_words(sizes)
    blocks = min(_MAX_BLOCKS, -(-items // _BLOCK))
    return LaunchShape(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1))


def _count_launch(sizes: Mapping[str, int]) -> LaunchShape:
    return _warps(-(-(sizes["v1"] - 1) // _COUNT_TILE) * _size_words(sizes))
