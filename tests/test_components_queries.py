"""Connected components as a query kind: sessions and jobs, against SciPy."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import anyio
import numpy as np
import pytest
from components_references import SHAPES, chain, scipy_labels
from job_files import write_job
from scipy.sparse import coo_array, csgraph

import vyre_async as va
from vyre_async.cli import main
from vyre_async.jobs import JobRunner, load_job, open_item_arrays, read_records


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_session_components_equal_scipys_weak_components(
    rng: np.random.Generator, shape: str
) -> None:
    """components() labels each vertex with the smallest id of its weak component (SciPy's
    components), written into a poisoned out array."""
    graph = SHAPES[shape](rng)
    want = scipy_labels(graph)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        out = np.full(graph.num_vertices, -3, np.int32)
        assert await session.components(out=out) is out
        fresh = await session.components()
    np.testing.assert_array_equal(out, want)
    assert fresh.dtype == np.int32
    np.testing.assert_array_equal(fresh, want)


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_component_sizes_equal_bincount_of_scipys_labels(
    rng: np.random.Generator, shape: str
) -> None:
    """component_sizes(): the distinct labels ascending (int32) and np.bincount's counts
    of SciPy's labels for them (int64)."""
    graph = SHAPES[shape](rng)
    counts = np.bincount(scipy_labels(graph), minlength=graph.num_vertices)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        labels, sizes = await session.component_sizes()
    assert (labels.dtype, sizes.dtype) == (np.dtype(np.int32), np.dtype(np.int64))
    np.testing.assert_array_equal(labels, np.flatnonzero(counts))
    np.testing.assert_array_equal(sizes, counts[counts > 0])


async def test_a_long_path_is_labelled_in_fewer_host_waits_than_rounds(
    rng: np.random.Generator,
) -> None:
    """A path through 100,000 vertices in a random order, edges either way: one component
    labelled 0, its many rounds run with the host waiting less often than once a round."""
    graph = chain(rng, 100_000)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        labels = await session.components()
        stats = session.stats()
    np.testing.assert_array_equal(labels, scipy_labels(graph))
    assert stats.levels > 1
    assert stats.host_syncs < stats.levels


async def test_concurrent_calls_each_get_the_labels(rng: np.random.Generator) -> None:
    """Calls running at once on one session (each with its own scratch) all get SciPy's
    labels."""
    graph = SHAPES["rmat_directed"](rng)
    want = scipy_labels(graph)
    got: list[np.ndarray] = []
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:

        async def one() -> None:
            got.append(await session.components())

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)
    assert len(got) == 4
    for labels in got:
        np.testing.assert_array_equal(labels, want)


@pytest.mark.parametrize(
    ("out", "says"),
    [(np.zeros(40, np.float32), "float32"), (np.zeros(39, np.int32), "39 element")],
    ids=["dtype", "length"],
)
async def test_an_out_that_does_not_fit_is_refused_before_anything_runs(
    out: np.ndarray, says: str
) -> None:
    """An out array of another dtype or length: a ValidationError with a fix, no dispatch."""
    graph = va.graphs.CsrGraph.from_edges([0, 1], [1, 2], num_vertices=40)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        before = backend.telemetry().dispatches
        with pytest.raises(va.ValidationError, match=rf"{says}.*Fix:"):
            await session.components(out=out)
        assert backend.telemetry().dispatches == before


async def test_a_source_given_to_a_components_query_is_refused() -> None:
    """query("components", 3): a ValidationError saying it takes no source, with a fix."""
    graph = va.graphs.rmat(5, 4, 1)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        with pytest.raises(va.ValidationError, match=r"takes no source.*Fix:"):
            await session.query("components", 3)


def _directed_edge_file(path: Path, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """An edge list of many small directed parts, every vertex named (a self loop each)."""
    graph = SHAPES["many_parts"](rng)
    n = graph.num_vertices
    src = np.concatenate([np.arange(n), np.repeat(np.arange(n), np.diff(graph.offsets))])
    dst = np.concatenate([np.arange(n), graph.indices])
    path.write_text("".join(f"{a} {b}\n" for a, b in zip(src.tolist(), dst.tolist(), strict=True)))
    return src, dst


def test_a_components_job_records_the_count_the_largest_and_the_labels(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """A components job over a directed edge file: one record whose count and largest size
    are SciPy's weak components', and whose array is their smallest-id labels."""
    src, dst = _directed_edge_file(tmp_path / "g.txt", rng)
    n = int(max(src.max(), dst.max())) + 1
    matrix = coo_array((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    count, scipy = csgraph.connected_components(matrix, directed=True, connection="weak")
    smallest = np.full(count, n)
    np.minimum.at(smallest, scipy, np.arange(n))
    job = write_job(tmp_path, [{"kind": "components"}], graph={"kind": "edges", "path": "g.txt"})
    summary = anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert summary.status == "complete", summary.message
    out = tmp_path / "out"
    (record,) = read_records(out)
    assert (record.kind, record.source, record.ok) == ("components", None, True)
    assert record.components == count
    assert record.largest_component == np.bincount(scipy).max()
    assert record.array is not None
    with open_item_arrays(out) as arrays:
        np.testing.assert_array_equal(arrays.read(record.array, record.id), smallest[scipy])
    layout = json.loads((out / "manifest.json").read_text())["records"]
    assert layout["columns"] == [["components", "int"], ["largest_component", "int"]]


def test_validate_refuses_sources_on_a_components_workload(tmp_path: Path) -> None:
    """`validate` of a components workload with sources: exit 2 naming the field, a fix."""
    job = write_job(tmp_path, [{"kind": "components", "sources": [0, 1]}])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["validate", str(job)])
    assert code == 2, err.getvalue()
    assert "$.workload[0].sources: components takes no sources" in err.getvalue()
    assert "Fix:" in err.getvalue()
