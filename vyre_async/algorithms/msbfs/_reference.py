"""NumPy references of the multi-source BFS kernels: the device semantics, vectorised."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._layout import (
    MSBFS_LANES_PER_WORD,
    MSBFS_MAX_WORDS,
    STATE_ACTIVE,
    STATE_DISCOVERED,
    STATE_DONE,
    STATE_LANES,
    STATE_LEVEL,
    STATE_LEVELS_RUN,
    STATE_LIVE,
    STATE_MAX_LEVEL,
    STATE_NEXT_LIVE,
    STATE_REACHED,
    STATE_WIDTH,
    msbfs_hub_min_degree,
    msbfs_words,
)


def _u64(state: np.ndarray, index: int, count: int = 1) -> np.ndarray:
    """The uint64 values stored in state words ``[index, index + 2 * count)`` (a view)."""
    return state[index : index + 2 * count].view(np.uint64)


def _geometry(scalars: Mapping[str, np.generic]) -> tuple[int, int]:
    n = int(scalars["n1"].item()) - 1
    return n, msbfs_words(n, int(scalars["vw"].item()))


def _lane_bits(lanes: np.ndarray) -> np.ndarray:
    return np.left_shift(np.uint64(1), (lanes % 64).astype(np.uint64))


def _bits(rows: np.ndarray) -> np.ndarray:
    """``(r, W)`` uint64 words as ``(r, 64 * W)`` booleans; column ``64 * w + b`` is bit b."""
    as_bytes = np.ascontiguousarray(rows, dtype="<u8").view(np.uint8)
    as_bytes = as_bytes.reshape(rows.shape[0], 8 * rows.shape[1])
    return np.unpackbits(as_bytes, axis=1, bitorder="little").view(bool)


def _popcount(words: np.ndarray) -> int:
    return int(np.unpackbits(np.ascontiguousarray(words, dtype="<u8").view(np.uint8)).sum())


def _active_lanes(state: np.ndarray, lanes: int) -> np.ndarray:
    """Lanes below ``lanes`` whose source was valid at init."""
    active = _bits(_u64(state, STATE_ACTIVE, MSBFS_MAX_WORDS).reshape(1, -1))[0]
    return np.flatnonzero(active[:lanes])


def _pull(
    offsets: np.ndarray, indices: np.ndarray, frontier: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """OR of the frontier words of each row's in-neighbours; every row has in-edges."""
    begins = offsets[rows]
    counts = offsets[rows + 1] - begins
    starts = np.cumsum(counts) - counts
    positions = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(begins - starts, counts)
    result: np.ndarray = np.bitwise_or.reduceat(frontier[indices[positions]], starts, axis=0)
    return result


def _add_progress(state: np.ndarray, gained: np.ndarray) -> None:
    """Count the new pairs in ``gained`` (rows of W words) and mark their lanes live."""
    if not gained.size:
        return
    _u64(state, STATE_DISCOVERED)[0] += np.uint64(_popcount(gained))
    words = gained.shape[1]
    _u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS)[:words] |= np.bitwise_or.reduce(gained, axis=0)


def msbfs_init_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_init``: source bits in ``visited`` and ``frontier``, ``next`` cleared.

    Args:
        arrays: ``offsets`` (length only), ``sources`` (read), ``visited``,
            ``frontier``, ``next`` (uint64, written) and ``state`` (written).
        scalars: ``max_level`` and the derived ``n1``, ``lanes`` and ``vw``.
    """
    sources, visited, state = arrays["sources"], arrays["visited"], arrays["state"]
    n, words = _geometry(scalars)
    used = min(sources.size, MSBFS_LANES_PER_WORD * words)
    lanes = np.arange(used)
    starts = sources[:used].astype(np.int64)
    valid = (starts >= 0) & (starts < n)
    lanes, starts = lanes[valid], starts[valid]
    bits = _lane_bits(lanes)
    visited.fill(0)
    np.bitwise_or.at(visited, starts * words + lanes // 64, bits)
    arrays["frontier"][:] = visited
    arrays["next"].fill(0)
    active = np.zeros(MSBFS_MAX_WORDS, dtype=np.uint64)
    np.bitwise_or.at(active, lanes // 64, bits)
    max_level = int(scalars["max_level"].item())
    state.fill(0)
    state[STATE_MAX_LEVEL] = max_level
    state[STATE_DONE] = int(words == 0 or lanes.size == 0 or max_level <= 0)
    state[STATE_WIDTH] = words
    state[STATE_LANES] = lanes.size
    _u64(state, STATE_REACHED)[0] = lanes.size
    _u64(state, STATE_ACTIVE, MSBFS_MAX_WORDS)[:] = active
    _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:] = active


def msbfs_init_targets_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_init_targets``: level 0 where a lane's source is the target, else -1.

    Args:
        arrays: ``sources``, ``targets`` (read), ``target_levels`` (int32 ``[lane * K +
            t]``, written) and ``state`` (read: the active lanes).
        scalars: The derived ``lanes``, ``k`` and ``lk``.
    """
    sources, targets, out = arrays["sources"], arrays["targets"], arrays["target_levels"]
    out.fill(-1)
    k = targets.size
    if k == 0:
        return
    lanes = _active_lanes(arrays["state"], sources.size)
    hit_lane, hit_target = np.nonzero(sources[lanes][:, None] == targets[None, :])
    at = lanes[hit_lane].astype(np.int64) * k + hit_target
    out[at[at < out.size]] = 0


