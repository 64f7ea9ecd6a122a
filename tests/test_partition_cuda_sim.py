"""A graph split over two simulated CUDA devices: the CUDA backend's host path of a
partitioned traversal (peer copies ordered between the devices' streams, or through
host memory where peer access is refused) gives SciPy's levels, and frees everything."""

from __future__ import annotations

from typing import Any

import anyio
import cuda_sim
import numpy as np
import pytest
from graph_references import pagerank_float64
from partition_shapes import SHAPES, reference_rows, split_limit

import vyre_async as va
from vyre_async.algorithms.msbfs import MSBFS_PART_KERNELS, _partitioned
from vyre_async.algorithms.pagerank import PAGERANK_PART_KERNELS


class TwoDevices(cuda_sim.SimulatedDriver):
    """The simulator with two devices (one memory), each its own context, and peer copies."""

    #: What cuDeviceCanAccessPeer answers.
    peer = 1

    def cuDeviceCanAccessPeer(self, device: int, peer: int) -> tuple[Any, int]:  # noqa: N802
        return (cuda_sim.OK, self.peer)

    def cuCtxEnablePeerAccess(self, context: int, flags: int) -> tuple[Any]:  # noqa: N802
        self._count("cuCtxEnablePeerAccess")
        return (cuda_sim.OK,)

    def cuMemcpyPeerAsync(  # noqa: N802
        self, dst: Any, dst_ctx: Any, src: Any, src_ctx: Any, nbytes: int, stream: Any
    ) -> tuple[Any]:
        self._count("cuMemcpyPeerAsync")
        return self._copy(dst, src, nbytes, stream)


def _install(monkeypatch: pytest.MonkeyPatch, peer: int) -> TwoDevices:
    from vyre_async.backends.cuda import _launch as cuda_launch
    from vyre_async.cuda import _driver

    sim = TwoDevices((*MSBFS_PART_KERNELS, *PAGERANK_PART_KERNELS), lag=1, devices=2)
    sim._faults = {}
    sim.peer = peer
    monkeypatch.setattr(_driver, "_driver", sim)
    monkeypatch.setattr(_driver, "_failure", None)
    monkeypatch.setattr(cuda_launch, "compile_kernel", sim.compile)
    return sim


@pytest.mark.parametrize("peer", [1, 0], ids=["peer", "through_host"])
async def test_split_traversal_on_two_simulated_devices_equals_scipy(
    peer: int, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bfs_many and PageRank over two CUDA backends (simulated), copies by
    cuMemcpyPeerAsync: SciPy's levels, float64 ranks; peer access enabled only where
    the pair allows it; nothing left allocated."""
    sim = _install(monkeypatch, peer)
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 70).astype(np.int32)
    async with va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group:
        before = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
        async with va.resident_graph(group, graph) as session:
            assert session.placement is not None
            assert session.placement.mode == "partition"
            levels = await session.bfs_many(sources)
            ranks = await session.pagerank(tol=1e-7)
            routes = session._partition.links.routes  # type: ignore[union-attr]
        after = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(levels, reference_rows(graph, sources))
    np.testing.assert_allclose(ranks, pagerank_float64(graph, 0.85), rtol=1e-4, atol=1e-6)
    assert routes[(0, 1)] == routes[(1, 0)] == ("peer" if peer else "host")
    assert sim.calls.get("cuMemcpyPeerAsync", 0) > 0
    assert sim.calls.get("cuCtxEnablePeerAccess", 0) == (2 if peer else 0)
    assert after == before


async def test_a_level_a_wait_on_two_simulated_devices_equals_scipy(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With slots so wide that a batch is one level, the CUDA backend reads the state
    after each level's direction step and only then enqueues its copies: bfs_many still
    gives SciPy's levels, and nothing is left allocated."""
    _install(monkeypatch, 1)
    monkeypatch.setattr(_partitioned, "BATCH_COPY_BYTES", 1)  # every slot "wide"
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 70).astype(np.int32)
    async with va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group:
        before = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
        async with va.resident_graph(group, graph) as session:
            levels = await session.bfs_many(sources)
        after = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(levels, reference_rows(graph, sources))
    assert after == before


