"""Reading resident memory back: four strategies, by size and by the target's memory.

A few bytes land in page-locked blocks and are copied out; 2-32 MiB into fresh
arrays take the driver's pageable copy (a block lent from
:class:`~._host_results.ResultBlocks`, page-locked once it comes back); larger reads
come back in 2 MiB pieces through page-locked staging, copied out in worker threads
while later pieces land (:mod:`._readback`); a page-locked ``out=`` takes the device's
copy directly.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import anyio
import numpy as np

from ...errors import DispatchError, OutOfMemoryError
from ...streams import Completion
from .._checks import wait_quietly
from .._interop import Borrowed
from .._sequence import ReadPlan
from ._base import INLINE_COPY_BYTES, CudaBase
from ._host_results import HostBlock
from ._readback import copy_out_pieces, plan_read_pieces
from ._staging import COPY_PAD
from ._work import keep_alive, once

#: Reads into fresh arrays between these sizes use the driver's pageable copy.
PAGEABLE_READ_MIN_BYTES = 2 << 20
PAGEABLE_READ_MAX_BYTES = 32 << 20
#: Read-result blocks are page-locked once they come back, up to this many bytes in all.
RESULT_BLOCKS_LOCKED_BYTES = 256 << 20


def _driver_copies(nbytes: int) -> bool:
    """Whether a read of ``nbytes`` into pageable memory takes the driver's copy."""
    return PAGEABLE_READ_MIN_BYTES <= nbytes <= PAGEABLE_READ_MAX_BYTES


