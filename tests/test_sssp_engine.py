"""The shortest-path engine on the CPU backend (its kernels' NumPy references), against SciPy.

Every run goes through the same resident sequences a CUDA backend runs; graphs are
fresh and random, distances are compared with SciPy's float64 Dijkstra, and the
output buffer holds garbage before each run.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import numpy as np
import pytest
from sssp_references import (
    WEIGHTED_SHAPES,
    WeightedGraph,
    assert_distances_match,
    grid_graph,
    scipy_distances,
    weighted_csr,
)

import vyre_async as va
from vyre_async.algorithms import sssp
from vyre_async.backends import ResidentBuffer

GARBAGE = np.float32(-12345.5)


@pytest.fixture
async def cpu() -> AsyncIterator[va.Backend]:
    """An open CPU backend."""
    async with va.open_backend("cpu") as backend:
        yield backend


async def _upload(backend: va.Backend, graph: WeightedGraph) -> dict[str, ResidentBuffer]:
    return {
        "offsets": await backend.upload(graph.offsets),
        "indices": await backend.upload(graph.indices),
        "weights": await backend.upload(graph.weights),
    }


def _sources(rng: np.random.Generator, graph: WeightedGraph, count: int) -> list[int]:
    """Sources with out-edges where there are any (a source without reaches only itself)."""
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    if candidates.size == 0:
        candidates = np.arange(graph.num_vertices)
    return [int(s) for s in rng.choice(candidates, count)]


async def _single(
    backend: va.Backend,
    buffers: dict[str, ResidentBuffer],
    scratch: sssp.SsspScratch,
    source: int,
    **options: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One run into a poisoned distance buffer; its state words and distances."""
    await backend.write(scratch.dist, np.full(scratch.dist.size, GARBAGE))
    words, _ = await sssp.shortest_paths(backend, buffers, scratch, source, **options)
    return words, await backend.read(scratch.dist)


@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "directed"])
@pytest.mark.parametrize("shape", list(WEIGHTED_SHAPES))
async def test_single_source_distances_equal_scipy(
    cpu: va.Backend, rng: np.random.Generator, shape: str, symmetric: bool
) -> None:
    """Distances from one source match SciPy's Dijkstra, +inf exactly where it has +inf."""
    graph = WEIGHTED_SHAPES[shape](rng, symmetric)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    for source in _sources(rng, graph, 2):
        words, dist = await _single(cpu, buffers, scratch, source)
        expected = scipy_distances(graph, [source])[0]
        assert_distances_match(dist, expected)
        assert words[sssp.STATE_REACHED] == np.isfinite(expected).sum()


