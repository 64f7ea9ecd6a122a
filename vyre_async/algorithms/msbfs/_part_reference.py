"""NumPy references of the partitioned multi-source BFS kernels: the device semantics.

What the CPU backend runs; each does what its CUDA C does to the same buffers, so a
traversal on CPU backends as a group's devices exchanges the same words the GPUs would.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._layout import MSBFS_MAX_WORDS, msbfs_hub_min_degree
from ._part_layout import (
    BOTTOM_UP,
    PART_STATS,
    PSTATE_ACTIVE,
    PSTATE_DIRECTION,
    PSTATE_DONE,
    PSTATE_LANES,
    PSTATE_LEVEL,
    PSTATE_LEVELS_RUN,
    PSTATE_LIVE,
    PSTATE_MAX_LEVEL,
    PSTATE_PENDING,
    PSTATE_WIDTH,
    PULL_BETA,
    PUSH_ALPHA,
    SECTOR_WORDS,
    STAT_DISCOVERED,
    STAT_FRONTIER,
    STAT_FRONTIER_EDGES,
    STAT_GAINED,
    STAT_UNEXPLORED_EDGES,
    TOP_DOWN,
    part_valid,
)

Arrays = Mapping[str, np.ndarray]
Scalars = Mapping[str, np.generic]
_ONE = np.uint64(1)


def _int(scalars: Scalars, name: str) -> int:
    return int(scalars[name].item())


def _active(state: np.ndarray) -> np.ndarray:
    """The state's active-lane words (a uint64 view)."""
    return state[PSTATE_ACTIVE : PSTATE_ACTIVE + 2 * MSBFS_MAX_WORDS].view(np.uint64)


def _live(state: np.ndarray) -> np.ndarray:
    """The state's live-lane words (a uint64 view)."""
    return state[PSTATE_LIVE : PSTATE_LIVE + 2 * MSBFS_MAX_WORDS].view(np.uint64)


def _geometry(arrays: Arrays, scalars: Scalars, local: str | None) -> tuple[bool, int, int]:
    """``(valid, nd, first)`` of the bindings, as ``part_valid`` judges them."""
    nd = _int(scalars, "n1") - 1
    words = _int(scalars, "words")
    lw = arrays[local].size if local is not None else nd * words
    valid = part_valid(
        nd,
        _int(scalars, "n_total"),
        _int(scalars, "parts"),
        _int(scalars, "part"),
        _int(scalars, "chunk"),
        words,
        lw,
        arrays["recv"].size,
    )
    return valid, nd, _int(scalars, "part") * _int(scalars, "chunk")


def _lane_bits(lanes: np.ndarray) -> np.ndarray:
    return np.left_shift(_ONE, (lanes & 63).astype(np.uint64))


