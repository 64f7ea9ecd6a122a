"""Shortest paths by hops (the bfs_path kind) on the CPU backend: sessions, jobs, kernels."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels
from job_files import random_sources, rmat_graph, write_job
from kernel_builds import assert_builds_cleanly
from tree_references import assert_shortest_path

import vyre_async as va
from vyre_async.algorithms.bfs_path import (
    BFS_PATH_KERNELS,
    PATH_FOUND,
    PATH_LOST,
    _layout,
    bfs_path_step,
)
from vyre_async.graphs import CsrGraph
from vyre_async.jobs import JobRunner, load_job, open_item_arrays, read_records
from vyre_async.kernels import Kernel


def _pairs(rng: np.random.Generator, graph: CsrGraph, count: int) -> list[tuple[int, int]]:
    ends = rng.integers(0, graph.num_vertices, (count, 2))
    return [(int(s), int(t)) for s, t in ends]


@pytest.mark.parametrize("shape", sorted(GRAPH_SHAPES))
async def test_a_path_is_a_shortest_path_over_edges(rng: np.random.Generator, shape: str) -> None:
    """path(s, t): from s to t over edges, SciPy's level of t edges long; empty where t
    is unreachable; [s] when t is s."""
    graph = GRAPH_SHAPES[shape](rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        pairs = _pairs(rng, graph, 8)
        pairs.append((pairs[0][0], pairs[0][0]))
        for source, target in pairs:
            path = await session.path(source, target)
            assert_shortest_path(graph, source, target, scipy_levels(graph, source), path)


async def test_unreachable_targets_give_empty_paths(rng: np.random.Generator) -> None:
    """Between the two parts of a disconnected graph, and to a vertex with no in-edges."""
    graph = GRAPH_SHAPES["disconnected"](rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        assert (await session.path(0, 129)).size == 0
        assert (await session.path(129, 0)).size == 0
    one_way = CsrGraph.from_edges(np.array([0, 1]), np.array([1, 2]), 4)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, one_way) as session:
        np.testing.assert_array_equal(await session.path(0, 2), [0, 1, 2])
        assert (await session.path(2, 0)).size == 0
        assert (await session.path(0, 3)).size == 0


async def test_a_path_follows_the_bfs_parents(rng: np.random.Generator) -> None:
    """The walk back takes the same step as bfs(parents=True): the path is the parents'
    chain from the target (both take the first in-neighbour one level closer)."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for source, target in _pairs(rng, graph, 6):
            levels, parents = await session.bfs(source, parents=True)
            path = await session.path(source, target)
            chain = [target] if levels[target] >= 0 else []
            while chain and chain[-1] != source:
                chain.append(int(parents[chain[-1]]))
            np.testing.assert_array_equal(path, chain[::-1])


async def test_bad_targets_are_refused_with_a_fix(rng: np.random.Generator) -> None:
    """A target out of range, negative, or not an int: a ValidationError with a fix."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    n = graph.num_vertices
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for bad in (n, -1, 2**40):
            with pytest.raises(va.ValidationError, match=rf"target vertex {bad} .*Fix: "):
                await session.path(0, bad)
        for wrong in (1.5, True, "3"):
            with pytest.raises(va.ValidationError, match=r"target must be an int.*Fix: "):
                await session.path(0, wrong)  # type: ignore[arg-type]
        with pytest.raises(va.ValidationError, match=r"source vertex .*Fix: "):
            await session.path(n, 0)
        assert session.stats().runs == 0


async def test_query_many_pads_paths_with_minus_one(rng: np.random.Generator) -> None:
    """query_many("bfs_path", ...): one row per source, -1 after each path."""
    graph = GRAPH_SHAPES["long_path"](rng)
    kind = va.algorithms.lookup("bfs_path")
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        rows = await session.query_many(kind, [0, 5, 10], kind.params(target=5))
    np.testing.assert_array_equal(
        rows, [[0, 1, 2, 3, 4, 5], [5, -1, -1, -1, -1, -1], [10, 9, 8, 7, 6, 5]]
    )


def test_a_job_of_paths_writes_each_items_path(tmp_path: Path) -> None:
    """A bfs_path workload: item i is the path from sources[i] to the target; its
    record's hops is the target's level (-1: unreachable), its array the path."""
    graph = rmat_graph()
    sources = random_sources(25, 8, graph.num_vertices)
    target = int(np.argmax(np.diff(graph.offsets)))
    job = write_job(tmp_path, [{"kind": "bfs_path", "target": target, "sources": sources}])
    summary = anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert summary.status == "complete", summary.message
    out = tmp_path / "out"
    records = sorted(read_records(out), key=lambda r: r.id)
    assert [r.source for r in records] == sources
    unreachable = 0
    with open_item_arrays(out) as arrays:
        for r in records:
            assert r.source is not None
            assert r.array is not None
            levels = scipy_levels(graph, r.source)
            assert r.hops == int(levels[target])
            path = arrays.read(r.array, r.id)
            assert_shortest_path(graph, r.source, target, levels, path)
            unreachable += path.size == 0
    assert unreachable < len(sources)


def test_a_job_target_out_of_range_is_refused(tmp_path: Path) -> None:
    """A bfs_path workload whose target is not a vertex: the run fails naming the fix."""
    graph = rmat_graph()
    job = write_job(tmp_path, [{"kind": "bfs_path", "target": graph.num_vertices, "sources": [0]}])
    with pytest.raises(va.ConfigurationError, match=r"workload\[0\].*target vertex.*Fix: "):
        anyio.run(JobRunner(load_job(job), job_file=job).run)


# ------------------------------------------------------------------------ kernels


def test_the_walk_reports_levels_that_are_not_one_traversals() -> None:
    """bfs_path_step on a traversal's levels: PATH_FOUND and the path; on levels with no
    in-neighbour one level closer, or a level past the path's room: PATH_LOST."""
    graph = CsrGraph.from_edges(np.array([0, 1]), np.array([1, 2]), 3)
    transpose = graph.transpose()
    arrays = {
        "in_offsets": transpose.offsets.astype(np.int64),
        "in_indices": transpose.indices,
        "levels": np.array([0, 1, 2], np.int32),
        "state": np.zeros(8, np.int32),
        "goal": np.array([2], np.int32),
        "path": np.full(3, -9, np.int32),
    }
    _run(bfs_path_step, arrays)
    assert arrays["state"][2] == PATH_FOUND
    np.testing.assert_array_equal(arrays["path"], [0, 1, 2])
    for levels in ([0, 2, 1], [0, 5, 6]):  # 1 is not one closer; 6 >= n
        arrays["levels"] = np.array(levels, np.int32)
        arrays["state"][:] = 0
        arrays["path"][:] = -9
        _run(bfs_path_step, arrays)
        assert arrays["state"][2] == PATH_LOST
        assert arrays["path"][0] == -9


def _run(kernel: Kernel, arrays: dict[str, np.ndarray]) -> None:
    assert kernel.reference is not None
    kernel.reference(arrays, kernel.bind(arrays, {}).scalars)


def test_the_defines_header_states_the_python_constants() -> None:
    """bfs_path_defines.cuh and the Python constants agree, name for name."""
    folder = resources.files("vyre_async.algorithms.bfs_path")
    text = folder.joinpath("bfs_path_defines.cuh").read_text()
    stated = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    assert stated == {name: str(value) for name, value in _layout.CUDA_DEFINES.items()}


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", BFS_PATH_KERNELS, ids=lambda k: k.name)
def test_path_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each path kernel builds to a CUBIN with NVRTC, and NVRTC has nothing to say."""
    assert_builds_cleanly(kernel, arch)
