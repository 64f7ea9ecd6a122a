"""The analyses a session runs on one replica: traversals, PageRank, multi-source BFS.

Each runs as resident repeated sequences: a few levels (or iterations) per
submission, with only the small state word block read back between submissions,
so the host waits once per several levels and reads the full result only once.
Scratch buffers come from the replica's pools and go back to them, so steady-state
runs allocate nothing. Every run adds its telemetry delta to the session's counters.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import numpy as np

from ..algorithms import bfs, msbfs, pagerank
from ..backends import ResidentBuffer
from ._planner import TraversalShape, lane_chunks
from ._replica import GraphReplica
from ._stats import RunCounters

#: ``max_level`` of a traversal limited only by the graph.
UNLIMITED = bfs.BFS_UNLIMITED
#: Device bytes one multi-source traversal may use besides the graph, by default.
DEFAULT_QUERY_BUDGET = 4 << 30


class TraversalRun:
    """One traversal: its scratch (reused when a previous run left one) and its stats.

    Use it with ``async with``: on exit the scratch goes back to the replica's pool
    while ``keep()`` is true (the session is still open), and the run is added to
    ``counters``. A class rather than an ``asynccontextmanager``: entering and
    leaving one costs no generator round trips on a path run per traversal.
    """

    __slots__ = (
        "_before",
        "_counters",
        "_keep",
        "_num_vertices",
        "_replica",
        "_started",
        "device_ns",
        "levels_run",
        "scratch",
    )

    def __init__(
        self,
        replica: GraphReplica,
        counters: RunCounters,
        num_vertices: int,
        keep: Callable[[], bool],
    ) -> None:
        self._replica = replica
        self._counters = counters
        self._num_vertices = num_vertices
        self._keep = keep
        self.levels_run = 0
        self.device_ns = 0

    @property
    def levels(self) -> ResidentBuffer:
        """The levels buffer the traversal fills."""
        return self.scratch.levels

    async def __aenter__(self) -> TraversalRun:
        replica = self._replica
        self._before = replica.backend.activity()
        self._started = time.perf_counter_ns()
        if replica.free_bfs:  # the common case, without a coroutine round trip
            self.scratch = replica.free_bfs.pop()
            self._counters.scratch_reused += 1
        else:
            self.scratch, reused = await replica.bfs_scratch(self._num_vertices)
            self._counters.scratch_reused += reused
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        replica = self._replica
        if self._keep() and replica.lost is None:
            replica.free_bfs.append(self.scratch)
        self._counters.add_run(
            self._before,
            replica.backend.activity(),
            self.levels_run,
            time.perf_counter_ns() - self._started,
            self.device_ns,
        )


async def traverse(
    replica: GraphReplica,
    run: TraversalRun,
    source: int,
    max_level: int,
    check: Callable[[], None],
) -> np.ndarray:
    """Direction-optimizing BFS from ``source`` into ``run``; returns the state words."""
    words, run.device_ns = await bfs.traverse(
        replica.backend, replica.buffers, run.scratch, source, max_level, check
    )
    run.levels_run = int(words[bfs.STATE_LEVELS_RUN])
    return words


async def pagerank_on(
    replica: GraphReplica,
    counters: RunCounters,
    num_vertices: int,
    params: tuple[float, float, int],
    check: Callable[[], None],
    keep: Callable[[], bool],
    order: Callable[[], Awaitable[np.ndarray]],
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Pull PageRank (``params`` = damping, tol, max_iter) on one replica (into ``out``).

    ``order`` gives the shares order (:func:`.shares_order`) the first time the
    replica runs PageRank; that run also uploads it and renumbers the in-lists.
    """
    backend = replica.backend
    before = backend.activity()
    started = time.perf_counter_ns()
    inputs = await replica.pagerank_inputs(order)
    scratch, reused = await replica.pr_scratch(num_vertices)
    counters.scratch_reused += reused
    try:
        ranks, iterations, device_ns = await pagerank.run_pagerank(
            backend, replica.buffers, inputs, scratch, params, check, out
        )
    finally:
        if keep() and replica.lost is None:
            replica.free_pr.append(scratch)
    counters.add_run(
        before, backend.activity(), iterations, time.perf_counter_ns() - started, device_ns
    )
    return ranks


async def traverse_many(
    replica: GraphReplica,
    counters: RunCounters,
    num_vertices: int,
    shape: TraversalShape,
    sources: np.ndarray,
    budget_bytes: int | None = None,
) -> list[np.ndarray]:
    """Multi-source traversals of ``sources`` (int32, checked) on one replica.

    The queries are cut into consecutive chunks, so the rows of all chunks,
    concatenated, follow ``sources``.
    """
    graph_bytes = replica.graph_bytes
    chunks = lane_chunks(
        len(sources),
        shape,
        num_vertices=num_vertices,
        graph_bytes=graph_bytes,
        budget_bytes=budget_bytes
        if budget_bytes is not None
        else graph_bytes + DEFAULT_QUERY_BUDGET,
        max_words=msbfs.MSBFS_MAX_WORDS,
        first="each query",
    )
    backend = replica.backend
    before = backend.activity()
    started = time.perf_counter_ns()
    runner = msbfs.MultiSourceTraversal(backend, replica.buffers, num_vertices)
    max_level = shape.k if shape.kind == "khop" and shape.k is not None else msbfs.MSBFS_UNLIMITED
    readback = "counts" if shape.kind == "reach" else shape.readback
    rows = []
    for start, stop, words in chunks:
        scratch, reused = await replica.msbfs_scratch(
            num_vertices, (words, readback, len(shape.targets))
        )
        counters.scratch_reused += reused
        done = False
        try:
            rows.append(
                await runner.run(
                    sources[start:stop],
                    words=words,
                    max_level=max_level,
                    readback=readback,
                    targets=shape.targets,
                    scratch=scratch,
                )
            )
            done = True
        finally:
            await replica.return_msbfs(scratch, keep=done)
    counters.add_run(
        before,
        backend.activity(),
        runner.levels,
        time.perf_counter_ns() - started,
        runner.device_ns,
    )
    return rows
