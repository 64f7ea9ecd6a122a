"""NumPy references of the BFS kernels: the device semantics on the host."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._state import (
    BFS_TO_BOTTOM_UP,
    BFS_TO_TOP_DOWN,
    STATE_DIRECTION,
    STATE_DISCOVERED,
    STATE_DONE,
    STATE_FRONTIER,
    STATE_LEVEL,
    STATE_LEVELS_RUN,
    STATE_MAX_LEVEL,
    STATE_REACHED,
)


def _expand(
    offsets: np.ndarray, indices: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For CSR ``rows``: the position in ``rows`` of each edge's row, and its column."""
    begins = offsets[rows]
    counts = offsets[rows + 1] - begins
    total = int(counts.sum())
    owner = np.repeat(np.arange(rows.size), counts)
    first = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) + np.repeat(begins - first, counts)
    return owner, indices[positions]


def bfs_init_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``bfs_init``: only the source at level 0, and a fresh state.

    An out-of-range source leaves every level at -1 and the state done with nothing
    reached.

    Args:
        arrays: ``levels`` (int32, written) and ``state`` (8 int32, written).
        scalars: ``source``, ``max_level`` and the derived ``n``.
    """
    levels, state = arrays["levels"], arrays["state"]
    source, max_level, n = (int(scalars[k].item()) for k in ("source", "max_level", "n"))
    valid = 0 <= source < n
    levels.fill(-1)
    if valid:
        levels[source] = 0
    done = int(not valid or max_level <= 0)
    state[:] = (0, 0, done, 0, int(valid), max_level, int(valid), 0)


def bfs_top_down_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_top_down``: label the unseen out-neighbours of the frontier.

    Args:
        arrays: ``offsets``, ``indices`` (read), ``levels`` and ``state`` (updated).
        scalars: The derived ``n``.
    """
    levels, state = arrays["levels"], arrays["state"]
    if state[STATE_DONE] != 0 or state[STATE_DIRECTION] != 0:
        return
    level = int(state[STATE_LEVEL])
    _, neighbours = _expand(arrays["offsets"], arrays["indices"], np.flatnonzero(levels == level))
    fresh = neighbours[levels[neighbours] == -1]
    if fresh.size:
        # Label, then count: np.unique's sort costs ~10x this on large frontiers.
        levels[fresh] = level + 1
        state[STATE_DISCOVERED] += int(np.count_nonzero(levels == level + 1))


def bfs_bottom_up_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_bottom_up``: label each unseen vertex with an in-neighbour in the frontier.

    Args:
        arrays: ``in_offsets``, ``in_indices`` (read), ``levels`` and ``state`` (updated).
        scalars: The derived ``n``.
    """
    levels, state = arrays["levels"], arrays["state"]
    if state[STATE_DONE] != 0 or state[STATE_DIRECTION] != 1:
        return
    level = int(state[STATE_LEVEL])
    unseen = np.flatnonzero(levels == -1)
    owner, parents = _expand(arrays["in_offsets"], arrays["in_indices"], unseen)
    hit = np.zeros(unseen.size, dtype=bool)
    hit[owner[levels[parents] == level]] = True  # a mask, not np.unique: no sort
    found = unseen[hit]
    levels[found] = level + 1
    state[STATE_DISCOVERED] += found.size


def bfs_advance_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_advance``: close the level, decide whether to stop and which way to go.

    Args:
        arrays: ``levels`` (only its length matters) and ``state`` (8 int32, updated).
        scalars: ``bottom_up`` (nonzero: bottom-up allowed) and the derived ``n``.
    """
    state = arrays["state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_LEVELS_RUN] += 1
    count = int(state[STATE_DISCOVERED])
    if count == 0:
        state[STATE_DONE] = 1
        return
    n = int(scalars["n"].item())
    state[STATE_REACHED] += count
    state[STATE_LEVEL] += 1
    state[STATE_FRONTIER] = count
    state[STATE_DISCOVERED] = 0
    if state[STATE_LEVEL] >= state[STATE_MAX_LEVEL]:
        state[STATE_DONE] = 1
    direction = int(state[STATE_DIRECTION])
    if int(scalars["bottom_up"].item()) == 0:
        direction = 0
    elif direction == 0 and BFS_TO_BOTTOM_UP * count > n:
        direction = 1
    elif direction == 1 and BFS_TO_TOP_DOWN * count < n:
        direction = 0
    state[STATE_DIRECTION] = direction
