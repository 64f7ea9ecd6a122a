"""Several devices as one backend: replicas, spreading by load, failover (CPU devices)."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels

import vyre_async as va
from vyre_async.backends import CpuBackend, MultiDeviceBackend


async def test_a_list_of_devices_opens_a_multi_device_backend_that_refuses_one_device_work() -> (
    None
):
    """device=[0, 1] gives two devices; dispatches are refused with the fix; telemetry adds."""
    async with va.open_backend("cpu", device=[0, 1]) as backend:
        assert isinstance(backend, MultiDeviceBackend)
        assert len(backend.devices) == 2
        assert all(isinstance(d, CpuBackend) for d in backend.devices)
        with pytest.raises(va.UnsupportedFeatureError, match=r"backend\.devices\[i\].*"):
            await backend.upload(np.zeros(4, np.float32))
        with pytest.raises(va.UnsupportedFeatureError, match="Fix:"):
            backend.submit(va.kernels.axpy, {})
        x = np.ones(64, np.float32)
        for device in backend.devices:
            await device.dispatch(va.kernels.axpy, {"x": x, "y": x}, a=1.0)
        assert backend.telemetry().dispatches == 2
        first, second = (d.activity() for d in backend.devices)
        summed = (a + b for a, b in zip(first, second, strict=True))
        assert backend.activity() == va.Activity(*summed)
        assert backend.activity().kernel_launches == 2
    assert all(d.state is va.LifecycleState.CLOSED for d in backend.devices)


async def test_all_on_the_cpu_and_a_single_ordinal_give_an_ordinary_backend() -> None:
    """device='all' on the CPU, or a one-element list, opens one ordinary backend."""
    for device in ("all", [3]):
        async with va.open_backend("cpu", device=device) as backend:  # type: ignore[arg-type]
            assert isinstance(backend, CpuBackend)


@pytest.mark.parametrize("device", [[0, 0], [], [-1], "every"])
async def test_bad_device_selections_are_refused(device: Any) -> None:
    """A repeated ordinal is a ConfigurationError; an empty list or a non-ordinal a ValueError."""
    error = va.ConfigurationError if device == [0, 0] else ValueError
    with pytest.raises(error):
        async with va.open_backend("cpu", device=device):
            pass


async def test_batches_spread_over_every_device_and_equal_scipy(rng: np.random.Generator) -> None:
    """Concurrent blocks run on both replicas; every row equals SciPy's levels."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    calls = [[int(s) for s in rng.integers(0, graph.num_vertices, 40)] for _ in range(6)]
    rows: dict[int, np.ndarray] = {}
    async with (
        va.open_backend("cpu", device=[0, 1]) as backend,
        backend.resident_graph(graph, batching=va.BatchingConfig(max_batch=32)) as session,
    ):
        assert session.devices == 2

        async def call(i: int) -> None:
            rows[i] = await session.bfs_many(calls[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                tg.start_soon(call, i)
        per_device = [d.telemetry().dispatches for d in backend.devices]  # type: ignore[attr-defined]
        stats = session.stats()
    assert all(count > 0 for count in per_device), f"a device did no work: {per_device}"
    assert (stats.devices, stats.devices_lost) == (2, 0)
    assert stats.graph_allocations == 2
    for i, sources in enumerate(calls):
        for row, source in zip(rows[i], sources, strict=True):
            np.testing.assert_array_equal(row, scipy_levels(graph, source))


async def test_a_lost_device_is_taken_out_and_its_work_runs_on_the_others(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeviceLostError on one device: its batches run again elsewhere, results all correct."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 90)]
    async with (
        va.open_backend("cpu", device=[0, 1, 2]) as backend,
        backend.resident_graph(graph, batching=va.BatchingConfig(max_batch=8)) as session,
    ):
        broken = backend.devices[1]  # type: ignore[attr-defined]

        def lost(*args: Any, **kwargs: Any) -> Any:
            raise va.DeviceLostError("pretend device 1 fell off the bus", fix="none (a test).")

        monkeypatch.setattr(broken, "_submit_bound", lost)  # every sequence submits here
        counts: dict[int, int] = {}

        async def query(i: int) -> None:
            counts[i] = await session.reach_count(sources[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(sources)):
                tg.start_soon(query, i)
        levels = await session.bfs(sources[0])  # unbatched paths fail over too
        assert session.devices == 2
        assert session.stats().devices_lost == 1
    np.testing.assert_array_equal(levels, scipy_levels(graph, sources[0]))
    for i, source in enumerate(sources):
        assert counts[i] == int((scipy_levels(graph, source) >= 0).sum())


async def test_when_every_device_is_lost_the_error_says_so(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All replicas lost: DeviceLostError naming how many, with a fix."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    async with (
        va.open_backend("cpu", device=[0, 1]) as backend,
        backend.resident_graph(graph) as session,
    ):
        for device in backend.devices:  # type: ignore[attr-defined]

            def lost(*args: Any, **kwargs: Any) -> Any:
                raise va.DeviceLostError("pretend the device is gone", fix="none (a test).")

            monkeypatch.setattr(device, "_submit_bound", lost)
        with pytest.raises(va.DeviceLostError, match=r"every device .* \(2 of 2\).*Fix:"):
            await session.reach_count(0)


async def test_a_failed_upload_on_one_device_raises_it_and_frees_the_other_copies(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of memory on one device: that OutOfMemoryError (not a group), nothing left live."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    async with va.open_backend("cpu", device=[0, 1]) as backend:
        devices = backend.devices  # type: ignore[attr-defined]

        async def full(*args: Any, **kwargs: Any) -> Any:
            raise va.OutOfMemoryError("pretend device 1 is full", fix="none (a test).")

        monkeypatch.setattr(devices[1], "upload_group", full)
        with pytest.raises(va.OutOfMemoryError, match=r"needs .* bytes"):
            async with backend.resident_graph(graph):
                pass
        assert [d.telemetry().resident_buffers_live for d in devices] == [0, 0]
