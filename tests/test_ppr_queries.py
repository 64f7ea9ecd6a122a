"""Personalized PageRank as a query kind on the CPU backend: one seed, many, batched,
personalized PageRank, jobs and bad inputs, against a float64 power iteration and
NetworkX."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import networkx as nx
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES
from job_files import random_sources, rmat_graph, write_job
from ppr_references import (
    TIGHT,
    assert_ranks_match,
    assert_top_k_match,
    ppr_float64,
    teleports,
)

import vyre_async as va
from vyre_async.algorithms import ppr
from vyre_async.jobs import JobRunner, load_job, open_item_arrays, read_records


@pytest.mark.parametrize("shape", sorted(GRAPH_SHAPES))
async def test_ppr_many_equals_a_float64_power_iteration_on_every_shape(
    rng: np.random.Generator, shape: str
) -> None:
    """ppr_many's ranks and top k, and ppr's for one seed, against the float64 reference
    (duplicate seeds, isolated vertices, self loops, disconnected parts, hubs)."""
    graph = GRAPH_SHAPES[shape](rng)
    n = graph.num_vertices
    seeds = rng.integers(0, n, 12)
    seeds[1] = seeds[0]
    want = ppr_float64(graph, teleports(n, seeds))
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        ranks = await session.ppr_many(seeds, **TIGHT)
        top = await session.ppr_many(seeds, top_k=6, **TIGHT)
        one = await session.ppr(int(seeds[2]), **TIGHT)
        one_top = await session.ppr(int(seeds[2]), top_k=6, **TIGHT)
    assert isinstance(ranks, np.ndarray)
    assert ranks.shape == (12, n)
    assert_ranks_match(ranks, want)
    assert isinstance(top, ppr.TopRanks)
    assert top.vertices.shape == top.ranks.shape == (12, min(6, n))
    assert_top_k_match(top.vertices, top.ranks, want)
    assert isinstance(one, np.ndarray)
    assert_ranks_match(one, want[2])
    assert isinstance(one_top, ppr.TopRanks)
    assert_top_k_match(one_top.vertices, one_top.ranks, want[2])


async def test_ties_in_the_top_k_go_to_the_smaller_vertex(rng: np.random.Generator) -> None:
    """A hub's leaves rank exactly alike, and past the seed's component every rank is 0:
    top k takes the smallest vertex ids among equals, whatever the numbering."""
    n = 200
    hub = int(rng.integers(n))
    leaves = rng.choice(np.setdiff1d(np.arange(n), [hub]), 40, replace=False)
    graph = va.graphs.CsrGraph.from_edges(np.full(40, hub), leaves, n, symmetric=True)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        found = await session.ppr_many([hub, int(leaves[0])], top_k=50)
    assert isinstance(found, ppr.TopRanks)
    assert found.vertices[0, 0] == hub
    np.testing.assert_array_equal(found.vertices[0, 1:41], np.sort(leaves))
    outside = np.setdiff1d(np.arange(n), [hub, *leaves])[:9]
    np.testing.assert_array_equal(found.vertices[0, 41:], outside)
    assert np.all(found.ranks[0, 41:] == 0)


async def test_many_seeds_run_in_passes_that_fit_the_budget(rng: np.random.Generator) -> None:
    """A budget for 4 seeds per pass: 50 seeds take 13 passes, with the same ranks."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    n = graph.num_vertices
    seeds = rng.integers(0, n, 50)
    want = ppr_float64(graph, teleports(n, seeds))
    per_pass = ppr.scratch_nbytes(n, 4)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        budget = per_pass + session.stats().graph_bytes_uploaded + 4 * graph.num_edges
        before = session.stats().runs
        ranks = await session.ppr_many(seeds, **TIGHT, budget_bytes=budget)
        assert session.stats().runs == before + 1
        with pytest.raises(va.ValidationError, match=r"one seed.*budget.*Fix: raise budget_bytes"):
            await session.ppr_many(seeds, budget_bytes=session.stats().graph_bytes_uploaded)
    assert isinstance(ranks, np.ndarray)
    assert_ranks_match(ranks, want)
    assert ppr.plan_columns(n, 0, 50, per_pass) == 4


async def test_a_seed_that_converges_first_stops_while_the_others_go_on() -> None:
    """A seed without out-edges is settled after one iteration (all its rank is its own)
    while another seed of the same pass iterates on; both end right, in the same run."""
    graph = va.graphs.CsrGraph.from_edges(
        np.array([0, 1, 2, 3, 4]), np.array([1, 2, 3, 4, 0]), 7
    )  # a 5-cycle and two isolated vertices
    want = ppr_float64(graph, teleports(7, [5, 0]))
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        ranks = await session.ppr_many([5, 0], tol=1e-7, max_iter=300)
    assert isinstance(ranks, np.ndarray)
    np.testing.assert_array_equal(ranks[0], np.eye(7, dtype=np.float32)[5])
    assert_ranks_match(ranks, want)


