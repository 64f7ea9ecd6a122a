"""Resident-graph sessions on a real GPU, against SciPy and a float64 power iteration."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, pagerank_float64, scipy_levels

import vyre_async as va
from vyre_async.graphs import rmat


@pytest.mark.parametrize("shape", sorted(GRAPH_SHAPES))
async def test_bfs_khop_reach_equal_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """GPU bfs/khop/reach_count equal SciPy's shortest paths on every graph shape."""
    graph = GRAPH_SHAPES[shape](rng)
    async with va.resident_graph(cuda, graph) as session:
        for source in rng.integers(0, graph.num_vertices, 3):
            dist = scipy_levels(graph, int(source))
            np.testing.assert_array_equal(await session.bfs(int(source)), dist)
            k = int(rng.integers(0, 5))
            np.testing.assert_array_equal(
                await session.khop(int(source), k), np.flatnonzero((dist >= 0) & (dist <= k))
            )
            assert await session.reach_count(int(source)) == int((dist >= 0).sum())


async def test_bfs_on_large_rmat_uses_both_directions(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """A scale-16 R-MAT BFS (bottom-up levels included) equals SciPy."""
    graph = rmat(16, 16, seed=int(rng.integers(1 << 30)))
    async with va.resident_graph(cuda, graph) as session:
        for source in rng.integers(0, graph.num_vertices, 4):
            np.testing.assert_array_equal(
                await session.bfs(int(source)), scipy_levels(graph, int(source))
            )


@pytest.mark.parametrize(
    "shape",
    [
        "random_directed",
        "self_loops_directed",
        "rmat_skewed",
        "star_skewed",
        "no_edges",
        "single_vertex",
    ],
)
async def test_pagerank_equals_float64_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """GPU PageRank is within 1e-5 (relative to the largest rank) of float64."""
    graph = GRAPH_SHAPES[shape](rng)
    damping = float(rng.uniform(0.6, 0.9))
    async with va.resident_graph(cuda, graph) as session:
        ranks = await session.pagerank(damping=damping, tol=1e-12, max_iter=400)
    want = pagerank_float64(graph, damping)
    assert np.max(np.abs(ranks - want)) <= 1e-5 * np.max(want)


async def test_pagerank_of_a_large_rmat_equals_float64_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Scale 16: hubs cut over many gather chunks, shares renumbered by degree."""
    graph = rmat(16, 16, seed=int(rng.integers(1 << 30)))
    damping = float(rng.uniform(0.6, 0.9))
    async with va.resident_graph(cuda, graph) as session:
        ranks = await session.pagerank(damping=damping, tol=1e-12, max_iter=300)
        assert session.stats().bytes_uploaded_by_runs == 4 * graph.num_vertices
    want = pagerank_float64(graph, damping)
    assert np.max(np.abs(ranks - want)) <= 1e-5 * np.max(want)


async def test_pagerank_in_graph_order_when_the_renumbered_copy_does_not_fit(
    cuda: va.Backend, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of memory for the renumbered in-lists: PageRank runs on the graph's order."""
    graph = rmat(14, 8, seed=int(rng.integers(1 << 30)))
    real_alloc = cuda.alloc

    async def failing_alloc(nbytes: int, dtype: Any = np.uint8) -> va.ResidentBuffer:
        if nbytes == 4 * graph.num_edges:
            raise va.OutOfMemoryError("injected", fix="none: this is a test.")
        return await real_alloc(nbytes, dtype)

    async with va.resident_graph(cuda, graph) as session:
        live = cuda.telemetry().resident_bytes_live
        monkeypatch.setattr(cuda, "alloc", failing_alloc)
        ranks = await session.pagerank(damping=0.85, tol=1e-12, max_iter=300)
        added = cuda.telemetry().resident_bytes_live - live
    assert added < 4 * graph.num_edges  # no renumbered copy was made
    want = pagerank_float64(graph, 0.85)
    assert np.max(np.abs(ranks - want)) <= 1e-5 * np.max(want)


async def test_session_stats_show_one_upload_and_few_syncs(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Runs on the GPU reuse the upload and sync far less than once per level."""
    graph = GRAPH_SHAPES["long_path"](rng)
    async with va.resident_graph(cuda, graph) as session:
        for _ in range(4):
            await session.bfs(0)
        stats = session.stats()
    assert stats.graph_allocations == 1
    assert stats.uploads_avoided == 4
    assert stats.bytes_uploaded_by_runs == 0
    assert stats.host_syncs_per_level < 0.1
    assert 0 < stats.device_ns < stats.wall_ns


async def test_graph_larger_than_the_memory_cap_is_refused_with_sizes(
    rng: np.random.Generator,
) -> None:
    """A graph over the device-memory cap raises OutOfMemoryError naming its size."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    async with va.open_backend("cuda", max_device_bytes=4096) as backend:
        with pytest.raises(va.OutOfMemoryError, match=r"needs \d+ bytes.*Fix:"):
            async with va.resident_graph(backend, graph):
                pass
        assert backend.telemetry().resident_buffers_live == 0


async def test_cancelled_gpu_query_leaves_session_usable(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Cancelling a running GPU bfs leaves the session usable and frees all on exit."""
    graph = GRAPH_SHAPES["long_path"](rng)
    async with va.resident_graph(cuda, graph) as session:
        with anyio.move_on_after(0.0005):
            await session.bfs(0)
        np.testing.assert_array_equal(await session.bfs(7), scipy_levels(graph, 7))


async def test_repeated_traversal_bodies_replay_one_captured_cuda_graph(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """The second traversal replays the first one's captured body; results equal SciPy."""
    graph = rmat(12, 8, seed=int(rng.integers(1 << 30)))
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 5)]
    async with va.resident_graph(cuda, graph) as session:
        first = cuda.telemetry()
        counts = [await session.reach_count(s) for s in sources]
        last = cuda.telemetry()
    assert last.graphs_captured - first.graphs_captured >= 1
    assert last.graph_replays - first.graph_replays >= len(sources) - 1
    for source, count in zip(sources, counts, strict=True):
        assert count == int((scipy_levels(graph, source) >= 0).sum())
