"""NumPy references of the shortest-path kernels: the device semantics, one step at a time.

A device step relaxes edges concurrently and in any order; a reference step relaxes
them all against the distances it found, then applies the smallest candidate per
vertex. Both leave the same set of vertices scheduled up to the order of the lists
(a vertex is scheduled or marked far from its final distance here, from every
improvement on the device), so they can take different numbers of steps; the final
distances are the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._layout import (
    CHUNK_EDGES,
    MODE_HEAVY,
    MODE_LIGHT,
    STATE_ARRIVED,
    STATE_CHUNKS,
    STATE_DELTA,
    STATE_DONE,
    STATE_FAR_LO,
    STATE_FAR_MIN,
    STATE_HEAVY_EDGES,
    STATE_HEAVY_FILL,
    STATE_HEAVY_ROUNDS,
    STATE_HEAVY_START,
    STATE_LIGHT_ROUNDS,
    STATE_MAX_DISTANCE,
    STATE_MEMBERS_FILL,
    STATE_MEMBERS_START,
    STATE_MODE,
    STATE_NARROW,
    STATE_NEXT_CHUNKS,
    STATE_NEXT_NARROW,
    STATE_OVERFLOW,
    STATE_REACHED,
    STATE_READ_HEAVY_HI,
    STATE_READ_HEAVY_LO,
    STATE_READ_MEMBERS_HI,
    STATE_READ_MEMBERS_LO,
    STATE_RELAXED,
    STATE_ROUND,
    STATE_SCANNED,
    STATE_SOURCE,
    STATE_SWEEP,
    STATE_THRESHOLD,
    WIDE_MIN_DEGREE,
)

_INF = np.float32(np.inf)


def get_float(state: np.ndarray, index: int) -> np.float32:
    """The float32 whose bits state word ``index`` holds."""
    return np.float32(state[index : index + 1].view(np.float32)[0])


def set_float(state: np.ndarray, index: int, value: float | np.generic) -> None:
    """Store ``value`` as float32 bits in state word ``index``."""
    state[index : index + 1].view(np.float32)[0] = np.float32(value)


def add_u64(state: np.ndarray, index: int, value: int) -> None:
    """Add to the uint64 held by state words ``index, index + 1`` (low word first)."""
    state[index : index + 2].view(np.uint64)[0] += np.uint64(value)


def chunk_entries(offsets: np.ndarray, vertices: np.ndarray, chunk_edges: int) -> np.ndarray:
    """The chunks ``vertex << 32 | c`` of ``vertices``' out-lists, ``chunk_edges`` edges each."""
    degrees = offsets[vertices + 1] - offsets[vertices]
    counts = -(-degrees // chunk_edges)
    owners = np.repeat(vertices.astype(np.int64), counts)
    first = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(first, counts)
    entries: np.ndarray = np.left_shift(owners, 32) | within
    return entries


def list_edges(
    offsets: np.ndarray,
    vertices: np.ndarray,
    chunks: np.ndarray,
    chunk_edges: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Owner and position of every edge of whole ``vertices`` and of ``chunks``."""
    chunk_owner = (chunks >> 32).astype(np.int64)
    begins = np.concatenate(
        [offsets[vertices], offsets[chunk_owner] + (chunks & 0xFFFFFFFF) * chunk_edges]
    )
    chunk_ends = np.minimum(offsets[chunk_owner + 1], begins[vertices.size :] + chunk_edges)
    ends = np.concatenate([offsets[vertices + 1], chunk_ends])
    owners = np.concatenate([vertices.astype(np.int64), chunk_owner])
    counts = ends - begins
    first = np.cumsum(counts) - counts
    positions = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(begins - first, counts)
    return np.repeat(owners, counts), positions


def far_flags(words: np.ndarray, n: int) -> np.ndarray:
    """The far flags of ``n`` vertices (one byte each) inside their ``uint32`` words."""
    return words.view(np.uint8)[:n]


def _span(
    values: np.ndarray, lo: int | np.integer, hi: int | np.integer, capacity: int
) -> np.ndarray:
    """``values[lo:hi]``, ``hi`` clamped to ``capacity`` as the device clamps it."""
    return values[int(lo) : min(int(hi), capacity)]


def _append(target: np.ndarray, state: np.ndarray, fill: int, values: np.ndarray) -> None:
    """Append ``values`` to list ``target`` at ``state[fill]``, flagging an overflow."""
    at = int(state[fill])
    room = max(0, min(values.size, target.size - at))
    target[at : at + room] = values[:room]
    if room < values.size:
        state[STATE_OVERFLOW] = 1
    state[fill] = at + values.size


def sssp_init_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_init``: the source at 0, all else +inf, the source scheduled for step 0.

    Args:
        arrays: ``offsets``, ``light_offsets`` (read); ``dist``, ``stamp``, ``far``, ``queue_a``,
            ``chunks_a``, ``members``, ``heavy`` and ``state`` (written).
        scalars: ``source``, ``delta``, ``max_distance``, ``heavy_edges`` (nonzero: some
            edge is not in the light graph) and the derived ``n``, ``n1``, ``far_words``,
            ``chunk_capacity``.
    """
    offsets, state = arrays["offsets"], arrays["state"]
    n, n1 = int(scalars["n"].item()), int(scalars["n1"].item())
    source = int(scalars["source"].item())
    valid = 0 <= source < n and n1 == n + 1 and 4 * arrays["far"].size >= n
    arrays["dist"].fill(_INF)
    arrays["stamp"].fill(-1)
    arrays["far"].fill(0)
    bound = n1 == n + 1 and 4 * arrays["far"].size >= n
    state.fill(0)
    light_offsets = arrays["light_offsets"]
    degree = int(offsets[source + 1] - offsets[source]) if valid else 0
    light = int(light_offsets[source + 1] - light_offsets[source]) if valid else 0
    narrow = 0 < light < WIDE_MIN_DEGREE
    member = 0 < degree < WIDE_MIN_DEGREE
    single = np.array([source])
    light_chunks = (
        chunk_entries(light_offsets, single, CHUNK_EDGES)
        if light >= WIDE_MIN_DEGREE
        else np.empty(0, np.int64)
    )
    heavy_chunks = (
        chunk_entries(offsets, single, CHUNK_EDGES)
        if degree >= WIDE_MIN_DEGREE
        else np.empty(0, np.int64)
    )
    capacity = arrays["chunks_a"].size
    overflow = light_chunks.size > capacity or heavy_chunks.size > capacity
    if overflow:
        light_chunks, heavy_chunks = light_chunks[:0], heavy_chunks[:0]
    if valid:
        arrays["dist"][source] = 0
        arrays["stamp"][source] = 0
    arrays["chunks_a"][: light_chunks.size] = light_chunks
    arrays["heavy"][: heavy_chunks.size] = heavy_chunks
    if narrow:
        arrays["queue_a"][0] = source
    if member:
        arrays["members"][0] = source
    state[STATE_DONE] = int(degree == 0 or overflow)
    state[STATE_MODE] = MODE_LIGHT
    state[STATE_NARROW] = int(narrow)
    state[STATE_CHUNKS] = light_chunks.size
    state[STATE_MEMBERS_FILL] = int(member)
    state[STATE_HEAVY_FILL] = heavy_chunks.size
    set_float(state, STATE_THRESHOLD, scalars["delta"])
    set_float(state, STATE_DELTA, scalars["delta"])
    set_float(state, STATE_MAX_DISTANCE, scalars["max_distance"])
    set_float(state, STATE_FAR_MIN, _INF)
    state[STATE_REACHED] = int(valid)
    state[STATE_SOURCE] = source
    state[STATE_HEAVY_EDGES] = int(scalars["heavy_edges"].item() != 0)
    state[STATE_OVERFLOW] = int(overflow) or (0 if bound else 2)


class _Schedule:
    """What one reference step scheduled, appended to the lists as the device does."""

    def __init__(self, arrays: Mapping[str, np.ndarray], next_round: int, odd: bool) -> None:
        self.arrays = arrays
        self.next_round = next_round
        self.queue = arrays["queue_a" if odd else "queue_b"]
        self.chunks = arrays["chunks_a" if odd else "chunks_b"]

    def add(self, vertices: np.ndarray) -> None:
        arrays = self.arrays
        stamp, offsets, state = arrays["stamp"], arrays["offsets"], arrays["state"]
        light_offsets = arrays["light_offsets"]
        vertices = vertices[stamp[vertices] != self.next_round]
        first = vertices[stamp[vertices] == -1]
        stamp[vertices] = self.next_round
        light = light_offsets[vertices + 1] - light_offsets[vertices]
        narrow = vertices[(light > 0) & (light < WIDE_MIN_DEGREE)]
        _append(self.queue, state, STATE_NEXT_NARROW, narrow)
        _append(
            self.chunks,
            state,
            STATE_NEXT_CHUNKS,
            chunk_entries(light_offsets, vertices[light >= WIDE_MIN_DEGREE], CHUNK_EDGES),
        )
        degree = offsets[first + 1] - offsets[first]
        members = first[(degree > 0) & (degree < WIDE_MIN_DEGREE)]
        _append(arrays["members"], state, STATE_MEMBERS_FILL, members)
        _append(
            arrays["heavy"],
            state,
            STATE_HEAVY_FILL,
            chunk_entries(offsets, first[degree >= WIDE_MIN_DEGREE], CHUNK_EDGES),
        )


def sssp_step_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_step``: one light or heavy step, then the advance of the state.

    Args:
        arrays: ``offsets``, ``indices``, ``weights`` and the light graph's
            ``light_offsets``, ``light_indices``, ``light_weights`` (read); ``dist``, ``stamp``,
            ``far``, ``queue_a``/``queue_b``, ``chunks_a``/``chunks_b``, ``members``,
            ``heavy`` and ``state`` (updated).
        scalars: The derived ``n``, ``n1`` and ``chunk_capacity``.
    """
    state = arrays["state"]
    n, n1 = int(scalars["n"].item()), int(scalars["n1"].item())
    if state[STATE_DONE] != 0 or n1 != n + 1 or 4 * arrays["far"].size < n:
        return
    offsets, indices, weights = arrays["offsets"], arrays["indices"], arrays["weights"]
    dist, far = arrays["dist"], far_flags(arrays["far"], n)
    capacity = int(scalars["chunk_capacity"].item())
    mode = int(state[STATE_MODE])
    step = int(state[STATE_ROUND])
    odd = bool(step & 1)
    threshold = get_float(state, STATE_THRESHOLD)
    delta = get_float(state, STATE_DELTA)
    schedule = _Schedule(arrays, step + 1, odd)
    if mode == MODE_LIGHT:
        graph = (arrays["light_offsets"], arrays["light_indices"], arrays["light_weights"])
        narrow = _span(arrays["queue_b" if odd else "queue_a"], 0, state[STATE_NARROW], n)
        chunks = _span(arrays["chunks_b" if odd else "chunks_a"], 0, state[STATE_CHUNKS], capacity)
    elif state[STATE_HEAVY_EDGES]:
        graph = (offsets, indices, weights)
        lo, hi = state[STATE_READ_MEMBERS_LO], state[STATE_READ_MEMBERS_HI]
        narrow = _span(arrays["members"], lo, hi, n)
        chunks = _span(
            arrays["heavy"], state[STATE_READ_HEAVY_LO], state[STATE_READ_HEAVY_HI], capacity
        )
    else:
        graph = (offsets, indices, weights)
        narrow = chunks = np.empty(0, np.int64)
    owners, positions = list_edges(graph[0], narrow.astype(np.int64), chunks, CHUNK_EDGES)
    w = graph[2][positions]
    keep = w >= delta if mode == MODE_HEAVY else np.ones(w.size, bool)
    add_u64(state, STATE_SCANNED, positions.size)
    add_u64(state, STATE_RELAXED, int(keep.sum()))
    owners, w, targets = owners[keep], w[keep], graph[1][positions[keep]]
    candidates = dist[owners] + w
    inside = candidates <= get_float(state, STATE_MAX_DISTANCE)
    targets, candidates = targets[inside], candidates[inside]
    before = dist[targets]
    np.minimum.at(dist, targets, candidates)
    improved = dist[targets] < before
    vertices, where = np.unique(targets[improved], return_index=True)
    state[STATE_REACHED] += int(np.isinf(before[improved][where]).sum())
    new = dist[vertices]
    near = new < threshold
    schedule.add(vertices[near])
    far[vertices[~near]] = 1
    far_min = float(new[~near].min()) if (~near).any() else np.inf
    if mode == MODE_HEAVY and state[STATE_SWEEP]:
        flagged = np.flatnonzero(far)
        d = dist[flagged]
        far[flagged[d < threshold]] = 0
        schedule.add(flagged[(d >= get_float(state, STATE_FAR_LO)) & (d < threshold)])
        rest = d[d >= threshold]
        if rest.size:
            far_min = min(far_min, float(rest.min()))
    if far_min < get_float(state, STATE_FAR_MIN):
        set_float(state, STATE_FAR_MIN, far_min)
    advance_reference(state)


def advance_reference(state: np.ndarray) -> None:
    """What the last block of a step does (see ``advance`` in ``sssp_step.cu``)."""
    mode = int(state[STATE_MODE])
    state[STATE_LIGHT_ROUNDS if mode == MODE_LIGHT else STATE_HEAVY_ROUNDS] += 1
    narrow, chunks = int(state[STATE_NEXT_NARROW]), int(state[STATE_NEXT_CHUNKS])
    state[STATE_NARROW], state[STATE_CHUNKS] = narrow, chunks
    state[STATE_NEXT_NARROW] = state[STATE_NEXT_CHUNKS] = 0
    state[STATE_ROUND] += 1
    state[STATE_ARRIVED] = 0
    if narrow > 0 or chunks > 0:
        state[STATE_MODE] = MODE_LIGHT
        return
    far_min = get_float(state, STATE_FAR_MIN)
    members_start, members_fill = int(state[STATE_MEMBERS_START]), int(state[STATE_MEMBERS_FILL])
    heavy_start, heavy_fill = int(state[STATE_HEAVY_START]), int(state[STATE_HEAVY_FILL])
    members = members_fill > members_start or heavy_fill > heavy_start
    if not members and np.isinf(far_min):
        state[STATE_DONE] = 1
        return
    state[STATE_READ_MEMBERS_LO], state[STATE_READ_MEMBERS_HI] = members_start, members_fill
    state[STATE_READ_HEAVY_LO], state[STATE_READ_HEAVY_HI] = heavy_start, heavy_fill
    state[STATE_MEMBERS_START], state[STATE_HEAVY_START] = members_fill, heavy_fill
    threshold = get_float(state, STATE_THRESHOLD)
    low = threshold if members else max(threshold, far_min)
    with np.errstate(over="ignore"):
        following = np.float32(low + get_float(state, STATE_DELTA))
    if not following > low:
        following = np.nextafter(low, _INF)
    set_float(state, STATE_FAR_LO, threshold)
    set_float(state, STATE_THRESHOLD, following)
    sweep = far_min < following
    state[STATE_SWEEP] = int(sweep)
    if sweep:
        set_float(state, STATE_FAR_MIN, _INF)
    state[STATE_MODE] = MODE_HEAVY


def sssp_graph_stats_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_graph_stats``: the float64 sum of the weights and the largest out-degree.

    Args:
        arrays: ``offsets``, ``weights`` (read); ``weight_sum`` and ``max_degree`` (written).
        scalars: The derived ``n1`` and ``e``.
    """
    offsets = arrays["offsets"]
    arrays["weight_sum"][0] = np.sum(arrays["weights"], dtype=np.float64)
    arrays["max_degree"][0] = int(np.diff(offsets).max()) if offsets.size > 1 else 0


def sssp_light_count_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_light_count``: ``counts[v]`` = v's out-edges lighter than ``delta``.

    Args:
        arrays: ``offsets``, ``weights`` (read); ``counts`` (V + 1, written; the last 0).
        scalars: ``delta`` and the derived ``n1``.
    """
    offsets = arrays["offsets"]
    rows = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    light = arrays["weights"] < scalars["delta"]
    arrays["counts"][: offsets.size - 1] = np.bincount(rows[light], minlength=offsets.size - 1)


def sssp_light_fill_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``sssp_light_fill``: the edges lighter than ``delta``, in list order.

    Args:
        arrays: ``offsets``, ``indices``, ``weights``, ``light_offsets`` (read);
            ``light_indices``, ``light_weights`` (written up to their length).
        scalars: ``delta`` and the derived ``n1``, ``light_edges``.
    """
    light = arrays["weights"] < scalars["delta"]
    size = min(int(light.sum()), arrays["light_indices"].size)
    arrays["light_indices"][:size] = arrays["indices"][light][:size]
    arrays["light_weights"][:size] = arrays["weights"][light][:size]
