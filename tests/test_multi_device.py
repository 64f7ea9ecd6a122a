"""Device groups: several backends used together; replicas, spreading by load, failover."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels

import vyre_async as va
from vyre_async.backends import CpuBackend, DeviceGroup


async def test_a_list_of_devices_opens_a_group_of_backends_whose_telemetry_adds_up() -> None:
    """devices=[0, 1] gives a group of two CPU backends; its telemetry is their sum."""
    async with va.open_devices("cpu", devices=[0, 1]) as group:
        assert isinstance(group, DeviceGroup)
        assert len(group) == 2
        assert group.kind == "cpu"
        assert all(isinstance(b, CpuBackend) for b in group.backends)
        assert list(group) == list(group.backends)
        assert group.device_names == tuple(b.device_name for b in group.backends)
        assert group.state is va.LifecycleState.OPEN
        x = np.ones(64, np.float32)
        for backend in group.backends:
            await backend.dispatch(va.kernels.axpy, {"x": x, "y": x}, a=1.0)
        assert group.telemetry().dispatches == 2
        assert group.telemetry().device == " + ".join(group.device_names)
        first, second = (b.activity() for b in group.backends)
        summed = (a + b for a, b in zip(first, second, strict=True))
        assert group.activity() == va.Activity(*summed)
        assert group.activity().kernel_launches == 2
    assert group.state is va.LifecycleState.CLOSED
    assert all(b.state is va.LifecycleState.CLOSED for b in group.backends)


async def test_a_group_is_no_backend_and_open_backend_takes_one_ordinal() -> None:
    """A group runs no dispatch itself; open_backend refuses a list with the way to a group."""
    async with va.open_devices("cpu", devices=[0, 1]) as group:
        assert not hasattr(group, "dispatch")
        assert not hasattr(group, "upload")
    with pytest.raises(TypeError, match="open_devices"):
        async with va.open_backend("cpu", device=[0, 1]):  # type: ignore[arg-type]
            pass


async def test_all_on_the_cpu_and_a_single_ordinal_give_a_group_of_one() -> None:
    """devices='all' on the CPU, an ordinal, or a one-element list: one CPU backend."""
    for devices in ("all", 3, [3]):
        async with va.open_devices("cpu", devices=devices) as group:  # type: ignore[arg-type]
            assert len(group) == 1
            assert isinstance(group.backends[0], CpuBackend)
            assert group.telemetry() == group.backends[0].telemetry()


@pytest.mark.parametrize("devices", [[0, 0], [], [-1], "every"])
async def test_bad_device_selections_are_refused(devices: Any) -> None:
    """A repeated ordinal is a ConfigurationError; an empty list or a non-ordinal a ValueError."""
    error = va.ConfigurationError if devices == [0, 0] else ValueError
    with pytest.raises(error):
        async with va.open_devices("cpu", devices=devices):
            pass


async def test_batches_spread_over_every_device_and_equal_scipy(rng: np.random.Generator) -> None:
    """Concurrent blocks run on both replicas; every row equals SciPy's levels."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    calls = [[int(s) for s in rng.integers(0, graph.num_vertices, 40)] for _ in range(6)]
    rows: dict[int, np.ndarray] = {}
    async with (
        va.open_devices("cpu", devices=[0, 1]) as group,
        va.resident_graph(group, graph, batching=va.BatchingConfig(max_batch=32)) as session,
    ):
        assert session.devices == 2

        async def call(i: int) -> None:
            rows[i] = await session.bfs_many(calls[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                tg.start_soon(call, i)
        per_device = [b.telemetry().dispatches for b in group.backends]
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
        va.open_devices("cpu", devices=[0, 1, 2]) as group,
        va.resident_graph(group, graph, batching=va.BatchingConfig(max_batch=8)) as session,
    ):
        broken = group.backends[1]

        def lost(*args: Any, **kwargs: Any) -> Any:
            raise va.DeviceLostError("pretend device 1 fell off the bus", fix="none (a test).")

        monkeypatch.setattr(broken, "submit_prepared", lost)  # every sequence submits here
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
        va.open_devices("cpu", devices=[0, 1]) as group,
        va.resident_graph(group, graph) as session,
    ):
        for device in group.backends:

            def lost(*args: Any, **kwargs: Any) -> Any:
                raise va.DeviceLostError("pretend the device is gone", fix="none (a test).")

            monkeypatch.setattr(device, "submit_prepared", lost)
        with pytest.raises(va.DeviceLostError, match=r"every device .* \(2 of 2\).*Fix:"):
            await session.reach_count(0)


async def test_a_failed_upload_on_one_device_raises_it_and_frees_the_other_copies(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of memory on one device: that OutOfMemoryError (not a group), nothing left live."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    async with va.open_devices("cpu", devices=[0, 1]) as group:
        devices = group.backends

        async def full(*args: Any, **kwargs: Any) -> Any:
            raise va.OutOfMemoryError("pretend device 1 is full", fix="none (a test).")

        monkeypatch.setattr(devices[1], "upload_group", full)
        with pytest.raises(va.OutOfMemoryError, match=r"needs .* bytes"):
            async with va.resident_graph(group, graph):
                pass
        assert [d.telemetry().resident_buffers_live for d in devices] == [0, 0]
