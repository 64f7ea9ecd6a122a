"""CudaDevice bookkeeping over a scripted stand-in for cuda.bindings.driver.

These tests check vyre_async's own logic (context made current once per thread,
device-lost latching, idempotent close); the real driver is exercised by tests/gpu.
"""

from __future__ import annotations

import threading
import types
from typing import Any

import anyio
import pytest
from cuda.bindings import driver

from vyre_async.cuda import _device
from vyre_async.cuda._device import CudaDevice, DeviceHealth, DeviceInfo
from vyre_async.errors import (
    ConfigurationError,
    DeviceLostError,
    DispatchError,
    LifecycleError,
    UnsupportedFeatureError,
)

R = driver.CUresult
A = driver.CUdevice_attribute

ATTRIBUTES = {
    A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
    A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
    A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132,
    A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
    A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: 1024,
    A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: 1024,
    A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: 64,
    A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 2**31 - 1,
    A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 65535,
    A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 65535,
    A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 49152,
    A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
}


class ScriptedDriver(types.SimpleNamespace):
    """Answers the driver calls CudaDevice makes, and records them."""

    def __init__(self, device_count: int = 1) -> None:
        super().__init__(CUdevice_attribute=A, CUresult=R)
        self.device_count = device_count
        self.calls: list[tuple[str, Any]] = []
        self.set_current_threads: list[int] = []
        self.next_result = R.CUDA_SUCCESS

    def cuDeviceGetCount(self) -> tuple[Any, int]:  # noqa: N802 - mirrors the binding
        return (R.CUDA_SUCCESS, self.device_count)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, int]:  # noqa: N802
        return (R.CUDA_SUCCESS, ordinal)

    def cuDeviceGetName(self, length: int, dev: int) -> tuple[Any, bytes]:  # noqa: N802
        return (R.CUDA_SUCCESS, b"NVIDIA H100 80GB HBM3".ljust(length, b"\0"))

    def cuDeviceGetAttribute(self, attribute: Any, dev: int) -> tuple[Any, int]:  # noqa: N802
        return (R.CUDA_SUCCESS, ATTRIBUTES[attribute])

    def cuDeviceTotalMem(self, dev: int) -> tuple[Any, int]:  # noqa: N802
        return (R.CUDA_SUCCESS, 85_000_000_000)

    def cuDriverGetVersion(self) -> tuple[Any, int]:  # noqa: N802
        return (R.CUDA_SUCCESS, 13000)

    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[Any, str]:  # noqa: N802
        self.calls.append(("retain", dev))
        return (R.CUDA_SUCCESS, f"ctx{dev}")

    def cuDevicePrimaryCtxRelease(self, dev: int) -> tuple[Any]:  # noqa: N802
        self.calls.append(("release", dev))
        return (R.CUDA_SUCCESS,)

    def cuCtxSetCurrent(self, ctx: str) -> tuple[Any]:  # noqa: N802
        self.calls.append(("set_current", ctx))
        self.set_current_threads.append(threading.get_ident())
        return (R.CUDA_SUCCESS,)

    def cuStreamQuery(self, stream: int) -> tuple[Any]:  # noqa: N802
        self.calls.append(("query", stream))
        return (self.next_result,)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedDriver:
    """A scripted driver that CudaDevice.open loads instead of libcuda."""
    fake = ScriptedDriver()
    monkeypatch.setattr(_device, "load_driver", lambda: fake)
    return fake


def test_open_reads_the_device_limits(scripted: ScriptedDriver) -> None:
    """open() records name, capability, memory, driver version and launch limits."""
    device = CudaDevice.open(0)
    info = device.info
    assert info.name == "NVIDIA H100 80GB HBM3"
    assert info.compute_capability == (9, 0)
    assert info.arch == "sm_90"
    assert info.total_memory == 85_000_000_000
    assert info.driver_version == 13000
    assert info.multiprocessor_count == 132
    assert info.max_block_dims == (1024, 1024, 64)
    assert info.max_grid_dims == (2**31 - 1, 65535, 65535)
    assert info.max_shared_memory_per_block_optin == 232448
    device.close()


def test_open_retains_the_primary_context_once_and_makes_it_current(
    scripted: ScriptedDriver,
) -> None:
    """open() retains the primary context once and sets it current in this thread."""
    device = CudaDevice.open(0)
    assert scripted.calls == [("retain", 0), ("set_current", "ctx0")]
    device.close()


def test_open_refuses_an_ordinal_past_the_visible_devices(scripted: ScriptedDriver) -> None:
    """Asking for device 3 with one visible is a ConfigurationError naming both numbers."""
    with pytest.raises(ConfigurationError, match="CUDA device 3 was asked for but only 1"):
        CudaDevice.open(3)


