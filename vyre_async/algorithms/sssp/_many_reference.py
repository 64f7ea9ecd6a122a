"""NumPy references of the many-source kernels: the device semantics, one step at a time.

As for one source (see ``_reference``), a reference step applies the smallest
candidate per (vertex, lane) after relaxing every edge of the step, where the device
relaxes them concurrently; the final distances are the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._many_layout import (
    MANY_CHUNK_EDGES,
    MANY_STATE_ARRIVED,
    MANY_STATE_DELTA,
    MANY_STATE_DONE,
    MANY_STATE_FAR_LO,
    MANY_STATE_FAR_MIN,
    MANY_STATE_ITEMS,
    MANY_STATE_LANES,
    MANY_STATE_MAX_DISTANCE,
    MANY_STATE_MODE,
    MANY_STATE_NEXT_ITEMS,
    MANY_STATE_OVERFLOW,
    MANY_STATE_RELAX_ROUNDS,
    MANY_STATE_RELAXED,
    MANY_STATE_ROUND,
    MANY_STATE_SPLIT_ROUNDS,
    MANY_STATE_THRESHOLD,
    MANY_STATE_WIDTH,
    MODE_RELAX,
    MODE_SPLIT,
    many_lanes,
)
from ._reference import add_u64, chunk_entries, get_float, list_edges, set_float

_INF = np.float32(np.inf)
_LOW = np.uint64(0xFFFFFFFF)


def tagged(tag: int, lanes: int | np.ndarray = 0) -> np.ndarray:
    """Lane masks ``tag << 32 | lanes`` (uint64), the tag taken as 32 unsigned bits."""
    high = np.left_shift(np.uint64(tag & 0xFFFFFFFF), np.uint64(32))
    masks: np.ndarray = high | np.asarray(lanes, dtype=np.uint64)
    return masks


def _tags(masks: np.ndarray) -> np.ndarray:
    tags: np.ndarray = np.right_shift(masks, np.uint64(32))
    return tags


def _geometry(scalars: Mapping[str, np.generic]) -> tuple[int, int]:
    n = int(scalars["n1"].item()) - 1
    return n, many_lanes(n, int(scalars["vw"].item()))


def sssp_many_init_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_many_init``: every distance +inf, masks tagged -1 and empty, none far.

    Args:
        arrays: ``dist``, ``masks_a``, ``masks_b`` and ``far`` (written).
        scalars: The derived ``n`` and ``vw``.
    """
    arrays["dist"].fill(_INF)
    arrays["masks_a"].fill(tagged(-1))
    arrays["masks_b"].fill(tagged(-1))
    arrays["far"].fill(0)


