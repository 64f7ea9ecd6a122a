"""Running multi-source traversals on a graph split over the devices of a group.

Every device runs its kernels over its own vertices (see :mod:`._part_kernels`), and
between the two halves of a level each device's slot of ``send`` is copied into the
others' ``recv`` device to device (:class:`~vyre_async.backends.DeviceLinks`). The host
enqueues several levels on every device, copies included, then waits once: it reads
device 0's state, which every device keeps the same; batches double, as on one device.
Where a slot is so wide that a batch is one level, the host reads the state once the
level's direction step has run and only then enqueues the level's copies and second
half, so the level that finds the end copies nothing. Level rows come back in a host
array made as the traversal starts, its pages touched meanwhile (:mod:`._host_rows`);
a lone row's range on each device is read straight into its slice.

A traversal's buffers on every device make a :class:`PartedScratch` of one shape (lane
words, readback), which a caller may keep for the next traversal of that shape.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import Literal

import anyio
import numpy as np

from ..._groups import sole_vyre_error
from ...backends import Backend, DeviceLinks, PreparedSequence, ReadRange, ResidentBuffer
from ...backends import SequenceStep as Step
from ...errors import UnsupportedFeatureError, ValidationError
from ...graphs import VertexRanges
from ...streams import Completion, PendingDispatch
from .._kind import DEFAULT_QUERY_BUDGET, Partition
from ._host_rows import touch_pages
from ._layout import MSBFS_LANES_PER_WORD, MSBFS_MAX_WORDS, MSBFS_UNLIMITED
from ._part_kernels import (
    msbfs_part_advance,
    msbfs_part_count,
    msbfs_part_direction,
    msbfs_part_init,
    msbfs_part_init_levels,
    msbfs_part_merge,
    msbfs_part_pack,
    msbfs_part_pull,
    msbfs_part_pull_hubs,
    msbfs_part_push,
    msbfs_part_push_hubs,
    msbfs_part_record_levels,
)
from ._part_layout import (
    DIRECTION_MODES,
    PART_STATS,
    PSTATE_DONE,
    PSTATE_LEVELS_RUN,
    PSTATE_WORDS,
)

#: What a partitioned traversal reads back: every vertex's level, or reached counts.
PartedReadback = Literal["levels", "counts"]
#: How each level's direction is chosen: by frontier size, or always one way.
Direction = Literal["auto", "top_down", "bottom_up"]

#: Levels enqueued before the first host wait; later batches double up to the cap.
#: Every enqueued level copies its slots whether or not the traversal is still going,
#: so the cap is lower than a single device's.
FIRST_LEVELS = 8
MAX_LEVELS = 64
#: Bytes one pair of devices may copy in a batch: a level enqueued past the traversal's
#: end still copies its slots (the kernels return at once, the copies cannot), so wide
#: slots get fewer levels per host wait (one slot of 1 GiB: one level, whose copies wait
#: for its direction step; a wait costs tens of microseconds, a wasted 1 GiB copy
#: milliseconds).
BATCH_COPY_BYTES = 256 << 20


def levels_per_batch(slot_bytes: int) -> int:
    """The most levels a batch enqueues when each copies ``slot_bytes`` per pair."""
    return max(1, min(MAX_LEVELS, BATCH_COPY_BYTES // max(slot_bytes, 1)))


def parted_scratch_bytes(ranges: VertexRanges, part: int, words: int, readback: str) -> int:
    """Device bytes one traversal of ``words`` lane words needs on device ``part``."""
    nd, lanes = ranges.size(part), MSBFS_LANES_PER_WORD * words
    group = ranges.parts * ranges.chunk * words
    bitsets = 8 * (2 * max(nd * words, 1) + 2 * group + ranges.parts * PART_STATS + PART_STATS)
    out = 4 * lanes * max(nd, 1) if readback == "levels" else 4 * lanes
    return bitsets + 4 * PSTATE_WORDS + 4 * lanes + out


def minimal_parted_bytes(ranges: VertexRanges, part: int) -> int:
    """Device bytes the smallest traversal (one lane word, counts) needs on ``part``:
    what placing a split graph must leave free besides each part."""
    return parted_scratch_bytes(ranges, part, 1, "counts")


def minimal_replica_bytes(num_vertices: int) -> int:
    """Device bytes the smallest multi-source traversal (one lane word: visited and two
    frontiers, 8 bytes per vertex each) needs on a whole copy of the graph."""
    return 24 * num_vertices + 4 * 1024


def parted_words(ranges: VertexRanges, queries: int, readback: str, budget_bytes: int) -> int:
    """Lane words per pass: enough for ``queries`` (at most 16), as fit ``budget_bytes``
    on every device (at least 1)."""
    words = min(MSBFS_MAX_WORDS, max(1, -(-queries // MSBFS_LANES_PER_WORD)))
    while words > 1 and any(
        parted_scratch_bytes(ranges, d, words, readback) > budget_bytes for d in range(ranges.parts)
    ):
        words -= 1
    return words


class PartedScratch:
    """A partitioned traversal's buffers on every device, and its sequences bound over them.

    Attributes:
        shape: ``(words, readback)`` it was made for.
        nbytes: Bytes of its buffers, all devices together.
    """

    def __init__(
        self,
        shape: tuple[int, PartedReadback],
        backends: Sequence[Backend],
        buffers: list[dict[str, ResidentBuffer]],
        sequences: list[dict[str, PreparedSequence]],
    ) -> None:
        self.shape = shape
        self._backends = tuple(backends)
        self.buffers = buffers
        self.sequences = sequences
        self.nbytes = sum(b.nbytes for each in buffers for b in each.values())

    async def free(self) -> None:
        """Free every buffer once no unfinished work uses it; runs even when cancelled."""
        await _free(self._backends, self.buffers)


async def _free(backends: Sequence[Backend], buffers: list[dict[str, ResidentBuffer]]) -> None:
    with anyio.CancelScope(shield=True):
        for backend, mine in zip(backends, buffers, strict=False):
            owned = [b for b in mine.values() if backend.owns(b)]
            if owned:
                await backend.settle(owned)
                for buffer in owned:
                    await backend.free(buffer)


async def allocate_parted_scratch(
    backends: Sequence[Backend],
    parts: Sequence[Mapping[str, ResidentBuffer]],
    ranges: VertexRanges,
    words: int,
    readback: PartedReadback,
) -> PartedScratch:
    """Allocate a traversal's buffers on every device and bind its sequences.

    Raises:
        OutOfMemoryError: A device has no room (nothing is left allocated).
    """
    lanes = MSBFS_LANES_PER_WORD * words
    group = ranges.parts * ranges.chunk * words
    made: list[dict[str, ResidentBuffer]] = []
    sequences: list[dict[str, PreparedSequence]] = []
    try:
        for d, (backend, graph) in enumerate(zip(backends, parts, strict=True)):
            nd = ranges.size(d)
            mine: dict[str, ResidentBuffer] = {}
            made.append(mine)

            async def alloc(name: str, count: int, dtype: type[np.generic]) -> ResidentBuffer:
                buffer = await backend.alloc(max(count, 1) * np.dtype(dtype).itemsize, dtype)  # noqa: B023
                mine[name] = buffer  # noqa: B023
                return buffer

            await alloc("sources", lanes, np.int32)
            await alloc("visited", nd * words, np.uint64)
            await alloc("next", nd * words, np.uint64)
            await alloc("recv", group, np.uint64)
            await alloc("send", group, np.uint64)
            await alloc("stats", ranges.parts * PART_STATS, np.uint64)
            await alloc("stats_out", PART_STATS, np.uint64)
            await alloc("state", PSTATE_WORDS, np.int32)
            if readback == "levels":
                await alloc("levels", lanes * nd, np.int32)
            else:
                await alloc("counts", lanes, np.int32)
            sequences.append(_bind(backend, graph, mine, ranges, d, words))
    except BaseException:
        await _free(backends, made)
        raise
    return PartedScratch((words, readback), backends, made, sequences)


def parted_steps(
    graph: Mapping[str, ResidentBuffer],
    mine: Mapping[str, ResidentBuffer],
    ranges: VertexRanges,
    part: int,
    words: int,
) -> dict[str, list[Step]]:
    """Device ``part``'s steps, bound over its part of the graph and its buffers.

    ``"init"``, the level's ``"first_half"`` (before the frontier copies) and
    ``"second_half"`` (after them), and ``"counts"`` where ``mine`` has a counts buffer
    (a levels readback records levels in the second half instead). The direction step
    (first of the first half) takes the ``mode`` scalar.
    """
    split = {
        "parts": ranges.parts,
        "part": part,
        "chunk": ranges.chunk,
        "words": words,
        "n_total": ranges.num_vertices,
    }
    offsets, in_offsets = graph["offsets"], graph["in_offsets"]
    state = mine["state"]
    init = [
        Step(
            msbfs_part_init,
            {
                "offsets": offsets,
                "in_offsets": in_offsets,
                "sources": mine["sources"],
                "visited": mine["visited"],
                "next": mine["next"],
                "recv": mine["recv"],
                "stats_out": mine["stats_out"],
                "state": state,
            },
            {"max_level": MSBFS_UNLIMITED, **split},
        )
    ]
    levels = mine.get("levels")
    if levels is not None:
        init.append(
            Step(
                msbfs_part_init_levels,
                {"offsets": offsets, "sources": mine["sources"], "levels": levels, "state": state},
                {k: split[k] for k in ("part", "chunk", "n_total")},
            )
        )
    first_half = [
        Step(
            msbfs_part_direction,
            {"stats": mine["stats"], "stats_out": mine["stats_out"], "state": state},
            {"parts": ranges.parts, "part": part, "n_total": ranges.num_vertices, "mode": 0},
        ),
        Step(
            msbfs_part_pack,
            {
                "offsets": offsets,
                "recv": mine["recv"],
                "send": mine["send"],
                "stats_out": mine["stats_out"],
                "state": state,
            },
            split,
        ),
    ]
    push = {
        "offsets": offsets,
        "indices": graph["indices"],
        "recv": mine["recv"],
        "send": mine["send"],
        "state": state,
    }
    first_half += [Step(msbfs_part_push, push, split), Step(msbfs_part_push_hubs, push, split)]
    local = {"visited": mine["visited"], "next": mine["next"], "state": state}
    second_half = [
        Step(
            msbfs_part_merge,
            {"offsets": offsets, "recv": mine["recv"], "send": mine["send"], **local},
            split,
        ),
    ]
    pull = {
        "in_offsets": in_offsets,
        "in_indices": graph["in_indices"],
        "recv": mine["recv"],
        **local,
    }
    second_half += [Step(msbfs_part_pull, pull, split), Step(msbfs_part_pull_hubs, pull, split)]
    if levels is not None:
        second_half.append(
            Step(
                msbfs_part_record_levels,
                {"offsets": offsets, "next": mine["next"], "levels": levels, "state": state},
                {"words": words},
            )
        )
    second_half.append(
        Step(
            msbfs_part_advance,
            {
                "offsets": offsets,
                "in_offsets": in_offsets,
                "recv": mine["recv"],
                "stats_out": mine["stats_out"],
                **local,
            },
            split,
        )
    )
    steps = {"init": init, "first_half": first_half, "second_half": second_half}
    if "counts" in mine:
        steps["counts"] = [
            Step(
                msbfs_part_count,
                {
                    "offsets": offsets,
                    "sources": mine["sources"],
                    "visited": mine["visited"],
                    "counts": mine["counts"],
                },
                {"words": words},
            )
        ]
    return steps


def _bind(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    mine: dict[str, ResidentBuffer],
    ranges: VertexRanges,
    part: int,
    words: int,
) -> dict[str, PreparedSequence]:
    """Device ``part``'s sequences: init, a level's first half (whole, or its direction
    step and the rest apart), its second half, the counts."""
    steps = parted_steps(graph, mine, ranges, part, words)
    direction, *rest = steps["first_half"]
    sequences = {
        "init": backend.prepare_repeated(steps["init"], []),
        "first_half": backend.prepare_repeated(steps["first_half"], []),
        # Apart, so that reading the state waits for the direction step only.
        "direction": backend.prepare_repeated([direction], []),
        "first_half_rest": backend.prepare_repeated(rest, []),
        "second_half": backend.prepare_repeated([], steps["second_half"]),
    }
    if "counts" in steps:
        sequences["counts"] = backend.prepare_repeated(
            steps["counts"], [], reads=[ReadRange(mine["counts"])]
        )
    return sequences


class PartedTraversal:
    """Runs multi-source traversals on a graph split over a group's devices.

    Args:
        backends: One open backend per part.
        links: The copies between them.
        ranges: Which vertices each part owns.
    """

    def __init__(
        self, backends: Sequence[Backend], links: DeviceLinks, ranges: VertexRanges
    ) -> None:
        self._backends = tuple(backends)
        self._links = links
        self._ranges = ranges
        #: Levels expanded by the traversals run so far.
        self.levels = 0
        #: Host waits of the traversals so far (state reads between batches).
        self.host_waits = 0

    async def run(
        self,
        scratch: PartedScratch,
        sources: np.ndarray,
        *,
        max_level: int = MSBFS_UNLIMITED,
        direction: Direction = "auto",
        check: Callable[[], None] | None = None,
    ) -> np.ndarray:
        """Traverse from every source at once; one row per source, in order.

        Args:
            scratch: Buffers of the traversal's shape (:func:`allocate_parted_scratch`).
            sources: At most ``64 * words`` int32 source vertices.
            max_level: The deepest level to discover.
            direction: ``"auto"`` (by frontier size), or every level one way.
            check: Called before each batch (a closed session raises there).

        Returns:
            int32 ``(len(sources), V)`` levels, or ``(len(sources),)`` reached counts.

        Raises:
            ValidationError: More sources than the scratch has lanes, or an unknown
                direction.
            VyreError: A kernel or a copy failed (raised once every device's work on
                the scratch has ended).
        """
        words, readback = scratch.shape
        lanes = MSBFS_LANES_PER_WORD * words
        count = len(sources)
        if count > lanes:
            raise ValidationError(
                f"{count} sources do not fit a traversal of {lanes} lanes",
                fix="cut the sources into passes of at most 64 * words.",
            )
        if direction not in DIRECTION_MODES:
            raise ValidationError(
                f"direction must be one of {sorted(DIRECTION_MODES)}, got {direction!r}",
                fix="pass 'auto', 'top_down' or 'bottom_up'.",
            )
        mode = DIRECTION_MODES[direction]
        lane_sources = np.full(lanes, -1, np.int32)
        lane_sources[:count] = sources
        work: list[PendingDispatch[list[np.ndarray]] | Completion] = []
        # The level rows' host array, its pages mapped by worker threads while the
        # devices traverse (see ._host_rows).
        rows = (
            None if readback == "counts" else np.empty((count, self._ranges.num_vertices), np.int32)
        )
        try:
            for backend, mine in zip(self._backends, scratch.buffers, strict=True):
                await backend.write(mine["sources"], lane_sources)
            for seqs in scratch.sequences:
                work.append(seqs["init"].submit(0, scalars={"max_level": int(max_level)}))
            try:
                async with anyio.create_task_group() as tg:
                    if rows is not None:
                        tg.start_soon(touch_pages, rows)
                    await self._levels(scratch, mode, max_level, work, check)
            except BaseExceptionGroup as group:
                error = sole_vyre_error(group)
                if error is None:
                    raise
                raise error from None
            result = await self._results(scratch, count, rows)
        finally:
            with anyio.CancelScope(shield=True):
                for backend, mine in zip(self._backends, scratch.buffers, strict=True):
                    await backend.settle(list(mine.values()))
        _raise_first(work)
        return result

    async def _levels(
        self,
        scratch: PartedScratch,
        mode: int,
        max_level: int,
        work: list[PendingDispatch[list[np.ndarray]] | Completion],
        check: Callable[[], None] | None,
    ) -> None:
        """Enqueue levels in batches on every device, reading the state between them,
        until it says the traversal is done."""
        words = scratch.shape[0]
        cap = levels_per_batch(8 * self._ranges.chunk * words)
        batch = min(cap, FIRST_LEVELS if max_level >= FIRST_LEVELS else int(max_level) + 1)
        batch = max(1, batch)
        while True:
            if check is not None:
                check()
            # A level a wait (wide slots): the level's frontier copies and second half
            # are enqueued once its direction step has said that the traversal goes
            # on, so the level that finds the end copies no slot.
            if cap == 1:
                self._first_half(scratch, mode, work, apart=True)
            else:
                for _ in range(batch):
                    self._first_half(scratch, mode, work)
                    self._second_half(scratch, work)
            state = await self._backends[0].read(scratch.buffers[0]["state"])
            self.host_waits += 1
            _raise_first(work)
            if state[PSTATE_DONE]:
                break
            if cap == 1:
                self._second_half(scratch, work)
            batch = min(batch * 2, cap)
        self.levels += int(state[PSTATE_LEVELS_RUN])

    def _first_half(
        self,
        scratch: PartedScratch,
        mode: int,
        work: list[PendingDispatch[list[np.ndarray]] | Completion],
        *,
        apart: bool = False,
    ) -> None:
        """Enqueue a level's statistics copies and first half on every device (``apart``:
        its direction step as a submission of its own)."""
        links, parts = self._links, self._ranges.parts
        buffers = scratch.buffers
        for d in range(parts):
            for e in range(parts):
                if e != d:
                    work.append(
                        links.copy(
                            e,
                            buffers[e]["stats_out"],
                            d,
                            buffers[d]["stats"],
                            dst_offset=e * PART_STATS,
                        )
                    )
        for seqs in scratch.sequences:
            if apart:
                work.append(seqs["direction"].submit(0, scalars={"mode": mode}))
                work.append(seqs["first_half_rest"].submit(0))
            else:
                work.append(seqs["first_half"].submit(0, scalars={"mode": mode}))

    def _second_half(
        self,
        scratch: PartedScratch,
        work: list[PendingDispatch[list[np.ndarray]] | Completion],
    ) -> None:
        """Enqueue a level's frontier copies and second half on every device."""
        links, parts = self._links, self._ranges.parts
        slot = self._ranges.chunk * scratch.shape[0]
        buffers = scratch.buffers
        for d in range(parts):
            for e in range(parts):
                if e != d:
                    work.append(
                        links.copy(
                            e,
                            buffers[e]["send"],
                            d,
                            buffers[d]["recv"],
                            src_offset=d * slot,
                            dst_offset=e * slot,
                            count=slot,
                        )
                    )
        for seqs in scratch.sequences:
            work.append(seqs["second_half"].submit(1))

    async def _results(
        self, scratch: PartedScratch, count: int, rows: np.ndarray | None
    ) -> np.ndarray:
        """Each device's share of the rows, put together in ``rows`` (levels), or the
        devices' counts added up (``rows`` is ``None``)."""
        words, _ = scratch.shape
        lanes = MSBFS_LANES_PER_WORD * words
        ranges = self._ranges
        if rows is None:
            # Every device counts at once; then each device's counts are collected.
            pending = [seqs["counts"].submit(0) for seqs in scratch.sequences]
            total = np.zeros(lanes, np.int64)
            for each in pending:
                (counts,) = await each
                total += counts
            return total[:count].astype(np.int32)

        async def share(d: int) -> None:
            first, stop = ranges.bounds(d)
            if stop <= first:
                return
            levels, backend = scratch.buffers[d]["levels"], self._backends[d]
            if count == 1:
                # A lone row: the device's range lands straight in its slice of it,
                # with no array in between to allocate and copy out of.
                await backend.read(levels, 0, stop - first, out=rows[0, first:stop])
                return
            # Lane-major: the used lanes' rows are the buffer's first ones.
            got = await backend.read(levels, 0, count * (stop - first))
            rows[:, first:stop] = got.reshape(count, stop - first)

        # Every device's share at once (each over its own link to the host).
        try:
            async with anyio.create_task_group() as tg:
                for d in range(ranges.parts):
                    tg.start_soon(share, d)
        except BaseExceptionGroup as group:
            error = sole_vyre_error(group)
            if error is None:
                raise
            raise error from None
        return rows