def msbfs_part_init_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_init``: state, own visited and frontier, statistics."""
    valid, nd, first = _geometry(arrays, scalars, "visited")
    words, n_total = _int(scalars, "words"), _int(scalars, "n_total")
    used = min(_int(scalars, "lanes"), 64 * words) if valid else 0
    lane_ids = np.arange(used)
    sources = arrays["sources"][:used].astype(np.int64)
    ok = (sources >= 0) & (sources < n_total)
    active = np.zeros(MSBFS_MAX_WORDS, np.uint64)
    np.bitwise_or.at(active, lane_ids[ok] >> 6, _lane_bits(lane_ids[ok]))
    mine = ok & (sources >= first) & (sources < first + nd)
    offsets = arrays["offsets"]
    local = sources[mine] - first
    state, stats = arrays["state"], arrays["stats_out"]
    max_level = _int(scalars, "max_level")
    state[:PSTATE_ACTIVE] = 0
    state[PSTATE_MAX_LEVEL] = max_level
    state[PSTATE_DONE] = 1 if (not valid or not ok.any() or max_level <= 0) else 0
    state[PSTATE_WIDTH] = words if valid else 0
    state[PSTATE_LANES] = int(ok.sum())
    state[PSTATE_DIRECTION] = TOP_DOWN
    _active(state)[:] = active
    _live(state)[:] = active
    stats[STAT_GAINED : STAT_GAINED + MSBFS_MAX_WORDS] = 0
    stats[STAT_FRONTIER] = int(mine.sum())
    stats[STAT_FRONTIER_EDGES] = int((offsets[local + 1] - offsets[local]).sum())
    stats[STAT_UNEXPLORED_EDGES] = int(arrays["in_offsets"][nd]) if valid else 0
    stats[STAT_DISCOVERED] = 0
    if not valid:
        return
    vw = nd * words
    seeds = np.zeros(vw, np.uint64)
    lanes = lane_ids[mine]
    np.bitwise_or.at(seeds, local * words + (lanes >> 6), _lane_bits(lanes))
    arrays["visited"][:vw] = seeds
    arrays["recv"][first * words : first * words + vw] = seeds
    arrays["next"][:vw] = 0


def msbfs_part_init_levels_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_init_levels``: in the rows of lanes with a valid source, 0 at the
    lane's source vertex, else -1; other rows (never read back) are left as they are."""
    nd = _int(scalars, "n1") - 1
    part, chunk, lanes = _int(scalars, "part"), _int(scalars, "chunk"), _int(scalars, "lanes")
    first = part * chunk
    levels = arrays["levels"]
    if nd <= 0 or part < 0 or chunk < 1 or first + nd > _int(scalars, "n_total"):
        return
    if levels.size < lanes * nd:
        return
    view = levels[: lanes * nd].reshape(lanes, nd)
    active = _active(arrays["state"])
    lane_ids = np.arange(min(lanes, 64 * MSBFS_MAX_WORDS))
    on = ((active[lane_ids >> 6] >> (lane_ids & 63).astype(np.uint64)) & _ONE) != 0
    view[lane_ids[on]] = -1
    sources = arrays["sources"][: lane_ids.size].astype(np.int64) - first
    hit = on & (sources >= 0) & (sources < nd)
    view[lane_ids[hit], sources[hit]] = 0


def msbfs_part_direction_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_direction``: count the level (the lanes it gained on any device
    become the live ones), stop or pick the next direction."""
    state = arrays["state"]
    if state[PSTATE_DONE]:
        return
    parts, part = _int(scalars, "parts"), _int(scalars, "part")
    stats = arrays["stats"]
    if parts < 1 or not 0 <= part < parts or stats.size < parts * PART_STATS:
        state[PSTATE_DONE] = 1
        return
    rows = stats[: parts * PART_STATS].reshape(parts, PART_STATS).astype(np.uint64)
    rows[part] = arrays["stats_out"][:PART_STATS]
    if state[PSTATE_PENDING]:
        state[PSTATE_LEVEL] += 1
        state[PSTATE_LEVELS_RUN] += 1
        state[PSTATE_PENDING] = 0
        gained = np.bitwise_or.reduce(rows[:, STAT_GAINED:], axis=0)
        _live(state)[:] = gained & _active(state)
    frontier, edges, unexplored = (int(v) for v in rows[:, :STAT_DISCOVERED].sum(axis=0))
    if frontier == 0 or state[PSTATE_LEVEL] >= state[PSTATE_MAX_LEVEL]:
        state[PSTATE_DONE] = 1
        return
    mode = _int(scalars, "mode")
    direction = int(state[PSTATE_DIRECTION])
    if mode == 1:
        direction = TOP_DOWN
    elif mode == 2:
        direction = BOTTOM_UP
    elif direction == TOP_DOWN:
        sectors = -(-int(state[PSTATE_WIDTH]) // SECTOR_WORDS)
        direction = BOTTOM_UP if edges * PUSH_ALPHA > unexplored * sectors else TOP_DOWN
    else:
        direction = TOP_DOWN if frontier * PULL_BETA < _int(scalars, "n_total") else BOTTOM_UP
    state[PSTATE_DIRECTION] = direction
    state[PSTATE_PENDING] = 1


def msbfs_part_pack_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_pack``: a cleared outbox, or this device's frontier in the others'
    slots (its own slot, unread on a bottom-up level, left as it is)."""
    state = arrays["state"]
    valid, nd, first = _geometry(arrays, scalars, None)
    if state[PSTATE_DONE] or not valid:
        return
    arrays["stats_out"][:PART_STATS] = 0
    words, parts, part = _int(scalars, "words"), _int(scalars, "parts"), _int(scalars, "part")
    slot = _int(scalars, "chunk") * words
    send = arrays["send"]
    if state[PSTATE_DIRECTION] == TOP_DOWN:
        send[: parts * slot] = 0
        return
    own = arrays["recv"][first * words : first * words + nd * words]
    for e in range(parts):
        if e != part:
            send[e * slot : (e + 1) * slot] = 0
            send[e * slot : e * slot + nd * words] = own


