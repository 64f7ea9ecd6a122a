"""Arrays of other libraries in and out: the CUDA Array Interface and DLPack.

On the CUDA backend these run on the simulated driver (``cuda_sim``), with stand-ins
for CuPy arrays whose memory is simulated device memory; what real CuPy and PyTorch
do with vyre_async's buffers is checked in ``tests/gpu/test_interop_gpu.py``. On the
CPU backend, host DLPack producers are real NumPy-backed objects.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vyre_async as va
from vyre_async.backends import _interop
from vyre_async.errors import LifecycleError, ValidationError
from vyre_async.kernels import axpy, sum_reduce

sys.path.insert(0, str(Path(__file__).parent))
import cuda_sim


class FakeCupyArray:
    """A stand-in for a CuPy array: CAI v3 over simulated device memory."""

    def __init__(
        self,
        sim: cuda_sim.SimulatedDriver,
        array: np.ndarray,
        *,
        stream: int | None = None,
        strides: tuple[int, ...] | None = None,
    ) -> None:
        self.sim = sim
        self.ptr = sim.device_array(array)
        self.shape = array.shape
        self.dtype = array.dtype
        self.stream = stream
        self.strides = strides

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": self.strides,
            "stream": self.stream,
        }

    def get(self) -> np.ndarray:
        nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        return self.sim.view(self.ptr, nbytes).view(self.dtype).reshape(self.shape).copy()


class FakeDLPackDeviceArray:
    """A stand-in for a JAX array: DLPack only, on (simulated) CUDA device 0."""

    def __init__(self, sim: cuda_sim.SimulatedDriver, array: np.ndarray) -> None:
        self.sim = sim
        self.ptr = sim.device_array(array)
        self.shape = array.shape
        self.dtype = array.dtype
        self.streams: list[int | None] = []

    def __dlpack__(self, *, stream: int | None = None) -> Any:
        self.streams.append(stream)
        return _interop.dlpack_capsule(self.ptr, self.dtype, self.shape, (2, 0), self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def get(self) -> np.ndarray:
        nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        return self.sim.view(self.ptr, nbytes).view(self.dtype).reshape(self.shape).copy()


class HostDLPack:
    """A host DLPack producer that is not a NumPy array (as a PyTorch CPU tensor is)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


@pytest.fixture
async def sim(monkeypatch: pytest.MonkeyPatch) -> cuda_sim.SimulatedDriver:
    """The simulated driver, installed for this test."""
    return cuda_sim.install(monkeypatch, lag=1)


@pytest.fixture
async def cuda(sim: cuda_sim.SimulatedDriver) -> AsyncIterator[Any]:
    """A CUDA backend on the simulated driver."""
    async with va.open_backend("cuda") as backend:
        yield backend


