"""Device memory and page-locked host memory, pooled by size bucket.

:class:`DeviceMemoryPool` hands out :class:`DeviceAllocation` s (``cuMemAlloc``);
:class:`PinnedHostPool` hands out :class:`PinnedBuffer` s (``cuMemHostAlloc``) whose
``array`` is a writable NumPy view, so staging is ``np.copyto(buf.view(dtype), x)``.
Both keep released blocks for reuse (see :mod:`._bucket_pool`). A block goes back to
its pool only after the device work that used it has finished: callers release from
the completion's callback, never from a cancelled waiter.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import LifecycleError
from ._bucket_pool import BucketPool

if TYPE_CHECKING:
    from ._device import CudaDevice

__all__ = ["DeviceAllocation", "DeviceMemoryPool", "PinnedBuffer", "PinnedHostPool"]

MiB = 1 << 20


@dataclass(eq=False, slots=True)
class DeviceAllocation:
    """A block of device memory from a :class:`DeviceMemoryPool`.

    Attributes:
        ptr: Device address (``CUdeviceptr`` as an int).
        nbytes: Bytes requested.
        capacity: Bytes actually held (the bucket size, >= ``nbytes``).
    """

    ptr: int
    nbytes: int
    capacity: int


class DeviceMemoryPool(BucketPool):
    """Bucketed cache of device memory.

    Args:
        alloc: ``capacity -> address``; raises ``OutOfMemoryError`` when full.
        free: Frees an address from ``alloc``.
        max_cached_bytes: Cap on idle cached bytes.
        max_live_bytes: Cap on handed-out bytes; ``None`` leaves it to the driver.
    """

    def __init__(
        self,
        alloc: Callable[[int], int],
        free: Callable[[int], None],
        *,
        max_cached_bytes: int = 512 * MiB,
        max_live_bytes: int | None = None,
    ) -> None:
        super().__init__(
            alloc,
            free,
            kind="device",
            max_cached_bytes=max_cached_bytes,
            max_live_bytes=max_live_bytes,
        )

    @classmethod
    def for_device(
        cls,
        device: CudaDevice,
        *,
        max_cached_bytes: int = 512 * MiB,
        max_live_bytes: int | None = None,
    ) -> DeviceMemoryPool:
        """Make a pool over ``cuMemAlloc`` / ``cuMemFree`` in ``device``'s context."""
        driver = device.driver

        def alloc(capacity: int) -> int:
            return int(device.call(driver.cuMemAlloc, capacity))

        def free(address: int) -> None:
            device.call(driver.cuMemFree, driver.CUdeviceptr(address))

        return cls(alloc, free, max_cached_bytes=max_cached_bytes, max_live_bytes=max_live_bytes)

    def acquire(self, nbytes: int) -> DeviceAllocation:
        """Return a block of at least ``nbytes`` bytes (contents undefined).

        Raises:
            OutOfMemoryError: The live cap is reached, or the device is full even
                after the idle cache was freed and the allocation retried.
            LifecycleError: The pool is closed.
        """
        address, capacity = self._acquire_block(nbytes)
        return DeviceAllocation(ptr=address, nbytes=nbytes, capacity=capacity)

    def release(self, allocation: DeviceAllocation) -> None:
        """Give a block back; call only once the device no longer uses it.

        Raises:
            LifecycleError: Released twice, or not from this pool.
        """
        self._release_block(allocation.ptr)