def _raise_first(work: list[PendingDispatch[list[np.ndarray]] | Completion]) -> None:
    """Raise the first failure among finished work (never waits)."""
    for item in work:
        error = item.error
        if error is not None:
            raise error


def check_parted_readback(readback: str) -> PartedReadback:
    """``readback`` if a split graph can bring it back.

    Raises:
        UnsupportedFeatureError: ``"targets"`` or ``"parents"``.
    """
    if readback not in ("levels", "counts"):
        raise UnsupportedFeatureError(
            f"a {readback!r} readback is not available on a graph split over several devices",
            fix="ask for readback='levels' or 'counts', or raise the devices' memory_limit "
            "so that the graph is replicated.",
        )
    parted: PartedReadback = "levels" if readback == "levels" else "counts"
    return parted


async def run_parted_traversals(
    partition: Partition,
    sources: np.ndarray,
    *,
    max_level: int,
    readback: PartedReadback,
    budget_bytes: int | None = None,
    direction: Direction = "auto",
) -> np.ndarray:
    """Traversals from ``sources`` on a split graph, in passes that fit every device.

    Args:
        partition: The split graph.
        sources: int32 source vertices (checked against the graph), at least one.
        max_level: The deepest level to discover (``MSBFS_UNLIMITED``: no limit).
        readback: ``"levels"`` or ``"counts"``.
        budget_bytes: Each device's bytes for one pass besides its part of the graph
            (``None``: :data:`~vyre_async.algorithms.DEFAULT_QUERY_BUDGET`).
        direction: As for :meth:`PartedTraversal.run`.

    Returns:
        One row per source, in order, as :meth:`PartedTraversal.run` gives them.
    """
    ranges = partition.ranges
    budget = DEFAULT_QUERY_BUDGET if budget_bytes is None else budget_bytes
    per_pass = MSBFS_LANES_PER_WORD * parted_words(ranges, len(sources), readback, budget)
    runner = PartedTraversal(partition.backends, partition.links, ranges)
    rows: list[np.ndarray] = []
    async with partition.measure() as run:
        for start in range(0, len(sources), per_pass):
            chunk = sources[start : start + per_pass]
            words = -(-len(chunk) // MSBFS_LANES_PER_WORD)
            key: Hashable = ("msbfs", "parts", words, readback)
            scratch: PartedScratch | None = partition.pooled(key)
            if scratch is None:
                make = partial(
                    allocate_parted_scratch,
                    partition.backends,
                    partition.parts,
                    ranges,
                    words,
                    readback,
                )
                scratch = await partition.scratch(key, make)
            done = False
            try:
                rows.append(
                    await runner.run(
                        scratch,
                        chunk,
                        max_level=max_level,
                        direction=direction,
                        check=partition.check,
                    )
                )
                done = True
            finally:
                await partition.release(key, scratch, keep=done)
        run.levels = runner.levels
    return rows[0] if len(rows) == 1 else np.concatenate(rows)
