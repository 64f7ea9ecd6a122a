"""A stand-in for ``cuda.bindings.driver`` with no device behind it: every call succeeds.

For measuring vyre_async's own Python on the traversal path on a machine without a
GPU (host_path.py); it computes nothing. Device memory is host memory (ctypes
buffers), so addresses stay valid; kernel and graph launches do nothing; a copy back
to the host fills int32 ones (a traversal's state then reads "done" after its first
batch); an event reads finished after ``lag`` queries. Types and enums come from the
real bindings, which import without a driver.
"""

from __future__ import annotations

import ctypes
import itertools
import types
from typing import Any

from cuda.bindings import driver as real

OK = real.CUresult.CUDA_SUCCESS
NOT_READY = real.CUresult.CUDA_ERROR_NOT_READY
_ATTRIBUTES = {
    "COMPUTE_CAPABILITY_MAJOR": 9,
    "COMPUTE_CAPABILITY_MINOR": 0,
    "MULTIPROCESSOR_COUNT": 132,
    "MAX_THREADS_PER_BLOCK": 1024,
    "MAX_BLOCK_DIM_X": 1024,
    "MAX_BLOCK_DIM_Y": 1024,
    "MAX_BLOCK_DIM_Z": 64,
    "MAX_GRID_DIM_X": 2**31 - 1,
    "MAX_GRID_DIM_Y": 65535,
    "MAX_GRID_DIM_Z": 65535,
    "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
}


class StubDriver(types.ModuleType):
    """The driver functions vyre_async calls, as no-ops that succeed."""

    def __init__(self, lag: int = 0) -> None:
        super().__init__("stub_driver")
        self._ids = itertools.count(0x1000)
        self._memory: dict[int, Any] = {}
        self._left: dict[Any, int] = {}
        self.lag = lag

    def __getattr__(self, name: str) -> Any:
        return getattr(real, name)

    def _alloc(self, nbytes: int) -> int:
        block = ctypes.create_string_buffer(max(1, nbytes))
        self._memory[ctypes.addressof(block)] = block
        return ctypes.addressof(block)

    def _free(self, address: Any) -> tuple[Any]:
        self._memory.pop(int(address), None)
        return (OK,)

    def cuInit(self, flags: int) -> tuple[Any]:  # noqa: N802 - the driver's names
        return (OK,)

    def cuDeviceGetCount(self) -> tuple[Any, int]:  # noqa: N802
        return (OK, 1)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, 0)

    def cuDeviceGetName(self, size: int, device: int) -> tuple[Any, bytes]:  # noqa: N802
        return (OK, b"stub device\0")

    def cuDeviceTotalMem(self, device: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, 140 << 30)

    def cuDriverGetVersion(self) -> tuple[Any, int]:  # noqa: N802
        return (OK, 13000)

    def cuDeviceGetAttribute(self, attribute: Any, device: int) -> tuple[Any, int]:  # noqa: N802
        name = real.CUdevice_attribute(attribute).name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        return (OK, _ATTRIBUTES.get(name, 1))

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, 1)

    def cuDevicePrimaryCtxRelease(self, device: int) -> tuple[Any]:  # noqa: N802
        return (OK,)

    def cuCtxSetCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        return (OK,)

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, self._alloc(nbytes))

    def cuMemFree(self, address: Any) -> tuple[Any]:  # noqa: N802
        return self._free(address)

    def cuMemHostAlloc(self, nbytes: int, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, self._alloc(nbytes))

    def cuMemFreeHost(self, address: Any) -> tuple[Any]:  # noqa: N802
        return self._free(address)

    def cuMemHostRegister(self, address: int, nbytes: int, flags: int) -> tuple[Any]:  # noqa: N802
        return (OK,)

    def cuMemHostUnregister(self, address: int) -> tuple[Any]:  # noqa: N802
        return (OK,)

    def cuPointerGetAttribute(self, attribute: Any, address: int) -> tuple[Any, int]:  # noqa: N802
        return (real.CUresult.CUDA_ERROR_INVALID_VALUE, 0)

    def cuMemsetD8Async(self, *args: Any) -> tuple[Any]:  # noqa: N802
        return (OK,)

    def cuMemcpyHtoDAsync(self, *args: Any) -> tuple[Any]:  # noqa: N802
        return (OK,)

    def cuMemcpyDtoHAsync(self, host: int, device: int, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        words = nbytes // 4
        (ctypes.c_int32 * words).from_address(int(host))[:] = [1] * words
        return (OK,)

    def cuStreamCreate(self, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuEventCreate(self, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuModuleGetFunction(self, module: int, name: bytes) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuStreamEndCapture(self, stream: Any) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuGraphInstantiate(self, graph: int, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Any]:  # noqa: N802
        self._left[event] = self.lag
        return (OK,)

    def cuEventQuery(self, event: Any) -> tuple[Any]:  # noqa: N802
        left = self._left.get(event, 0)
        if left > 0:
            self._left[event] = left - 1
            return (NOT_READY,)
        return (OK,)

    def cuEventElapsedTime(self, start: Any, end: Any) -> tuple[Any, float]:  # noqa: N802
        return (OK, 0.5)

    def _succeed(self, *args: Any) -> tuple[Any]:
        return (OK,)

    cuStreamDestroy = cuStreamSynchronize = cuStreamWaitEvent = _succeed  # noqa: N815
    cuEventDestroy = cuModuleUnload = cuFuncSetAttribute = cuLaunchKernel = _succeed  # noqa: N815
    cuStreamBeginCapture = cuGraphLaunch = cuGraphExecDestroy = cuGraphDestroy = _succeed  # noqa: N815
    cuGetErrorString = _succeed  # noqa: N815


def install(lag: int = 0) -> StubDriver:
    """Make vyre_async load the stub instead of the real driver; return it."""
    from vyre_async.cuda import _driver

    stub = StubDriver(lag)
    _driver._driver = stub  # the cached module load_driver() returns
    return stub
