"""Multi-source traversals and batched queries on a real GPU, against SciPy per query."""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels

import vyre_async as va
from vyre_async.graphs import rmat


@pytest.mark.parametrize("count", [1, 63, 64, 65, 200, 1030])
async def test_bfs_many_equals_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, count: int
) -> None:
    """Every lane of GPU multi-source BFS (1..1030 queries, W up to 16) equals SciPy."""
    graph = rmat(12, 16, seed=int(rng.integers(1 << 30)))
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, count)]
    sources[-1] = sources[0]
    targets = [int(t) for t in rng.integers(0, graph.num_vertices, 7)]
    async with va.resident_graph(cuda, graph) as session:
        levels = await session.bfs_many(sources)
        counts = await session.bfs_many(sources, readback="counts")
        at_targets = await session.bfs_many(sources, readback="targets", targets=targets)
    for i, source in enumerate(sources):
        dist = scipy_levels(graph, source)
        np.testing.assert_array_equal(levels[i], dist)
        assert counts[i] == int((dist >= 0).sum())
        np.testing.assert_array_equal(at_targets[i], dist[targets])


@pytest.mark.parametrize(
    "shape", ["random_directed", "star_skewed", "long_path", "self_loops_directed"]
)
async def test_bfs_many_khop_on_gpu_graph_shapes(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """k-hop multi-source batches equal SciPy distances <= k on several shapes."""
    graph = GRAPH_SHAPES[shape](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 100)]
    async with va.resident_graph(cuda, graph) as session:
        levels = await session.bfs_many(sources, k=3)
    for row, source in zip(levels, sources, strict=True):
        dist = scipy_levels(graph, source)
        np.testing.assert_array_equal(row, np.where(dist <= 3, dist, -1))


async def test_concurrent_batched_queries_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Concurrent session.bfs calls with batching are coalesced and each is correct."""
    graph = rmat(13, 16, seed=int(rng.integers(1 << 30)))
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 256)]
    results: dict[int, np.ndarray] = {}
    async with va.resident_graph(cuda, graph, batching=va.BatchingConfig()) as session:

        async def query(i: int) -> None:
            results[i] = await session.bfs(sources[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(sources)):
                tg.start_soon(query, i)
        stats = session.batch_stats()
    assert stats is not None
    assert stats.batches < 64
    for i, source in enumerate(sources):
        np.testing.assert_array_equal(results[i], scipy_levels(graph, source))