async def test_split_counts_on_two_simulated_devices_equal_scipy(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reached counts over two CUDA backends (simulated), every device's count submitted
    before any is collected, and a lone BFS whose level rows come from both devices at
    once: SciPy's answers."""
    _install(monkeypatch, 1)
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 130).astype(np.int32)
    async with (
        va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        counts = await session.bfs_many(sources, readback="counts")
        levels = await session.bfs(int(sources[0]))
    expected = reference_rows(graph, sources)
    np.testing.assert_array_equal(counts, (expected >= 0).sum(axis=1))
    np.testing.assert_array_equal(levels, expected[0])


class RefusingCopies(TwoDevices):
    """Two simulated devices whose driver refuses every copy between them."""

    def cuMemcpyPeerAsync(  # noqa: N802 - the driver's name
        self, dst: Any, dst_ctx: Any, src: Any, src_ctx: Any, nbytes: int, stream: Any
    ) -> tuple[Any]:
        self._count("cuMemcpyPeerAsync")
        return (cuda_sim.R.CUDA_ERROR_INVALID_VALUE,)


async def test_a_refused_copy_is_an_error_not_a_hang(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver refuses the copies between devices: bfs_many raises a VyreError (no
    hang), and the session still closes with nothing left allocated."""
    from vyre_async.backends.cuda import _launch as cuda_launch
    from vyre_async.cuda import _driver

    sim = RefusingCopies(MSBFS_PART_KERNELS, lag=1, devices=2)
    sim._faults = {}
    monkeypatch.setattr(_driver, "_driver", sim)
    monkeypatch.setattr(_driver, "_failure", None)
    monkeypatch.setattr(cuda_launch, "compile_kernel", sim.compile)
    graph = SHAPES["random_symmetric"](rng)
    with anyio.fail_after(60):
        async with va.open_devices(
            "cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)
        ) as group:
            before = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
            async with va.resident_graph(group, graph) as session:
                with pytest.raises(va.VyreError, match="Fix:"):
                    await session.bfs_many([0, 1, 2])
            after = [b.live_allocations() for b in group.backends]  # type: ignore[attr-defined]
    assert sim.calls["cuMemcpyPeerAsync"] > 0
    assert after == before


class RecordingCopiesOut(TwoDevices):
    """Two simulated devices that record where each device-to-host copy lands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.copied_out: list[tuple[int, int]] = []  # (host address, bytes)

    def cuMemcpyDtoHAsync(  # noqa: N802 - the driver's name
        self, dst: Any, src: Any, nbytes: int, stream: Any
    ) -> tuple[Any]:
        self.copied_out.append((int(dst), int(nbytes)))
        return super().cuMemcpyDtoHAsync(dst, src, nbytes, stream)


async def test_a_lone_bfs_lands_each_devices_levels_in_the_returned_row(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone BFS over two CUDA backends (simulated) whose reads of these sizes take the
    driver's pageable copy: each device's levels are copied by the driver straight into
    its range of the row returned, which equals SciPy's."""
    from vyre_async.backends.cuda import _launch as cuda_launch
    from vyre_async.backends.cuda import _reads
    from vyre_async.cuda import _driver

    sim = RecordingCopiesOut((*MSBFS_PART_KERNELS, *PAGERANK_PART_KERNELS), lag=1, devices=2)
    sim._faults = {}
    monkeypatch.setattr(_driver, "_driver", sim)
    monkeypatch.setattr(_driver, "_failure", None)
    monkeypatch.setattr(cuda_launch, "compile_kernel", sim.compile)
    monkeypatch.setattr(_reads, "PAGEABLE_READ_MIN_BYTES", 1)
    graph = SHAPES["random_directed"](rng)
    source = int(rng.integers(0, graph.num_vertices))
    async with (
        va.open_devices("cuda", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        ranges = session._partition.ranges  # type: ignore[union-attr]
        sim.copied_out.clear()
        row = await session.bfs(source)
    np.testing.assert_array_equal(row, reference_rows(graph, np.array([source]))[0])
    for d in range(2):
        first, stop = ranges.bounds(d)
        assert (row.ctypes.data + 4 * first, 4 * (stop - first)) in sim.copied_out
