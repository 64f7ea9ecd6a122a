"""Resident storage on the device: allocating, filling, writing and releasing blocks.

Small uploads are staged through page-locked memory and copied in one transfer; a
large one (a graph's) is copied straight from the caller's arrays in a worker thread
(the driver stages pageable memory itself), so several devices upload at once without
each page-locking a copy of the graph. Several arrays uploaded together share one
block (a slab), freed when its last member is.
A slab's block (a graph's, hundreds of megabytes) and any other large block (a
traversal's scratch) are allocated in a worker thread, as a large upload copies: on
the event loop they would stall it for as long as the driver takes, and with several
devices uploading at once, one device after another.
A write from memory that is already page-locked goes straight to the device. A
buffer exported to another library that outlives the backend keeps its block out of
the pool, freed when the last view of it goes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import numpy as np

from ...cuda import DeviceAllocation, PinnedBuffer, call
from ...errors import VyreError
from .._interop import Borrowed
from .._resident import ResidentBuffer, slab_layout
from ._base import INLINE_COPY_BYTES, CudaBase, Slab
from ._staging import COPY_PAD
from ._work import keep_alive

T = TypeVar("T")


def _padded(nbytes: int) -> int:
    return -(-nbytes // COPY_PAD) * COPY_PAD


class CudaStorage(CudaBase):
    """Resident storage: stores, uploads in slabs, writes, and releasing blocks."""

    async def _to_pinned(self, data: np.ndarray) -> PinnedBuffer:
        pinned = self._pinned.acquire(max(_padded(data.nbytes), COPY_PAD))
        try:
            await self._copy_into(pinned.array[: data.nbytes], data)
        except BaseException:
            self._pinned.release(pinned)
            raise
        return pinned

    async def _store(self, dtype: np.dtype[Any], count: int, data: Any) -> DeviceAllocation:
        nbytes = count * dtype.itemsize
        padded = max(_padded(nbytes), COPY_PAD)
        if padded > INLINE_COPY_BYTES:  # a traversal's scratch: as a slab's block
            block = await self._acquire_off_loop(self._memory.acquire, padded)
        else:
            block = self._memory.acquire(padded)
        if isinstance(data, Borrowed):
            try:
                await self._copy_device(block.ptr, data, into_borrowed=False)
            except BaseException:
                self._release(block)  # after the copy ended: _copy_device settles
                raise
            return block
        if data is not None:
            await self._fill(block, [data], [0, nbytes])
            return block
        device = self._cuda()

        def clear(stream: Any) -> None:
            if nbytes:
                device.call(device.driver.cuMemsetD8Async, block.ptr, 0, _padded(nbytes), stream)

        await self._stream_op(clear, lambda: None, on_abandon=lambda: self._release(block))
        return block

    async def _store_group(self, datas: list[np.ndarray]) -> list[DeviceAllocation]:
        layout = slab_layout([d.nbytes for d in datas])
        block = await self._acquire_off_loop(self._memory.acquire, layout[-1])
        await self._fill(block, datas, layout)
        views = [
            DeviceAllocation(ptr=block.ptr + start, nbytes=d.nbytes, capacity=d.nbytes)
            for d, start in zip(datas, layout, strict=False)
        ]
        slab = Slab(block, len(views))
        for view in views:
            self._slab_of[id(view)] = slab
        return views

    async def _fill(
        self, block: DeviceAllocation, datas: list[np.ndarray], layout: list[int]
    ) -> None:
        """Copy ``datas`` (C-contiguous) into ``block`` at ``layout`` offsets: a small
        upload staged in pinned memory and copied in one transfer, a large one straight
        from the arrays (:meth:`_fill_from_host`).

        On failure or cancellation ``block`` goes back to the pool, once no copy uses it.
        """
        total = _padded(layout[-1])
        if total > INLINE_COPY_BYTES:
            await self._fill_from_host(block, datas, layout)
            return
        try:
            pinned = self._pinned.acquire(max(total, COPY_PAD))
        except BaseException:
            self._release(block)
            raise
        try:
            for data, start in zip(datas, layout, strict=False):
                await self._copy_into(pinned.array[start : start + data.nbytes], data)
        except BaseException:
            self._pinned.release(pinned)
            self._release(block)
            raise
        device = self._cuda()

        def enqueue(stream: Any) -> None:
            if layout[-1]:
                device.call(device.driver.cuMemcpyHtoDAsync, block.ptr, pinned.ptr, total, stream)

        await self._stream_op(
            enqueue,
            lambda: self._pinned.release(pinned),
            on_abandon=lambda: self._release(block),
        )

    async def _fill_from_host(
        self, block: DeviceAllocation, datas: list[np.ndarray], layout: list[int]
    ) -> None:
        """Copy C-contiguous ``datas`` straight from host memory into ``block`` at
        ``layout`` offsets, in a worker thread, with no staging block of ours.

        From pageable memory the driver stages the copy itself, pipelined, with no
        page-locking of the whole graph per device (which on several devices at once
        queues on the kernel's memory map). ``cuMemcpyHtoD`` may return before its last
        bytes land, on the thread's default stream, which the backend's (non-blocking)
        streams do not wait for: the thread synchronises that stream before it returns.
        On failure or cancellation ``block`` goes back to the pool, once the thread
        ended (no copy uses it then).
        """
        device = self._cuda()
        driver = device.driver

        def copy() -> None:
            for data, start in zip(datas, layout, strict=False):
                if data.nbytes:
                    device.call(
                        driver.cuMemcpyHtoD, block.ptr + start, data.ctypes.data, data.nbytes
                    )
            device.call(driver.cuStreamSynchronize, 0)

        try:
            self._watcher.check_accepting()
            await anyio.to_thread.run_sync(copy, limiter=self._copy_limiter)
        except BaseException:
            self._release(block)
            raise

    async def _acquire_off_loop(self, acquire: Callable[[int], T], nbytes: int) -> T:
        """``acquire(nbytes)`` in a worker thread; what it returns is never lost to a
        cancellation (the caller's next checkpoint raises it, and releases the block)."""
        acquired: list[T] = []
        with anyio.CancelScope(shield=True):
            acquired.append(
                await anyio.to_thread.run_sync(acquire, nbytes, limiter=self._copy_limiter)
            )
        return acquired[0]

    async def _write(self, storage: DeviceAllocation, byte_offset: int, data: Any) -> None:
        if not data.nbytes:
            return
        if isinstance(data, Borrowed):
            await self._copy_device(storage.ptr + byte_offset, data, into_borrowed=False)
            return
        device = self._cuda()
        if (
            data.nbytes > INLINE_COPY_BYTES
            and data.flags.c_contiguous
            and device.is_page_locked(data.ctypes.data, data.nbytes)
        ):
            await self._write_page_locked(storage, byte_offset, data)
            return
        pinned = await self._to_pinned(data)

        def enqueue(stream: Any) -> None:
            device.call(
                device.driver.cuMemcpyHtoDAsync,
                storage.ptr + byte_offset,
                pinned.ptr,
                data.nbytes,
                stream,
            )

        # settle: the caller's hold on the buffer ends when this returns.
        await self._stream_op(enqueue, lambda: self._pinned.release(pinned), settle=True)

    def _pointer_of(self, buffer: ResidentBuffer) -> int:
        return int(self._registry.storage(buffer).ptr)

    async def _write_page_locked(
        self, storage: DeviceAllocation, byte_offset: int, data: np.ndarray
    ) -> None:
        """Copy from already page-locked host memory straight to the device: no staging.

        The copy reads ``data`` until it lands: a cancelled write returns only then
        (the caller may change ``data`` once it returns), and the completion keeps
        ``data`` alive until then.
        """
        device = self._cuda()

        def enqueue(stream: Any) -> None:
            device.call(
                device.driver.cuMemcpyHtoDAsync,
                storage.ptr + byte_offset,
                data.ctypes.data,
                data.nbytes,
                stream,
            )

        await self._stream_op(enqueue, functools.partial(keep_alive, data), settle=True)

    def _release(self, storage: DeviceAllocation) -> None:
        if self._device is None or self._device.lost:
            return
        slab = self._slab_of.pop(id(storage), None)
        block = storage
        if slab is not None:
            slab.members -= 1
            if slab.members:
                return
            block = slab.block
        if block.ptr in self._detached:
            self._free_detached(block)
        else:
            self._memory.release(block)

    def _detach(self, storage: DeviceAllocation) -> None:
        """Closing with ``storage`` exported: the pool (which frees everything on close)
        forgets its block, freed once the last exported view is gone."""
        slab = self._slab_of.get(id(storage))
        block = slab.block if slab is not None else storage
        if block.ptr not in self._detached:
            self._memory.detach(block.ptr)
            self._detached.add(block.ptr)

    def _free_orphan(self, storage: DeviceAllocation) -> None:
        slab = self._slab_of.pop(id(storage), None)
        block = storage
        if slab is not None:
            slab.members -= 1
            if slab.members:
                return
            block = slab.block
        self._free_detached(block)

    def _free_detached(self, block: DeviceAllocation) -> None:
        """Free a block the pool forgot, retaining the device's primary context for it
        (the backend's own retain may be gone, and any thread may run this)."""
        self._detached.discard(block.ptr)
        device = self._device
        if device is None or device.lost:
            return
        driver = device.driver
        try:
            context = call(driver.cuDevicePrimaryCtxRetain, device.handle)
            call(driver.cuCtxPushCurrent, context)
            try:
                call(driver.cuMemFree, driver.CUdeviceptr(block.ptr))
            finally:
                call(driver.cuCtxPopCurrent)
                call(driver.cuDevicePrimaryCtxRelease, device.handle)
        except VyreError as exc:
            self._log.warning("freeing an exported buffer failed", error=exc.what)