async def test_every_delta_gives_the_same_distances(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """Narrow, wide and unbounded buckets all end at SciPy's distances."""
    graph = WEIGHTED_SHAPES["zero_weights"](rng, False)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    source = _sources(rng, graph, 1)[0]
    expected = scipy_distances(graph, [source])[0]
    for delta in (1e-4, 0.05, 0.7, 3.0, math.inf):
        _, dist = await _single(cpu, buffers, scratch, source, delta=delta)
        assert_distances_match(dist, expected)


async def test_distances_past_the_bound_stay_infinite(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """With max_distance, farther vertices stay +inf and the reached count is the rest."""
    graph = grid_graph(rng, 30)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    source = _sources(rng, graph, 1)[0]
    bound = float(rng.uniform(2.0, 6.0))
    words, dist = await _single(cpu, buffers, scratch, source, max_distance=bound)
    expected = scipy_distances(graph, [source])[0]
    expected[expected > bound] = np.inf
    assert_distances_match(dist, expected)
    assert words[sssp.STATE_REACHED] == np.isfinite(expected).sum()


@pytest.mark.parametrize("source", [-1, "past"])
async def test_a_source_outside_the_graph_reaches_nothing(
    cpu: va.Backend, rng: np.random.Generator, source: int | str
) -> None:
    """A source outside [0, V) leaves every distance +inf and reaches no vertex."""
    graph = WEIGHTED_SHAPES["components"](rng, True)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    vertex = graph.num_vertices if source == "past" else int(source)
    words, dist = await _single(cpu, buffers, scratch, vertex)
    assert np.isinf(dist).all()
    assert words[sssp.STATE_REACHED] == 0


async def test_a_graph_without_edges_reaches_only_the_source(cpu: va.Backend) -> None:
    """No edges: the source is at 0, every other vertex +inf, nothing crashes."""
    n = 5
    graph = WeightedGraph(np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, n, 0)
    words, dist = await _single(cpu, buffers, scratch, 3)
    np.testing.assert_array_equal(dist, [np.inf, np.inf, np.inf, 0, np.inf])
    assert words[sssp.STATE_REACHED] == 1
    counts = await sssp.shortest_paths_many(cpu, buffers, scratch, [0, 4, 7], readback="counts")
    np.testing.assert_array_equal(counts, [1, 1, 0])


async def test_an_empty_graph_runs_nothing(cpu: va.Backend) -> None:
    """Zero vertices: a run and a many-source call return without launching anything."""
    graph = WeightedGraph(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, 0, 0)
    words, device_ns = await sssp.shortest_paths(cpu, buffers, scratch, 0)
    assert words[sssp.STATE_DONE] == 1
    assert words[sssp.STATE_REACHED] == 0
    assert device_ns == 0
    lanes = await sssp.allocate_many_scratch(cpu, 0, 0, 2, "distances")
    rows = await sssp.shortest_paths_many(cpu, buffers, lanes, [0, 1])
    assert rows.shape == (2, 0)


@pytest.mark.parametrize(("lanes", "shape"), [(4, "grid"), (8, "rmat"), (2, "self_loops")])
async def test_many_sources_as_lanes_equal_scipy(
    cpu: va.Backend, rng: np.random.Generator, lanes: int, shape: str
) -> None:
    """Lanes give every source's row of SciPy's distances, in source order."""
    graph = WEIGHTED_SHAPES[shape](rng, bool(rng.integers(0, 2)))
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_many_scratch(
        cpu, graph.num_vertices, graph.num_edges, lanes, "distances"
    )
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 2 * lanes + 1)]
    await cpu.write(scratch.lists["rows"], np.full(scratch.lists["rows"].size, GARBAGE))
    rows = await sssp.shortest_paths_many(cpu, buffers, scratch, sources)
    assert rows.shape == (len(sources), graph.num_vertices)
    assert_distances_match(rows, scipy_distances(graph, sources))


async def test_reach_counts_as_lanes_equal_scipy(cpu: va.Backend, rng: np.random.Generator) -> None:
    """Counts within a bound, lanes for the sources and 0 for sources outside the graph."""
    graph = WEIGHTED_SHAPES["components"](rng, False)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_many_scratch(
        cpu, graph.num_vertices, graph.num_edges, 4, "counts"
    )
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 6)] + [-1, graph.num_vertices]
    bound = float(rng.uniform(0.5, 2.0))
    counts = await sssp.shortest_paths_many(
        cpu, buffers, scratch, sources, readback="counts", max_distance=bound
    )
    expected = scipy_distances(graph, sources[:6])
    assert counts.dtype == np.int32
    np.testing.assert_array_equal(counts, [*(expected <= bound).sum(axis=1), 0, 0])


@pytest.mark.parametrize("readback", ["distances", "counts"])
async def test_many_sources_one_at_a_time_equal_scipy(
    cpu: va.Backend, rng: np.random.Generator, readback: sssp.Readback
) -> None:
    """Given a single-source scratch, the many-source call runs the sources in turn."""
    graph = WEIGHTED_SHAPES["hub"](rng, False)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 3)]
    out = await sssp.shortest_paths_many(cpu, buffers, scratch, sources, readback=readback)
    expected = scipy_distances(graph, sources)
    if readback == "counts":
        np.testing.assert_array_equal(out, np.isfinite(expected).sum(axis=1))
    else:
        assert_distances_match(out, expected)


