"""Running multi-source traversals over a resident graph.

Up to ``64 * W`` sources are one traversal: bit lane ``i`` of every vertex's W words
belongs to source ``i``. Only what the caller asks for comes back: per-lane reached
counts, the levels of a target set, full levels, or full levels with a BFS parent per
vertex. Which sources share a traversal
is the caller's plan (``vyre_async.sessions`` plans them by device memory).

A traversal's device buffers and its bound batches make a :class:`MsbfsScratch` of
one shape (lane words, readback, target count). A caller that keeps scratches and
hands one to each traversal of the same shape (a session does) allocates nothing per
traversal, and its bodies keep the same pointers, so the CUDA backend replays the
graphs it captured for them instead of capturing new ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import anyio
import numpy as np

from ...backends import Backend, PreparedSequence, ReadRange, ResidentBuffer, SequenceStep
from .._repeat import prepare_batches, run_prepared
from . import _kernels as ms
from ._layout import (
    MSBFS_LANES_PER_WORD,
    MSBFS_STATE_WORDS,
    MSBFS_UNLIMITED,
    STATE_DONE,
    STATE_LEVELS_RUN,
)

#: What a traversal reads back: every vertex's level, reached counts, target levels, or
#: every vertex's level and parent.
Readback = Literal["levels", "counts", "targets", "parents"]

#: What a scratch fits: ``(words, readback, number of targets)``.
ScratchShape = tuple[int, Readback, int]


class MsbfsScratch:
    """The device buffers of traversals of one shape, and the batches bound over them.

    Every run overwrites what it reads: ``msbfs_init`` sets the bitsets and the
    state, the init steps the outputs, and the sources (and targets) are written
    first. So a scratch serves one traversal at a time, any number of times, until
    its buffers are freed (:attr:`buffers`, by whoever made it).

    Attributes:
        shape: ``(words, readback, number of targets)`` it was made for.
        buffers: Every buffer it holds.
        nbytes: Their bytes.
    """

    __slots__ = (
        "_final",
        "_first",
        "_more",
        "_output",
        "_sources",
        "_targets",
        "buffers",
        "nbytes",
        "shape",
    )

    def __init__(
        self,
        shape: ScratchShape,
        buffers: list[ResidentBuffer],
        sources: ResidentBuffer,
        targets: ResidentBuffer | None,
        output: ResidentBuffer | None,
        batches: tuple[PreparedSequence, PreparedSequence],
        final: PreparedSequence | None,
    ) -> None:
        self.shape = shape
        self.buffers = buffers
        self.nbytes = sum(b.nbytes for b in buffers)
        self._sources = sources
        self._targets = targets
        self._output = output
        self._first, self._more = batches
        #: Run once the traversal is done (counts, parents); its reads are the result.
        self._final = final


async def allocate_scratch(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    num_vertices: int,
    shape: ScratchShape,
) -> MsbfsScratch:
    """Allocate the buffers of a traversal shape on ``backend`` and bind its batches.

    Args:
        backend: The backend holding the graph.
        graph: The session's device arrays (``offsets``, ``in_offsets``, ``in_indices``).
        num_vertices: Vertices of the graph.
        shape: ``(words, readback, number of targets)``.

    Raises:
        OutOfMemoryError: The buffers do not fit (none is left allocated).
    """
    words, readback, num_targets = shape
    lanes = MSBFS_LANES_PER_WORD * words
    n = num_vertices
    owned: list[ResidentBuffer] = []

    async def alloc(count: int, dtype: type[np.generic]) -> ResidentBuffer:
        buffer = await backend.alloc(max(count, 1) * np.dtype(dtype).itemsize, dtype)
        owned.append(buffer)
        return buffer

    try:
        src = await alloc(lanes, np.int32)
        visited = await alloc(n * words, np.uint64)
        a = await alloc(n * words, np.uint64)
        b = await alloc(n * words, np.uint64)
        state = await alloc(MSBFS_STATE_WORDS, np.int32)
        base = {"offsets": graph["offsets"], "sources": src, "state": state}
        prefix = [
            SequenceStep(
                ms.msbfs_init,
                {**base, "visited": visited, "frontier": a, "next": b},
                {"max_level": MSBFS_UNLIMITED},
            )
        ]
        record: list[tuple[object, dict[str, ResidentBuffer]]] = []
        output: ResidentBuffer | None = None
        targets: ResidentBuffer | None = None
        final: PreparedSequence | None = None
        if readback == "targets":
            targets = await alloc(num_targets, np.int32)
            output = await alloc(lanes * num_targets, np.int32)
            tb = {"targets": targets, "target_levels": output, "state": state}
            prefix.append(SequenceStep(ms.msbfs_init_targets, {**tb, "sources": src}))
            record.append((ms.msbfs_record_targets, {**tb, "offsets": graph["offsets"]}))
        elif readback in ("levels", "parents"):
            output = await alloc(lanes * n, np.int32)
            lb = {"levels": output, "state": state, "offsets": graph["offsets"]}
            prefix.append(SequenceStep(ms.msbfs_init_levels, {**lb, "sources": src}))
            record.append((ms.msbfs_record_levels, lb))
            if readback == "parents":
                parents = await alloc(lanes * n, np.int32)
                step = SequenceStep(
                    ms.msbfs_parents,
                    {
                        "in_offsets": graph["in_offsets"],
                        "in_indices": graph["in_indices"],
                        "levels": output,
                        "parents": parents,
                    },
                )
                final = backend.prepare_repeated(
                    [step], [], reads=[ReadRange(output), ReadRange(parents)]
                )
        else:
            counts = await alloc(lanes, np.int32)
            step = SequenceStep(
                ms.msbfs_count,
                {"offsets": graph["offsets"], "sources": src, "visited": visited, "counts": counts},
            )
            final = backend.prepare_repeated([step], [], reads=[ReadRange(counts)])

        def level(frontier: ResidentBuffer, nxt: ResidentBuffer) -> list[SequenceStep]:
            pull = {
                "in_offsets": graph["in_offsets"],
                "in_indices": graph["in_indices"],
                "frontier": frontier,
                "next": nxt,
                "visited": visited,
                "state": state,
            }
            steps = [
                SequenceStep(ms.msbfs_expand, pull),
                SequenceStep(ms.msbfs_expand_hubs, pull),
            ]
            steps += [SequenceStep(k, {**bind, "next": nxt}) for k, bind in record]  # type: ignore[arg-type]
            steps.append(SequenceStep(ms.msbfs_advance, {"state": state}))
            return steps

        batches = prepare_batches(backend, prefix, level(a, b) + level(b, a), state)
    except BaseException:
        await free_scratch_buffers(backend, owned)
        raise
    return MsbfsScratch(shape, owned, src, targets, output, batches, final)


async def free_scratch_buffers(backend: Backend, buffers: Sequence[ResidentBuffer]) -> None:
    """Free a scratch's buffers once no unfinished work uses them; runs even when cancelled."""
    with anyio.CancelScope(shield=True):
        await backend.settle(buffers)
        for buffer in buffers:
            await backend.free(buffer)