def _hubs(offsets: np.ndarray, nd: int, words: int) -> np.ndarray:
    """Which of the ``nd`` vertices' lists are a hub's: ``msbfs_hub_min_degree(words)``
    edges or more (the ``*_hubs`` kernels walk those, cut into chunks over the grid)."""
    return np.diff(offsets[: nd + 1]) >= msbfs_hub_min_degree(words)


def _push(arrays: Arrays, scalars: Scalars, hubs: bool) -> None:
    """Or the frontier words of this device's hubs (or of its other vertices) into the
    outbox words of their out-neighbours."""
    state = arrays["state"]
    valid, nd, first = _geometry(arrays, scalars, None)
    if state[PSTATE_DONE] or state[PSTATE_DIRECTION] != TOP_DOWN or not valid:
        return
    words, n_total = _int(scalars, "words"), _int(scalars, "n_total")
    own = arrays["recv"][first * words : first * words + nd * words].reshape(nd, words)
    offsets, indices = arrays["offsets"], arrays["indices"]
    degree = np.diff(offsets[: nd + 1])
    rows = np.repeat(np.arange(nd), degree)
    targets = indices[offsets[0] : offsets[nd]].astype(np.int64)
    keep = (targets >= 0) & (targets < n_total) & (_hubs(offsets, nd, words)[rows] == hubs)
    rows, targets = rows[keep], targets[keep]
    send = arrays["send"]
    for w in range(words):
        bits = own[rows, w]
        hot = bits != 0
        np.bitwise_or.at(send, targets[hot] * words + w, bits[hot])


def msbfs_part_push_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_push``: frontier words of the vertices other than hubs, or-ed into
    their out-neighbours' outbox words."""
    _push(arrays, scalars, hubs=False)


def msbfs_part_push_hubs_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_push_hubs``: the hubs' frontier words, or-ed into their
    out-neighbours' outbox words."""
    _push(arrays, scalars, hubs=True)


