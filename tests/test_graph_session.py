"""Resident-graph sessions on the CPU backend, against SciPy and a float64 power iteration."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, pagerank_float64, scipy_levels

import vyre_async as va
from vyre_async.algorithms.pagerank import shares_order
from vyre_async.graphs import CsrGraph
from vyre_async.testing import assert_no_resident_leaks, capture_logs


def _sources(rng: np.random.Generator, graph: CsrGraph, count: int = 3) -> list[int]:
    return [int(s) for s in rng.integers(0, graph.num_vertices, count)]


@pytest.mark.parametrize("shape", sorted(GRAPH_SHAPES))
async def test_bfs_levels_equal_scipy(rng: np.random.Generator, shape: str) -> None:
    """session.bfs equals SciPy's unweighted shortest paths on every graph shape."""
    graph = GRAPH_SHAPES[shape](rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for source in _sources(rng, graph):
            levels = await session.bfs(source)
            assert levels.dtype == np.int32
            np.testing.assert_array_equal(levels, scipy_levels(graph, source))


@pytest.mark.parametrize("shape", ["random_directed", "star_skewed", "long_path", "rmat_skewed"])
async def test_khop_and_reach_count_equal_scipy(rng: np.random.Generator, shape: str) -> None:
    """khop(k) is every vertex at distance <= k; reach_count counts reachable vertices."""
    graph = GRAPH_SHAPES[shape](rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for source in _sources(rng, graph):
            dist = scipy_levels(graph, source)
            k = int(rng.integers(0, 6))
            np.testing.assert_array_equal(
                await session.khop(source, k), np.flatnonzero((dist >= 0) & (dist <= k))
            )
            assert await session.reach_count(source) == int((dist >= 0).sum())


@pytest.mark.parametrize(
    "shape", ["random_directed", "self_loops_directed", "rmat_skewed", "no_edges", "single_vertex"]
)
async def test_pagerank_equals_float64_power_iteration(
    rng: np.random.Generator, shape: str
) -> None:
    """Float32 PageRank run to convergence is within 1e-5 (of the largest rank) of float64."""
    graph = GRAPH_SHAPES[shape](rng)
    damping = float(rng.uniform(0.6, 0.9))
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        ranks = await session.pagerank(damping=damping, tol=1e-12, max_iter=400)
    want = pagerank_float64(graph, damping)
    assert ranks.dtype == np.float32
    assert np.max(np.abs(ranks - want)) <= 1e-5 * np.max(want)


def test_shares_order_puts_high_out_degree_first(rng: np.random.Generator) -> None:
    """rank_of is a permutation sorting vertices by falling out-degree, ties by number."""
    degree = rng.integers(0, 6, int(rng.integers(1, 300))).astype(np.int32)
    rank_of = shares_order(degree)
    order = np.empty_like(rank_of)
    order[rank_of] = np.arange(len(degree), dtype=np.int32)  # vertex stored at each slot
    np.testing.assert_array_equal(np.sort(rank_of), np.arange(len(degree)))
    want = sorted(range(len(degree)), key=lambda v: (-int(degree[v]), v))
    np.testing.assert_array_equal(order, want)


async def test_first_pagerank_uploads_the_shares_order_once(rng: np.random.Generator) -> None:
    """The first PageRank uploads 4 bytes per vertex and keeps renumbered in-lists.

    Later runs upload and allocate nothing more; the ranks stay right.
    """
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    n, scratch = (
        graph.num_vertices,
        3 * 4 * graph.num_vertices + 4 * va.algorithms.pagerank.PR_STATE_WORDS,
    )
    async with va.open_backend("cpu") as backend:
        async with va.resident_graph(backend, graph) as session:
            live = backend.telemetry().resident_bytes_live
            first = await session.pagerank(tol=1e-9, max_iter=300)
            after_first = (session.stats().bytes_uploaded_by_runs, backend.telemetry())
            second = await session.pagerank(tol=1e-9, max_iter=300)
            after_second = (session.stats().bytes_uploaded_by_runs, backend.telemetry())
        assert_no_resident_leaks(backend.telemetry())
    assert after_first[0] == after_second[0] == 4 * n
    # Ranks, shares and state; the order; the renumbered in-lists.
    added = after_first[1].resident_bytes_live - live
    assert added == scratch + 4 * n + 4 * graph.num_edges
    assert after_second[1].resident_bytes_live == after_first[1].resident_bytes_live
    want = pagerank_float64(graph, 0.85)
    for ranks in (first, second):
        assert np.max(np.abs(ranks - want)) <= 1e-5 * np.max(want)


async def test_pagerank_keeps_the_graph_order_when_the_renumbered_copy_does_not_fit(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of memory for the renumbered in-lists: a warning, then correct ranks anyway."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    async with va.open_backend("cpu") as backend:
        real_alloc = backend.alloc
        edge_bytes = 4 * graph.num_edges

        async def failing_alloc(nbytes: int, dtype: Any = np.uint8) -> va.ResidentBuffer:
            if nbytes == edge_bytes:
                raise va.OutOfMemoryError("injected", fix="none: this is a test.")
            return await real_alloc(nbytes, dtype)

        async with va.resident_graph(backend, graph) as session:
            monkeypatch.setattr(backend, "alloc", failing_alloc)
            with capture_logs() as logs:
                ranks = await session.pagerank(tol=1e-9, max_iter=300)
        assert_no_resident_leaks(backend.telemetry())
    assert graph.num_edges != graph.num_vertices  # the injected size hits only the copy
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["pagerank_in_graph_order"]
    want = pagerank_float64(graph, 0.85)
    assert np.max(np.abs(ranks - want)) <= 1e-5 * np.max(want)


async def test_runs_reuse_the_upload_and_sync_less_than_once_per_level(
    rng: np.random.Generator,
) -> None:
    """Many runs: one upload, one allocation, reused scratch, fewer syncs than levels."""
    graph = GRAPH_SHAPES["long_path"](rng)
    async with va.open_backend("cpu") as backend:
        async with va.resident_graph(backend, graph) as session:
            for _ in range(5):
                await session.bfs(0)
            await session.reach_count(0)
            stats = session.stats()
        assert_no_resident_leaks(backend.telemetry())
    assert stats.graph_allocations == 1
    assert stats.graph_bytes_uploaded >= graph.indices.nbytes
    assert (stats.runs, stats.uploads_avoided) == (6, 6)
    assert stats.allocations_avoided == 5
    assert stats.bytes_uploaded_by_runs == 0
    assert stats.levels == 6 * 300
    assert stats.host_syncs_per_level < 0.1
    assert stats.host_syncs_per_run < 12


async def test_concurrent_queries_each_get_their_own_levels(rng: np.random.Generator) -> None:
    """Many tasks running bfs at once on one session each get their own correct result."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = _sources(rng, graph, 24)
    results: dict[int, np.ndarray] = {}
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:

        async def query(i: int) -> None:
            results[i] = await session.bfs(sources[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(sources)):
                tg.start_soon(query, i)
    for i, source in enumerate(sources):
        np.testing.assert_array_equal(results[i], scipy_levels(graph, source))


async def test_bad_sources_and_closed_sessions_are_refused(rng: np.random.Generator) -> None:
    """Out-of-range sources raise ValidationError; a closed session raises LifecycleError."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    async with va.open_backend("cpu") as backend:
        async with va.resident_graph(backend, graph) as session:
            for bad in (-1, graph.num_vertices):
                with pytest.raises(va.ValidationError, match=rf"{bad} is out of range.*Fix:"):
                    await session.bfs(bad)
            with pytest.raises(va.ValidationError, match="Fix:"):
                await session.khop(0, -2)
            with pytest.raises(va.ValidationError, match="Fix:"):
                await session.pagerank(damping=1.5)
        with pytest.raises(va.LifecycleError, match=r"closed.*Fix:"):
            await session.bfs(0)
        with pytest.raises(va.LifecycleError, match="cannot be opened again"):
            async with session:
                pass
        assert_no_resident_leaks(backend.telemetry())


async def test_cancelled_query_leaves_session_usable_and_frees_on_exit(
    rng: np.random.Generator,
) -> None:
    """Cancelling a running bfs leaves the session usable; exit frees everything."""
    graph = GRAPH_SHAPES["long_path"](rng)
    async with va.open_backend("cpu") as backend:
        async with va.resident_graph(backend, graph) as session:
            with anyio.move_on_after(0.001):
                await session.bfs(0)
            np.testing.assert_array_equal(await session.bfs(5), scipy_levels(graph, 5))
        assert_no_resident_leaks(backend.telemetry())


@pytest.mark.parametrize("batching", [False, True], ids=["direct", "batched"])
async def test_bfs_into_out_equals_scipy_and_refuses_a_misfit(
    rng: np.random.Generator, batching: bool
) -> None:
    """bfs(out=...) fills and returns the caller's array; a misfit is refused up front."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    n = graph.num_vertices
    config = va.BatchingConfig() if batching else None
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):
        out = np.full(n, 7_777_777, np.int32)  # poisoned
        for source in _sources(rng, graph):
            got = await session.bfs(source, out=out)
            assert got is out
            np.testing.assert_array_equal(out, scipy_levels(graph, source))
        for misfit in (
            np.zeros(n, np.int64),
            np.zeros(n + 1, np.int32),
            np.zeros(n, np.int32)[::-1],
        ):
            with pytest.raises(va.ValidationError, match="Fix: "):
                await session.bfs(0, out=misfit)


async def test_pagerank_into_out_equals_the_reference_and_refuses_a_misfit(
    rng: np.random.Generator,
) -> None:
    """pagerank(out=...) fills and returns the caller's float32 array."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    n = graph.num_vertices
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        out = np.full(n, np.nan, np.float32)  # poisoned
        got = await session.pagerank(damping=0.85, tol=1e-12, max_iter=400, out=out)
        assert got is out
        want = pagerank_float64(graph, 0.85)
        assert np.max(np.abs(out - want)) <= 1e-5 * np.max(want)
        for misfit in (np.zeros(n, np.float64), np.zeros(n - 1, np.float32)):
            with pytest.raises(va.ValidationError, match="Fix: "):
                await session.pagerank(out=misfit)
