"""Resident-graph sessions: upload a graph once, run many analyses over it.

The graph's CSR arrays (and, for a directed graph, its transpose, which bottom-up
BFS and pull PageRank read) go to the device in one ``upload_group``: one
allocation, one transfer. Each analysis then runs as resident repeated sequences:
a few levels (or iterations) per submission, with only the small state word block
read back between submissions, so the host waits once per several levels and reads
the full result only once, and only what the caller asked for.

Scratch buffers (levels, ranks, state) are kept per session and reused by the next
run, so steady-state runs allocate nothing.
"""

from __future__ import annotations

import enum
import itertools
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Annotated, Any, Literal, Self

import anyio
import msgspec
import numpy as np

from ..backends import (
    Backend,
    BackendState,
    ResidentBuffer,
    SequenceStep,
)
from ..errors import LifecycleError, OutOfMemoryError, ValidationError
from ..graphs import CsrGraph
from ..kernels import MSBFS_MAX_WORDS, _bfs, _pagerank
from ._batch_stats import BatcherStats
from ._batcher import DynamicBatcher
from ._multi_query import MultiSourceTraversal
from ._planner import Readback, TraversalQuery, plan_multi_query
from ._query_block import QueryBlock, block_group, block_lanes, split_rows
from ._repeat import run_until_done
from ._stats import RunCounters, SessionStats

_UNLIMITED = _bfs.BFS_UNLIMITED
#: Device bytes one multi-source traversal may use besides the graph, by default.
DEFAULT_QUERY_BUDGET = 4 << 30


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


class _Run:
    """One traversal's scratch buffers and how many levels it ran."""

    __slots__ = ("device_ns", "levels", "levels_run", "state")

    def __init__(self, levels: ResidentBuffer, state: ResidentBuffer) -> None:
        self.levels = levels
        self.state = state
        self.levels_run = 0
        self.device_ns = 0