class CudaReads(CudaBase):
    """Resident reads back to the host, by the strategy that suits their size and target."""

    async def _read(self, plans: list[ReadPlan]) -> list[np.ndarray]:
        device = self._cuda()
        sizes = [count * buffer.dtype.itemsize for _, buffer, _, count in plans]
        offsets = list(itertools.accumulate((-(-s // 256) * 256 for s in sizes), initial=0))
        total = sum(sizes)
        if _driver_copies(total):
            if len(plans) == 1:
                return [await self._read_recycled(plans[0])]
            return await self._read_pageable(plans)
        if total > INLINE_COPY_BYTES:
            return await self._read_in_pieces(plans, sizes, offsets)
        pinned = self._pinned.acquire(max(offsets[-1], COPY_PAD))

        def enqueue(stream: Any) -> None:
            for (storage, buffer, offset, _), size, at in zip(plans, sizes, offsets, strict=False):
                if size:
                    device.call(
                        device.driver.cuMemcpyDtoHAsync,
                        pinned.ptr + at,
                        storage.ptr + offset * buffer.dtype.itemsize,
                        size,
                        stream,
                    )

        release_pinned = once(self._pinned.release, pinned)
        # settle: the caller's hold on the buffers ends when this returns.
        await self._stream_op(enqueue, lambda: None, on_abandon=release_pinned, settle=True)
        arrays = [
            pinned.array[at : at + size].view(buffer.dtype).copy()
            for (_, buffer, _, _), size, at in zip(plans, sizes, offsets, strict=False)
        ]
        release_pinned()
        return arrays

    async def _read_into(self, plan: ReadPlan, out: Any) -> None:
        storage, buffer, offset, count = plan
        nbytes = count * buffer.dtype.itemsize
        if isinstance(out, Borrowed):
            await self._copy_device(
                storage.ptr + offset * buffer.dtype.itemsize, out, into_borrowed=True
            )
            return
        device = self._cuda()
        if nbytes <= INLINE_COPY_BYTES or not device.is_page_locked(out.ctypes.data, nbytes):
            if _driver_copies(nbytes):
                await self._read_pageable([plan], into=out)
                return
            (result,) = await self._read([plan])
            await self._copy_into(out.reshape(-1).view(np.uint8), result)
            return

        await self._read_page_locked(plan, out)

    async def _read_page_locked(self, plan: ReadPlan, out: np.ndarray) -> None:
        """The device copies straight into ``out``, page-locked host memory.

        A cancelled read returns once the copy has landed: ``out`` does not change
        after the call returns.
        """
        storage, buffer, offset, count = plan
        device = self._cuda()

        def enqueue(stream: Any) -> None:
            device.call(
                device.driver.cuMemcpyDtoHAsync,
                out.ctypes.data,
                storage.ptr + offset * buffer.dtype.itemsize,
                count * buffer.dtype.itemsize,
                stream,
            )

        await self._stream_op(enqueue, functools.partial(keep_alive, out), settle=True)

    async def _read_recycled(self, plan: ReadPlan) -> np.ndarray:
        """A mid-sized read into a block lent from ``self._results`` (:mod:`._host_results`).

        A block lent before, so come back, is page-locked first (once, in a worker
        thread, while the page-locked total stays under ``RESULT_BLOCKS_LOCKED_BYTES``)
        and then takes the device's copy directly; any other block takes the driver's
        pageable copy. If the driver refuses to page-lock one, no block is offered to it
        again and reads go on pageable.
        """
        _, buffer, _, count = plan
        nbytes = count * buffer.dtype.itemsize
        results = self._results
        block = results.take(nbytes)
        try:
            if (
                self._lock_results
                and block.lent
                and not block.page_locked
                and results.page_locked_bytes + block.nbytes <= RESULT_BLOCKS_LOCKED_BYTES
            ):
                await self._page_lock(block)
            target = block.array[:nbytes]
            if block.page_locked:
                await self._read_page_locked(plan, target)
            else:
                await self._read_pageable([plan], into=target)
        except BaseException:
            results.put_back(block)  # no copy into it is left running
            raise
        return results.lend(block, buffer.dtype, count)

    async def _page_lock(self, block: HostBlock) -> None:
        device = self._cuda()
        try:
            await anyio.to_thread.run_sync(
                device.call,
                device.driver.cuMemHostRegister,
                block.address,
                block.nbytes,
                0,
                limiter=self._copy_limiter,
            )
        except (DispatchError, OutOfMemoryError) as exc:
            self._lock_results = False
            self._log.warning("read results stay pageable", error=exc.what)
            return
        self._results.mark_page_locked(block)

    def _unregister(self, block: HostBlock) -> None:
        device = self._cuda()
        device.call(device.driver.cuMemHostUnregister, block.address)

    async def _read_pageable(
        self, plans: list[ReadPlan], into: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """A mid-sized read: the driver copies into host memory, in a worker thread.

        Serves several ranges at once, a pageable ``out=``, and a result block's
        first read (before it is page-locked).

        The driver stages pageable copies itself, and from 2 to 32 MiB that beat our
        pieces through page-locked staging by 1.1-2x on an H200
        (bench/readback_sweep.py); at 64 MiB it took twice as long, so larger reads
        keep the pieces. The arrays are allocated (and first touched) in the thread
        too (or the one plan goes straight ``into`` a caller's array). A cancelled
        read returns once the thread is done: nothing outlives it.
        """
        device = self._cuda()
        driver = device.driver
        streams = self._stream_pool

        def copy() -> list[np.ndarray]:
            if into is not None:
                outs = [into.reshape(-1).view(np.uint8)]
            else:
                outs = [np.empty(count, buffer.dtype) for _, buffer, _, count in plans]
            stream = streams.acquire()  # its own: not queued behind other work
            try:
                for out, (storage, buffer, offset, _) in zip(outs, plans, strict=True):
                    if out.nbytes:
                        device.call(
                            driver.cuMemcpyDtoHAsync,
                            out.ctypes.data,
                            storage.ptr + offset * buffer.dtype.itemsize,
                            out.nbytes,
                            stream,
                        )
                device.call(driver.cuStreamSynchronize, stream)
            finally:
                streams.release(stream)
            return outs

        return await anyio.to_thread.run_sync(copy, limiter=self._copy_limiter)

    async def _read_in_pieces(
        self, plans: list[ReadPlan], sizes: list[int], offsets: list[int]
    ) -> list[np.ndarray]:
        """A large read: pieces copied out in worker threads while later pieces land.

        Every piece is enqueued at once on one stream, each with its own completion
        (see :mod:`._readback`). The pinned block goes back to its pool once no
        copy reads it: at once on success, after the last piece has landed when the
        wait is cancelled or fails.
        """
        device = self._cuda()
        outs = [np.empty(count, buffer.dtype) for _, buffer, _, count in plans]
        pieces = plan_read_pieces(sizes, offsets[:-1])
        landed = [Completion() for _ in pieces]
        pinned = self._pinned.acquire(offsets[-1])
        release_pinned = once(self._pinned.release, pinned)
        lane = self._next_lane()
        stream = lane.stream
        watcher = self._watcher
        try:
            watcher.check_accepting()
            for piece, completion in zip(pieces, landed, strict=True):
                storage, buffer, offset, _ = plans[piece.range_index]
                device.call(
                    device.driver.cuMemcpyDtoHAsync,
                    pinned.ptr + piece.staged,
                    storage.ptr + offset * buffer.dtype.itemsize + piece.start,
                    piece.nbytes,
                    stream,
                )
                watcher.add(lane, completion)
                watcher.seal(completion.fence)  # each piece its own event: copied out as it lands
        except BaseException:
            self._sync_after_failure(stream)
            release_pinned()
            raise
        try:
            await copy_out_pieces(
                pieces,
                landed,
                pinned.array,
                [out.reshape(-1).view(np.uint8) for out in outs],
                self._copy_limiter,
            )
        except BaseException:
            landed[-1].add_done_callback(release_pinned)
            # One stream: the last piece landed means no copy reads the buffers any
            # more, and the caller's hold on them ends when this returns.
            with anyio.CancelScope(shield=True):
                await wait_quietly(landed[-1])
            raise
        release_pinned()
        return outs