def msbfs_init_levels_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_init_levels``: level 0 at each active lane's source, else -1.

    Args:
        arrays: ``offsets`` (length only), ``sources`` (read), ``levels`` (int32
            ``[lane * V + v]``, written) and ``state`` (read: the active lanes).
        scalars: The derived ``n1``, ``lanes`` and ``lv``.
    """
    sources, levels = arrays["sources"], arrays["levels"]
    n = int(scalars["n1"].item()) - 1
    levels.fill(-1)
    if n <= 0:
        return
    lanes = _active_lanes(arrays["state"], sources.size)
    starts = sources[lanes].astype(np.int64)
    keep = (starts >= 0) & (starts < n)
    at = lanes[keep].astype(np.int64) * n + starts[keep]
    levels[at[at < levels.size]] = 0


def msbfs_expand_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_expand``: pull one level into ``next`` for every vertex but the hubs.

    Hubs (in-degree at least :func:`msbfs_hub_min_degree`) get zero ``next`` words and
    keep their ``visited`` words, for ``msbfs_expand_hubs``.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``frontier`` (read), ``next`` (written),
            ``visited`` and ``state`` (updated).
        scalars: The derived ``n1`` and ``vw``.
    """
    state = arrays["state"]
    n, words = _geometry(scalars)
    if state[STATE_DONE] != 0 or words == 0:
        return
    offsets, visited = arrays["in_offsets"], arrays["visited"].reshape(n, words)
    live = _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:words]
    need = ~visited & live
    degree = np.diff(offsets)
    rows = np.flatnonzero(
        (need != 0).any(axis=1) & (degree > 0) & (degree < msbfs_hub_min_degree(words))
    )
    fresh = np.zeros((n, words), dtype=np.uint64)
    if rows.size:
        frontier = arrays["frontier"].reshape(n, words)
        fresh[rows] = _pull(offsets, arrays["in_indices"], frontier, rows) & need[rows]
    arrays["next"][:] = fresh.reshape(-1)
    visited |= fresh
    _add_progress(state, fresh[rows])


def msbfs_expand_hubs_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_expand_hubs``: pull one level for the hubs, or-ing into ``next``.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``frontier`` (read), ``next``,
            ``visited`` and ``state`` (updated).
        scalars: The derived ``n1`` and ``vw``.
    """
    state = arrays["state"]
    n, words = _geometry(scalars)
    if state[STATE_DONE] != 0 or words == 0:
        return
    offsets, visited = arrays["in_offsets"], arrays["visited"].reshape(n, words)
    hubs = np.flatnonzero(np.diff(offsets) >= msbfs_hub_min_degree(words))
    live = _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:words]
    need = ~visited[hubs] & live
    needy = (need != 0).any(axis=1)
    hubs, need = hubs[needy], need[needy]
    if not hubs.size:
        return
    found = _pull(offsets, arrays["in_indices"], arrays["frontier"].reshape(n, words), hubs)
    fresh = found & need
    following = arrays["next"].reshape(n, words)
    before = following[hubs]
    following[hubs] = before | fresh
    visited[hubs] |= fresh
    _add_progress(state, fresh & ~before)


def _recorded(state: np.ndarray, words: int) -> bool:
    return state[STATE_DONE] == 0 and _u64(state, STATE_DISCOVERED)[0] != 0 and words > 0


def msbfs_record_targets_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_record_targets``: the new level where ``next`` has a target's lane bit.

    Args:
        arrays: ``offsets`` (length only), ``next``, ``targets`` (read),
            ``target_levels`` (int32 ``[lane * K + t]``, updated) and ``state`` (read).
        scalars: The derived ``n1``, ``vw``, ``k`` and ``lk``.
    """
    state, targets, out = arrays["state"], arrays["targets"], arrays["target_levels"]
    n, words = _geometry(scalars)
    if not _recorded(state, words) or not targets.size:
        return
    valid = np.flatnonzero((targets >= 0) & (targets < n))
    rows = arrays["next"].reshape(n, words)[targets[valid]]
    hit_target, hit_lane = np.nonzero(_bits(rows))
    at = hit_lane.astype(np.int64) * targets.size + valid[hit_target]
    out[at[at < out.size]] = state[STATE_LEVEL] + 1