def _networkx(graph: va.graphs.CsrGraph) -> nx.DiGraph:
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.num_vertices))
    src = np.repeat(np.arange(graph.num_vertices), np.diff(graph.offsets))
    digraph.add_edges_from(zip(src.tolist(), graph.indices.tolist(), strict=True))
    return digraph


def _nx_ranks(digraph: nx.DiGraph, personalization: dict[int, float]) -> np.ndarray:
    found = nx.pagerank(
        digraph, alpha=0.85, personalization=personalization, tol=1e-13, max_iter=10_000
    )
    return np.array([found[v] for v in range(digraph.number_of_nodes())])


@pytest.mark.parametrize("shape", ["self_loops_directed", "disconnected", "random_directed"])
async def test_personalized_pagerank_equals_networkx(rng: np.random.Generator, shape: str) -> None:
    """pagerank(personalization=...) with a vertex, a list of vertices and a weight vector
    equals networkx.pagerank(personalization=...) (dangling mass to the
    personalization), and so does ppr(seed)."""
    graph = GRAPH_SHAPES[shape](rng)
    n = graph.num_vertices
    digraph = _networkx(graph)
    seed = int(rng.integers(n))
    chosen = rng.choice(n, 5, replace=False)
    weights = rng.random(n) * (rng.random(n) < 0.3)
    weights[seed] = 2.0
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        by_vertex = await session.pagerank(personalization=seed, **TIGHT)
        by_list = await session.pagerank(
            personalization=[*chosen.tolist(), int(chosen[0])], **TIGHT
        )
        by_weights = await session.pagerank(personalization=weights, **TIGHT)
        out = np.full(n, -3.0, np.float32)
        assert await session.pagerank(personalization=weights, **TIGHT, out=out) is out
        single = await session.ppr(seed, **TIGHT)
    assert_ranks_match(by_vertex, _nx_ranks(digraph, {seed: 1.0}))
    assert_ranks_match(single, _nx_ranks(digraph, {seed: 1.0}))
    assert_ranks_match(by_list, _nx_ranks(digraph, {int(v): 1.0 for v in chosen}))
    dense = _nx_ranks(digraph, {v: float(w) for v, w in enumerate(weights) if w > 0})
    assert_ranks_match(by_weights, dense)
    assert_ranks_match(out, dense)


async def test_plain_pagerank_is_unchanged_by_the_new_parameter(rng: np.random.Generator) -> None:
    """pagerank() without personalization still runs the pagerank kind (uniform teleport)."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    digraph = _networkx(graph)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        plain = await session.pagerank(**TIGHT)
        uniform = await session.pagerank(personalization=np.ones(graph.num_vertices), **TIGHT)
    want = _nx_ranks(digraph, dict.fromkeys(range(graph.num_vertices), 1.0))
    assert_ranks_match(plain, want)
    assert_ranks_match(uniform, want)


async def test_concurrent_ppr_calls_share_batches_and_each_gets_its_ranks(
    rng: np.random.Generator,
) -> None:
    """40 concurrent ppr callers (ranks and top k) with batching: fewer batches than
    callers, and each answer is its own seed's."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    seeds = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    want = ppr_float64(graph, teleports(graph.num_vertices, seeds))
    got: dict[int, object] = {}
    config = va.BatchingConfig(max_batch=16, max_delay=0.05)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):

        async def one(i: int) -> None:
            got[i] = await session.ppr(seeds[i], **TIGHT, top_k=4 if i % 2 else None)

        async with anyio.create_task_group() as tg:
            for i in range(len(seeds)):
                tg.start_soon(one, i)
        stats = session.batch_stats()
        many = await session.ppr_many(seeds[:20], **TIGHT)
    assert stats is not None
    assert stats.batches < len(seeds)
    for i, answer in got.items():
        if i % 2:
            assert isinstance(answer, ppr.TopRanks)
            assert_top_k_match(answer.vertices, answer.ranks, want[i])
        else:
            assert isinstance(answer, np.ndarray)
            assert_ranks_match(answer, want[i])
    assert isinstance(many, np.ndarray)
    assert_ranks_match(many, want[:20])


