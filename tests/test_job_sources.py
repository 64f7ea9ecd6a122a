"""Random sources drawn among vertices with out-edges (``min_out_degree``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from job_files import committed, expected_reach, job_file, rmat_graph

import vyre_async as va
from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.runner._items import iter_blocks, sources_out_degree

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _sources(spec: va.jobs.JobSpec, graph: va.graphs.CsrGraph) -> np.ndarray:
    committed_ids = np.zeros(va.jobs.total_items(spec), dtype=bool)
    blocks = iter_blocks(spec, graph.num_vertices, committed_ids, sources_out_degree(spec, graph))
    return np.concatenate([block.sources for block in blocks])


def _out_degree(graph: va.graphs.CsrGraph) -> np.ndarray:
    """Out-degrees counted from the rows of SciPy's coordinate form of the graph."""
    return np.bincount(graph.to_scipy().tocoo().row, minlength=graph.num_vertices)


def test_sources_with_a_min_out_degree_are_drawn_only_and_uniformly_from_those_vertices(
    tmp_path: Path,
) -> None:
    """min_out_degree=3: every draw has 3+ out-edges, and every such vertex gets drawn."""
    job = Path(
        anyio.run(
            job_file,
            tmp_path,
            [{"kind": "bfs", "sources": {"random": 60_000, "seed": 9, "min_out_degree": 3}}],
        )
    )
    spec = load_job(job)
    graph = rmat_graph()
    degree = _out_degree(graph)
    eligible = np.flatnonzero(degree >= 3)
    assert 0 < eligible.size < graph.num_vertices  # the test graph has both kinds
    sources = _sources(spec, graph)
    assert sources.size == 60_000
    assert (degree[sources] >= 3).all()
    counts = np.bincount(sources, minlength=graph.num_vertices)[eligible]
    expected = sources.size / eligible.size  # hundreds per vertex: within 2x of it for sure
    assert expected / 2 < counts.min() <= counts.max() < 2 * expected
    assert (_sources(spec, graph) == sources).all()  # the same sources on every run


def test_without_a_min_out_degree_the_draws_are_unchanged(tmp_path: Path) -> None:
    """min_out_degree left out: the sources are the plain seeded draws over all vertices."""
    job = Path(
        anyio.run(job_file, tmp_path, [{"kind": "bfs", "sources": {"random": 500, "seed": 4}}])
    )
    graph = rmat_graph()
    sources = _sources(load_job(job), graph)
    plain = np.random.default_rng(4).integers(0, graph.num_vertices, 500)
    assert (sources == plain).all()


def test_the_quickstart_sources_each_reach_another_vertex() -> None:
    """configs/quickstart.toml draws no source whose traversal reaches only itself."""
    spec = load_job(CONFIGS / "quickstart.toml")
    graph = va.graphs.rmat(spec.graph.scale or 0, spec.graph.edge_factor, spec.graph.seed)
    matrix = graph.to_scipy()
    sources = _sources(spec, graph)
    assert sources.size == 2000
    for source in sources:
        neighbours = matrix.indices[matrix.indptr[source] : matrix.indptr[source + 1]]
        assert (neighbours != source).any(), source


def test_the_pagerank_example_khop_sources_have_out_edges() -> None:
    """configs/pagerank.toml's listed 3-hop sources each have out-edges to expand."""
    spec = load_job(CONFIGS / "pagerank.toml")
    graph = va.graphs.rmat(spec.graph.scale or 0, spec.graph.edge_factor, spec.graph.seed)
    degree = _out_degree(graph)
    listed = [w.sources for w in spec.workload if isinstance(w.sources, list)]
    assert listed
    assert all(degree[s] > 0 for sources in listed for s in sources)


async def test_a_job_with_a_min_out_degree_commits_scipys_counts(tmp_path: Path) -> None:
    """The runner draws the filtered sources and each count equals SciPy's."""
    job = await job_file(
        tmp_path, [{"kind": "bfs", "sources": {"random": 40, "seed": 2, "min_out_degree": 1}}]
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    summary = await JobRunner(spec, job_file=job).run()
    assert summary.status == "complete"
    graph = rmat_graph()
    degree = _out_degree(graph)
    records = await committed(tmp_path / "out")
    assert sorted(r.id for r in records) == list(range(40))
    for record in records:
        assert record.source is not None
        assert degree[record.source] >= 1
        assert record.reached == expected_reach(graph, record.source)


async def test_a_min_out_degree_no_vertex_has_is_refused_naming_the_field(tmp_path: Path) -> None:
    """min_out_degree beyond the graph's largest out-degree: ConfigurationError with a fix."""
    job = await job_file(
        tmp_path, [{"kind": "bfs", "sources": {"random": 5, "min_out_degree": 100_000}}]
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    with pytest.raises(va.ConfigurationError) as info:
        await JobRunner(spec, job_file=job).run()
    assert "$.workload[0].sources.min_out_degree" in info.value.what
    assert "lower min_out_degree" in info.value.fix