def msbfs_record_levels_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_record_levels``: the new level at every (lane, vertex) bit of ``next``.

    Args:
        arrays: ``offsets`` (length only), ``next`` (read), ``levels`` (int32
            ``[lane * V + v]``, updated) and ``state`` (read).
        scalars: The derived ``n1``, ``vw`` and ``lv``.
    """
    state, levels = arrays["state"], arrays["levels"]
    n, words = _geometry(scalars)
    if not _recorded(state, words):
        return
    following = arrays["next"].reshape(n, words)
    vertices = np.flatnonzero((following != 0).any(axis=1))
    hit_vertex, hit_lane = np.nonzero(_bits(following[vertices]))
    at = hit_lane.astype(np.int64) * n + vertices[hit_vertex]
    levels[at[at < levels.size]] = state[STATE_LEVEL] + 1


def msbfs_advance_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_advance``: close the level; done when nothing was found or at max_level.

    Args:
        arrays: ``state`` (updated).
        scalars: None.
    """
    state = arrays["state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_LEVELS_RUN] += 1
    discovered = _u64(state, STATE_DISCOVERED)
    if discovered[0] == 0:
        state[STATE_DONE] = 1
        return
    _u64(state, STATE_REACHED)[0] += discovered[0]
    discovered[0] = 0
    state[STATE_LEVEL] += 1
    next_live = _u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS)
    _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:] = next_live
    next_live.fill(0)
    if state[STATE_LEVEL] >= state[STATE_MAX_LEVEL]:
        state[STATE_DONE] = 1


def msbfs_count_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_count``: vertices reached per lane, from ``visited``.

    Args:
        arrays: ``offsets``, ``sources`` (lengths only), ``visited`` (read) and
            ``counts`` (int32 per lane, arrives zeroed, written).
        scalars: The derived ``n1``, ``vw`` and ``lanes``.
    """
    counts = arrays["counts"]
    n, words = _geometry(scalars)
    if words == 0:
        return
    visited = arrays["visited"].reshape(n, words)
    per_lane = np.empty((words, 64), dtype=np.int64)
    for b in range(64):  # one bit at a time: no n x 64W boolean matrix
        per_lane[:, b] = ((visited >> np.uint64(b)) & np.uint64(1)).sum(axis=0)
    used = min(counts.size, MSBFS_LANES_PER_WORD * words)
    counts[:used] = per_lane.reshape(-1)[:used]


def msbfs_parents_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``msbfs_parents``: each entry's first in-neighbour one level closer, or -1.

    Rows are ``levels[row * V : (row + 1) * V]``, whole rows only; in-lists are walked
    in order and the first in-neighbour ``u`` with ``levels[row * V + u] == level - 1``
    is the parent. A source (level 0), an unreached vertex and an entry of a partial
    last row get -1.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``levels`` (read) and ``parents``
            (int32, same length as ``levels``, written).
        scalars: The derived ``n1`` and ``lv``.
    """
    levels, parents = arrays["levels"], arrays["parents"]
    n = int(scalars["n1"].item()) - 1
    if n <= 0:
        return
    offsets, indices = arrays["in_offsets"], arrays["in_indices"]
    parents.fill(-1)
    for row in range(levels.size // n):
        row_levels = levels[row * n : (row + 1) * n]
        children = np.flatnonzero(row_levels > 0)
        begins = offsets[children]
        counts = offsets[children + 1] - begins
        starts = np.cumsum(counts) - counts
        total = int(counts.sum())
        owner = np.repeat(np.arange(children.size), counts)
        positions = np.arange(total, dtype=np.int64) + np.repeat(begins - starts, counts)
        candidates = indices[positions]
        hits = np.flatnonzero(row_levels[candidates] == row_levels[children[owner]] - 1)
        if not hits.size:
            continue
        # Edges are grouped by child in list order: a child's first hit is its parent.
        first = hits[np.r_[True, owner[hits[1:]] != owner[hits[:-1]]]]
        parents[row * n + children[owner[first]]] = candidates[first]
