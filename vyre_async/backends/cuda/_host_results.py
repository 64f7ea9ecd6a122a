"""Host arrays for read results whose memory is used again once the caller drops them.

A read into a fresh host array pays for fresh memory: the kernel's zeroing of every
page on first touch, and the driver's staged copy into pageable memory. For a 16 MiB
BFS levels array on an H200 host that was the difference between a fresh array
(2.7-4.0 ms per BFS) and a reused page-locked one (1.4-1.6 ms).

:class:`ResultBlocks` lends arrays over blocks it keeps. The array a read returns
is an ordinary writable ndarray, but its memory belongs to a lease object (its
``base``); when the last array or view over it is gone, the lease gives its block
back, and a later read of a similar size takes it again. A block that comes back
is worth page-locking (the backend registers it with the driver), so a caller who
drops each result before the next read gets page-locked copies from the third read
on, and a caller who keeps every result gets fresh blocks, as before.

Blocks come back from ``__del__``, which may run on any thread: returns go through a
``deque`` (its appends are atomic) and are sorted into the idle lists only by
:meth:`ResultBlocks.take`, on the event-loop thread.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

#: Block sizes are whole multiples of this (and start on such a boundary), so reads
#: of nearby sizes share blocks and a block can be page-locked as it is.
BLOCK_ALIGN = 64 << 10


class HostBlock:
    """Host memory for one read result at a time.

    Attributes:
        array: ``nbytes`` bytes starting on a :data:`BLOCK_ALIGN` boundary.
        nbytes: The block's size, a multiple of :data:`BLOCK_ALIGN`.
        lent: Times the block has been lent out.
        page_locked: Whether the backend registered it with the driver.
    """

    __slots__ = ("_storage", "array", "lent", "nbytes", "page_locked")

    def __init__(self, nbytes: int) -> None:
        self._storage = np.empty(nbytes + BLOCK_ALIGN, np.uint8)
        start = -self._storage.ctypes.data % BLOCK_ALIGN
        self.array = self._storage[start : start + nbytes]
        self.nbytes = nbytes
        self.lent = 0
        self.page_locked = False

    @property
    def address(self) -> int:
        """Where the block starts."""
        return int(self.array.ctypes.data)


def _give_back(lease: Any) -> None:
    # A finalizer must not raise; at interpreter shutdown there may be nothing left.
    with contextlib.suppress(Exception):
        lease.pool.put_back(lease.block)


_LEASE_TYPES: dict[int, Any] = {}


def _lease_type(nbytes: int) -> Any:
    """A ctypes byte array type of ``nbytes`` whose instances give their block back."""
    made = _LEASE_TYPES.get(nbytes)
    if made is None:
        made = type(f"HostLease{nbytes}", (ctypes.c_ubyte * nbytes,), {"__del__": _give_back})
        _LEASE_TYPES[nbytes] = made
    return made


class ResultBlocks:
    """Blocks lent out as read results and kept idle once they come back.

    Args:
        max_idle_bytes: Idle blocks beyond this many bytes are let go.
        release: Called (on the loop thread) with each page-locked block let go,
            before its memory may be freed: the backend unregisters it.
    """

    def __init__(self, max_idle_bytes: int, release: Callable[[HostBlock], None]) -> None:
        self._max_idle_bytes = max_idle_bytes
        self._release = release
        self._idle: dict[int, list[HostBlock]] = {}
        self._idle_bytes = 0
        self._returned: collections.deque[HostBlock] = collections.deque()
        #: Every page-locked block, lent or idle (unregistered at close).
        self.page_locked: set[HostBlock] = set()
        self._closed = False

    @staticmethod
    def block_size(nbytes: int) -> int:
        """The size of the block a read of ``nbytes`` takes."""
        return max(BLOCK_ALIGN, -(-nbytes // BLOCK_ALIGN) * BLOCK_ALIGN)

    def take(self, nbytes: int) -> HostBlock:
        """An idle block for ``nbytes`` (one that came back first), or a new one."""
        self._collect()
        idle = self._idle.get(self.block_size(nbytes))
        if idle:
            block = idle.pop()
            self._idle_bytes -= block.nbytes
            return block
        return HostBlock(self.block_size(nbytes))

    def lend(self, block: HostBlock, dtype: np.dtype[Any], count: int) -> np.ndarray:
        """``count`` elements of ``dtype`` over ``block``; the block comes back when dropped."""
        lease = _lease_type(block.nbytes).from_address(block.address)
        lease.block = block
        lease.pool = self
        block.lent += 1
        return np.frombuffer(lease, dtype, count)

    def put_back(self, block: HostBlock) -> None:
        """Give a block back: its lease was dropped, or its read failed before lending it.

        Any thread may call this; after :meth:`close` the block is simply let go.
        """
        if not self._closed:
            self._returned.append(block)

    def mark_page_locked(self, block: HostBlock) -> None:
        """Record that the backend registered ``block`` (it is unregistered at close)."""
        block.page_locked = True
        self.page_locked.add(block)

    @property
    def page_locked_bytes(self) -> int:
        """Bytes of the page-locked blocks, lent or idle."""
        return sum(block.nbytes for block in self.page_locked)

    @property
    def idle_bytes(self) -> int:
        """Bytes of the idle blocks, counting those that came back since the last take."""
        self._collect()
        return self._idle_bytes

    def close(self) -> list[HostBlock]:
        """Stop keeping blocks; returns the page-locked ones, lent or idle, to unregister.

        Arrays still lent stay valid: their memory is the block's own, and only the
        page-locking ends.
        """
        self._closed = True
        self._returned.clear()
        self._idle.clear()
        self._idle_bytes = 0
        locked = list(self.page_locked)
        self.page_locked.clear()
        for block in locked:
            block.page_locked = False
        return locked

    def _collect(self) -> None:
        while self._returned:
            block = self._returned.popleft()
            if self._closed:
                continue
            if self._idle_bytes + block.nbytes > self._max_idle_bytes:
                self._let_go(block)
                continue
            self._idle.setdefault(block.nbytes, []).append(block)
            self._idle_bytes += block.nbytes

    def _let_go(self, block: HostBlock) -> None:
        if block.page_locked:
            self.page_locked.discard(block)
            block.page_locked = False
            self._release(block)