class MultiSourceTraversal:
    """Runs multi-source traversals on one resident graph.

    Args:
        backend: The backend holding the graph.
        graph: The session's device arrays (``offsets``, ``in_offsets``, ``in_indices``).
        num_vertices: Vertices of the graph.
    """

    def __init__(
        self, backend: Backend, graph: Mapping[str, ResidentBuffer], num_vertices: int
    ) -> None:
        self._backend = backend
        self._graph = graph
        self._n = num_vertices
        #: Device time of the traversals run so far (timing events).
        self.device_ns = 0
        #: Levels expanded by the traversals run so far.
        self.levels = 0

    async def run(
        self,
        sources: Sequence[int] | np.ndarray,
        *,
        words: int,
        max_level: int = MSBFS_UNLIMITED,
        readback: Readback = "levels",
        targets: Sequence[int] = (),
        scratch: MsbfsScratch | None = None,
    ) -> np.ndarray:
        """Traverse from every source at once; return one row per source, in order.

        Args:
            sources: At most ``64 * words`` source vertices (duplicates allowed).
            words: 64-bit lane words per vertex, 1 to ``MSBFS_MAX_WORDS``.
            max_level: The deepest level to discover (``MSBFS_UNLIMITED``: no limit).
            readback: What comes back per source (see the return value).
            targets: Vertices whose levels a ``"targets"`` readback returns.
            scratch: Buffers of this traversal's shape to run in (see
                :func:`allocate_scratch`), left allocated for the next one; ``None``
                allocates them for this run and frees them after it.

        Returns:
            int32 ``(len(sources), V)`` levels, ``(len(sources), len(targets))`` target
            levels, ``(len(sources),)`` reached counts, or ``(len(sources), 2, V)``
            levels and parents (-1: unreached; a parent is -1 at the source too).

        Raises:
            ValueError: ``scratch`` was made for another shape.
        """
        shape: ScratchShape = (words, readback, len(targets))
        if scratch is None:
            own = await allocate_scratch(self._backend, self._graph, self._n, shape)
            try:
                return await self._run(own, sources, max_level, targets)
            finally:
                await free_scratch_buffers(self._backend, own.buffers)
        if scratch.shape != shape:
            raise ValueError(f"a scratch of shape {scratch.shape} cannot run a {shape} traversal")
        return await self._run(scratch, sources, max_level, targets)

    async def _run(
        self,
        scratch: MsbfsScratch,
        sources: Sequence[int] | np.ndarray,
        max_level: int,
        targets: Sequence[int],
    ) -> np.ndarray:
        backend = self._backend
        words, readback, _ = scratch.shape
        lanes = MSBFS_LANES_PER_WORD * words
        count = len(sources)
        lane_sources = np.full(lanes, -1, dtype=np.int32)
        lane_sources[:count] = sources
        await backend.write(scratch._sources, lane_sources)
        if scratch._targets is not None:
            await backend.write(scratch._targets, np.asarray(targets, dtype=np.int32))
        words_read, device_ns = await run_prepared(
            scratch._first, scratch._more, STATE_DONE, scalars={"max_level": int(max_level)}
        )
        self.device_ns += device_ns
        self.levels += int(words_read[STATE_LEVELS_RUN])
        if scratch._final is not None:
            results, final_ns = await scratch._final.run(0)
            self.device_ns += final_ns
            if readback == "counts":
                return results[0][:count]
            levels, parents = (r.reshape(lanes, self._n)[:count] for r in results)
            return np.stack([levels, parents], axis=1)
        assert scratch._output is not None
        rows = await backend.read(scratch._output)
        width = len(targets) if readback == "targets" else self._n
        return rows.reshape(lanes, width)[:count]
