"""A resident-graph session's batched queries: concurrent calls coalesced by a batcher.

With ``batching``, ``bfs`` / ``khop`` / ``reach_count`` and ``bfs_many`` calls go into
a :class:`~vyre_async.batching.DynamicBatcher` as query blocks; each batch runs on the
least busy replica as one multi-source traversal (a lone query as the single-source,
direction-optimizing one), and each caller gets its own rows back, shaped for its call.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Annotated, Any

import anyio
import msgspec
import numpy as np

from .._lifecycle import BackgroundTasks
from ..batching import BatcherStats, DynamicBatcher
from ..graphs import CsrGraph
from ._analyses import UNLIMITED, traverse_many
from ._planner import Readback, TraversalShape
from ._query_block import QueryBlock, block_group, block_lanes, split_rows
from ._replica import GraphReplica
from ._replicas import ReplicaSet
from ._stats import RunCounters


async def to_device_array(replica: GraphReplica, levels: np.ndarray, out: Any) -> Any:
    """Copy host levels into another library's device array (through a resident buffer)."""
    backend = replica.backend
    staged = await backend.upload(levels)
    try:
        await backend.read(staged, out=out)
    finally:
        await backend.free(staged)
    return out


def reached_vertices(levels: np.ndarray) -> np.ndarray:
    return np.flatnonzero(levels >= 0).astype(np.int32)


class BatchingConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How concurrent ``bfs`` / ``khop`` / ``reach_count`` calls are coalesced.

    Attributes:
        max_batch: Queries per multi-source traversal (64 per 64-bit lane word, up to
            1024).
        max_delay: Seconds the oldest queued query may wait for more company while a
            traversal runs; when the device is idle a batch starts at once.
        queue_size: Queries that may wait; a full queue blocks callers, or rejects
            them with QueueFullError when ``reject_when_full``.
        reject_when_full: Reject rather than block when the queue is full.
        in_flight: Batches that may run at once on each device. With 2, one batch's
            host work (scratch allocation, launches, readback) overlaps the other's
            traversal, which pays when full batches queue back to back (a batch
            job); with 1, queries that arrive while a batch runs wait for it and
            join the next one, so batches are fuller.
    """

    max_batch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1024
    max_delay: Annotated[float, msgspec.Meta(ge=0)] = 0.0005
    queue_size: Annotated[int, msgspec.Meta(ge=1)] = 65536
    reject_when_full: bool = False
    in_flight: Annotated[int, msgspec.Meta(ge=1, le=8)] = 1


#: The shapes of a single ``bfs`` and ``reach_count`` query in a batch.
BFS_SHAPE = TraversalShape()
REACH_SHAPE = TraversalShape(kind="reach", readback="counts")


class BatchedQueries:
    """The batched half of :class:`~._graph_session.ResidentGraphSession`."""

    _graph: CsrGraph
    _replicas: ReplicaSet
    _counters: RunCounters
    _batching: BatchingConfig | None
    _batcher: DynamicBatcher[QueryBlock, Any] | None
    _background: BackgroundTasks

    @abstractmethod
    def _check_open(self) -> None:
        """Raise unless the session is open."""

    @abstractmethod
    def _check_source(self, source: int) -> None:
        """Raise unless ``source`` is a vertex of the graph (and the session open)."""

    @abstractmethod
    async def _levels_on(
        self, replica: GraphReplica, source: int, max_level: int, out: np.ndarray | None = None
    ) -> np.ndarray:
        """One single-source traversal's levels on ``replica``."""

    @abstractmethod
    async def _count_on(
        self, replica: GraphReplica, source: int, max_level: int = UNLIMITED
    ) -> int:
        """One single-source traversal's reached count on ``replica``."""

    async def _start_batcher(self, config: BatchingConfig) -> None:
        self._batcher = DynamicBatcher(
            self._run_batch,
            max_batch=config.max_batch,
            max_delay=config.max_delay,
            queue_size=config.queue_size,
            reject_when_full=config.reject_when_full,
            lanes=block_lanes,
            group=block_group,
            max_in_flight=config.in_flight * len(self._replicas),
            name="resident-graph query batcher",
        )
        task_group = await self._background.open()
        await task_group.start(self._batcher.run)

    def _no_rows(self, readback: Readback, num_targets: int) -> np.ndarray:
        width = (
            ()
            if readback == "counts"
            else ((num_targets,) if readback == "targets" else (self._graph.num_vertices,))
        )
        return np.zeros((0, *width), dtype=np.int32)

    async def _submit_many(
        self,
        sources: np.ndarray,
        shape: TraversalShape,
        priority: int,
        queue_timeout: float | None,
    ) -> np.ndarray:
        """``bfs_many`` through the batcher: blocks of up to ``max_batch`` queries."""
        if not len(sources):
            return self._no_rows(shape.readback, len(shape.targets))
        size = self._batching.max_batch if self._batching is not None else len(sources)
        blocks = [
            QueryBlock(shape, sources[i : i + size], rows=True)
            for i in range(0, len(sources), size)
        ]
        parts: list[np.ndarray] = [np.empty(0, np.int32)] * len(blocks)

        async def one(index: int, block: QueryBlock) -> None:
            parts[index] = await self._submit(block, priority, queue_timeout)

        if len(blocks) == 1:
            await one(0, blocks[0])
        else:
            async with anyio.create_task_group() as tg:
                for index, block in enumerate(blocks):
                    tg.start_soon(one, index, block)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def batch_stats(self) -> BatcherStats | None:
        """Batches, lanes per batch and queue waits (``None`` without batching)."""
        return self._batcher.stats() if self._batcher is not None else None

    async def _submit_one(
        self, shape: TraversalShape, source: int, priority: int, queue_timeout: float | None
    ) -> Any:
        block = QueryBlock(shape, np.array([source], np.int32), rows=False)
        return await self._submit(block, priority, queue_timeout)

    async def _submit(self, block: QueryBlock, priority: int, queue_timeout: float | None) -> Any:
        if self._batcher is None:  # closed while the caller was on its way in
            self._check_open()
            raise RuntimeError("unreachable: an open session without its batcher")
        return await self._batcher.submit(block, priority=priority, queue_timeout=queue_timeout)

    async def _run_batch(self, blocks: Sequence[QueryBlock]) -> list[Any]:
        """The batcher's executor: on the least busy replica, another if its device is lost."""
        return await self._replicas.run(lambda r: self._batch_on(r, blocks))

    async def _batch_on(self, replica: GraphReplica, blocks: Sequence[QueryBlock]) -> list[Any]:
        """One query alone, or one multi-source traversal of every block's queries."""
        first = blocks[0]
        shape = first.shape
        if len(blocks) == 1 and first.lanes == 1 and shape.readback != "targets":
            # A lone query: the single-source, direction-optimizing traversal.
            source = int(first.sources[0])
            max_level = shape.k if shape.kind == "khop" and shape.k is not None else UNLIMITED
            if shape.kind == "reach" or shape.readback == "counts":
                count = await self._count_on(replica, source, max_level)
                return [np.array([count], np.int32) if first.rows else count]
            levels = await self._levels_on(replica, source, max_level)
            return [levels[None, :] if first.rows else await self._shape(shape, levels)]
        sources = first.sources if len(blocks) == 1 else np.concatenate([b.sources for b in blocks])
        n = self._graph.num_vertices
        # One shape per batch, so the chunks are consecutive runs of the sources in order.
        chunk_rows = await traverse_many(replica, self._counters, n, shape, sources)
        rows = chunk_rows[0] if len(chunk_rows) == 1 else np.concatenate(chunk_rows)
        results: list[Any] = []
        for block, part in zip(blocks, split_rows(blocks, rows), strict=True):
            results.append(part if block.rows else await self._shape(shape, part[0]))
        return results

    async def _shape(self, shape: TraversalShape, row: np.ndarray) -> Any:
        if shape.kind == "reach":
            return int(row)
        if shape.kind == "khop":
            return await anyio.to_thread.run_sync(reached_vertices, row)
        return row
