"""Resident-graph sessions: upload a graph once, run many analyses over it.

The graph's CSR arrays (and, for a directed graph, its transpose, which bottom-up
BFS and pull PageRank read) go to each device in one ``upload_group``: one
allocation, one transfer. Each analysis then runs as resident repeated sequences
(see :mod:`._analyses`) on one replica of the graph.

A session over a device group keeps one replica per device: each analysis (and,
with batching, each batch) runs on the replica with the least work running, so
batches spread over devices by queue depth; a replica whose device is lost is
taken out and its work runs again on the others.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Annotated, Any, Literal, Self, TypeVar

import anyio
import msgspec
import numpy as np

from .._groups import sole_vyre_error
from .._lifecycle import Lifecycle, LifecycleState
from ..algorithms import bfs
from ..algorithms.pagerank import shares_order
from ..backends import Backend, DeviceGroup, check_out, is_foreign
from ..batching import BatcherStats, DynamicBatcher
from ..errors import DeviceLostError, ValidationError
from ..graphs import CsrGraph
from ..logging import get_logger
from ._analyses import (
    DEFAULT_QUERY_BUDGET,
    UNLIMITED,
    TraversalRun,
    pagerank_on,
    traverse,
    traverse_many,
)
from ._planner import Readback, TraversalQuery
from ._query_block import QueryBlock, block_group, block_lanes, split_rows
from ._replica import GraphReplica
from ._stats import RunCounters, SessionStats

__all__ = ["DEFAULT_QUERY_BUDGET", "BatchingConfig", "ResidentGraphSession"]

_log = get_logger("vyre_async.sessions")
T = TypeVar("T")


async def _to_device_array(replica: GraphReplica, levels: np.ndarray, out: Any) -> Any:
    """Copy host levels into another library's device array (through a resident buffer)."""
    backend = replica.backend
    staged = await backend.upload(levels)
    try:
        await backend.read(staged, out=out)
    finally:
        await backend.free(staged)
    return out