class SessionState(enum.Enum):
    """Lifecycle of a session."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


class ResidentGraphSession:
    """A graph resident on one backend, analysed again and again without re-uploading.

    Made by :meth:`Backend.resident_graph` (an async context manager); every method
    raises :class:`LifecycleError` outside it.

    With ``batching``, concurrent ``bfs`` / ``khop`` / ``reach_count`` calls queue
    into a :class:`DynamicBatcher` and run together as multi-source traversals; a
    lone call still runs the single-source, direction-optimizing traversal.

    Args:
        backend: An open backend.
        graph: The graph; it is not copied on the host, only uploaded.
        batching: Coalesce concurrent queries (``None``: every call runs alone).
    """

    def __init__(
        self, backend: Backend, graph: CsrGraph, *, batching: BatchingConfig | None = None
    ) -> None:
        if not isinstance(graph, CsrGraph):
            raise TypeError(f"resident_graph takes a CsrGraph, got {type(graph).__name__}")
        self._backend = backend
        self._graph = graph
        self._state = SessionState.UNOPENED
        self._buffers: dict[str, ResidentBuffer] = {}
        self._free_bfs: list[tuple[ResidentBuffer, ResidentBuffer]] = []
        self._free_pr: list[tuple[ResidentBuffer, ...]] = []
        self._scratch: list[ResidentBuffer] = []
        self._counters = RunCounters()
        self._graph_bytes = 0
        self._graph_allocations = 0
        self._batching = batching
        self._batcher: DynamicBatcher[QueryBlock, Any] | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._query_ids = itertools.count()

    # ----------------------------------------------------------------- lifecycle
    @property
    def graph(self) -> CsrGraph:
        """The graph this session holds."""
        return self._graph

    @property
    def state(self) -> SessionState:
        """Unopened, open or closed."""
        return self._state

    async def __aenter__(self) -> Self:
        if self._state is not SessionState.UNOPENED:
            raise LifecycleError(
                f"this resident-graph session is {self._state.value} and cannot be opened again",
                fix="open a new one with backend.resident_graph(graph).",
            )
        self._state = SessionState.OPEN
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
        if self._state is SessionState.CLOSED:
            return
        if self._batcher is not None and self._task_group is not None:
            # Queued queries still run (the session is open for them), then the
            # batcher's task ends and its task group exits.
            batcher, task_group = self._batcher, self._task_group
            self._batcher = self._task_group = None
            with anyio.CancelScope(shield=True):
                await batcher.aclose()
            await task_group.__aexit__(None, None, None)
        self._state = SessionState.CLOSED
        buffers = list({b.id: b for b in (*self._buffers.values(), *self._scratch)}.values())
        self._buffers.clear()
        self._scratch.clear()
        self._free_bfs.clear()
        self._free_pr.clear()
        if self._backend.state is not BackendState.OPEN:
            return  # the backend freed everything when it closed
        with anyio.CancelScope(shield=True):
            # A cancelled query's sequence may still be running on these buffers.
            await self._backend.settle(buffers)
            for buffer in buffers:
                await self._backend.free(buffer)

    def _check_open(self) -> None:
        if self._state is not SessionState.OPEN:
            raise LifecycleError(
                f"this resident-graph session is {self._state.value}",
                fix="use it inside `async with backend.resident_graph(graph) as session:`.",
            )

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
        graph = self._graph
        # Widening offsets and transposing take seconds on large graphs: not on the loop.
        arrays = await anyio.to_thread.run_sync(self._device_arrays)
        needed = sum(a.nbytes for a in arrays.values())
        before = self._backend.telemetry()
        try:
            buffers = await self._backend.upload_group(list(arrays.values()))
        except OutOfMemoryError as exc:
            raise OutOfMemoryError(
                f"the graph ({graph.num_vertices} vertices, {graph.num_edges} edges) needs "
                f"{needed} bytes on {self._backend.device_name}, which could not be "
                f"allocated ({exc.what})",
                fix="use a smaller graph or a device with more memory, or free other "
                "resident buffers first.",
            ) from exc
        after = self._backend.telemetry()
        self._buffers = dict(zip(arrays, buffers, strict=True))
        if graph.symmetric:
            self._buffers["in_offsets"] = self._buffers["offsets"]
            self._buffers["in_indices"] = self._buffers["indices"]
        self._graph_bytes = after.bytes_uploaded - before.bytes_uploaded
        self._graph_allocations = after.resident_allocations - before.resident_allocations

    # ----------------------------------------------------------------- analyses
    async def bfs(
        self, source: int, *, priority: int = 0, queue_timeout: float | None = None
    ) -> np.ndarray:
        """BFS levels from ``source``: int32, 0 at the source, -1 where unreachable.

        Direction-optimizing: levels switch to bottom-up when the frontier is large.
        With batching, concurrent calls share multi-source traversals.

        Args:
            source: Source vertex.
            priority: With batching, higher priorities join batches first (FIFO
                within a priority); ignored without batching.
            queue_timeout: With batching, seconds the query may wait in the queue
                before it is rejected with DispatchError; ignored without batching.
        """
        if self._batcher is not None:
            query = TraversalQuery(id=0, source=self._checked(source))
            levels: np.ndarray = await self._submit_one(query, priority, queue_timeout)
            return levels
        async with self._bfs_run(source) as run:
            await self._traverse(run, source, _UNLIMITED)
            return await self._backend.read(run.levels)

    async def khop(
        self, source: int, k: int, *, priority: int = 0, queue_timeout: float | None = None
    ) -> np.ndarray:
        """Vertices within ``k`` hops of ``source`` (the source included), sorted int32.

        ``priority`` and ``queue_timeout`` apply with batching, as for :meth:`bfs`.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be a non-negative int, got {k!r}", fix="pass k >= 0.")
        if self._batcher is not None:
            query = TraversalQuery(id=0, source=self._checked(source), kind="khop", k=k)
            vertices: np.ndarray = await self._submit_one(query, priority, queue_timeout)
            return vertices
        async with self._bfs_run(source) as run:
            await self._traverse(run, source, k)
            result = await self._backend.read(run.levels)
        return await anyio.to_thread.run_sync(_reached_vertices, result)

    async def reach_count(
        self, source: int, *, priority: int = 0, queue_timeout: float | None = None
    ) -> int:
        """How many vertices ``source`` reaches (itself included); reads back 32 bytes.

        ``priority`` and ``queue_timeout`` apply with batching, as for :meth:`bfs`.
        """
        if self._batcher is not None:
            query = TraversalQuery(id=0, source=self._checked(source), kind="reach")
            return int(await self._submit_one(query, priority, queue_timeout))
        async with self._bfs_run(source) as run:
            words = await self._traverse(run, source, _UNLIMITED)
        return int(words[_bfs.STATE_REACHED])

    async def pagerank(
        self, damping: float = 0.85, tol: float = 1e-6, max_iter: int = 100
    ) -> np.ndarray:
        """PageRank by pull iteration in float32; dangling mass spread uniformly.

        Args:
            damping: Probability of following an edge, in (0, 1).
            tol: Stop once the L1 change of one iteration is below ``tol``.
            max_iter: Stop after this many iterations at the latest.

        Returns:
            float32 ranks summing to 1.
        """
        self._check_open()
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
        before = self._backend.telemetry()
        started = time.perf_counter_ns()
        rank_a, rank_b, contrib, pr_state = await self._take_pr_scratch()
        run = _Run(rank_a, pr_state)
        try:
            b = self._buffers

            def half(src: ResidentBuffer, dst: ResidentBuffer) -> list[SequenceStep]:
                # dst arrives zeroed (pr_init, or the previous pr_update clearing it).
                return [
                    SequenceStep(
                        _pagerank.pr_dangling,
                        {"rank": src, "out_degree": b["out_degree"], "pr_state": pr_state},
                    ),
                    SequenceStep(
                        _pagerank.pr_gather,
                        {
                            "in_offsets": b["in_offsets"],
                            "in_indices": b["in_indices"],
                            "contrib": contrib,
                            "sums": dst,
                            "pr_state": pr_state,
                        },
                    ),
                    SequenceStep(
                        _pagerank.pr_update,
                        {
                            "rank_in": src,
                            "rank_out": dst,
                            "out_degree": b["out_degree"],
                            "contrib": contrib,
                            "pr_state": pr_state,
                        },
                        {"damping": damping},
                    ),
                    SequenceStep(_pagerank.pr_check, {"pr_state": pr_state}),
                ]

            prefix = [
                SequenceStep(
                    _pagerank.pr_init,
                    {
                        "rank": rank_a,
                        "other": rank_b,
                        "contrib": contrib,
                        "out_degree": b["out_degree"],
                        "pr_state": pr_state,
                    },
                    {"tol": tol, "max_iter": max_iter},
                )
            ]
            body = half(rank_a, rank_b) + half(rank_b, rank_a)
            words, run.device_ns = await run_until_done(
                self._backend, prefix, body, pr_state, _pagerank.STATE_DONE, check=self._check_open
            )
            iterations = int(words[_pagerank.STATE_ITERATIONS])
            ranks = await self._backend.read(rank_b if iterations % 2 else rank_a)
        finally:
            self._free_pr.append((rank_a, rank_b, contrib, pr_state))
        self._counters.add_run(
            before,
            self._backend.telemetry(),
            iterations,
            time.perf_counter_ns() - started,
            run.device_ns,
        )
        return ranks

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
        graph_bytes = self._graph_bytes
        budget = budget_bytes if budget_bytes is not None else graph_bytes + DEFAULT_QUERY_BUDGET
        plan = plan_multi_query(
            queries,
            num_vertices=self._graph.num_vertices,
            graph_bytes=graph_bytes,
            budget_bytes=budget,
            max_words=MSBFS_MAX_WORDS,
        )
        before = self._backend.telemetry()
        started = time.perf_counter_ns()
        runner = MultiSourceTraversal(self._backend, self._buffers, self._graph.num_vertices)
        rows = [await runner.run(chunk) for chunk in plan.chunks]
        self._counters.add_run(
            before,
            self._backend.telemetry(),
            runner.levels,
            time.perf_counter_ns() - started,
            runner.device_ns,
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
        """The batcher's executor: one query alone, or one multi-source traversal."""
        first_block = blocks[0]
        first = first_block.queries[0]
        if len(blocks) == 1 and first_block.lanes == 1 and first.readback != "targets":
            # A lone query: the single-source, direction-optimizing traversal.
            max_level = first.k if first.kind == "khop" and first.k is not None else _UNLIMITED
            async with self._bfs_run(first.source) as run:
                words = await self._traverse(run, first.source, max_level)
                if first.kind == "reach" or first.readback == "counts":
                    count = int(words[_bfs.STATE_REACHED])
                    return [np.array([count], np.int32) if first_block.rows else count]
                levels = await self._backend.read(run.levels)
            return [levels[None, :] if first_block.rows else await self._shape(first, levels)]
        before = self._backend.telemetry()
        started = time.perf_counter_ns()
        plan = plan_multi_query(
            [q for block in blocks for q in block.queries],
            num_vertices=self._graph.num_vertices,
            graph_bytes=self._graph_bytes,
            budget_bytes=self._graph_bytes + DEFAULT_QUERY_BUDGET,
            max_words=MSBFS_MAX_WORDS,
        )
        runner = MultiSourceTraversal(self._backend, self._buffers, self._graph.num_vertices)
        # One group per batch, so the chunks are consecutive runs of the queries in order.
        chunk_rows = [await runner.run(chunk) for chunk in plan.chunks]
        self._counters.add_run(
            before,
            self._backend.telemetry(),
            runner.levels,
            time.perf_counter_ns() - started,
            runner.device_ns,
        )
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
        return self._counters.stats(self._graph_bytes, self._graph_allocations)

    # ----------------------------------------------------------------- machinery
    def _check_source(self, source: int) -> None:
        self._check_open()
        count = self._graph.num_vertices
        if isinstance(source, bool) or not isinstance(source, int | np.integer):
            raise TypeError(f"source must be an int vertex id, got {type(source).__name__}")
        if not 0 <= int(source) < count:
            raise ValidationError(
                f"source vertex {source} is out of range for a graph of {count} vertices",
                fix=f"pass a vertex id in [0, {count - 1}]."
                if count
                else "the graph has no vertices.",
            )

    @asynccontextmanager
    async def _bfs_run(self, source: int) -> AsyncIterator[_Run]:
        """Scratch for one traversal (reused when a previous run left one), and its stats."""
        self._check_source(source)
        before = self._backend.telemetry()
        started = time.perf_counter_ns()
        if self._free_bfs:
            levels, state = self._free_bfs.pop()
            self._counters.scratch_reused += 1
        else:
            levels = await self._backend.alloc(4 * self._graph.num_vertices, np.int32)
            state = await self._backend.alloc(4 * _bfs.STATE_WORDS, np.int32)
            self._scratch += [levels, state]
        run = _Run(levels, state)
        try:
            yield run
        finally:
            if self._state is SessionState.OPEN:
                self._free_bfs.append((levels, state))
        self._counters.add_run(
            before,
            self._backend.telemetry(),
            run.levels_run,
            time.perf_counter_ns() - started,
            run.device_ns,
        )

    async def _take_pr_scratch(self) -> tuple[ResidentBuffer, ...]:
        """Two rank buffers, the shares buffer and the state (reused when one is free)."""
        if self._free_pr:
            self._counters.scratch_reused += 1
            return self._free_pr.pop()
        nbytes = 4 * self._graph.num_vertices
        buffers = [await self._backend.alloc(nbytes, np.float32) for _ in range(3)]
        buffers.append(await self._backend.alloc(4 * _pagerank.STATE_WORDS, np.float32))
        self._scratch += buffers
        return tuple(buffers)

    async def _traverse(self, run: _Run, source: int, max_level: int) -> np.ndarray:
        b = self._buffers
        levels, state = run.levels, run.state
        bottom_up = 1
        prefix = [
            SequenceStep(
                _bfs.bfs_init,
                {"levels": levels, "state": state},
                {"source": int(source), "max_level": max_level},
            )
        ]
        body = [
            SequenceStep(
                _bfs.bfs_top_down,
                {
                    "offsets": b["offsets"],
                    "indices": b["indices"],
                    "levels": levels,
                    "state": state,
                },
            ),
            SequenceStep(
                _bfs.bfs_bottom_up,
                {
                    "in_offsets": b["in_offsets"],
                    "in_indices": b["in_indices"],
                    "levels": levels,
                    "state": state,
                },
            ),
            SequenceStep(
                _bfs.bfs_advance,
                {"levels": levels, "state": state},
                {"bottom_up": bottom_up},
            ),
        ]
        words, run.device_ns = await run_until_done(
            self._backend, prefix, body, state, _bfs.STATE_DONE, check=self._check_open
        )
        run.levels_run = int(words[_bfs.STATE_LEVELS_RUN])
        return words