def test_open_with_no_devices_is_unsupported(scripted: ScriptedDriver) -> None:
    """A driver reporting zero devices gives UnsupportedFeatureError (auto falls back)."""
    scripted.device_count = 0
    with pytest.raises(UnsupportedFeatureError, match="0 devices"):
        CudaDevice.open(0)


def test_make_current_sets_the_context_once_per_thread(scripted: ScriptedDriver) -> None:
    """Repeated make_current() calls in a thread cost one cuCtxSetCurrent in total."""
    device = CudaDevice.open(0)
    for _ in range(5):
        device.make_current()

    def from_worker() -> None:
        for _ in range(5):
            device.make_current()

    worker = threading.Thread(target=from_worker)
    worker.start()
    worker.join(timeout=10)
    assert len(scripted.set_current_threads) == 2
    assert len(set(scripted.set_current_threads)) == 2
    device.close()


async def test_make_current_works_from_anyio_worker_threads(scripted: ScriptedDriver) -> None:
    """Calls from anyio worker threads make the context current there first."""
    device = CudaDevice.open(0)
    await anyio.to_thread.run_sync(device.call, scripted.cuStreamQuery, 7)
    assert scripted.calls[-2:] == [("set_current", "ctx0"), ("query", 7)]
    device.close()


def test_switching_between_two_devices_sets_the_context_each_time(
    scripted: ScriptedDriver,
) -> None:
    """Alternating two devices in one thread re-sets the context on every switch."""
    first = CudaDevice.open(0)
    second = CudaDevice.open(0)
    before = len(scripted.set_current_threads)
    first.make_current()
    second.make_current()
    second.make_current()
    first.make_current()
    assert len(scripted.set_current_threads) - before == 3
    first.close()
    second.close()


def test_sticky_error_marks_the_device_lost_for_every_later_call(
    scripted: ScriptedDriver,
) -> None:
    """After one sticky error, calls raise DeviceLostError without reaching the driver."""
    device = CudaDevice.open(0)
    scripted.next_result = R.CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        device.call(scripted.cuStreamQuery, 1)
    assert device.lost
    queries = sum(1 for name, _ in scripted.calls if name == "query")
    scripted.next_result = R.CUDA_SUCCESS
    with pytest.raises(DeviceLostError, match="Fix: restart the process and open a new backend"):
        device.call(scripted.cuStreamQuery, 2)
    assert sum(1 for name, _ in scripted.calls if name == "query") == queries


def test_ordinary_errors_leave_the_device_usable(scripted: ScriptedDriver) -> None:
    """A non-sticky failure raises but does not mark the device lost."""
    device = CudaDevice.open(0)
    scripted.next_result = R.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(DispatchError, match="CUDA_ERROR_INVALID_VALUE"):
        device.call(scripted.cuStreamQuery, 1)
    assert not device.lost
    device.close()


def test_close_releases_the_context_once(scripted: ScriptedDriver) -> None:
    """close() releases the primary context once, however often it is called."""
    device = CudaDevice.open(0)
    device.close()
    device.close()
    assert scripted.calls.count(("release", 0)) == 1


def test_calls_after_close_are_refused(scripted: ScriptedDriver) -> None:
    """A closed device raises LifecycleError instead of calling the driver."""
    device = CudaDevice.open(0)
    device.close()
    with pytest.raises(LifecycleError, match="closed"):
        device.call(scripted.cuStreamQuery, 1)


def test_health_keeps_only_the_first_cause() -> None:
    """DeviceHealth remembers the first device-lost error; later ones do not replace it."""
    health = DeviceHealth("device 0 (test)")
    health.check()
    health.mark_lost(DeviceLostError("first", fix="x"))
    health.mark_lost(DeviceLostError("second", fix="x"))
    assert health.error is not None
    assert "first" in health.error.what
    with pytest.raises(DeviceLostError, match=r"device 0 \(test\) was lost earlier"):
        health.check()


def test_device_info_encodes_to_json() -> None:
    """DeviceInfo is a frozen msgspec struct that the CLI can print as JSON."""
    import msgspec

    info = DeviceInfo(
        ordinal=0,
        name="x",
        compute_capability=(8, 9),
        total_memory=1,
        driver_version=12040,
        multiprocessor_count=1,
        max_threads_per_block=1024,
        max_block_dims=(1, 1, 1),
        max_grid_dims=(1, 1, 1),
        max_shared_memory_per_block=1,
        max_shared_memory_per_block_optin=1,
    )
    assert msgspec.json.decode(msgspec.json.encode(info), type=DeviceInfo) == info
    assert info.arch == "sm_89"
