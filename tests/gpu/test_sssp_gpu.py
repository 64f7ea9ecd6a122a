"""Shortest paths on a real GPU against SciPy's Dijkstra: one source, lanes, one at a time."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from sssp_references import (
    WEIGHTED_SHAPES,
    WeightedGraph,
    assert_distances_match,
    grid_graph,
    rmat_graph,
    scipy_distances,
)

import vyre_async as va
from vyre_async.algorithms import sssp
from vyre_async.backends import ResidentBuffer

GARBAGE = np.float32(-12345.5)

# Where CuPy is installed the CUDA backend launches through it, and CuPy's first load
# of libcuda imports the cupy package, which reads files: inside the event loop the
# blocking-call check fails the first asyncio test to open a backend when this file
# runs before any other GPU test has loaded CuPy. Load it here, at collection.
with contextlib.suppress(ImportError):
    import cupy  # noqa: F401


async def _upload(backend: va.Backend, graph: WeightedGraph) -> dict[str, ResidentBuffer]:
    return {
        "offsets": await backend.upload(graph.offsets),
        "indices": await backend.upload(graph.indices),
        "weights": await backend.upload(graph.weights),
    }


async def _free(backend: va.Backend, *groups: list[ResidentBuffer]) -> None:
    for group in groups:
        await sssp.free_scratch_buffers(backend, group)


def _sources(rng: np.random.Generator, graph: WeightedGraph, count: int) -> list[int]:
    return [int(s) for s in rng.choice(np.flatnonzero(np.diff(graph.offsets) > 0), count)]


def _graph(rng: np.random.Generator, name: str) -> WeightedGraph:
    if name == "grid256":
        return grid_graph(rng, 256)
    return rmat_graph(rng, 16, symmetric=name == "rmat16")


@pytest.mark.parametrize("name", ["rmat16", "rmat16_directed", "grid256"])
async def test_single_source_equals_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, name: str
) -> None:
    """GPU distances from one source match SciPy, +inf exactly where it has +inf."""
    graph = _graph(rng, name)
    buffers = await _upload(cuda, graph)
    scratch = await sssp.allocate_scratch(cuda, graph.num_vertices, graph.num_edges)
    try:
        sources = _sources(rng, graph, 3)
        expected = scipy_distances(graph, sources)
        for source, row in zip(sources, expected, strict=True):
            await cuda.write(scratch.dist, np.full(graph.num_vertices, GARBAGE))
            words, _ = await sssp.shortest_paths(cuda, buffers, scratch, source)
            assert_distances_match(await cuda.read(scratch.dist), row)
            assert words[sssp.STATE_REACHED] == np.isfinite(row).sum()
    finally:
        await _free(cuda, scratch.buffers, list(buffers.values()))


@pytest.mark.parametrize(
    ("name", "lanes", "readback"),
    [("grid256", 32, "distances"), ("rmat16", 8, "counts"), ("rmat16_directed", 4, "distances")],
)
async def test_many_sources_as_lanes_equal_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, name: str, lanes: int, readback: sssp.Readback
) -> None:
    """Lanes on the GPU give SciPy's rows (or counts within a bound) in source order."""
    graph = _graph(rng, name)
    buffers = await _upload(cuda, graph)
    scratch = await sssp.allocate_many_scratch(
        cuda, graph.num_vertices, graph.num_edges, lanes, readback
    )
    try:
        sources = [*_sources(rng, graph, lanes + 3), -1]
        bound = float(rng.uniform(0.2, 0.6)) if readback == "counts" else float("inf")
        out = await sssp.shortest_paths_many(
            cuda, buffers, scratch, sources, readback=readback, max_distance=bound
        )
        expected = np.vstack(
            [scipy_distances(graph, sources[:-1]), np.full((1, graph.num_vertices), np.inf)]
        )
        if readback == "counts":
            np.testing.assert_array_equal(out, (expected <= bound).sum(axis=1))
        else:
            assert_distances_match(out, expected)
    finally:
        await _free(cuda, scratch.buffers, list(buffers.values()))


async def test_many_sources_one_at_a_time_equal_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """With a single-source scratch, the many-source call's rows match SciPy's."""
    graph = rmat_graph(rng, 14)
    buffers = await _upload(cuda, graph)
    scratch = await sssp.allocate_scratch(cuda, graph.num_vertices, graph.num_edges)
    try:
        sources = _sources(rng, graph, 5)
        rows = await sssp.shortest_paths_many(cuda, buffers, scratch, sources)
        assert_distances_match(rows, scipy_distances(graph, sources))
    finally:
        await _free(cuda, scratch.buffers, list(buffers.values()))


@pytest.mark.parametrize("shape", sorted(WEIGHTED_SHAPES))
async def test_small_shapes_equal_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """Zero weights, parallel edges, self loops, parts, hubs: one source and 4 lanes."""
    graph = WEIGHTED_SHAPES[shape](rng, bool(rng.integers(0, 2)))
    buffers = await _upload(cuda, graph)
    single = await sssp.allocate_scratch(cuda, graph.num_vertices, graph.num_edges)
    lanes = await sssp.allocate_many_scratch(
        cuda, graph.num_vertices, graph.num_edges, 4, "distances"
    )
    try:
        sources = _sources(rng, graph, 4)
        expected = scipy_distances(graph, sources)
        await cuda.write(single.dist, np.full(graph.num_vertices, GARBAGE))
        await sssp.shortest_paths(cuda, buffers, single, sources[0])
        assert_distances_match(await cuda.read(single.dist), expected[0])
        rows = await sssp.shortest_paths_many(cuda, buffers, lanes, sources)
        assert_distances_match(rows, expected)
    finally:
        await _free(cuda, single.buffers, lanes.buffers, list(buffers.values()))
