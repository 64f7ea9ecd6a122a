"""Loaded kernels on one CUDA device: module cache, packed arguments, capability checks.

A :class:`LoadedKernel` is made once per (compiled image, device). Its argument block
is made once too: one ctypes slot per parameter and one array of pointers to the
slots, so a launch only stores new values into the slots and hands the driver a
single address (``cuLaunchKernel`` copies the arguments before it returns, so the
block can be refilled for the next launch at once). A sequence step, launched again
with the same arguments submission after submission, keeps a block of its own,
filled once (:meth:`LoadedKernel.launch_step`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...cuda import CudaDevice, DeviceInfo
from ...errors import UnsupportedFeatureError
from ...kernels import BoundCall, BufferParam, CompiledKernel, Kernel, LaunchShape, compile_kernel

_CTYPES: dict[np.dtype[Any], type[ctypes._SimpleCData[Any]]] = {
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

#: Static shared memory every kernel may use without opting in.
_DEFAULT_SHARED_BYTES = 48 * 1024
#: Sequence steps whose filled argument blocks a loaded kernel keeps.
STEP_BLOCKS = 1024


class LoadedKernel:
    """A kernel's module and function on one device, with its packed argument block."""

    def __init__(self, device: CudaDevice, kernel: Kernel, compiled: CompiledKernel) -> None:
        driver = device.driver
        self.kernel = kernel
        self.compiled = compiled
        self._device = device
        self.module = device.call(driver.cuModuleLoadData, compiled.image)
        self.function = device.call(
            driver.cuModuleGetFunction, self.module, compiled.entry.encode()
        )
        self._slots, self._pointers = self.new_block()
        self._address = ctypes.addressof(self._pointers)
        self._shared_optin = 0
        self._checked: set[LaunchShape] = set()
        # id(call) -> (call, its slots, its pointer array, the array's address).
        self._steps: dict[int, tuple[BoundCall[Any], list[Any], Any, int]] = {}

    def new_block(self) -> tuple[list[Any], Any]:
        """A new argument block: one ctypes slot per parameter, and the array of
        their addresses the driver reads (``kernelParams``)."""
        slots: list[Any] = []
        for p in self.kernel.params:
            if isinstance(p, BufferParam):
                slots.append(ctypes.c_uint64(0))
            else:
                ctype = _CTYPES.get(p.dtype)
                if ctype is None:
                    raise UnsupportedFeatureError(
                        f"kernel {self.kernel.name!r} has scalar {p.name!r} of dtype {p.dtype}, "
                        "which the CUDA backend cannot pass by value",
                        fix="use an integer or floating-point scalar of 8 to 64 bits.",
                    )
                slots.append(ctype())
        pointers = (ctypes.c_void_p * max(1, len(slots)))(
            *[ctypes.addressof(slot) for slot in slots]
        )
        return slots, pointers

    def _fill(
        self, slots: list[Any], pointers: Mapping[str, int], scalars: Mapping[str, np.generic]
    ) -> None:
        for slot, p in zip(slots, self.kernel.params, strict=True):
            slot.value = pointers[p.name] if isinstance(p, BufferParam) else scalars[p.name].item()

    def pack(self, pointers: Mapping[str, int], scalars: Mapping[str, np.generic]) -> int:
        """Store this launch's arguments in the block; return its address for the driver."""
        self._fill(self._slots, pointers, scalars)
        return self._address

    def check_launch(self, launch: LaunchShape, info: DeviceInfo) -> None:
        """Refuse a launch shape the device cannot run, naming the limit and the fix."""
        if launch in self._checked:
            return
        self._check_limits(launch, info)
        if len(self._checked) < 4096:
            self._checked.add(launch)

    def _check_limits(self, launch: LaunchShape, info: DeviceInfo) -> None:
        name = self.kernel.name
        if launch.threads_per_block > info.max_threads_per_block:
            raise UnsupportedFeatureError(
                f"kernel {name!r} asks for {launch.threads_per_block} threads per block; "
                f"{info.name} allows {info.max_threads_per_block}",
                fix=f"use at most {info.max_threads_per_block} threads per block in its "
                "launch rule.",
            )
        for axis, (got, limit) in enumerate(zip(launch.block, info.max_block_dims, strict=True)):
            if got > limit:
                raise UnsupportedFeatureError(
                    f"kernel {name!r} block dimension {'xyz'[axis]} is {got}; the limit is {limit}",
                    fix="reshape the block in the kernel's launch rule.",
                )
        for axis, (got, limit) in enumerate(zip(launch.grid, info.max_grid_dims, strict=True)):
            if got > limit:
                raise UnsupportedFeatureError(
                    f"kernel {name!r} grid dimension {'xyz'[axis]} is {got}; the limit is {limit}",
                    fix="cap the grid in the launch rule and loop over the rest (grid-stride).",
                )
        if launch.shared_bytes > info.max_shared_memory_per_block_optin:
            raise UnsupportedFeatureError(
                f"kernel {name!r} asks for {launch.shared_bytes} bytes of shared memory per "
                f"block; {info.name} allows {info.max_shared_memory_per_block_optin}",
                fix="tile the kernel so one block needs less shared memory.",
            )
        if launch.shared_bytes > max(_DEFAULT_SHARED_BYTES, self._shared_optin):
            attribute = self._device.driver.CUfunction_attribute
            self._device.call(
                self._device.driver.cuFuncSetAttribute,
                self.function,
                attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                launch.shared_bytes,
            )
            self._shared_optin = launch.shared_bytes

    def launch(
        self, call: BoundCall[Any], pointers: Mapping[str, int], stream: Any, times: int
    ) -> None:
        """Launch ``times`` times back to back on ``stream`` (skipped for an empty grid).

        Callers run :meth:`check_launch` for the shape first.
        """
        shape = call.launch
        if shape.empty or times == 0:
            return
        params = self.pack(pointers, call.scalars)
        driver = self._device.driver
        for _ in range(times):
            self._device.call(
                driver.cuLaunchKernel,
                self.function,
                *shape.grid,
                *shape.block,
                shape.shared_bytes,
                stream,
                params,
                0,
            )

    def launch_step(self, call: BoundCall[Any], pointers: Mapping[str, int], stream: Any) -> None:
        """Launch a sequence step once, from an argument block of its own.

        The block is filled the first time ``call`` is seen and kept while ``call``
        lives (held here, so its id stays its own): a step's pointers and scalars
        never change, as ``StepPlans`` relies on too. Callers run
        :meth:`check_launch` for the shape first.
        """
        shape = call.launch
        if shape.empty:
            return
        entry = self._steps.get(id(call))
        if entry is None or entry[0] is not call:
            slots, block = self.new_block()
            self._fill(slots, pointers, call.scalars)
            if len(self._steps) >= STEP_BLOCKS:
                self._steps.clear()
            entry = self._steps[id(call)] = (call, slots, block, ctypes.addressof(block))
        self._device.call(
            self._device.driver.cuLaunchKernel,
            self.function,
            *shape.grid,
            *shape.block,
            shape.shared_bytes,
            stream,
            entry[3],
            0,
        )

    def unload(self) -> None:
        """Unload the module (backend close)."""
        self._device.call(self._device.driver.cuModuleUnload, self.module)