def sssp_many_seed_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_many_seed``: the sources at 0 in their lanes, listed for step 0.

    Args:
        arrays: ``offsets``, ``sources`` (read); ``dist``, ``masks_a``, ``items_a`` and
            ``state`` (updated).
        scalars: ``delta``, ``max_distance`` and the derived ``n1``, ``vw``,
            ``lanes_bound``, ``capacity``.
    """
    offsets, sources, state = arrays["offsets"], arrays["sources"], arrays["state"]
    dist, masks = arrays["dist"], arrays["masks_a"]
    n, width = _geometry(scalars)
    if width != int(scalars["lanes_bound"].item()):
        width = 0
    state.fill(0)
    listed: list[int] = []
    lanes = 0
    for lane in range(width):
        source = int(sources[lane])
        if not 0 <= source < n:
            continue
        lanes += 1
        dist[source * width + lane] = 0
        seen = _tags(masks[source : source + 1])[0] == 0
        base = masks[source] if seen else tagged(0)
        masks[source] = base | np.uint64(1 << lane)
        if not seen:
            listed.append(source)
    items = chunk_entries(offsets, np.asarray(listed, dtype=np.int64), MANY_CHUNK_EDGES)
    overflow = items.size > arrays["items_a"].size
    if not overflow:
        arrays["items_a"][: items.size] = items
    state[MANY_STATE_WIDTH] = width
    state[MANY_STATE_LANES] = lanes
    state[MANY_STATE_MODE] = MODE_RELAX
    set_float(state, MANY_STATE_THRESHOLD, scalars["delta"])
    set_float(state, MANY_STATE_DELTA, scalars["delta"])
    set_float(state, MANY_STATE_MAX_DISTANCE, scalars["max_distance"])
    set_float(state, MANY_STATE_FAR_MIN, _INF)
    state[MANY_STATE_ITEMS] = 0 if overflow else items.size
    state[MANY_STATE_OVERFLOW] = int(overflow)
    state[MANY_STATE_DONE] = int(width == 0 or items.size == 0 or overflow)


def _list(
    arrays: Mapping[str, np.ndarray],
    vertices: np.ndarray,
    lane_bits: np.ndarray,
    next_round: int,
    odd: bool,
) -> None:
    """OR ``lane_bits`` into each vertex's mask for ``next_round``; list the newly tagged."""
    masks = arrays["masks_a" if odd else "masks_b"]
    state = arrays["state"]
    if vertices.size == 0:
        return
    old = masks[vertices]
    same = _tags(old) == np.uint64(next_round & 0xFFFFFFFF)
    masks[vertices] = np.where(same, old, tagged(next_round)) | lane_bits.astype(np.uint64)
    fresh = vertices[~same]
    items = chunk_entries(arrays["offsets"], fresh.astype(np.int64), MANY_CHUNK_EDGES)
    target = arrays["items_a" if odd else "items_b"]
    at = int(state[MANY_STATE_NEXT_ITEMS])
    room = max(0, min(items.size, target.size - at))
    target[at : at + room] = items[:room]
    if room < items.size:
        state[MANY_STATE_OVERFLOW] = 1
    state[MANY_STATE_NEXT_ITEMS] = at + items.size


