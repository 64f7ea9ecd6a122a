"""A graph split over the GPUs of the host (needs two GPUs): traversals equal SciPy, with
copies device to device and, where peer access is refused, through host memory."""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from graph_references import pagerank_float64, scipy_levels
from partition_shapes import SHAPES, hub_graph, reference_rows, split_limit

import vyre_async as va
from vyre_async.algorithms.msbfs import run_parted_traversals
from vyre_async.backends.cuda import _peer as cuda_peer
from vyre_async.cuda import PeerRoute
from vyre_async.testing import gpu_count

GPUS = gpu_count()
pytestmark = pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")

#: Seconds any one test may take: a copy that never completes fails, never hangs.
NO_HANG_S = 120


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_split_bfs_many_on_gpus_equals_scipy(
    shape: str, devices: int, rng: np.random.Generator
) -> None:
    """bfs_many levels and counts on a graph split over GPUs equal SciPy's; PageRank
    equals float64 power iteration."""
    if devices > GPUS:
        pytest.skip(f"needs {devices} GPUs")
    graph = SHAPES[shape](rng)
    sources = rng.integers(0, graph.num_vertices, 100).astype(np.int32)
    expected = reference_rows(graph, sources)
    with anyio.fail_after(NO_HANG_S):
        async with (
            va.open_devices(
                "cuda", devices=list(range(devices)), memory_limit=split_limit(graph, devices)
            ) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session.placement is not None
            assert session.placement.mode == "partition"
            levels = await session.bfs_many(sources)
            counts = await session.bfs_many(sources, readback="counts")
            ranks = await session.pagerank(tol=1e-7)
    np.testing.assert_array_equal(levels, expected)
    np.testing.assert_allclose(ranks, pagerank_float64(graph, 0.85), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(counts, (expected >= 0).sum(axis=1))


async def test_split_rmat_on_two_gpus_equals_one_gpu(rng: np.random.Generator) -> None:
    """R-MAT 16 split over two GPUs: single BFS, reach, 1,024-source counts and PageRank
    equal one GPU holding the whole graph; every allocation is freed after."""
    graph = va.graphs.rmat(16, 16, int(rng.integers(1 << 30)))
    sources = rng.integers(0, graph.num_vertices, 1024).astype(np.int32)
    with anyio.fail_after(NO_HANG_S):
        async with (
            va.open_devices("cuda", devices=[0]) as one_group,
            va.resident_graph(one_group, graph) as one,
        ):
            want_levels = await one.bfs(int(sources[0]))
            want_counts = await one.bfs_many(sources, readback="counts")
            want_ranks = await one.pagerank(tol=1e-6)
        async with va.open_devices(
            "cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)
        ) as group:
            before = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
            async with va.resident_graph(group, graph) as session:
                levels = await session.bfs(int(sources[0]))
                reached = await session.reach_count(int(sources[0]))
                counts = await session.bfs_many(sources, readback="counts")
                ranks = await session.pagerank(tol=1e-6)
                routes = set(session._partition.links.routes.values())  # type: ignore[union-attr]
            after = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(levels, want_levels)
    np.testing.assert_array_equal(levels, scipy_levels(graph, int(sources[0])))
    assert reached == int((want_levels >= 0).sum())
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_allclose(ranks, want_ranks, rtol=1e-3, atol=1e-7)
    np.testing.assert_allclose(ranks, pagerank_float64(graph, 0.85), rtol=1e-3, atol=1e-7)
    assert routes <= {"local", "peer", "host"}
    assert after == before


async def test_split_lone_bfs_of_a_million_vertices_equals_one_gpu(
    rng: np.random.Generator,
) -> None:
    """R-MAT 20 split over two GPUs: each device's 2 MiB range of a lone BFS's levels is
    read by the driver's pageable copy straight into the row, whose 4 MiB were touched
    while the devices traversed; the rows equal one GPU's."""
    graph = await anyio.to_thread.run_sync(va.graphs.rmat, 20, 8, int(rng.integers(1 << 30)))
    degrees = np.diff(graph.offsets)
    sources = [int(np.argmax(degrees)), *rng.integers(0, graph.num_vertices, 2).tolist()]
    with anyio.fail_after(NO_HANG_S):
        async with (
            va.open_devices("cuda", devices=[0]) as one_group,
            va.resident_graph(one_group, graph) as one,
        ):
            want = [await one.bfs(s) for s in sources]
        async with (
            va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session.placement is not None
            assert session.placement.mode == "partition"
            got = [await session.bfs(s) for s in sources]
    for row, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(row, expected)


@pytest.mark.parametrize("direction", ["top_down", "bottom_up"])
async def test_every_level_one_way_on_gpus_equals_scipy(
    direction: str, rng: np.random.Generator
) -> None:
    """Every level pushed to owners, or every level pulling the gathered frontier, on
    two GPUs: equal SciPy."""
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 130).astype(np.int32)
    with anyio.fail_after(NO_HANG_S):
        async with (
            va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session._partition is not None
            rows = await run_parted_traversals(
                session._partition,
                sources,
                max_level=2**31 - 1,
                readback="levels",
                direction=direction,  # type: ignore[arg-type]
            )
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))


@pytest.mark.parametrize("direction", ["top_down", "bottom_up", "auto"])
@pytest.mark.parametrize("queries", [1, 130, 1024])
async def test_hubs_on_gpus_equal_scipy(
    direction: str, queries: int, rng: np.random.Generator
) -> None:
    """Hubs whose lists the split kernels cut into chunks over the grid (and lists long
    enough for a warp each), on two GPUs: every level equals SciPy's, each direction,
    one to sixteen lane words; PageRank equals float64 power iteration."""
    graph = hub_graph(rng)
    sources = rng.integers(0, graph.num_vertices, queries).astype(np.int32)
    with anyio.fail_after(NO_HANG_S):
        async with (
            va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session._partition is not None
            rows = await run_parted_traversals(
                session._partition,
                sources,
                max_level=2**31 - 1,
                readback="levels",
                direction=direction,  # type: ignore[arg-type]
            )
            ranks = await session.pagerank(tol=1e-7)
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))
    np.testing.assert_allclose(ranks, pagerank_float64(graph, 0.85), rtol=1e-4, atol=1e-6)


async def test_without_peer_access_copies_go_through_host_memory(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Peer access refused for every pair: the split traversal still completes, through
    host memory (the route says so), with SciPy's levels, and does not hang."""

    def refused(reader: object, owner: object) -> PeerRoute:
        return PeerRoute("host", "refused by the test")

    monkeypatch.setattr(cuda_peer, "open_peer_route", refused)
    graph = SHAPES["random_symmetric"](rng)
    sources = rng.integers(0, graph.num_vertices, 70).astype(np.int32)
    with anyio.fail_after(NO_HANG_S):
        async with (
            va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session._partition is not None
            routes = session._partition.links.routes
            levels = await session.bfs_many(sources)
    assert routes[(0, 1)] == routes[(1, 0)] == "host"
    np.testing.assert_array_equal(levels, reference_rows(graph, sources))