def msbfs_part_merge_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_merge``: own and received discoveries, less the visited, stored
    in the next words that hold one (next is zero at a level's start)."""
    state = arrays["state"]
    valid, nd, _ = _geometry(arrays, scalars, "visited")
    if state[PSTATE_DONE] or state[PSTATE_DIRECTION] != TOP_DOWN or not valid:
        return
    words, parts, part = _int(scalars, "words"), _int(scalars, "parts"), _int(scalars, "part")
    slot = _int(scalars, "chunk") * words
    mine = nd * words
    found = arrays["send"][part * slot : part * slot + mine].copy()
    recv = arrays["recv"]
    for e in range(parts):
        if e != part:
            found |= recv[e * slot : e * slot + mine]
    active = np.tile(_active(state)[:words], nd)
    fresh = found & ~arrays["visited"][:mine] & active
    _store_found(arrays["next"][:mine], fresh)


def _store_found(nxt: np.ndarray, fresh: np.ndarray) -> None:
    """Store the words of ``fresh`` that hold a lane; leave the others (next is zero at
    every level's start, so there is nothing to clear)."""
    found = fresh != 0
    nxt[found] = fresh[found]


def _pull(arrays: Arrays, scalars: Scalars, hubs: bool) -> None:
    """The needed (live, unvisited) lanes of this device's hubs (or of its other
    vertices) found among their in-neighbours' frontier words: or-ed into next for
    hubs, stored otherwise where a lane was found."""
    state = arrays["state"]
    valid, nd, _ = _geometry(arrays, scalars, "visited")
    if state[PSTATE_DONE] or state[PSTATE_DIRECTION] != BOTTOM_UP or not valid:
        return
    words, n_total = _int(scalars, "words"), _int(scalars, "n_total")
    offsets, indices = arrays["in_offsets"], arrays["in_indices"]
    rows = np.repeat(np.arange(nd), np.diff(offsets[: nd + 1]))
    sources = indices[offsets[0] : offsets[nd]].astype(np.int64)
    keep = (sources >= 0) & (sources < n_total)
    rows, sources = rows[keep], sources[keep]
    recv = arrays["recv"]
    need = (np.tile(_live(state)[:words], nd) & ~arrays["visited"][: nd * words]).reshape(nd, words)
    hub = _hubs(offsets, nd, words)
    need[hub != hubs] = 0
    found = np.zeros((nd, words), np.uint64)
    for w in range(words):
        np.bitwise_or.at(found[:, w], rows, recv[sources * words + w])
    fresh = (found & need).reshape(-1)
    if hubs:
        arrays["next"][: nd * words] |= fresh
    else:
        _store_found(arrays["next"][: nd * words], fresh)


def msbfs_part_pull_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_pull``: the needed lanes of the vertices other than hubs, found
    among their in-neighbours' frontier words, stored in the next words that found one
    (next is zero at a level's start)."""
    _pull(arrays, scalars, hubs=False)


def msbfs_part_pull_hubs_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_pull_hubs``: the hubs' needed lanes found among their
    in-neighbours' frontier words, or-ed into next."""
    _pull(arrays, scalars, hubs=True)


def msbfs_part_record_levels_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_record_levels``: ``level + 1`` for each (lane, vertex) discovered."""
    state = arrays["state"]
    nd, words = _int(scalars, "n1") - 1, _int(scalars, "words")
    levels, nxt = arrays["levels"], arrays["next"]
    if state[PSTATE_DONE] or nd <= 0 or not 1 <= words <= MSBFS_MAX_WORDS:
        return
    if nxt.size < nd * words or levels.size < 64 * words * nd:
        return
    bits = np.unpackbits(nxt[: nd * words].view(np.uint8), bitorder="little")
    vertex, lane = np.nonzero(bits.reshape(nd, 64 * words))
    levels[lane * nd + vertex] = int(state[PSTATE_LEVEL]) + 1


def msbfs_part_advance_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_advance``: discoveries become visited and the own frontier;
    the new frontier's statistics are added to ``stats_out``, its lanes or-ed in."""
    state = arrays["state"]
    valid, nd, first = _geometry(arrays, scalars, "visited")
    if state[PSTATE_DONE] or not valid:
        return
    words = _int(scalars, "words")
    mine = nd * words
    bits = arrays["next"][:mine].copy()
    seen = arrays["visited"][:mine] | bits
    arrays["next"][:mine] = 0
    arrays["visited"][:mine] = seen
    arrays["recv"][first * words : first * words + mine] = bits
    active = np.tile(_active(state)[:words], nd)
    fresh = (bits.reshape(nd, words) != 0).any(axis=1)
    open_ = ((seen & active) != active).reshape(nd, words).any(axis=1)
    out_degree = np.diff(arrays["offsets"][: nd + 1])
    in_degree = np.diff(arrays["in_offsets"][: nd + 1])
    stats = arrays["stats_out"]
    popcount = np.unpackbits(bits.view(np.uint8)).sum(dtype=np.int64) if mine else 0
    stats[STAT_FRONTIER] += np.uint64(int(fresh.sum()))
    stats[STAT_FRONTIER_EDGES] += np.uint64(int(out_degree[fresh].sum()))
    stats[STAT_UNEXPLORED_EDGES] += np.uint64(int(in_degree[open_].sum()))
    stats[STAT_DISCOVERED] += np.uint64(int(popcount))
    if mine:
        stats[STAT_GAINED : STAT_GAINED + words] |= np.bitwise_or.reduce(
            bits.reshape(nd, words), axis=0
        )


def msbfs_part_count_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``msbfs_part_count``: per lane, this device's vertices it reached."""
    nd, words, lanes = _int(scalars, "n1") - 1, _int(scalars, "words"), _int(scalars, "lanes")
    visited = arrays["visited"]
    if nd <= 0 or not 1 <= words <= MSBFS_MAX_WORDS or visited.size < nd * words:
        return
    bits = np.unpackbits(visited[: nd * words].view(np.uint8), bitorder="little")
    per_lane = bits.reshape(nd, 64 * words).sum(axis=0, dtype=np.int64)
    take = min(lanes, per_lane.size)
    arrays["counts"][:take] += per_lane[:take].astype(np.int32)