def _reached_vertices(levels: np.ndarray) -> np.ndarray:
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
    """

    max_batch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1024
    max_delay: Annotated[float, msgspec.Meta(ge=0)] = 0.0005
    queue_size: Annotated[int, msgspec.Meta(ge=1)] = 65536
    reject_when_full: bool = False


class ResidentGraphSession(Lifecycle):
    """A graph resident on one device or a group's, analysed again and again without re-uploading.

    Made by :func:`vyre_async.resident_graph` (an async context manager); every method
    raises :class:`~vyre_async.errors.LifecycleError` outside it.

    With ``batching``, concurrent ``bfs`` / ``khop`` / ``reach_count`` calls queue
    into a :class:`DynamicBatcher` and run together as multi-source traversals; a
    lone call still runs the single-source, direction-optimizing traversal.

    Args:
        backend: An open backend, an open device group (one replica of the graph on
            each of its backends), or a sequence of open backends.
        graph: The graph; it is not copied on the host, only uploaded.
        batching: Coalesce concurrent queries (``None``: every call runs alone).
    """

    _noun = "resident-graph session"
    _make_fix = "open a new one with vyre_async.resident_graph(backend, graph)."
    _use_fix = "use it inside `async with vyre_async.resident_graph(backend, graph) as session:`."

    def __init__(
        self,
        backend: Backend | DeviceGroup | Sequence[Backend],
        graph: CsrGraph,
        *,
        batching: BatchingConfig | None = None,
    ) -> None:
        if not isinstance(graph, CsrGraph):
            raise TypeError(f"resident_graph takes a CsrGraph, got {type(graph).__name__}")
        if isinstance(backend, DeviceGroup):
            backends = list(backend.backends)
        elif isinstance(backend, Sequence):
            backends = list(backend)
        else:
            backends = [backend]
        if not backends:
            raise ValueError("a resident-graph session needs at least one backend")
        self._replicas = [GraphReplica(b, i) for i, b in enumerate(backends)]
        self._graph = graph
        self._counters = RunCounters()
        self._batching = batching
        self._batcher: DynamicBatcher[QueryBlock, Any] | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._query_ids = itertools.count()
        self._shares_order: np.ndarray | None = None
        self._shares_order_lock = anyio.Lock()

    # ----------------------------------------------------------------- lifecycle
    @property
    def graph(self) -> CsrGraph:
        """The graph this session holds."""
        return self._graph

    async def __aenter__(self) -> Self:
        self._enter_open()
        try:
            await self._upload()
            if self._batching is not None:
                await self._start_batcher(self._batching)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def _start_batcher(self, config: BatchingConfig) -> None:
        self._batcher = DynamicBatcher(
            self._run_batch,
            max_batch=config.max_batch,
            max_delay=config.max_delay,
            queue_size=config.queue_size,
            reject_when_full=config.reject_when_full,
            lanes=block_lanes,
            group=block_group,
            max_in_flight=len(self._replicas),  # one batch per device at a time
            name="resident-graph query batcher",
        )
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        await task_group.start(self._batcher.run)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Free the graph and every scratch buffer. Idempotent; runs even when cancelled."""
        if self._state is LifecycleState.CLOSED:
            return
        if self._batcher is not None and self._task_group is not None:
            # Queued queries still run (the session is open for them), then the
            # batcher's task ends and its task group exits.
            batcher, task_group = self._batcher, self._task_group
            self._batcher = self._task_group = None
            with anyio.CancelScope(shield=True):
                await batcher.aclose()
            await task_group.__aexit__(None, None, None)
        self._enter_closed()
        with anyio.CancelScope(shield=True):
            for replica in self._replicas:
                await replica.free_all()

    def _check_open(self) -> None:
        self._require_open()

    def _is_open(self) -> bool:
        return self._state is LifecycleState.OPEN

    def _device_arrays(self) -> dict[str, np.ndarray]:
        """The arrays the kernels read: int64 offsets, out-degrees, the transpose."""
        graph = self._graph
        arrays: dict[str, np.ndarray] = {
            "offsets": graph.offsets.astype(np.int64, copy=False),
            "indices": graph.indices,
            "out_degree": graph.out_degree(),
        }
        if not graph.symmetric:
            transpose = graph.transpose()
            arrays["in_offsets"] = transpose.offsets.astype(np.int64, copy=False)
            arrays["in_indices"] = transpose.indices
        return arrays

    async def _upload(self) -> None:
        # Widening offsets and transposing take seconds on large graphs: not on the loop.
        arrays = await anyio.to_thread.run_sync(self._device_arrays)
        if len(self._replicas) == 1:
            await self._replicas[0].upload(self._graph, arrays)
            return
        try:
            async with anyio.create_task_group() as tg:  # every device's copy at once
                for replica in self._replicas:
                    tg.start_soon(replica.upload, self._graph, arrays)
        except BaseExceptionGroup as group:
            error = sole_vyre_error(group)
            if error is None:
                raise
            raise error from None

    # ----------------------------------------------------------------- replicas
    @property
    def devices(self) -> int:
        """Replicas still in service (devices not lost)."""
        return sum(r.lost is None for r in self._replicas)

    def _pick(self) -> GraphReplica:
        if len(self._replicas) == 1 and self._replicas[0].lost is None:
            return self._replicas[0]
        live = [r for r in self._replicas if r.lost is None]
        if not live:
            raise DeviceLostError(
                f"every device of this session was lost ({len(self._replicas)} of "
                f"{len(self._replicas)}); last: {self._replicas[-1].lost}",
                fix="restart the process; check the devices with `vyre-async info`.",
            )
        return min(live, key=lambda r: r.busy)

    async def _on_replica(self, work: Callable[[GraphReplica], Awaitable[T]]) -> T:
        """Run ``work`` on the least busy replica; on a lost device, on another one."""
        while True:
            replica = self._pick()
            replica.busy += 1
            try:
                return await work(replica)
            except DeviceLostError as exc:
                if len(self._replicas) == 1:
                    raise
                replica.lost = exc
                _log.warning(
                    "device_taken_out",
                    replica=replica.index,
                    device=replica.backend.device_name,
                    devices_left=self.devices,
                    error=exc.what,
                )
            finally:
                replica.busy -= 1

    # ----------------------------------------------------------------- analyses
    async def bfs(
        self,
        source: int,
        *,
        out: np.ndarray | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray:
        """BFS levels from ``source``: int32, 0 at the source, -1 where unreachable.

        Direction-optimizing: levels switch to bottom-up when the frontier is large.
        With batching, concurrent calls share multi-source traversals.

        Args:
            source: Source vertex.
            out: Write the levels into this int32 array of ``num_vertices`` elements
                and return it. A page-locked one (``cupyx.empty_pinned``) on the CUDA
                backend takes them straight from the device, skipping the staging and
                host copies that are most of a large graph's readback; reusing one
                array also skips a fresh array's page faults. On the CUDA backend it
                may be a device array (CuPy, PyTorch, JAX): the levels are copied
                device to device, never through the host. With batching the levels
                are copied into it (from the host, where batches are unpacked).
            priority: With batching, higher priorities join batches first (FIFO
                within a priority); ignored without batching.
            queue_timeout: With batching, seconds the query may wait in the queue
                before it is rejected with DispatchError; ignored without batching.

        Raises:
            ValidationError: ``source`` is out of range, or ``out`` does not fit.
        """
        source = self._checked(source)
        if out is not None:
            check_out(out, np.dtype(np.int32), self._graph.num_vertices)
        if self._batcher is not None:
            query = TraversalQuery(id=0, source=source)
            levels: np.ndarray = await self._submit_one(query, priority, queue_timeout)
            if out is None:
                return levels
            if is_foreign(out):  # a device array: batches are unpacked on the host
                return await self._on_replica(lambda r: _to_device_array(r, levels, out))
            np.copyto(out.reshape(-1), levels)
            return out
        return await self._on_replica(lambda r: self._levels_on(r, source, UNLIMITED, out))

    async def khop(
        self, source: int, k: int, *, priority: int = 0, queue_timeout: float | None = None
    ) -> np.ndarray:
        """Vertices within ``k`` hops of ``source`` (the source included), sorted int32.

        ``priority`` and ``queue_timeout`` apply with batching, as for :meth:`bfs`.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be a non-negative int, got {k!r}", fix="pass k >= 0.")
        source = self._checked(source)
        if self._batcher is not None:
            query = TraversalQuery(id=0, source=source, kind="khop", k=k)
            vertices: np.ndarray = await self._submit_one(query, priority, queue_timeout)
            return vertices
        levels = await self._on_replica(lambda r: self._levels_on(r, source, k))
        return await anyio.to_thread.run_sync(_reached_vertices, levels)

    async def reach_count(
        self, source: int, *, priority: int = 0, queue_timeout: float | None = None
    ) -> int:
        """How many vertices ``source`` reaches (itself included); reads back 32 bytes.

        ``priority`` and ``queue_timeout`` apply with batching, as for :meth:`bfs`.
        """
        source = self._checked(source)
        if self._batcher is not None:
            query = TraversalQuery(id=0, source=source, kind="reach")
            return int(await self._submit_one(query, priority, queue_timeout))
        return await self._on_replica(lambda r: self._count_on(r, source))

    async def _levels_on(
        self, replica: GraphReplica, source: int, max_level: int, out: np.ndarray | None = None
    ) -> np.ndarray:
        n = self._graph.num_vertices
        async with TraversalRun(replica, self._counters, n, self._is_open) as run:
            await traverse(replica, run, source, max_level, self._check_open)
            return await replica.backend.read(run.levels, out=out)

    async def _count_on(
        self, replica: GraphReplica, source: int, max_level: int = UNLIMITED
    ) -> int:
        n = self._graph.num_vertices
        async with TraversalRun(replica, self._counters, n, self._is_open) as run:
            words = await traverse(replica, run, source, max_level, self._check_open)
        return int(words[bfs.STATE_REACHED])

    async def pagerank(
        self,
        damping: float = 0.85,
        tol: float = 1e-6,
        max_iter: int = 100,
        *,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """PageRank by pull iteration in float32; dangling mass spread uniformly.

        The first call on each device uploads the order the shares are stored in
        (hubs first, 4 bytes per vertex) and keeps a copy of the in-lists renumbered
        to it (4 bytes per edge) until the session closes; where that copy does not
        fit, PageRank runs in the graph's own order and logs a warning.

        Args:
            damping: Probability of following an edge, in (0, 1).
            tol: Stop once the L1 change of one iteration is below ``tol``.
            max_iter: Stop after this many iterations at the latest.
            out: Write the ranks into this float32 array of ``num_vertices`` elements
                and return it (page-locked: straight from the device; a device array
                on the CUDA backend: device to device, as for :meth:`bfs`).

        Returns:
            float32 ranks summing to 1.

        Raises:
            ValidationError: A parameter is out of range, or ``out`` does not fit.
        """
        self._check_open()
        if out is not None:
            check_out(out, np.dtype(np.float32), self._graph.num_vertices)
        if not 0.0 < damping < 1.0:
            raise ValidationError(
                f"damping must be in (0, 1), got {damping}", fix="pass e.g. damping=0.85."
            )
        if not tol > 0:
            raise ValidationError(f"tol must be positive, got {tol}", fix="pass e.g. tol=1e-6.")
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValidationError(
                f"max_iter must be a positive int, got {max_iter!r}", fix="pass max_iter >= 1."
            )
        n, params = self._graph.num_vertices, (damping, tol, max_iter)
        return await self._on_replica(
            lambda r: pagerank_on(
                r,
                self._counters,
                n,
                params,
                self._check_open,
                self._is_open,
                self._pagerank_order,
                out,
            )
        )

    async def _pagerank_order(self) -> np.ndarray:
        """The shares order of this graph, worked out once (off the loop) for every replica."""
        async with self._shares_order_lock:
            if self._shares_order is None:
                graph = self._graph
                self._shares_order = await anyio.to_thread.run_sync(
                    lambda: shares_order(graph.out_degree())
                )
        return self._shares_order

    async def bfs_many(
        self,
        sources: Sequence[int],
        *,
        k: int | None = None,
        readback: Readback = "levels",
        targets: Sequence[int] = (),
        budget_bytes: int | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray:
        """Many traversals at once: multi-source BFS, 64 queries per 64-bit lane word.

        With batching, the queries go through the session's batcher in blocks of up
        to ``max_batch`` lanes, sharing traversals with concurrent calls; without it
        they run as traversals planned for this call alone.

        Args:
            sources: One source per query (duplicates allowed).
            k: Hop limit (k-hop queries) or ``None`` for a full traversal.
            readback: ``"levels"`` (every vertex), ``"counts"`` (reached vertices) or
                ``"targets"`` (the levels of ``targets`` only).
            targets: Vertices whose levels a ``"targets"`` readback returns.
            budget_bytes: Device bytes the graph plus one traversal may use (default:
                the graph plus :data:`DEFAULT_QUERY_BUDGET`); larger query sets run as
                several traversals. Without batching only; batches use the default.
            priority: With batching, as for :meth:`bfs`.
            queue_timeout: With batching, as for :meth:`bfs` (per block).

        Returns:
            int32 rows in ``sources`` order: ``(len(sources), V)`` levels,
            ``(len(sources), len(targets))`` target levels, or ``(len(sources),)``
            counts; -1 where unreached.
        """
        self._check_open()
        kind: Literal["bfs", "khop"] = "khop" if k is not None else "bfs"
        target_ids = tuple(int(t) for t in targets)
        if self._batcher is not None:
            return await self._submit_many(
                [int(s) for s in sources], kind, k, readback, target_ids, priority, queue_timeout
            )
        queries = [
            TraversalQuery(
                id=i, source=int(s), kind=kind, k=k, readback=readback, targets=target_ids
            )
            for i, s in enumerate(sources)
        ]
        n = self._graph.num_vertices
        rows = await self._on_replica(
            lambda r: traverse_many(r, self._counters, n, queries, budget_bytes)
        )
        if not rows:
            return self._no_rows(readback, len(targets))
        return np.concatenate(rows)

    def _no_rows(self, readback: Readback, num_targets: int) -> np.ndarray:
        width = (
            ()
            if readback == "counts"
            else ((num_targets,) if readback == "targets" else (self._graph.num_vertices,))
        )
        return np.zeros((0, *width), dtype=np.int32)

    async def _submit_many(
        self,
        sources: list[int],
        kind: Literal["bfs", "khop"],
        k: int | None,
        readback: Readback,
        targets: tuple[int, ...],
        priority: int,
        queue_timeout: float | None,
    ) -> np.ndarray:
        """``bfs_many`` through the batcher: blocks of up to ``max_batch`` queries."""
        self._check_open()
        if sources and (min(sources) < 0 or max(sources) >= self._graph.num_vertices):
            # One C-level scan for the common case; the first bad source names itself.
            for source in sources:
                self._check_source(source)
        if not sources:
            return self._no_rows(readback, len(targets))
        ids = self._query_ids
        queries = tuple(
            TraversalQuery(
                id=next(ids), source=s, kind=kind, k=k, readback=readback, targets=targets
            )
            for s in sources
        )
        size = self._batching.max_batch if self._batching is not None else len(queries)
        blocks = [
            QueryBlock(queries[i : i + size], rows=True) for i in range(0, len(queries), size)
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

    def _checked(self, source: int) -> int:
        self._check_source(source)
        return int(source)

    async def _submit_one(
        self, query: TraversalQuery, priority: int, queue_timeout: float | None
    ) -> Any:
        readback = "counts" if query.kind == "reach" else "levels"
        query = msgspec.structs.replace(query, id=next(self._query_ids), readback=readback)
        return await self._submit(QueryBlock((query,), rows=False), priority, queue_timeout)

    async def _submit(self, block: QueryBlock, priority: int, queue_timeout: float | None) -> Any:
        if self._batcher is None:  # closed while the caller was on its way in
            self._check_open()
            raise RuntimeError("unreachable: an open session without its batcher")
        return await self._batcher.submit(block, priority=priority, queue_timeout=queue_timeout)

    async def _run_batch(self, blocks: Sequence[QueryBlock]) -> list[Any]:
        """The batcher's executor: on the least busy replica, another if its device is lost."""
        return await self._on_replica(lambda r: self._batch_on(r, blocks))

    async def _batch_on(self, replica: GraphReplica, blocks: Sequence[QueryBlock]) -> list[Any]:
        """One query alone, or one multi-source traversal of every block's queries."""
        first_block = blocks[0]
        first = first_block.queries[0]
        if len(blocks) == 1 and first_block.lanes == 1 and first.readback != "targets":
            # A lone query: the single-source, direction-optimizing traversal.
            max_level = first.k if first.kind == "khop" and first.k is not None else UNLIMITED
            if first.kind == "reach" or first.readback == "counts":
                count = await self._count_on(replica, first.source, max_level)
                return [np.array([count], np.int32) if first_block.rows else count]
            levels = await self._levels_on(replica, first.source, max_level)
            return [levels[None, :] if first_block.rows else await self._shape(first, levels)]
        queries = [q for block in blocks for q in block.queries]
        n = self._graph.num_vertices
        # One group per batch, so the chunks are consecutive runs of the queries in order.
        chunk_rows = await traverse_many(replica, self._counters, n, queries)
        rows = chunk_rows[0] if len(chunk_rows) == 1 else np.concatenate(chunk_rows)
        results: list[Any] = []
        for block, part in zip(blocks, split_rows(blocks, rows), strict=True):
            results.append(part if block.rows else await self._shape(block.queries[0], part[0]))
        return results

    async def _shape(self, query: TraversalQuery, row: np.ndarray) -> Any:
        if query.kind == "reach":
            return int(row)
        if query.kind == "khop":
            return await anyio.to_thread.run_sync(_reached_vertices, row)
        return row

    def stats(self) -> SessionStats:
        """What this session uploaded once and what its runs avoided, from telemetry."""
        replicas = self._replicas
        return self._counters.stats(
            sum(r.graph_bytes for r in replicas),
            sum(r.graph_allocations for r in replicas),
            copy_bytes=replicas[0].graph_bytes,
            devices=len(replicas),
            devices_lost=sum(r.lost is not None for r in replicas),
        )

    # ----------------------------------------------------------------- machinery
    def _check_source(self, source: int) -> None:
        self._check_open()
        count = self._graph.num_vertices
        if isinstance(source, bool) or not isinstance(source, (int, np.integer)):
            raise TypeError(f"source must be an int vertex id, got {type(source).__name__}")
        if not 0 <= int(source) < count:
            raise ValidationError(
                f"source vertex {source} is out of range for a graph of {count} vertices",
                fix=f"pass a vertex id in [0, {count - 1}]."
                if count
                else "the graph has no vertices.",
            )
