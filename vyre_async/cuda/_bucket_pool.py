"""Size-bucketed caching of raw memory blocks, shared by the device and pinned pools.

A request is rounded up to a bucket (:func:`bucket_capacity`) and served from the
idle blocks of that bucket when there is one, else allocated. Released blocks go
back to the idle cache, which is capped in bytes: the least recently released
blocks are freed first to make room. Live (handed-out) bytes have their own cap.

The raw ``alloc(capacity) -> address`` and ``free(address)`` functions are
constructor arguments, so this logic is tested without a GPU.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import msgspec

from ..errors import LifecycleError, OutOfMemoryError, VyreError
from ..logging import get_logger

__all__ = ["BucketPool", "MemoryPoolStats", "bucket_capacity"]

logger = get_logger("vyre_async.cuda")

MIN_CAPACITY = 256
#: Past this size buckets grow in fixed steps, not doublings: a 1 GiB + 1 byte
#: graph must not hold 2 GiB of device memory.
POWER_OF_TWO_LIMIT = 1 << 22
LARGE_STEP = 1 << 21


def bucket_capacity(nbytes: int) -> int:
    """Return the capacity of the bucket that serves a request of ``nbytes``.

    Requests are padded to 16 bytes, then rounded up to a power of two (at least
    256 bytes) up to 4 MiB, and to a multiple of 2 MiB above that.

    Args:
        nbytes: Requested size; 0 gets the smallest bucket.

    Returns:
        The bucket's capacity in bytes.

    Raises:
        ValueError: ``nbytes`` is negative.
    """
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    padded = (nbytes + 15) & ~15
    if padded <= MIN_CAPACITY:
        return MIN_CAPACITY
    if padded <= POWER_OF_TWO_LIMIT:
        return 1 << (padded - 1).bit_length()
    return -(-padded // LARGE_STEP) * LARGE_STEP


class MemoryPoolStats(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Counters of one memory pool at one moment.

    Attributes:
        hits: Requests served from the idle cache.
        misses: Requests that allocated.
        live_allocations: Blocks handed out and not yet released.
        live_bytes: Their capacity in bytes.
        cached_blocks: Idle blocks kept for reuse.
        cached_bytes: Their capacity in bytes.
        evictions: Idle blocks freed to respect the cache cap.
        oom_retries: Allocations retried after freeing the cache on out-of-memory.
    """

    hits: int
    misses: int
    live_allocations: int
    live_bytes: int
    cached_blocks: int
    cached_bytes: int
    evictions: int
    oom_retries: int


