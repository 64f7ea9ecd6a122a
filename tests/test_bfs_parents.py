"""BFS parents on the CPU backend: one source, batches of many, jobs, and the kernel's rule."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels
from job_files import random_sources, rmat_graph, write_job
from tree_references import assert_valid_parents

import vyre_async as va
from vyre_async.algorithms.msbfs import msbfs_parents
from vyre_async.graphs import CsrGraph
from vyre_async.jobs import JobRunner, load_job, open_item_arrays, read_records


def _sources(rng: np.random.Generator, graph: CsrGraph, count: int) -> list[int]:
    return [int(s) for s in rng.integers(0, graph.num_vertices, count)]


@pytest.mark.parametrize("shape", sorted(GRAPH_SHAPES))
async def test_bfs_parents_are_in_neighbours_one_level_closer(
    rng: np.random.Generator, shape: str
) -> None:
    """bfs(parents=True): SciPy's levels, and each parent an in-neighbour one level closer."""
    graph = GRAPH_SHAPES[shape](rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for source in _sources(rng, graph, 3):
            levels, parents = await session.bfs(source, parents=True)
            np.testing.assert_array_equal(levels, scipy_levels(graph, source))
            assert_valid_parents(graph, source, levels, parents)


async def test_concurrent_bfs_parents_calls_are_batched_and_each_valid(
    rng: np.random.Generator,
) -> None:
    """With batching, concurrent bfs(parents=True) calls share traversals; each is valid."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    sources = _sources(rng, graph, 40)
    found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    config = va.BatchingConfig(max_delay=0.05)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):

        async def one(i: int) -> None:
            found[i] = await session.bfs(sources[i], parents=True)

        async with anyio.create_task_group() as tg:
            for i in range(len(sources)):
                tg.start_soon(one, i)
        stats = session.batch_stats()
    assert stats is not None
    assert stats.batches < len(sources)
    for i, source in enumerate(sources):
        levels, parents = found[i]
        np.testing.assert_array_equal(levels, scipy_levels(graph, source))
        assert_valid_parents(graph, source, levels, parents)


@pytest.mark.parametrize(
    "shape", ["random_directed", "random_symmetric", "disconnected", "star_skewed"]
)
async def test_bfs_many_parents_rows_are_valid(rng: np.random.Generator, shape: str) -> None:
    """bfs_many(readback="parents"): (n, V) int32 rows, each valid for its source, over
    more than one lane word and with a repeated source."""
    graph = GRAPH_SHAPES[shape](rng)
    sources = _sources(rng, graph, 70)
    sources[5] = sources[0]
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        rows = await session.bfs_many(sources, readback="parents")
        one = await session.bfs_many(sources[:1], readback="parents")
    assert rows.shape == (len(sources), graph.num_vertices)
    assert rows.dtype == np.int32
    for source, parents in zip(sources, rows, strict=True):
        assert_valid_parents(graph, source, scipy_levels(graph, source), parents)
    assert_valid_parents(graph, sources[0], scipy_levels(graph, sources[0]), one[0])


async def test_khop_parents_stop_at_k(rng: np.random.Generator) -> None:
    """bfs_many(k=..., readback="parents"): parents within k hops, -1 beyond."""
    graph = GRAPH_SHAPES["long_path"](rng)
    sources = _sources(rng, graph, 5)
    k = int(rng.integers(1, 6))
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        rows = await session.bfs_many(sources, k=k, readback="parents")
    for source, parents in zip(sources, rows, strict=True):
        dist = scipy_levels(graph, source)
        within = np.where(dist <= k, dist, -1)
        np.testing.assert_array_equal(parents >= 0, within > 0)
        children = np.flatnonzero(parents >= 0)
        np.testing.assert_array_equal(dist[parents[children]], dist[children] - 1)


async def test_parents_with_out_are_refused_before_anything_runs(rng: np.random.Generator) -> None:
    """bfs(parents=True, out=...) and query(..., readback="parents", out=...): a
    ValidationError with a fix, and no run."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    out = np.zeros(graph.num_vertices, np.int32)
    params = va.algorithms.lookup("bfs").params(readback="parents")
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        with pytest.raises(va.ValidationError, match=r"takes no out=.*Fix: "):
            await session.bfs(0, parents=True, out=out)  # type: ignore[call-overload]
        with pytest.raises(va.ValidationError, match=r"takes no out=.*Fix: "):
            await session.query("bfs", 0, params, out=out)
        assert session.stats().runs == 0


def _first_in_neighbour_parents(graph: CsrGraph, levels: np.ndarray) -> np.ndarray:
    """Each vertex's first in-neighbour in the transpose's list order one level closer,
    by a plain loop (the rule the kernel documents)."""
    transpose = graph if graph.symmetric else graph.transpose()
    parents = np.full(graph.num_vertices, -1, np.int32)
    for v in range(graph.num_vertices):
        if levels[v] <= 0:
            continue
        for u in transpose.indices[transpose.offsets[v] : transpose.offsets[v + 1]]:
            if levels[u] == levels[v] - 1:
                parents[v] = u
                break
    return parents


@pytest.mark.parametrize("shape", ["random_directed", "star_skewed", "self_loops_directed"])
async def test_a_parent_is_the_first_in_neighbour_in_list_order(
    rng: np.random.Generator, shape: str
) -> None:
    """The documented tie rule: the first in-neighbour one level closer, in list order."""
    graph = GRAPH_SHAPES[shape](rng)
    source = _sources(rng, graph, 1)[0]
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        levels, parents = await session.bfs(source, parents=True)
    np.testing.assert_array_equal(parents, _first_in_neighbour_parents(graph, levels))


def test_msbfs_parents_leaves_a_partial_last_row_without_parents(rng: np.random.Generator) -> None:
    """Entries of a partial last row (levels not a whole number of rows) get -1."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    n = graph.num_vertices
    row = scipy_levels(graph, 0)
    levels = np.concatenate([row, row[: n // 2]])  # one whole row and half of another
    parents = np.full(levels.size, 12345, np.int32)  # poisoned
    arrays = {
        "in_offsets": graph.offsets.astype(np.int64),
        "in_indices": graph.indices,
        "levels": levels,
        "parents": parents,
    }
    call = msbfs_parents.bind(arrays, {})
    assert msbfs_parents.reference is not None
    msbfs_parents.reference(arrays, call.scalars)
    assert_valid_parents(graph, 0, row, parents[:n])
    assert (parents[n:] == -1).all()


def test_a_job_with_readback_parents_writes_each_items_parents(tmp_path: Path) -> None:
    """A bfs (and a khop) workload with readback = "parents": records as for levels, and
    each item's array its parents, valid against SciPy."""
    graph = rmat_graph()
    sources = random_sources(20, 3, graph.num_vertices)
    job = write_job(
        tmp_path,
        [
            {"kind": "bfs", "readback": "parents", "sources": sources},
            {"kind": "khop", "k": 1, "readback": "parents", "sources": sources[:4]},
        ],
    )
    summary = anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert summary.status == "complete", summary.message
    out = tmp_path / "out"
    records = sorted(read_records(out), key=lambda r: r.id)
    assert [r.kind for r in records] == ["bfs"] * 20 + ["khop"] * 4
    with open_item_arrays(out) as arrays:
        for r in records:
            assert r.source is not None
            assert r.array is not None
            parents = arrays.read(r.array, r.id)
            levels = scipy_levels(graph, r.source)
            if r.kind == "khop":
                levels = np.where(levels <= 1, levels, -1)
            assert r.reached == int((levels >= 0).sum())
            assert r.max_level == int(levels.max())
            np.testing.assert_array_equal(parents >= 0, levels > 0)
            if r.kind == "bfs":
                assert_valid_parents(graph, r.source, levels, parents)