@dataclass(eq=False, slots=True)
class PinnedBuffer:
    """Page-locked host memory from a :class:`PinnedHostPool`.

    Attributes:
        ptr: Host address.
        nbytes: Bytes requested.
        capacity: Bytes actually held.
    """

    ptr: int
    nbytes: int
    capacity: int
    _array: npt.NDArray[np.uint8] | None = field(default=None, repr=False)

    @property
    def array(self) -> npt.NDArray[np.uint8]:
        """A writable ``uint8`` view of the first ``nbytes`` bytes.

        Raises:
            LifecycleError: The buffer went back to its pool.
        """
        if self._array is None:
            raise LifecycleError(
                f"pinned buffer 0x{self.ptr:x} was released",
                fix="keep using a pinned buffer only until you release it.",
            )
        return self._array

    def view(self, dtype: npt.DTypeLike, count: int | None = None) -> npt.NDArray[Any]:
        """Return the first ``count`` items (default: as many as fit) as ``dtype``."""
        dt = np.dtype(dtype)
        whole = self.array
        n = len(whole) // dt.itemsize if count is None else count
        if n * dt.itemsize > len(whole):
            raise ValueError(
                f"{n} items of {dt} need {n * dt.itemsize} bytes; the buffer has {len(whole)}"
            )
        return whole[: n * dt.itemsize].view(dt)


def _host_view(address: int, capacity: int, nbytes: int) -> npt.NDArray[np.uint8]:
    raw = (ctypes.c_uint8 * capacity).from_address(address)
    return np.ctypeslib.as_array(raw)[:nbytes]


class PinnedHostPool(BucketPool):
    """Bucketed cache of page-locked host memory for staging copies.

    Args:
        alloc: ``capacity -> host address``; raises ``OutOfMemoryError`` when full.
        free: Frees an address from ``alloc``.
        max_cached_bytes: Cap on idle cached bytes.
        max_live_bytes: Cap on handed-out bytes; ``None`` for no cap.
    """

    def __init__(
        self,
        alloc: Callable[[int], int],
        free: Callable[[int], None],
        *,
        max_cached_bytes: int = 256 * MiB,
        max_live_bytes: int | None = None,
    ) -> None:
        # A NumPy view of each block, made once: building one costs microseconds, and
        # a traversal takes a small pinned block for its state words on every submit.
        self._views: dict[int, npt.NDArray[np.uint8]] = {}

        def free_block(address: int) -> None:
            self._views.pop(address, None)
            free(address)

        super().__init__(
            alloc,
            free_block,
            kind="pinned host",
            max_cached_bytes=max_cached_bytes,
            max_live_bytes=max_live_bytes,
        )

    @classmethod
    def for_device(
        cls,
        device: CudaDevice,
        *,
        max_cached_bytes: int = 256 * MiB,
        max_live_bytes: int | None = None,
    ) -> PinnedHostPool:
        """Make a pool over ``cuMemHostAlloc(PORTABLE)`` / ``cuMemFreeHost``."""
        driver = device.driver
        flags = int(driver.CU_MEMHOSTALLOC_PORTABLE)

        def alloc(capacity: int) -> int:
            return int(device.call(driver.cuMemHostAlloc, capacity, flags))

        def free(address: int) -> None:
            device.call(driver.cuMemFreeHost, address)

        return cls(alloc, free, max_cached_bytes=max_cached_bytes, max_live_bytes=max_live_bytes)

    @property
    def pinned_bytes(self) -> int:
        """Page-locked bytes held, live and cached."""
        return self.live_bytes + self.cached_bytes

    def acquire(self, nbytes: int) -> PinnedBuffer:
        """Return a pinned buffer of at least ``nbytes`` bytes (contents undefined).

        Raises:
            OutOfMemoryError: The live cap is reached, or pinning failed even after
                the idle cache was freed.
            LifecycleError: The pool is closed.
        """
        address, capacity = self._acquire_block(nbytes)
        view = self._views.get(address)
        if view is None:
            view = self._views[address] = _host_view(address, capacity, capacity)
        return PinnedBuffer(address, nbytes, capacity, view[:nbytes])

    def release(self, buffer: PinnedBuffer) -> None:
        """Give a buffer back; call only once no copy still reads or writes it.

        Its ``array`` is unusable afterwards.

        Raises:
            LifecycleError: Released twice, or not from this pool.
        """
        self._release_block(buffer.ptr)
        buffer._array = None