def _lane_bits(vertices: np.ndarray, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique vertices and the OR of ``1 << lane`` over each one's pairs."""
    unique, inverse = np.unique(vertices, return_inverse=True)
    bits = np.zeros(unique.size, dtype=np.uint64)
    np.bitwise_or.at(bits, inverse, np.left_shift(np.uint64(1), lanes.astype(np.uint64)))
    return unique, bits


def sssp_many_step_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_many_step``: one relax or split step for every lane, then the advance.

    Args:
        arrays: ``offsets``, ``indices``, ``weights`` (read); ``dist``, ``masks_a``,
            ``masks_b``, ``far``, ``items_a``, ``items_b`` and ``state`` (updated).
        scalars: The derived ``n1``, ``vw`` and ``capacity``.
    """
    state = arrays["state"]
    _, lanes = _geometry(scalars)
    width = int(state[MANY_STATE_WIDTH])
    if state[MANY_STATE_DONE] != 0 or width == 0 or lanes != width:
        return
    offsets, indices, weights = arrays["offsets"], arrays["indices"], arrays["weights"]
    dist, far = arrays["dist"], arrays["far"]
    step = int(state[MANY_STATE_ROUND])
    odd = bool(step & 1)
    threshold = get_float(state, MANY_STATE_THRESHOLD)
    far_min = np.inf
    if state[MANY_STATE_MODE] == MODE_RELAX:
        count = min(int(state[MANY_STATE_ITEMS]), int(scalars["capacity"].item()))
        items = arrays["items_b" if odd else "items_a"][:count]
        owners, positions = list_edges(offsets, np.empty(0, np.int64), items, MANY_CHUNK_EDGES)
        masks = arrays["masks_b" if odd else "masks_a"][owners]
        current = _tags(masks) == np.uint64(step & 0xFFFFFFFF)
        bits = (masks & _LOW)[:, None] >> np.arange(width, dtype=np.uint64)
        edge, lane = np.nonzero(((bits & np.uint64(1)) != 0) & current[:, None])
        sources = owners[edge] * width + lane
        targets = indices[positions[edge]].astype(np.int64) * width + lane
        candidates = dist[sources] + weights[positions[edge]]
        inside = candidates <= get_float(state, MANY_STATE_MAX_DISTANCE)
        add_u64(state, MANY_STATE_RELAXED, int(inside.sum()))
        targets, candidates = targets[inside], candidates[inside]
        before = dist[targets]
        np.minimum.at(dist, targets, candidates)
        improved = np.unique(targets[dist[targets] < before])
        new = dist[improved]
        near, far_pairs = improved[new < threshold], improved[new >= threshold]
        if far_pairs.size:
            far_min = float(new[new >= threshold].min())
            vertices, far_bits = _lane_bits(far_pairs // width, far_pairs % width)
            far[vertices] |= far_bits.astype(np.uint32)
        vertices, near_bits = _lane_bits(near // width, near % width)
        _list(arrays, vertices, near_bits, step + 1, odd)
    else:
        flagged = np.flatnonzero(far)
        bits = far[flagged][:, None] >> np.arange(width, dtype=np.uint32)
        row, lane = np.nonzero((bits & np.uint32(1)) != 0)
        vertices = flagged[row]
        d = dist[vertices * width + lane]
        keep = d >= threshold
        near = (d < threshold) & (d >= get_float(state, MANY_STATE_FAR_LO))
        far[flagged] = 0
        if keep.any():
            far_min = float(d[keep].min())
            kept, kept_bits = _lane_bits(vertices[keep], lane[keep])
            far[kept] = kept_bits.astype(np.uint32)
        moved, moved_bits = _lane_bits(vertices[near], lane[near])
        _list(arrays, moved, moved_bits, step + 1, odd)
    if far_min < get_float(state, MANY_STATE_FAR_MIN):
        set_float(state, MANY_STATE_FAR_MIN, far_min)
    _advance(state)


def _advance(state: np.ndarray) -> None:
    """What the last block of a step does (``advance`` in ``sssp_many_step.cu``)."""
    relax = state[MANY_STATE_MODE] == MODE_RELAX
    state[MANY_STATE_RELAX_ROUNDS if relax else MANY_STATE_SPLIT_ROUNDS] += 1
    items = int(state[MANY_STATE_NEXT_ITEMS])
    state[MANY_STATE_ITEMS] = items
    state[MANY_STATE_NEXT_ITEMS] = 0
    state[MANY_STATE_ROUND] += 1
    state[MANY_STATE_ARRIVED] = 0
    far_min = get_float(state, MANY_STATE_FAR_MIN)
    if items > 0:
        state[MANY_STATE_MODE] = MODE_RELAX
    elif np.isinf(far_min):
        state[MANY_STATE_DONE] = 1
    else:
        threshold = get_float(state, MANY_STATE_THRESHOLD)
        low = max(threshold, far_min)
        with np.errstate(over="ignore"):
            following = np.float32(low + get_float(state, MANY_STATE_DELTA))
        if not following > low:
            following = np.nextafter(low, _INF)
        set_float(state, MANY_STATE_FAR_LO, threshold)
        set_float(state, MANY_STATE_THRESHOLD, following)
        set_float(state, MANY_STATE_FAR_MIN, _INF)
        state[MANY_STATE_MODE] = MODE_SPLIT


def sssp_many_count_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_many_count``: per lane, the vertices at most ``max_distance`` away.

    Args:
        arrays: ``offsets`` (length only), ``dist`` (read); ``counts`` (written).
        scalars: ``max_distance`` and the derived ``n1``, ``vw``.
    """
    n, lanes = _geometry(scalars)
    if lanes:
        within = arrays["dist"].reshape(n, lanes) <= scalars["max_distance"]
        arrays["counts"][:lanes] = within.sum(axis=0)


def sssp_many_rows_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_many_rows``: ``rows[lane * n + v] = dist[v * lanes + lane]``.

    Args:
        arrays: ``offsets`` (length only), ``dist`` (read); ``rows`` (written).
        scalars: The derived ``n1`` and ``vw``.
    """
    n, lanes = _geometry(scalars)
    if lanes:
        arrays["rows"][:] = arrays["dist"].reshape(n, lanes).T.reshape(-1)
