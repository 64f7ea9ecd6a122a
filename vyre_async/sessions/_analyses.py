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

from ..backends import ResidentBuffer, SequenceStep
from ..kernels import MSBFS_MAX_WORDS, _bfs, _pagerank
from ._multi_query import MultiSourceTraversal
from ._planner import TraversalShape, lane_chunks
from ._repeat import prepare_batches, run_prepared, run_until_done
from ._replica import BfsScratch, GraphReplica
from ._stats import RunCounters

#: ``max_level`` of a traversal limited only by the graph.
UNLIMITED = _bfs.BFS_UNLIMITED
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


def _level_steps(replica: GraphReplica, scratch: BfsScratch) -> list[SequenceStep]:
    """One direction-optimizing level: top-down, bottom-up, then the switch and advance."""
    b = replica.buffers
    levels, state = scratch.levels, scratch.state
    return [
        SequenceStep(
            _bfs.bfs_top_down,
            {"offsets": b["offsets"], "indices": b["indices"], "levels": levels, "state": state},
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
        SequenceStep(_bfs.bfs_advance, {"levels": levels, "state": state}, {"bottom_up": 1}),
    ]


async def traverse(
    replica: GraphReplica,
    run: TraversalRun,
    source: int,
    max_level: int,
    check: Callable[[], None],
) -> np.ndarray:
    """Direction-optimizing BFS from ``source`` into ``run``; returns the state words."""
    scratch = run.scratch
    check()
    if scratch.first is None or scratch.more is None:
        init = SequenceStep(
            _bfs.bfs_init,
            {"levels": scratch.levels, "state": scratch.state},
            {"source": 0, "max_level": UNLIMITED},
        )
        scratch.first, scratch.more = prepare_batches(
            replica.backend, [init], _level_steps(replica, scratch), scratch.state
        )
    words, run.device_ns = await run_prepared(
        scratch.first,
        scratch.more,
        _bfs.STATE_DONE,
        scalars={"source": int(source), "max_level": max_level},
        check=check,
    )
    run.levels_run = int(words[_bfs.STATE_LEVELS_RUN])
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
    damping, tol, max_iter = params
    backend = replica.backend
    before = backend.activity()
    started = time.perf_counter_ns()
    inputs = await replica.pagerank_inputs(order)
    scratch, reused = await replica.pr_scratch(num_vertices)
    counters.scratch_reused += reused
    rank_a, rank_b, contrib, pr_state = scratch
    b = replica.buffers

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
                    "in_indices": inputs.in_indices,
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
                    "rank_of": inputs.rank_of,
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
                "rank_of": inputs.rank_of,
                "pr_state": pr_state,
            },
            {"tol": tol, "max_iter": max_iter},
        )
    ]
    try:
        words, device_ns = await run_until_done(
            backend,
            prefix,
            half(rank_a, rank_b) + half(rank_b, rank_a),
            pr_state,
            _pagerank.STATE_DONE,
            check=check,
        )
        iterations = int(words[_pagerank.STATE_ITERATIONS])
        ranks = await backend.read(rank_b if iterations % 2 else rank_a, out=out)
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
        max_words=MSBFS_MAX_WORDS,
        first="each query",
    )
    backend = replica.backend
    before = backend.activity()
    started = time.perf_counter_ns()
    runner = MultiSourceTraversal(backend, replica.buffers, num_vertices)
    rows = [await runner.run(shape, sources[start:stop], words) for start, stop, words in chunks]
    counters.add_run(
        before,
        backend.activity(),
        runner.levels,
        time.perf_counter_ns() - started,
        runner.device_ns,
    )
    return rows