def test_a_job_of_ppr_items_writes_top_k_and_ranks(tmp_path: Path) -> None:
    """A ppr job: one item per seed, records with the top vertex and rank, each item's
    array its top-k (vertex, rank) pairs or its ranks, against the float64 reference."""
    graph = rmat_graph()
    sources = random_sources(20, 3, graph.num_vertices)
    job = write_job(
        tmp_path,
        [
            {"kind": "ppr", "sources": sources, "top_k": 5, **TIGHT},
            {"kind": "ppr", "sources": sources[:6], "damping": 0.5, **TIGHT},
        ],
    )
    summary = anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert summary.status == "complete", summary.message
    want = ppr_float64(graph, teleports(graph.num_vertices, sources))
    halfway = ppr_float64(graph, teleports(graph.num_vertices, sources[:6]), damping=0.5)
    out = tmp_path / "out"
    records = sorted(read_records(out), key=lambda r: r.id)
    assert [r.kind for r in records] == ["ppr"] * 26
    with open_item_arrays(out) as arrays:
        for r in records:
            assert r.array is not None
            array = arrays.read(r.array, r.id)
            if r.workload == 0:
                row = want[sources.index(r.source)]
                assert array.dtype == ppr.TOP_PAIR
                assert_top_k_match(array["vertex"], array["rank"], row)
                assert (r.top_vertex, r.top_rank) == (array["vertex"][0], array["rank"][0])
            else:
                row = halfway[sources.index(r.source)]
                assert_ranks_match(array, row)
                assert r.top_vertex == int(np.argmax(array))
                assert r.top_rank == pytest.approx(float(array.max()))
    layout = json.loads((out / "manifest.json").read_text())["records"]
    assert layout["kinds"] == ["ppr"]
    assert layout["columns"] == [["top_vertex", "int"], ["top_rank", "float"]]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.ppr(99), r"source vertex 99 is out of range.*Fix:"),
        (lambda s: s.ppr(-1), r"source vertex -1 is out of range.*Fix:"),
        (lambda s: s.ppr_many([0, 40]), r"source vertex 40 is out of range.*Fix:"),
        (lambda s: s.ppr_many([]), r"at least one seed.*Fix:"),
        (lambda s: s.ppr_many(np.zeros(0, np.int32)), r"at least one seed.*Fix:"),
        (lambda s: s.ppr(0, top_k=0), r"top_k must be a positive int.*Fix:"),
        (lambda s: s.ppr_many([0], top_k=-3), r"top_k must be a positive int.*Fix:"),
        (lambda s: s.ppr(0, damping=1.0), r"damping must be in \(0, 1\).*Fix:"),
        (lambda s: s.ppr_many([0], tol=0.0), r"tol must be positive.*Fix:"),
        (lambda s: s.ppr(0, max_iter=0), r"max_iter must be a positive int.*Fix:"),
        (lambda s: s.pagerank(personalization=40), r"vertex 40 is out of range.*Fix:"),
        (lambda s: s.pagerank(personalization=[1, 2, 45]), r"vertex 45 is out of range.*Fix:"),
        (lambda s: s.pagerank(personalization=[]), r"lists no vertex.*Fix:"),
        (lambda s: s.pagerank(personalization=np.ones(39)), r"39 weights.*40 vertices.*Fix:"),
        (lambda s: s.pagerank(personalization=-np.eye(40)[3]), r"weight 3 is -1\.0.*Fix:"),
        (lambda s: s.pagerank(personalization=np.zeros(40)), r"sum to 0.*Fix:"),
        (lambda s: s.pagerank(personalization=np.full(40, np.nan)), r"weight 0 is nan.*Fix:"),
        (lambda s: s.pagerank(personalization=np.ones((2, 20))), r"shape \(2, 20\).*Fix:"),
    ],
)
async def test_bad_input_is_refused_with_a_fix_before_anything_runs(
    call: object, message: str
) -> None:
    """Each bad seed, seed list, parameter or personalization: a ValidationError whose
    message ends in a fix, and no dispatch reaches the backend."""
    graph = _forty()
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        before = backend.telemetry().dispatches
        with pytest.raises(va.ValidationError, match=message):
            await call(session)  # type: ignore[operator]
        assert backend.telemetry().dispatches == before


def _forty() -> va.graphs.CsrGraph:
    """A small directed graph of 40 vertices."""
    rng = np.random.default_rng(40)
    return va.graphs.CsrGraph.from_edges(rng.integers(0, 40, 120), rng.integers(0, 40, 120), 40)


def test_validate_refuses_a_bad_top_k_in_a_job(tmp_path: Path) -> None:
    """A ppr workload with top_k = 0: validate exits 2 naming the field."""
    job = write_job(tmp_path, [{"kind": "ppr", "sources": [0, 1], "top_k": 0}])
    import contextlib
    import io

    from vyre_async.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["validate", str(job)])
    assert code == 2, err.getvalue()
    assert "top_k" in err.getvalue()


async def test_an_iteration_limit_past_int32_is_clamped_not_refused() -> None:
    """max_iter = 2**40 runs (clamped to the state's 2**24, as PageRank's is) and
    converges on tol like any other limit."""
    graph = _forty()
    want = ppr_float64(graph, teleports(40, [3]))
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        ranks = await session.ppr(3, tol=1e-9, max_iter=2**40)
    assert_ranks_match(ranks, want[0])