async def test_a_scratch_runs_another_graph_of_its_size(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """A scratch kept after one graph gives the right distances on the next one."""
    first, second = (WEIGHTED_SHAPES["parallel_edges"](rng, True) for _ in range(2))
    assert first.num_edges == second.num_edges
    scratch = await sssp.allocate_scratch(cpu, first.num_vertices, first.num_edges)
    for graph in (first, second, first):
        buffers = await _upload(cpu, graph)
        source = _sources(rng, graph, 1)[0]
        _, dist = await _single(cpu, buffers, scratch, source)
        assert_distances_match(dist, scipy_distances(graph, [source])[0])


async def test_scratch_bytes_are_its_buffers_and_its_light_graph(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """nbytes is what shape says before a run, plus the light graph it builds and keeps."""
    graph = WEIGHTED_SHAPES["rmat"](rng, True)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    assert scratch.shape == ("sssp", graph.num_vertices, graph.num_edges)
    assert scratch.nbytes == sssp.scratch_nbytes(graph.num_vertices, graph.num_edges)
    assert scratch.nbytes == sssp.shape_nbytes(scratch.shape)
    before = {b.id for b in scratch.buffers}
    await sssp.shortest_paths(cpu, await _upload(cpu, graph), scratch, 0, delta=0.1)
    light = [b for b in scratch.buffers if b.id not in before]
    assert len(light) == 3
    assert scratch.nbytes == sum(b.nbytes for b in scratch.buffers)


async def test_light_graph_holds_the_light_edges_in_list_order(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """The light graph is each vertex's edges lighter than delta, in their original order."""
    graph = WEIGHTED_SHAPES["hub"](rng, False)
    delta = float(rng.uniform(0.1, 0.6))
    light = await sssp.build_light_graph(cpu, await _upload(cpu, graph), delta)
    light_offsets, light_indices, light_weights = [
        await cpu.read(light.buffers[name]) for name in sssp.LIGHT_BUFFERS
    ]
    keep = graph.weights < np.float32(delta)
    rows = np.repeat(np.arange(graph.num_vertices), np.diff(graph.offsets))
    np.testing.assert_array_equal(
        np.diff(light_offsets), np.bincount(rows[keep], minlength=graph.num_vertices)
    )
    np.testing.assert_array_equal(light_indices[: keep.sum()], graph.indices[keep])
    np.testing.assert_array_equal(light_weights[: keep.sum()], graph.weights[keep])
    assert light.owned
    assert light.heavy_edges


async def test_an_unbounded_delta_uses_the_graph_as_its_light_graph(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """With every edge light, the light graph is the graph's own arrays, nothing new."""
    graph = WEIGHTED_SHAPES["grid"](rng, True)
    buffers = await _upload(cpu, graph)
    light = await sssp.build_light_graph(cpu, buffers, math.inf)
    assert [b.id for b in light.buffers.values()] == [b.id for b in buffers.values()]
    assert not light.owned
    assert not light.heavy_edges


@pytest.mark.parametrize(
    ("options", "word"),
    [({"delta": 0.0}, "delta"), ({"delta": math.nan}, "delta"), ({"max_distance": -1.0}, "max")],
)
async def test_a_bad_delta_or_bound_is_refused(
    cpu: va.Backend, rng: np.random.Generator, options: dict[str, float], word: str
) -> None:
    """A delta that is not > 0 or a negative or NaN bound raises ValueError, naming it."""
    graph = WEIGHTED_SHAPES["grid"](rng, True)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_scratch(cpu, graph.num_vertices, graph.num_edges)
    with pytest.raises(ValueError, match=word):
        await sssp.shortest_paths(cpu, buffers, scratch, 0, **options)


async def test_a_lane_scratch_refuses_the_other_readback(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """A scratch made for counts cannot read back distances."""
    graph = WEIGHTED_SHAPES["grid"](rng, True)
    buffers = await _upload(cpu, graph)
    scratch = await sssp.allocate_many_scratch(
        cpu, graph.num_vertices, graph.num_edges, 2, "counts"
    )
    with pytest.raises(ValueError, match="readback"):
        await sssp.shortest_paths_many(cpu, buffers, scratch, [0], readback="distances")


def test_plan_many_takes_lanes_on_even_degrees_and_one_at_a_time_on_hubs() -> None:
    """Even degrees plan lanes (as many as fit the budget); a hub plans single runs."""
    budget = 1 << 30
    even = sssp.GraphStats(10_000, 40_000, 20_000.0, 4)
    hubs = sssp.GraphStats(10_000, 40_000, 20_000.0, 4_000)
    lanes = ("sssp_many", 10_000, 40_000, 32, "counts")
    assert sssp.plan_many(even, 100, "counts", budget) == lanes
    assert sssp.plan_many(even, 3, "distances", budget) == (
        "sssp_many",
        10_000,
        40_000,
        4,
        "distances",
    )
    assert sssp.plan_many(hubs, 100, "counts", budget) == ("sssp", 10_000, 40_000)
    assert sssp.plan_many(even, 1, "counts", budget) == ("sssp", 10_000, 40_000)


def test_lanes_for_budget_halves_until_the_scratch_fits() -> None:
    """The widest power of two whose scratch fits; a budget below one lane is refused."""
    n, e = 100_000, 400_000
    budget = sssp.many_scratch_nbytes(n, e, 8, "distances")
    assert sssp.lanes_for_budget(n, e, 1000, budget, "distances") == 8
    assert sssp.lanes_for_budget(n, e, 5, 1 << 40, "distances") == 8
    assert sssp.lanes_for_budget(n, e, 1, 1 << 40, "counts") == 1
    with pytest.raises(va.ValidationError, match="budget"):
        sssp.lanes_for_budget(n, e, 4, 1000, "counts")


def test_choose_delta_shrinks_with_degree_skew() -> None:
    """An even graph gets 32 x mean weight / mean degree; hubs shrink it; no edges: unbounded."""
    assert sssp.choose_delta(100, 400, 200.0, 4) == pytest.approx(32 * 0.5 / 4)
    skewed = sssp.choose_delta(100, 400, 200.0, 4 * 81)
    assert skewed == pytest.approx(32 * 0.5 / 4 / 3)
    assert sssp.choose_delta(100, 0, 0.0, 0) == sssp.SSSP_UNBOUNDED
    assert sssp.choose_delta(100, 400, 0.0, 4) == sssp.SSSP_UNBOUNDED
    with pytest.raises(ValueError, match="weight_sum"):
        sssp.choose_delta(100, 400, -1.0, 4)


async def test_measured_stats_are_the_weight_sum_and_largest_degree(
    cpu: va.Backend, rng: np.random.Generator
) -> None:
    """The device pass over the graph gives its weight sum and largest out-degree."""
    graph = WEIGHTED_SHAPES["hub"](rng, False)
    stats = await sssp.measure_graph(cpu, await _upload(cpu, graph))
    assert stats.num_vertices == graph.num_vertices
    assert stats.num_edges == graph.num_edges
    assert stats.weight_sum == pytest.approx(float(graph.weights.sum(dtype=np.float64)))
    assert stats.max_degree == int(np.diff(graph.offsets).max())


def test_weighted_csr_keeps_each_edge_with_its_weight() -> None:
    """The test graphs' CSR holds every (source, target, weight), reversed ones included."""
    graph = weighted_csr(
        3, np.array([2, 0]), np.array([1, 2]), np.array([0.5, 0.25]), symmetric=True
    )
    rows = np.repeat(np.arange(3), np.diff(graph.offsets))
    found = sorted(zip(rows.tolist(), graph.indices.tolist(), graph.weights.tolist(), strict=True))
    assert found == [(0, 2, 0.25), (1, 2, 0.5), (2, 0, 0.25), (2, 1, 0.5)]
