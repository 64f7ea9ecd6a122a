"""Resident storage on the device: allocating, filling, writing and releasing blocks.

Uploads are staged through page-locked memory and copied in one transfer; several
arrays uploaded together share one block (a slab), freed when its last member is.
A slab's block (a graph's, hundreds of megabytes), any other large block (a
traversal's scratch) and any large staging block are allocated (and page-locked) in a
worker thread, and a large staging block is given back
(unpinned) in one too: on the event loop they would stall it for as long as the
driver takes, and with several devices uploading at once, one device after another.
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
        """Stage ``datas`` at ``layout`` offsets in pinned memory, then one copy into ``block``.

        On failure or cancellation ``block`` goes back to the pool, once no copy uses it.
        """
        total = _padded(layout[-1])
        large = total > INLINE_COPY_BYTES
        try:
            if large:
                pinned = await self._acquire_off_loop(self._pinned.acquire, total)
            else:
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

        if not large:
            await self._stream_op(
                enqueue,
                lambda: self._pinned.release(pinned),
                on_abandon=lambda: self._release(block),
            )
            return

        def abandon() -> None:
            self._pinned.release(pinned)
            self._release(block)

        # A large staging block (a graph's) is freed, not cached, and unpinning takes
        # about as long as pinning did: in a worker thread too, once the copy ended.
        await self._stream_op(enqueue, lambda: None, on_abandon=abandon)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._pinned.release, pinned, limiter=self._copy_limiter)

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
