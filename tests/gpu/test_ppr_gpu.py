"""Personalized PageRank on a real GPU against a float64 power iteration: every column
width the kernels take, top k, a dense personalization, batches and passes."""

from __future__ import annotations

import contextlib

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES
from ppr_references import (
    TIGHT,
    assert_ranks_match,
    assert_top_k_match,
    ppr_float64,
    teleports,
)

import vyre_async as va
from vyre_async.algorithms import ppr
from vyre_async.graphs import CsrGraph, rmat

# As in test_sssp_gpu: load CuPy (where installed) at collection, not inside the loop.
with contextlib.suppress(ImportError):
    import cupy  # noqa: F401


def _directed_rmat(rng: np.random.Generator, scale: int) -> CsrGraph:
    """R-MAT with each undirected edge kept in one direction, drawn at random: hubs,
    vertices without out-edges and vertices without in-edges."""
    graph = rmat(scale, 16, seed=int(rng.integers(1 << 30)))
    src = np.repeat(np.arange(graph.num_vertices), np.diff(graph.offsets))
    keep = (src < graph.indices) == (rng.random(src.size) < 0.5)
    return CsrGraph.from_edges(src[keep], graph.indices[keep], graph.num_vertices)


@pytest.mark.parametrize("count", [1, 3, 40, 200])
@pytest.mark.parametrize("directed", [True, False])
async def test_ppr_many_equals_float64_at_every_width_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, count: int, directed: bool
) -> None:
    """1, 3, 40 and 200 seeds (widths 1, 4, 64 and 256: narrow slots, 32-column tiles,
    float4 tiles) on a scale-13 R-MAT: ranks and top k against the float64 reference."""
    graph = _directed_rmat(rng, 13) if directed else rmat(13, 16, seed=int(rng.integers(1 << 30)))
    seeds = rng.integers(0, graph.num_vertices, count)
    want = ppr_float64(graph, teleports(graph.num_vertices, seeds))
    async with va.resident_graph(cuda, graph) as session:
        ranks = await session.ppr_many(seeds, **TIGHT)
        top = await session.ppr_many(seeds, top_k=20, **TIGHT)
    assert isinstance(ranks, np.ndarray)
    assert_ranks_match(ranks, want)
    assert isinstance(top, ppr.TopRanks)
    assert_top_k_match(top.vertices, top.ranks, want)


@pytest.mark.parametrize(
    "shape", ["self_loops_directed", "disconnected", "star_skewed", "no_edges"]
)
async def test_ppr_and_personalized_pagerank_equal_float64_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """ppr(seed) and pagerank(personalization=weights) on small shapes, against float64."""
    graph = GRAPH_SHAPES[shape](rng)
    n = graph.num_vertices
    seed = int(rng.integers(n))
    weights = rng.random(n) * (rng.random(n) < 0.4)
    weights[seed] = 1.0
    async with va.resident_graph(cuda, graph) as session:
        one = await session.ppr(seed, **TIGHT)
        dense = await session.pagerank(personalization=weights, **TIGHT)
    assert_ranks_match(one, ppr_float64(graph, teleports(n, [seed]))[0])
    personal = (weights / weights.sum())[:, None]
    assert_ranks_match(dense, ppr_float64(graph, personal)[0])


async def test_top_k_ties_go_to_the_smaller_vertex_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """A hub's leaves rank exactly alike: the device select takes the smallest ids."""
    n = 5000
    hub = int(rng.integers(n))
    leaves = rng.choice(np.setdiff1d(np.arange(n), [hub]), 300, replace=False)
    graph = CsrGraph.from_edges(np.full(300, hub), leaves, n, symmetric=True)
    async with va.resident_graph(cuda, graph) as session:
        found = await session.ppr_many([hub] * 5, top_k=100)
    assert isinstance(found, ppr.TopRanks)
    np.testing.assert_array_equal(found.vertices[:, 0], [hub] * 5)
    np.testing.assert_array_equal(found.vertices[:, 1:], np.tile(np.sort(leaves)[:99], (5, 1)))


async def test_batched_ppr_calls_and_budget_cut_passes_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """64 concurrent callers share batches; 300 seeds in passes of 128 give the same ranks."""
    graph = _directed_rmat(rng, 12)
    n = graph.num_vertices
    seeds = [int(s) for s in rng.integers(0, n, 300)]
    want = ppr_float64(graph, teleports(n, seeds))
    got: dict[int, np.ndarray] = {}
    config = va.BatchingConfig(max_batch=64, max_delay=0.05)
    async with va.resident_graph(cuda, graph, batching=config) as session:

        async def one(i: int) -> None:
            found = await session.ppr(seeds[i], **TIGHT)
            assert isinstance(found, np.ndarray)
            got[i] = found

        async with anyio.create_task_group() as tg:
            for i in range(64):
                tg.start_soon(one, i)
        stats = session.batch_stats()
    assert stats is not None
    assert stats.batches < 64
    assert_ranks_match(np.stack([got[i] for i in range(64)]), want[:64])
    async with va.resident_graph(cuda, graph) as session:
        budget = session.stats().graph_bytes_uploaded + 4 * graph.num_edges
        ranks = await session.ppr_many(
            seeds, **TIGHT, budget_bytes=budget + ppr.scratch_nbytes(n, 128)
        )
    assert isinstance(ranks, np.ndarray)
    assert_ranks_match(ranks, want)