def model(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (a * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)


def consume(capsule: Any) -> tuple[int, tuple[int, int], tuple[int, ...], Any]:
    """A minimal DLPack consumer: (data pointer, device, shape, deleter call)."""
    address = _interop._capsule_pointer(capsule, b"dltensor")
    _interop._capsule_set_name(capsule, b"used_dltensor")
    managed = _interop._DLManagedTensor.from_address(address)
    tensor = managed.dl_tensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    device = (tensor.device.device_type, tensor.device.device_id)

    def delete() -> None:
        managed.deleter(ctypes.cast(address, ctypes.POINTER(_interop._DLManagedTensor)))

    return int(tensor.data), device, shape, delete


async def test_a_device_array_is_used_in_place_with_no_host_copy(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """CAI arrays bound to a dispatch are read and written where they are."""
    x, y = rng.standard_normal(500).astype(np.float32), rng.standard_normal(500).astype(np.float32)
    dx, dy = FakeCupyArray(sim, x), FakeCupyArray(sim, y)
    uploads = sim.calls.get("cuMemcpyHtoDAsync", 0)
    for a in (2.0, -1.0):  # a bound launch: the pointers are read at every dispatch
        assert await cuda.dispatch(axpy, {"x": dx, "y": dy}, a=a) == {}
    np.testing.assert_allclose(dy.get(), model(-1.0, x, model(2.0, x, y)), rtol=1e-5, atol=1e-5)
    assert sim.calls.get("cuMemcpyHtoDAsync", 0) == uploads
    fresh = FakeCupyArray(sim, y)  # same shape and dtype, other memory: pointed at anew
    await cuda.dispatch(axpy, {"x": dx, "y": fresh}, a=3.0)
    np.testing.assert_allclose(fresh.get(), model(3.0, x, y), rtol=1e-6)


async def test_a_device_output_buffer_is_cleared_before_the_kernel(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """A device array bound to an ``out`` parameter arrives zeroed, as outputs must."""
    x = rng.standard_normal(1000).astype(np.float32)
    out = FakeCupyArray(sim, np.full(1, 1e9, np.float32))  # poisoned
    await cuda.dispatch(sum_reduce, {"x": FakeCupyArray(sim, x), "out": out})
    assert abs(float(out.get()[0]) - x.astype(np.float64).sum()) < 1e-3


async def test_the_producer_stream_is_waited_for_on_the_device(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """A CAI v3 stream becomes an event the dispatch's stream waits for (no host sync)."""
    x = rng.standard_normal(64).astype(np.float32)
    dx, dy = FakeCupyArray(sim, x, stream=0x5150), FakeCupyArray(sim, x)
    waits = sim.calls.get("cuStreamWaitEvent", 0)
    await cuda.dispatch(axpy, {"x": dx, "y": dy}, a=1.0)
    assert sim.calls["cuStreamWaitEvent"] == waits + 1
    assert sim.calls.get("cuStreamSynchronize", 0) == 0


async def test_a_dlpack_device_array_is_borrowed_on_the_dispatch_stream_and_released(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """A DLPack-only device array is asked for the data on the dispatch's stream, used
    in place, and its tensor released once the work has finished."""
    x, y = rng.standard_normal(256).astype(np.float32), rng.standard_normal(256).astype(np.float32)
    dx, dy = FakeDLPackDeviceArray(sim, x), FakeDLPackDeviceArray(sim, y)
    before = _interop.live_exports()
    await cuda.dispatch(axpy, {"x": dx, "y": dy}, a=0.5)
    np.testing.assert_allclose(dy.get(), model(0.5, x, y), rtol=1e-6)
    assert dx.streams[-1] == int(cuda._lanes[0].stream)
    assert _interop.live_exports() == before


@pytest.mark.parametrize(
    "make",
    [
        lambda sim, x: FakeCupyArray(sim, x, strides=(8,)),
        lambda sim, x: FakeCupyArray(sim, x.astype(np.float64)),
        lambda sim, x: FakeCupyArray(sim, x[:100]),
    ],
    ids=["strided", "wrong-dtype", "wrong-length"],
)
async def test_a_device_array_that_does_not_fit_is_refused_with_a_fix(
    cuda: Any, sim: cuda_sim.SimulatedDriver, make: Any
) -> None:
    """Strided, mistyped or mis-sized device arrays are refused before anything runs."""
    x = np.ones(128, np.float32)
    launches = len(sim.launches)
    with pytest.raises(ValidationError, match="Fix:"):
        await cuda.dispatch(axpy, {"x": make(sim, x), "y": FakeCupyArray(sim, x)}, a=1.0)
    assert len(sim.launches) == launches


async def test_memory_of_no_device_is_refused(cuda: Any, sim: cuda_sim.SimulatedDriver) -> None:
    """A CAI pointer that is not this device's memory is refused with a fix."""
    host = np.ones(64, np.float32)

    class Stray(FakeCupyArray):
        def __init__(self) -> None:
            self.sim, self.ptr, self.shape, self.dtype = sim, host.ctypes.data, (64,), host.dtype
            self.stream, self.strides = None, None

    with pytest.raises(ValidationError, match=r"no CUDA device.*Fix:"):
        await cuda.dispatch(axpy, {"x": Stray(), "y": FakeCupyArray(sim, host)}, a=1.0)


async def test_device_arrays_upload_write_and_read_device_to_device(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """upload(), write() and read(out=) take device arrays and copy device to device."""
    data = rng.integers(0, 1000, 300).astype(np.int32)
    buf = await cuda.upload(FakeCupyArray(sim, data))
    assert (buf.dtype, buf.shape) == (np.dtype(np.int32), (300,))
    np.testing.assert_array_equal(await cuda.read(buf), data)
    patch = rng.integers(0, 1000, 50).astype(np.int32)
    await cuda.write(buf, FakeCupyArray(sim, patch), offset=10)
    out = FakeCupyArray(sim, np.zeros(300, np.int32))
    await cuda.read(buf, out=out)
    want = data.copy()
    want[10:60] = patch
    np.testing.assert_array_equal(out.get(), want)
    assert sim.calls.get("cuMemcpyHtoDAsync", 0) >= 0  # host copies: only the read above
    await cuda.free(buf)


async def test_a_resident_buffer_exports_its_memory_ordered_after_its_work(
    cuda: Any, sim: cuda_sim.SimulatedDriver
) -> None:
    """CAI v3 names no stream when the buffer is idle, and the export stream (made to
    wait on the device) while work on it is unfinished."""
    buf = await cuda.upload(np.arange(16, dtype=np.float32))
    cai = buf.__cuda_array_interface__
    assert cai["data"][0] == buf.ptr == cuda._registry.storage(buf).ptr
    assert (cai["shape"], cai["typestr"], cai["version"], cai["stream"]) == (
        (16,),
        "<f4",
        3,
        None,
    )
    other = await cuda.upload(np.ones(16, np.float32))
    await cuda.load_kernels(axpy)  # so submit enqueues at once (else once axpy loaded)
    with sim.holding():
        pending = cuda.submit(axpy, {"x": other, "y": buf}, a=1.0)
        waits = sim.calls.get("cuStreamWaitEvent", 0)
        busy = buf.__cuda_array_interface__
        assert busy["stream"] == int(cuda._export_stream)
        assert sim.calls["cuStreamWaitEvent"] == waits + 1
    await pending
    await cuda.free(other)
    await cuda.free(buf)


async def test_dlpack_export_aliases_the_buffer_and_its_deleter_lets_go(cuda: Any) -> None:
    """__dlpack__ gives a tensor over the buffer's own memory on (CUDA, 0)."""
    buf = await cuda.upload(np.arange(12, dtype=np.int32).reshape(3, 4))
    before = _interop.live_exports()
    pointer, device, shape, delete = consume(buf.__dlpack__(stream=1))
    assert (pointer, device, shape) == (buf.ptr, (2, 0), (3, 4))
    assert buf.__dlpack_device__() == (2, 0)
    assert _interop.live_exports() == before + 1
    delete()
    assert _interop.live_exports() == before
    await cuda.free(buf)


async def test_freeing_an_exported_buffer_waits_for_its_last_reference(
    cuda: Any, sim: cuda_sim.SimulatedDriver
) -> None:
    """free() of an exported buffer kills the handle at once; its memory returns to
    the pool only once nothing references the handle."""
    buf = await cuda.upload(np.ones(1 << 12, np.float32))
    view = buf.__cuda_array_interface__  # as cupy.asarray(buf) keeps buf as its owner
    baseline = cuda.live_allocations()["device"]
    holder = [buf]
    await cuda.free(buf)
    with pytest.raises(LifecycleError, match="already freed"):
        await cuda.read(buf)
    assert cuda.live_allocations()["device"] == baseline  # still out: a view may use it
    del buf
    holder.clear()
    gc.collect()
    assert cuda.live_allocations()["device"] == baseline - 1
    assert view["data"][0] not in sim.freed  # back in the pool's cache, not freed


async def test_an_export_that_outlives_the_backend_is_freed_when_it_goes(
    sim: cuda_sim.SimulatedDriver,
) -> None:
    """Closing the backend does not free memory an exported buffer still holds."""
    async with va.open_backend("cuda") as backend:
        buf = await backend.upload(np.ones(1 << 12, np.float32))
        address = buf.__cuda_array_interface__["data"][0]
    assert address not in sim.freed
    del buf
    gc.collect()
    assert address in sim.freed


async def test_the_cpu_backend_takes_host_dlpack_arrays(rng: np.random.Generator) -> None:
    """Host DLPack producers (as PyTorch CPU tensors) work wherever NumPy arrays do."""
    x, y = rng.standard_normal(200).astype(np.float32), rng.standard_normal(200).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        out = await backend.dispatch(axpy, {"x": HostDLPack(x), "y": HostDLPack(y)}, a=2.0)
        np.testing.assert_allclose(out["y"], model(2.0, x, y), rtol=1e-6)
        buf = await backend.upload(HostDLPack(x))
        await backend.write(buf, HostDLPack(y))
        target = np.zeros(200, np.float32)
        await backend.read(buf, out=HostDLPack(target))
        np.testing.assert_array_equal(target, y)
        await backend.free(buf)


async def test_the_cpu_backend_refuses_device_arrays_with_a_fix() -> None:
    """A CUDA array handed to the CPU backend is refused, naming what to do instead."""

    class DeviceOnly:
        __cuda_array_interface__ = {  # noqa: RUF012 - a fixed stand-in
            "shape": (4,),
            "typestr": "<f4",
            "data": (0xDEAD0000, False),
            "version": 3,
        }

    async with va.open_backend("cpu") as backend:
        with pytest.raises(ValidationError, match=r"device array.*Fix:.*cpu\(\)\.numpy"):
            await backend.dispatch(axpy, {"x": DeviceOnly(), "y": np.ones(4, np.float32)}, a=1.0)
        with pytest.raises(ValidationError, match="Fix:"):
            await backend.upload(DeviceOnly())


async def test_cpu_buffers_export_their_numpy_memory_through_dlpack() -> None:
    """np.from_dlpack(buf) on the CPU backend aliases the buffer; a free leaves it valid."""
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(np.arange(8, dtype=np.float64))
        assert not hasattr(buf, "__cuda_array_interface__")
        view = np.from_dlpack(buf)
        await backend.write(buf, np.array([100.0]), offset=3)
        assert view[3] == 100.0
        assert buf.ptr == view.ctypes.data
        await backend.free(buf)
        assert view[3] == 100.0  # NumPy's capsule holds the memory


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
async def test_outputs_on_the_device_come_back_as_resident_buffers(
    kind: str, monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator
) -> None:
    """outputs="device" leaves host-bound outputs resident; the caller's arrays stay as
    they were, and the buffers hold what the host path would have returned."""
    if kind == "cuda":
        cuda_sim.install(monkeypatch, lag=1)
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    y_before = y.copy()
    async with va.open_backend(kind) as backend:
        got = await backend.dispatch(axpy, {"x": x, "y": y}, a=2.0, outputs="device")
        assert set(got) == {"y"}
        assert isinstance(got["y"], va.ResidentBuffer)
        np.testing.assert_allclose(await backend.read(got["y"]), model(2.0, x, y), rtol=1e-6)
        total = await backend.dispatch(sum_reduce, {"x": x}, outputs="device")
        assert abs(float((await backend.read(total["out"]))[0]) - x.sum(dtype=np.float64)) < 1e-3
        with pytest.raises(ValueError, match="outputs must be"):
            await backend.dispatch(axpy, {"x": x, "y": y}, a=1.0, outputs="gpu")
        for buffer in (got["y"], total["out"]):
            await backend.free(buffer)
    np.testing.assert_array_equal(y, y_before)


async def test_a_dispatch_leaves_no_reference_cycle_holding_an_exported_buffer(
    cuda: Any, sim: cuda_sim.SimulatedDriver
) -> None:
    """Once freed and dropped, an exported buffer a dispatch used is released at once,
    by reference counting alone (no garbage collection needed)."""
    x = np.ones(256, np.float32)
    got = await cuda.dispatch(axpy, {"x": x, "y": x}, a=1.0, outputs="device")
    resident = got["y"]
    await cuda.dispatch(axpy, {"x": x, "y": resident}, a=1.0)  # a cached bound launch too
    resident.__cuda_array_interface__  # noqa: B018 - exported
    baseline = cuda.live_allocations()["device"]
    gc.disable()
    try:
        await cuda.free(resident)
        del got, resident
        assert cuda.live_allocations()["device"] == baseline - 1
    finally:
        gc.enable()
