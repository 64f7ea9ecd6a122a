"""Shortest paths as a query kind: sessions (one, many, batched) and jobs, against SciPy."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import numpy as np
import pytest
from job_files import random_sources, write_job
from scipy.sparse import csgraph
from sssp_references import WEIGHTED_SHAPES, assert_distances_match, scipy_distances

import vyre_async as va
from vyre_async.jobs import JobRunner, load_job, open_item_arrays, read_records


def _csr(graph: object) -> va.graphs.CsrGraph:
    """A sssp_references graph as a CsrGraph (rows as the references keep them)."""
    return va.graphs.CsrGraph(graph.offsets, graph.indices, graph.weights)  # type: ignore[attr-defined]


def _between_distances(distances: np.ndarray) -> float:
    """A bound halfway across the widest gap between the middle distances, so no distance
    lies near it (float32 rounding cannot move one across it)."""
    unique = np.unique(distances[np.isfinite(distances)])
    if unique.size < 2:
        return float(unique[0]) + 1.0
    middle = unique[unique.size // 4 : max(unique.size * 3 // 4, unique.size // 4 + 2)]
    gaps = np.diff(middle) / np.maximum(middle[1:], 1e-30)
    i = int(np.argmax(gaps))
    return float((middle[i] + middle[i + 1]) / 2)


@pytest.mark.parametrize("shape", sorted(WEIGHTED_SHAPES))
async def test_session_sssp_equals_scipy_on_every_shape(
    rng: np.random.Generator, shape: str
) -> None:
    """session.sssp, sssp_many (distances) and counts with a bound equal SciPy's Dijkstra;
    the out array is poisoned first."""
    weighted = WEIGHTED_SHAPES[shape](rng, False)
    graph = _csr(weighted)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 5)]
    want = scipy_distances(weighted, sources)
    bound = _between_distances(want)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        out = np.full(graph.num_vertices, -7.0, np.float32)
        assert await session.sssp(sources[0], out=out) is out
        assert_distances_match(out, want[0])
        assert_distances_match(await session.sssp_many(sources), want)
        counts = await session.sssp_many(sources, readback="counts", max_distance=bound)
        np.testing.assert_array_equal(counts, (want <= bound).sum(axis=1))
        bounded = await session.sssp(sources[1], max_distance=bound)
    assert_distances_match(bounded, np.where(want[1] <= bound, want[1], np.inf))


async def test_concurrent_sssp_calls_share_batches_and_each_gets_its_distances(
    rng: np.random.Generator,
) -> None:
    """40 concurrent callers with batching: fewer batches than callers, each row right."""
    weighted = WEIGHTED_SHAPES["grid"](rng, True)
    graph = _csr(weighted)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    want = scipy_distances(weighted, sources)
    got: dict[int, np.ndarray] = {}
    config = va.BatchingConfig(max_batch=16, max_delay=0.05)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):

        async def one(i: int) -> None:
            got[i] = await session.sssp(sources[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(sources)):
                tg.start_soon(one, i)
        stats = session.batch_stats()
    assert stats is not None
    assert stats.batches < len(sources)
    for i in range(len(sources)):
        assert_distances_match(got[i], want[i])


async def test_a_graph_without_weights_is_refused_naming_weights() -> None:
    """An unweighted graph: a ValidationError whose fix names weights=, before any run."""
    graph = va.graphs.rmat(6, 4, 1)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        before = backend.telemetry().dispatches
        with pytest.raises(va.ValidationError, match=r"needs edge weights.*Fix:.*weights="):
            await session.sssp(0)
        assert backend.telemetry().dispatches == before


async def test_a_negative_weight_is_refused_naming_its_edge() -> None:
    """A weight < 0: the first query says which edge, with a fix; the session stays usable."""
    offsets = np.array([0, 1, 2, 2], np.int64)
    indices = np.array([1, 2], np.int32)
    graph = va.graphs.CsrGraph(offsets, indices, np.array([1.0, -0.5], np.float32))
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        with pytest.raises(va.ValidationError, match=r"edge 1 \(1 -> 2\).*-0\.5.*Fix:"):
            await session.sssp(0)
        assert (await session.bfs(0)).tolist() == [0, 1, 2]


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
async def test_a_bad_bound_is_refused(bad: float) -> None:
    """max_distance below 0 or NaN: a ValidationError with a fix."""
    graph = va.graphs.rmat(5, 4, 2, weights="uniform")
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        with pytest.raises(va.ValidationError, match=r"max_distance.*Fix:"):
            await session.sssp(0, max_distance=bad)


def _weighted_rmat() -> va.graphs.CsrGraph:
    return va.graphs.rmat(8, 8, 5, weights="uniform")


def test_a_job_of_sssp_distances_and_counts_equals_scipy(tmp_path: Path) -> None:
    """An sssp job: counts within a bound and full distances per item, against SciPy."""
    graph = _weighted_rmat()
    sources = random_sources(30, 4, graph.num_vertices)
    job = write_job(
        tmp_path,
        [
            {"kind": "sssp", "sources": sources, "max_distance": 0.75},
            {"kind": "sssp", "readback": "distances", "sources": sources[:10]},
        ],
        graph={"weights": "uniform"},
    )
    summary = anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert summary.status == "complete", summary.message
    matrix = graph.to_scipy()
    want = csgraph.dijkstra(matrix, directed=True, indices=sources)
    out = tmp_path / "out"
    records = sorted(read_records(out), key=lambda r: r.id)
    assert [r.kind for r in records] == ["sssp"] * 40
    with open_item_arrays(out) as arrays:
        for r in records:
            row = want[sources.index(r.source)]
            if r.workload == 0:
                assert r.reached == int((row <= 0.75).sum())
                assert r.array is None
            else:
                assert r.array is not None
                assert_distances_match(arrays.read(r.array, r.id), row)
                assert r.reached == int(np.isfinite(row).sum())
                assert r.max_distance == pytest.approx(float(row[np.isfinite(row)].max()), 1e-5)
    layout = json.loads((out / "manifest.json").read_text())["records"]
    assert layout["kinds"] == ["sssp"]
    assert layout["columns"] == [["reached", "int"], ["max_distance", "float"]]


def test_validate_refuses_sssp_on_a_graph_without_weights(tmp_path: Path) -> None:
    """An sssp workload on an unweighted R-MAT: exit 2 naming $.workload[0] and a fix."""
    job = write_job(tmp_path, [{"kind": "sssp", "sources": [0, 1]}])
    for command in (["validate", str(job)], ["run", str(job)]):
        code, err = _cli(command)
        assert code == 2, err
        assert "$.workload[0]: kind 'sssp' needs edge weights" in err
        assert "Fix: give the graph weights" in err


def _cli(args: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    from vyre_async.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    return code, err.getvalue()
