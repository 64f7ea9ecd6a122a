"""A simulated CUDA driver: the CUDA backend's host path on a machine without a GPU.

It stands in for ``cuda.bindings.driver``: device memory is host memory, copies and
memsets run when they are enqueued, and a kernel launch runs the kernel's NumPy
reference on the memory its argument block points at. Events finish after ``lag``
queries, or stay unfinished while the test holds them, so in-flight states are
reached without timing. Graph capture records launches and replays them.

It checks the backend's own Python (binding, staging, argument blocks, fences,
polling, hand-overs, releases), not the GPU: tests that must prove device results
live in ``tests/gpu/``. Only kernels whose every size symbol has a derived scalar
(``n`` for ``axpy``) can be launched, since the simulator sizes arrays from the
argument block.

With ``devices=n`` it has n devices, each with its own primary context; each thread
has a current context, as with the real driver, and what the backend does is counted
per device (:attr:`SimulatedDriver.per_device`), so tests can count what each device's
start-up did. :meth:`SimulatedDriver.meet` makes each device's first call of a
function wait for the other devices' at a barrier: the calls meet only if the
devices make them at the same time, in threads of their own.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import itertools
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pytest
from cuda.bindings import driver as real

from vyre_async.kernels import builtin_kernels
from vyre_async.kernels._compile import CompiledKernel
from vyre_async.kernels._kernel import Kernel
from vyre_async.kernels._signature import BufferParam, ScalarParam

R = real.CUresult
OK = R.CUDA_SUCCESS
NOT_READY = R.CUDA_ERROR_NOT_READY
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
_CTYPES: dict[np.dtype[Any], Any] = {
    np.dtype(np.int8): ctypes.c_int8,
    np.dtype(np.uint8): ctypes.c_uint8,
    np.dtype(np.int16): ctypes.c_int16,
    np.dtype(np.uint16): ctypes.c_uint16,
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
}


class SimulatedDriver(types.ModuleType):
    """The driver functions vyre_async calls, simulated on host memory.

    Args:
        kernels: Kernels the simulator can run, found by entry name.
        lag: Queries an event answers NOT_READY before it reads finished.

    Attributes:
        held: While True, events recorded stay unfinished until :meth:`release`.
        calls: How many times each driver function was called.
        launches: Entry names of the kernels launched, in order.
    """

    def __init__(
        self,
        kernels: Iterable[Kernel] = (),
        *,
        lag: int = 0,
        latency_s: float | None = None,
        execute: bool = True,
        devices: int = 1,
    ) -> None:
        super().__init__("simulated_driver")
        self.devices = devices
        self._context_refs = [0] * devices
        self._thread = threading.local()  # .stack: this thread's contexts, current last
        self._lock = threading.Lock()
        #: Device -> function name -> calls made with that device's context current
        #: (``"contexts_created"``: primary contexts made, not retains of a live one).
        self.per_device: list[dict[str, int]] = [{} for _ in range(devices)]
        #: Function name -> the threads (``threading.get_ident()``) that called it.
        self.threads: dict[str, set[int]] = {}
        self._meetings: dict[str, threading.Barrier] = {}
        self._met: set[tuple[str, int]] = set()
        #: Functions whose first calls on each device did not all meet (see :meth:`meet`).
        self.apart: set[str] = set()
        self._ids = itertools.count(0x1000)
        self._kernels = {k.entry: k for k in (*builtin_kernels(), *kernels)}
        self._starts: list[int] = []
        self._blocks: dict[int, np.ndarray] = {}  # start address -> its bytes
        self._pinned: set[int] = set()  # host allocations (start addresses)
        self._device_blocks: set[int] = set()  # device allocations (start addresses)
        self._registered: dict[int, int] = {}  # registered host ranges: start -> size
        self._functions: dict[int, str] = {}
        self._modules: dict[int, str] = {}
        self._events: dict[Any, int] = {}  # event -> queries left (-1: held)
        self._held_events: list[Any] = []
        self._capturing: dict[Any, list[Callable[[], None]]] = {}
        self._graphs: dict[int, list[Callable[[], None]]] = {}
        self.lag = lag
        #: When set, an event finishes this long (real time) after it was recorded,
        #: instead of after ``lag`` queries: for measuring the host path's throughput.
        self.latency_s = latency_s
        #: Whether launches run the kernel's reference (off: only the host path is timed).
        self.execute = execute
        self._ready_at: dict[Any, float] = {}
        self.held = False
        self.calls: dict[str, int] = {}
        self.launches: list[str] = []
        #: Addresses freed (device and host), in order.
        self.freed: list[int] = []
        #: Entry name -> CUresult its launch returns (an enqueue failure).
        self.failing_launches: dict[str, Any] = {}
        #: CUresult the next recorded event answers once finished (a device fault).
        self.next_event_result: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(real, name)

    def _count(self, name: str, device: int | None = None) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        self.threads.setdefault(name, set()).add(threading.get_ident())
        device = self.current_device() if device is None else device
        if device is not None:
            with self._lock:
                counts = self.per_device[device]
                counts[name] = counts.get(name, 0) + 1

    def current_device(self) -> int | None:
        """The device whose context is current in the calling thread, if any."""
        stack = getattr(self._thread, "stack", None)
        return stack[-1] - _CONTEXT_BASE if stack else None

    def meet(self, *names: str, timeout_s: float = 10.0) -> None:
        """Make each device's first call of each of ``names`` wait (at most ``timeout_s``)
        until every device made its first; a call that waited in vain puts the name in
        :attr:`apart` (the devices made those calls one after another)."""
        for name in names:
            self._meetings[name] = threading.Barrier(self.devices, timeout=timeout_s)

    def _meet(self, name: str, device: int | None) -> None:
        barrier = self._meetings.get(name)
        if barrier is None or device is None:
            return
        with self._lock:
            if (name, device) in self._met:
                return
            self._met.add((name, device))
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            self.apart.add(name)

    # ----------------------------------------------------------------- memory
    def _alloc(self, nbytes: int) -> int:
        block = np.zeros(max(1, nbytes), np.uint8)
        address = block.ctypes.data
        self._blocks[address] = block
        bisect.insort(self._starts, address)
        return address

    def _free(self, address: Any) -> tuple[Any]:
        address = int(address)
        self.freed.append(address)
        if self._blocks.pop(address, None) is not None:
            self._starts.remove(address)
        self._pinned.discard(address)
        self._device_blocks.discard(address)
        return (OK,)

    def view(self, address: int, nbytes: int) -> np.ndarray:
        """The simulated memory at ``address`` (device or host) as ``nbytes`` bytes."""
        index = bisect.bisect_right(self._starts, address) - 1
        if index >= 0:
            start = self._starts[index]
            block = self._blocks[start]
            if address + nbytes <= start + block.size:
                return block[address - start : address - start + nbytes]
        # Host memory the simulator did not allocate (a NumPy array's data).
        return np.ctypeslib.as_array((ctypes.c_uint8 * max(nbytes, 1)).from_address(address))[
            :nbytes
        ]

    def _enqueue(self, stream: Any, op: Callable[[], None]) -> None:
        ops = self._capturing.get(stream)
        if ops is not None:
            ops.append(op)
        else:
            op()

    # ----------------------------------------------------------------- device
    def cuInit(self, flags: int) -> tuple[Any]:  # noqa: N802 - the driver's names
        return (OK,)

    def cuDeviceGetCount(self) -> tuple[Any, int]:  # noqa: N802
        return (OK, self.devices)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, int]:  # noqa: N802
        if not 0 <= ordinal < self.devices:
            return (R.CUDA_ERROR_INVALID_DEVICE, 0)
        return (OK, ordinal)

    def cuDeviceGetName(self, size: int, device: int) -> tuple[Any, bytes]:  # noqa: N802
        return (OK, b"simulated device\0")

    def cuDeviceTotalMem(self, device: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, 80 << 30)

    def cuDriverGetVersion(self) -> tuple[Any, int]:  # noqa: N802
        return (OK, 13000)

    def cuDeviceGetAttribute(self, attribute: Any, device: int) -> tuple[Any, int]:  # noqa: N802
        name = real.CUdevice_attribute(attribute).name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        return (OK, _ATTRIBUTES.get(name, 1))

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[Any, int]:  # noqa: N802
        device = int(device)
        self._meet("cuDevicePrimaryCtxRetain", device)
        with self._lock:
            created = self._context_refs[device] == 0
            self._context_refs[device] += 1
        self._count("cuDevicePrimaryCtxRetain", device)
        if created:
            self._count("contexts_created", device)
        return (OK, _CONTEXT_BASE + device)

    def cuDevicePrimaryCtxRelease(self, device: int) -> tuple[Any]:  # noqa: N802
        with self._lock:
            self._context_refs[int(device)] -= 1
        return (OK,)

    def cuCtxSetCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        stack = self._thread.__dict__.setdefault("stack", [])
        if stack:
            stack[-1] = int(context)
        else:
            stack.append(int(context))
        return (OK,)

    def cuCtxPushCurrent(self, context: int) -> tuple[Any]:  # noqa: N802
        self._thread.__dict__.setdefault("stack", []).append(int(context))
        return (OK,)

    def cuCtxPopCurrent(self) -> tuple[Any, int]:  # noqa: N802
        stack = self._thread.__dict__.setdefault("stack", [])
        return (OK, stack.pop() if stack else 0)

    @property
    def live_contexts(self) -> int:
        """Primary contexts retained and not yet released, over every device."""
        return sum(self._context_refs)

    def cuMemGetInfo(self) -> tuple[Any, int, int]:  # noqa: N802
        """Free and total bytes of the current device: 80 GiB each (memory is the host's)."""
        return (OK, 80 << 30, 80 << 30)

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, int]:  # noqa: N802
        self._meet("cuMemAlloc", self.current_device())
        self._count("cuMemAlloc")
        address = self._alloc(nbytes)
        self._device_blocks.add(address)
        return (OK, address)

    def device_array(self, array: np.ndarray) -> int:
        """Device memory holding a copy of ``array`` (for tests' stand-in device arrays)."""
        address = self.cuMemAlloc(array.nbytes)[1]
        self.view(address, array.nbytes)[:] = array.reshape(-1).view(np.uint8)
        return address

    def cuMemFree(self, address: Any) -> tuple[Any]:  # noqa: N802
        return self._free(address)

    def cuMemHostAlloc(self, nbytes: int, flags: int) -> tuple[Any, int]:  # noqa: N802
        self._count("cuMemHostAlloc")
        address = self._alloc(nbytes)
        self._pinned.add(address)
        return (OK, address)

    def cuMemFreeHost(self, address: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuMemFreeHost")
        return self._free(address)

    def cuMemHostRegister(self, address: int, nbytes: int, flags: int) -> tuple[Any]:  # noqa: N802
        self._registered[int(address)] = nbytes
        return (OK,)

    def cuMemHostUnregister(self, address: int) -> tuple[Any]:  # noqa: N802
        self._registered.pop(int(address), None)
        return (OK,)

    def cuPointerGetAttribute(self, attribute: Any, address: int) -> tuple[Any, int]:  # noqa: N802
        address = int(address)
        if attribute == real.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            index = bisect.bisect_right(self._starts, address) - 1
            start = self._starts[index] if index >= 0 else -1
            if start in self._device_blocks and address < start + self._blocks[start].size:
                return (OK, 0)
            return (R.CUDA_ERROR_INVALID_VALUE, 0)
        ranges = [(start, self._blocks[start].size) for start in self._pinned]
        ranges += list(self._registered.items())
        for start, size in ranges:
            if start <= address < start + size:
                a = real.CUpointer_attribute
                if attribute == a.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
                    return (OK, int(real.CUmemorytype.CU_MEMORYTYPE_HOST))
                if attribute == a.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
                    return (OK, start)
                if attribute == a.CU_POINTER_ATTRIBUTE_RANGE_SIZE:
                    return (OK, size)
        return (R.CUDA_ERROR_INVALID_VALUE, 0)

    def cuMemsetD8Async(self, address: Any, value: int, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuMemsetD8Async")
        target = self.view(int(address), nbytes)
        self._enqueue(stream, lambda: target.fill(value))
        return (OK,)

    def _copy(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:
        dst, src = int(dst), int(src)
        self._enqueue(stream, lambda: ctypes.memmove(dst, src, nbytes))
        return (OK,)

    def cuMemcpyHtoDAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuMemcpyHtoDAsync")
        self._count_bytes("bytes_to_device", nbytes)
        return self._copy(dst, src, nbytes, stream)

    def cuMemcpyHtoD(self, dst: Any, src: Any, nbytes: int) -> tuple[Any]:  # noqa: N802
        self._count("cuMemcpyHtoD")
        self._count_bytes("bytes_to_device", nbytes)
        ctypes.memmove(int(dst), int(src), nbytes)
        return (OK,)

    def cuMemcpyDtoHAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuMemcpyDtoHAsync")
        return self._copy(dst, src, nbytes, stream)

    def cuMemcpyDtoDAsync(self, dst: Any, src: Any, nbytes: int, stream: Any) -> tuple[Any]:  # noqa: N802
        return self._copy(dst, src, nbytes, stream)

    # ----------------------------------------------------------------- streams, events
    def cuStreamCreate(self, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuEventCreate(self, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, next(self._ids))

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuEventRecord")
        if self.held:
            self._events[event] = -1
            self._held_events.append(event)
        elif self.latency_s is not None:
            self._events[event] = 0
            self._ready_at[event] = time.perf_counter() + self.latency_s
        else:
            self._events[event] = self.lag
        if self.next_event_result is not None:
            self._faults[event] = self.next_event_result
            self.next_event_result = None
        return (OK,)

    _faults: dict[Any, Any] = {}  # noqa: RUF012 - replaced per instance in install()

    def cuEventQuery(self, event: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuEventQuery")
        left = self._events.get(event, 0)
        if (
            self.latency_s is not None
            and left == 0
            and time.perf_counter() < self._ready_at.get(event, 0.0)
        ):
            return (NOT_READY,)
        if left != 0:
            if left > 0:
                self._events[event] = left - 1
            return (NOT_READY,)
        fault = self._faults.pop(event, None)
        return (fault,) if fault is not None else (OK,)

    def cuEventElapsedTime(self, start: Any, end: Any) -> tuple[Any, float]:  # noqa: N802
        return (OK, 0.5)

    def release(self) -> None:
        """Finish every event recorded while :attr:`held`."""
        for event in self._held_events:
            if self._events.get(event) == -1:
                self._events[event] = 0
        self._held_events.clear()

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Hold events recorded inside the block; release them on the way out."""
        self.held = True
        try:
            yield
        finally:
            self.held = False
            self.release()

    # ----------------------------------------------------------------- kernels
    def compile(self, kernel: Kernel, arch: str) -> CompiledKernel:
        """Stands in for NVRTC: remembers the kernel, to run its reference at launch."""
        self._kernels[kernel.entry] = kernel
        return _fake_compile(kernel, arch)

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, int]:  # noqa: N802
        self._meet("cuModuleLoadData", self.current_device())
        self._count("cuModuleLoadData")
        module = next(self._ids)
        self._modules[module] = bytes(image).decode()
        return (OK, module)

    def cuModuleGetFunction(self, module: int, name: bytes) -> tuple[Any, int]:  # noqa: N802
        function = next(self._ids)
        self._functions[function] = name.decode()
        return (OK, function)

    def cuLaunchKernel(self, function: Any, *args: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuLaunchKernel")
        stream, params = args[7], args[8]
        entry = self._functions[int(function)]
        failure = self.failing_launches.get(entry)
        if failure is not None:
            return (failure,)
        self.launches.append(entry)
        if not self.execute:
            return (OK,)
        kernel = self._kernels[entry]
        arrays, scalars = self._arguments(kernel, int(params))
        self._enqueue(stream, lambda: kernel.reference(arrays, scalars))
        return (OK,)

    def _arguments(self, kernel: Kernel, params: int) -> tuple[dict[str, Any], dict[str, Any]]:
        count = len(kernel.params)
        pointers = (ctypes.c_void_p * max(count, 1)).from_address(params)
        scalars: dict[str, Any] = {}
        addresses: dict[str, int] = {}
        for p, slot in zip(kernel.params, pointers, strict=False):
            if isinstance(p, ScalarParam):
                scalars[p.name] = p.dtype.type(_CTYPES[p.dtype].from_address(slot).value)
            else:
                addresses[p.name] = ctypes.c_uint64.from_address(slot).value
        symbols = {
            str(p.default): int(scalars[p.name])
            for p in kernel.scalar_params
            if isinstance(p.default, str)
        }
        arrays = {}
        for p in kernel.buffer_params:
            length = p.length if isinstance(p.length, int) else symbols.get(p.length)
            if length is None:
                raise NotImplementedError(
                    f"the simulator cannot size {kernel.name}.{p.name} ({p.length!r})"
                )
            arrays[p.name] = _typed(self.view(addresses[p.name], length * p.dtype.itemsize), p)
        return arrays, scalars

    def cuFuncSetAttribute(self, *args: Any) -> tuple[Any]:  # noqa: N802
        return (OK,)

    # ----------------------------------------------------------------- graphs
    def cuStreamBeginCapture(self, stream: Any, mode: Any) -> tuple[Any]:  # noqa: N802
        self._capturing[stream] = []
        return (OK,)

    def cuStreamEndCapture(self, stream: Any) -> tuple[Any, int]:  # noqa: N802
        graph = next(self._ids)
        self._graphs[graph] = self._capturing.pop(stream)
        return (OK, graph)

    def cuGraphInstantiate(self, graph: int, flags: int) -> tuple[Any, int]:  # noqa: N802
        return (OK, graph)

    def cuGraphLaunch(self, graph_exec: int, stream: Any) -> tuple[Any]:  # noqa: N802
        for op in self._graphs[int(graph_exec)]:
            self._enqueue(stream, op)
        return (OK,)

    def _succeed(self, *args: Any) -> tuple[Any]:
        return (OK,)

    def cuStreamWaitEvent(self, stream: Any, event: Any, flags: int) -> tuple[Any]:  # noqa: N802
        self._count("cuStreamWaitEvent")
        return (OK,)

    def cuStreamSynchronize(self, stream: Any) -> tuple[Any]:  # noqa: N802
        self._count("cuStreamSynchronize")
        return (OK,)

    def cuStreamDestroy(self, stream: Any) -> tuple[Any]:  # noqa: N802
        # A backend destroys its streams only when it closes.
        self._meet("cuStreamDestroy", self.current_device())
        self._count("cuStreamDestroy")
        return (OK,)

    cuEventDestroy = cuModuleUnload = cuGraphExecDestroy = cuGraphDestroy = _succeed  # noqa: N815
    cuEventSynchronize = _succeed  # noqa: N815

    def _count_bytes(self, name: str, nbytes: int) -> None:
        device = self.current_device()
        if device is not None:
            with self._lock:
                counts = self.per_device[device]
                counts[name] = counts.get(name, 0) + int(nbytes)


#: Context handles: this plus the device's ordinal.
_CONTEXT_BASE = 0xC0000


def _typed(raw: np.ndarray, p: BufferParam) -> np.ndarray:
    return raw.view(p.dtype)


def _fake_compile(kernel: Kernel, arch: str) -> CompiledKernel:
    """An "image" that names the entry (NVRTC is not run)."""
    return CompiledKernel(
        image=kernel.entry.encode(),
        entry=kernel.entry,
        arch=arch,
        nvrtc_version=(0, 0),
        log="",
        key=f"simulated-{kernel.entry}",
    )


def install(
    monkeypatch: pytest.MonkeyPatch, kernels: Iterable[Kernel] = (), **options: Any
) -> SimulatedDriver:
    """Make vyre_async load the simulator instead of the driver, and skip NVRTC.

    ``options`` go to :class:`SimulatedDriver` (``lag``, ``latency_s``, ``execute``).
    """
    from vyre_async.backends.cuda import _launch as cuda_launch
    from vyre_async.cuda import _driver

    sim = SimulatedDriver(kernels, **options)
    sim._faults = {}
    monkeypatch.setattr(_driver, "_driver", sim)
    monkeypatch.setattr(_driver, "_failure", None)
    monkeypatch.setattr(cuda_launch, "compile_kernel", sim.compile)
    return sim
