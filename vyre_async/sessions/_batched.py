"""A resident-graph session's batched queries: concurrent calls coalesced by a batcher.

With ``batching``, single queries of a kind whose runs carry many queries (``bfs``,
``khop``, ``reach_count``...) and many-source calls (``bfs_many``...) go into a
:class:`~vyre_async.batching.DynamicBatcher` as query blocks; each batch runs on the
least busy replica as one run of its kind's many-query engine (which may run a lone
query its own way), and each caller gets its own rows back, shaped for its call by
the kind.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Annotated, Any

import anyio
import msgspec
import numpy as np

from .._lifecycle import BackgroundTasks
from ..algorithms import Params, QueryKind
from ..backends import Backend
from ..batching import BatcherStats, DynamicBatcher
from ..graphs import CsrGraph
from ._query_block import QueryBlock, block_group, block_lanes, split_rows
from ._replica import GraphReplica
from ._replicas import ReplicaSet


async def to_device_array(backend: Backend, host: np.ndarray, out: Any) -> Any:
    """Copy a host array into another library's device array (through a resident buffer)."""
    staged = await backend.upload(host)
    try:
        await backend.read(staged, out=out)
    finally:
        await backend.free(staged)
    return out


class BatchingConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How concurrent queries are coalesced.

    Attributes:
        max_batch: Queries per multi-query run (for traversals, 64 per 64-bit lane
            word, up to 1024).
        max_delay: Seconds the oldest queued query may wait for more company while a
            run is in flight; when the device is idle a batch starts at once.
        queue_size: Queries that may wait; a full queue blocks callers, or rejects
            them with QueueFullError when ``reject_when_full``.
        reject_when_full: Reject rather than block when the queue is full.
        in_flight: Batches that may run at once on each device. With 2, one batch's
            host work (scratch allocation, launches, readback) overlaps the other's
            run, which pays when full batches queue back to back (a batch job);
            with 1, queries that arrive while a batch runs wait for it and join the
            next one, so batches are fuller.
    """

    max_batch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1024
    max_delay: Annotated[float, msgspec.Meta(ge=0)] = 0.0005
    queue_size: Annotated[int, msgspec.Meta(ge=1)] = 65536
    reject_when_full: bool = False
    in_flight: Annotated[int, msgspec.Meta(ge=1, le=8)] = 1


class BatchedQueries:
    """The batched half of :class:`~._graph_session.ResidentGraphSession`."""

    _graph: CsrGraph
    _replicas: ReplicaSet
    _batching: BatchingConfig | None
    _batcher: DynamicBatcher[QueryBlock, Any] | None
    _background: BackgroundTasks

    @abstractmethod
    def _check_open(self) -> None:
        """Raise unless the session is open."""

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

    async def _submit_many(
        self,
        kind: QueryKind[Any],
        params: Params,
        sources: np.ndarray,
        priority: int,
        queue_timeout: float | None,
    ) -> np.ndarray:
        """Many queries through the batcher: blocks of up to ``max_batch`` queries."""
        size = self._batching.max_batch if self._batching is not None else len(sources)
        blocks = [
            QueryBlock(kind, params, sources[i : i + size], rows=True)
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
        self,
        kind: QueryKind[Any],
        params: Params,
        source: int,
        priority: int,
        queue_timeout: float | None,
    ) -> Any:
        block = QueryBlock(kind, params, np.array([source], np.int32), rows=False)
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
        """One run of every block's queries (their kind and parameters are the same)."""
        first = blocks[0]
        kind, params = first.kind, first.params
        sources = first.sources if len(blocks) == 1 else np.concatenate([b.sources for b in blocks])
        rows = await kind.run_many(replica, params, sources)
        results: list[Any] = []
        for block, part in zip(blocks, split_rows(blocks, rows), strict=True):
            results.append(part if block.rows else await kind.unpack(params, part[0]))
        return results