class KernelCache:
    """Loaded kernels of one device.

    Images come from the CUBIN caches (keyed by source, entry, options, architecture
    and NVRTC version); this cache keeps each image loaded once on this device.
    Compilation blocks (NVRTC), so :meth:`load` is meant for worker threads;
    :meth:`get` is the cheap lookup the loop thread uses on the hot path.
    """

    def __init__(self, device: CudaDevice) -> None:
        self._device = device
        self._lock = threading.Lock()
        # Keyed by id(kernel): each LoadedKernel holds its kernel, so an id is never reused
        # while its entry exists.
        self._loaded: dict[int, LoadedKernel] = {}

    def get(self, kernel: Kernel) -> LoadedKernel | None:
        """The loaded kernel, if :meth:`load` already ran for it."""
        return self._loaded.get(id(kernel))

    def load(self, kernel: Kernel) -> LoadedKernel:
        """Compile (through the CUBIN caches) and load ``kernel`` for this device."""
        loaded = self._loaded.get(id(kernel))
        if loaded is not None:
            return loaded
        compiled = compile_kernel(kernel, self._device.info.arch)
        with self._lock:
            loaded = self._loaded.get(id(kernel))
            if loaded is None:
                self._device.make_current()
                loaded = LoadedKernel(self._device, kernel, compiled)
                self._loaded[id(kernel)] = loaded
        return loaded

    def close(self) -> None:
        """Unload every module."""
        with self._lock:
            loaded, self._loaded = list(self._loaded.values()), {}
        for item in loaded:
            item.unload()