class BucketPool:
    """Bucketed, capped cache of raw blocks; the base of the concrete pools.

    Thread-safe: bookkeeping is under a lock, driver calls are made outside it.

    Args:
        alloc: Allocates ``capacity`` bytes and returns the address; raises
            :class:`OutOfMemoryError` when memory runs out.
        free: Frees an address ``alloc`` returned.
        kind: What the pool holds, for messages (``"device"``, ``"pinned host"``).
        max_cached_bytes: Cap on idle cached bytes (0 disables caching).
        max_live_bytes: Cap on handed-out bytes (``None``: only the driver's).
    """

    def __init__(
        self,
        alloc: Callable[[int], int],
        free: Callable[[int], None],
        *,
        kind: str,
        max_cached_bytes: int,
        max_live_bytes: int | None,
    ) -> None:
        if max_cached_bytes < 0:
            raise ValueError(f"max_cached_bytes must be >= 0, got {max_cached_bytes}")
        if max_live_bytes is not None and max_live_bytes <= 0:
            raise ValueError(f"max_live_bytes must be > 0 or None, got {max_live_bytes}")
        self._alloc = alloc
        self._free = free
        self._kind = kind
        self.max_cached_bytes = max_cached_bytes
        self.max_live_bytes = max_live_bytes
        self._lock = threading.Lock()
        self._live: dict[int, int] = {}
        self._idle: OrderedDict[int, int] = OrderedDict()  # address -> capacity, oldest first
        self._idle_by_capacity: dict[int, list[int]] = {}
        self._closed = False
        self.hits = 0
        self.misses = 0
        self.live_bytes = 0
        self.cached_bytes = 0
        self.evictions = 0
        self.oom_retries = 0

    @property
    def live_allocations(self) -> int:
        """Blocks handed out and not yet released."""
        return len(self._live)

    @property
    def cached_blocks(self) -> int:
        """Idle blocks kept for reuse."""
        return len(self._idle)

    def stats(self) -> MemoryPoolStats:
        """Return a frozen copy of the counters."""
        with self._lock:
            return MemoryPoolStats(
                hits=self.hits,
                misses=self.misses,
                live_allocations=len(self._live),
                live_bytes=self.live_bytes,
                cached_blocks=len(self._idle),
                cached_bytes=self.cached_bytes,
                evictions=self.evictions,
                oom_retries=self.oom_retries,
            )

    def _acquire_block(self, nbytes: int) -> tuple[int, int]:
        """Return ``(address, capacity)`` of a block holding at least ``nbytes``."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int):
            raise TypeError(f"nbytes must be an int, got {type(nbytes).__name__}")
        capacity = bucket_capacity(nbytes)
        with self._lock:
            self._check_open()
            if self.max_live_bytes is not None and self.live_bytes + capacity > self.max_live_bytes:
                raise OutOfMemoryError(
                    f"{self._kind} pool cap reached: {nbytes} bytes requested (bucket "
                    f"{capacity}) with {self.live_bytes} of {self.max_live_bytes} bytes "
                    f"live in {len(self._live)} allocation(s)",
                    fix="free or await what holds the memory, or raise the pool's max_live_bytes.",
                )
            self.live_bytes += capacity  # reserved now, so concurrent requests see it
            stack = self._idle_by_capacity.get(capacity)
            if stack:
                address = stack.pop()
                del self._idle[address]
                self.cached_bytes -= capacity
                self._live[address] = capacity
                self.hits += 1
                return address, capacity
            self.misses += 1
        try:
            address = self._alloc_with_retry(nbytes, capacity)
        except BaseException:
            with self._lock:
                self.live_bytes -= capacity
            raise
        with self._lock:
            closed = self._closed
            if not closed:
                self._live[address] = capacity
        if closed:  # closed while the driver allocated: hand nothing out
            self._free_all([address])
            self._check_open()
        return address, capacity

    def _alloc_with_retry(self, nbytes: int, capacity: int) -> int:
        try:
            return int(self._alloc(capacity))
        except OutOfMemoryError as first:
            freed = self.trim()
            if freed == 0:
                raise OutOfMemoryError(
                    f"{self._kind} allocation of {capacity} bytes ({nbytes} requested) "
                    f"failed with {self.live_bytes - capacity} bytes live in "
                    f"{len(self._live)} allocation(s) and nothing cached: {first.what}",
                    fix=first.fix,
                ) from first
            self.oom_retries += 1
            logger.info("memory_pool_oom_retry", kind=self._kind, freed_bytes=freed)
            try:
                return int(self._alloc(capacity))
            except OutOfMemoryError as second:
                raise OutOfMemoryError(
                    f"{self._kind} allocation of {capacity} bytes ({nbytes} requested) "
                    f"failed even after freeing {freed} cached bytes; "
                    f"{self.live_bytes - capacity} bytes are live in "
                    f"{len(self._live)} allocation(s): {second.what}",
                    fix=second.fix,
                ) from second

    def _release_block(self, address: int) -> None:
        """Return a block to the cache, or free it when the cache cannot take it."""
        to_free: list[int] = []
        with self._lock:
            capacity = self._live.pop(address, None)
            if capacity is None:
                raise LifecycleError(
                    f"{self._kind} block 0x{address:x} is not live in this pool",
                    fix="release each allocation once, to the pool that made it.",
                )
            self.live_bytes -= capacity
            if self._closed or capacity > self.max_cached_bytes:
                to_free.append(address)
            else:
                while self.cached_bytes + capacity > self.max_cached_bytes:
                    to_free.append(self._pop_oldest_idle())
                    self.evictions += 1
                self._idle[address] = capacity
                self._idle_by_capacity.setdefault(capacity, []).append(address)
                self.cached_bytes += capacity
        self._free_all(to_free)

    def _pop_oldest_idle(self) -> int:
        address, capacity = self._idle.popitem(last=False)
        stack = self._idle_by_capacity[capacity]
        stack.remove(address)
        if not stack:
            del self._idle_by_capacity[capacity]
        self.cached_bytes -= capacity
        return address

    def trim(self, keep_bytes: int = 0) -> int:
        """Free idle blocks, oldest first, until at most ``keep_bytes`` stay cached.

        Args:
            keep_bytes: Idle bytes that may stay cached.

        Returns:
            The bytes freed.
        """
        to_free: list[int] = []
        freed = 0
        with self._lock:
            while self._idle and self.cached_bytes > keep_bytes:
                capacity = next(iter(self._idle.values()))
                to_free.append(self._pop_oldest_idle())
                freed += capacity
        self._free_all(to_free)
        return freed

    def _free_all(self, addresses: list[int]) -> None:
        for address in addresses:
            try:
                self._free(address)
            except VyreError as exc:  # a lost device cannot free; the context release will
                logger.warning("memory_pool_free_failed", kind=self._kind, error=str(exc))

    def _check_open(self) -> None:
        if self._closed:
            raise LifecycleError(
                f"the {self._kind} memory pool is closed", fix="open a new backend."
            )

    def detach(self, address: int) -> None:
        """Forget a live block without freeing it: its holder frees it (an exported
        buffer that outlives the pool).

        Raises:
            LifecycleError: The block is not live in this pool.
        """
        with self._lock:
            capacity = self._live.pop(address, None)
            if capacity is None:
                raise LifecycleError(
                    f"{self._kind} block 0x{address:x} is not live in this pool",
                    fix="detach each allocation once, from the pool that made it.",
                )
            self.live_bytes -= capacity

    def close(self) -> int:
        """Free every block, idle and live. Idempotent.

        Live blocks are freed too (the backend closes its pools only after its work
        finished); their number is logged as a leak.

        Returns:
            How many blocks were still live.
        """
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
            live = list(self._live)
            to_free = [*self._idle, *live]
            self._live.clear()
            self._idle.clear()
            self._idle_by_capacity.clear()
            self.live_bytes = 0
            self.cached_bytes = 0
        if live:
            logger.warning("memory_pool_closed_with_live_blocks", kind=self._kind, live=len(live))
        self._free_all(to_free)
        return len(live)
