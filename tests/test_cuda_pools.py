"""Memory, stream and event pools, driven by fake allocators (no GPU needed)."""

from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

from vyre_async.cuda import (
    DeviceAllocation,
    DeviceMemoryPool,
    EventPool,
    PinnedHostPool,
    StreamPool,
    bucket_capacity,
)
from vyre_async.errors import DeviceLostError, LifecycleError, OutOfMemoryError


class FakeDeviceMemory:
    """cuMemAlloc/cuMemFree stand-ins with a byte budget, recording every call."""

    def __init__(self, budget: int = 1 << 40) -> None:
        self.budget = budget
        self.blocks: dict[int, int] = {}
        self.allocs: list[int] = []
        self.frees: list[int] = []
        self._next = itertools.count(0x7F0000000000, 1 << 32)

    @property
    def held(self) -> int:
        return sum(self.blocks.values())

    def alloc(self, capacity: int) -> int:
        if self.held + capacity > self.budget:
            raise OutOfMemoryError("cuMemAlloc failed with CUDA_ERROR_OUT_OF_MEMORY", fix="x")
        address = next(self._next)
        self.blocks[address] = capacity
        self.allocs.append(capacity)
        return address

    def free(self, address: int) -> None:
        self.frees.append(self.blocks.pop(address))


class FakeHostMemory:
    """cuMemHostAlloc/cuMemFreeHost stand-ins over real ctypes buffers."""

    def __init__(self) -> None:
        self.buffers: dict[int, ctypes.Array[ctypes.c_char]] = {}

    def alloc(self, capacity: int) -> int:
        buffer = ctypes.create_string_buffer(capacity)
        address = ctypes.addressof(buffer)
        self.buffers[address] = buffer
        return address

    def free(self, address: int) -> None:
        del self.buffers[address]


@pytest.mark.parametrize(
    ("nbytes", "capacity"),
    [
        (0, 256),
        (1, 256),
        (256, 256),
        (257, 512),
        (1000, 1024),
        (1024, 1024),
        (1025, 2048),
        ((1 << 22) - 1, 1 << 22),
        (1 << 22, 1 << 22),
        ((1 << 22) + 1, (1 << 22) + (1 << 21)),
        ((1 << 30) + 1, (1 << 30) + (1 << 21)),
    ],
)
def test_bucket_capacity_rounds_up_to_its_bucket(nbytes: int, capacity: int) -> None:
    """Requests round to powers of two (min 256) up to 4 MiB, then to 2 MiB steps."""
    assert bucket_capacity(nbytes) == capacity


def test_bucket_capacity_always_fits_and_is_16_byte_aligned(rng: np.random.Generator) -> None:
    """Every bucket holds its request, is a multiple of 16, and wastes < 2 MiB above 4 MiB."""
    for nbytes in rng.integers(0, 1 << 33, size=2000):
        capacity = bucket_capacity(int(nbytes))
        assert capacity >= nbytes
        assert capacity % 16 == 0
        if nbytes > 1 << 22:
            assert capacity - nbytes < 1 << 21


def test_bucket_capacity_rejects_negative_sizes() -> None:
    """A negative size is a ValueError."""
    with pytest.raises(ValueError, match=">= 0"):
        bucket_capacity(-1)


def test_device_pool_reuses_a_released_block_of_the_same_bucket() -> None:
    """A release then an acquire of the same bucket is a hit with the same pointer."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    first = pool.acquire(1000)
    assert (first.nbytes, first.capacity) == (1000, 1024)
    pool.release(first)
    second = pool.acquire(600)
    assert second.ptr == first.ptr
    assert (pool.hits, pool.misses) == (1, 1)
    assert fake.allocs == [1024]


def test_device_pool_counts_live_and_cached_bytes() -> None:
    """live_* and cached_* follow acquisitions and releases exactly."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    blocks = [pool.acquire(n) for n in (10, 300, 5000)]
    assert (pool.live_allocations, pool.live_bytes) == (3, 256 + 512 + 8192)
    pool.release(blocks[1])
    stats = pool.stats()
    assert (stats.live_allocations, stats.live_bytes) == (2, 256 + 8192)
    assert (stats.cached_blocks, stats.cached_bytes) == (1, 512)


def test_device_pool_live_cap_raises_out_of_memory_with_numbers() -> None:
    """Going over max_live_bytes raises OutOfMemoryError stating the numbers and a fix."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free, max_live_bytes=4096)
    pool.acquire(4000)
    with pytest.raises(OutOfMemoryError) as info:
        pool.acquire(1)
    message = str(info.value)
    assert "1 bytes requested (bucket 256) with 4096 of 4096 bytes live in 1 allocation" in message
    assert "Fix: " in message
    assert pool.live_bytes == 4096
    assert fake.allocs == [4096]


def test_device_pool_cache_cap_evicts_oldest_idle_blocks() -> None:
    """Releasing past max_cached_bytes frees the least recently released blocks."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free, max_cached_bytes=1024)
    a, b, c = (pool.acquire(512) for _ in range(3))
    pool.release(a)
    pool.release(b)
    pool.release(c)
    assert pool.cached_bytes == 1024
    assert pool.evictions == 1
    assert a.ptr not in {pool.acquire(512).ptr, pool.acquire(512).ptr}
    assert fake.frees == [512]


def test_device_pool_frees_a_block_larger_than_the_cache_cap() -> None:
    """A block bigger than the whole cache is freed on release, not cached."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free, max_cached_bytes=1024)
    pool.release(pool.acquire(4096))
    assert pool.cached_bytes == 0
    assert fake.frees == [4096]


def test_device_pool_frees_cache_and_retries_once_on_device_out_of_memory() -> None:
    """A real OOM from the allocator frees the idle cache, then the retry succeeds."""
    fake = FakeDeviceMemory(budget=8192)
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    pool.release(pool.acquire(4096))
    pool.release(pool.acquire(2048))
    block = pool.acquire(8000)
    assert block.capacity == 8192
    assert pool.oom_retries == 1
    assert pool.cached_bytes == 0
    assert sorted(fake.frees) == [2048, 4096]


def test_device_pool_raises_when_the_retry_fails_too() -> None:
    """If memory is still short after freeing the cache, OutOfMemoryError says so."""
    fake = FakeDeviceMemory(budget=8192)
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    held = pool.acquire(4096)
    pool.release(pool.acquire(2048))
    with pytest.raises(OutOfMemoryError, match="even after freeing 2048 cached bytes"):
        pool.acquire(8192)
    assert pool.live_bytes == held.capacity
    assert pool.live_allocations == 1


def test_device_pool_does_not_retry_with_nothing_cached() -> None:
    """With an empty cache, an allocator OOM is reported at once with the live numbers."""
    fake = FakeDeviceMemory(budget=1024)
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    with pytest.raises(OutOfMemoryError, match="nothing cached"):
        pool.acquire(2048)
    assert pool.oom_retries == 0
    assert pool.live_bytes == 0


def test_device_pool_refuses_a_double_release() -> None:
    """Releasing the same allocation twice raises LifecycleError."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    block = pool.acquire(16)
    pool.release(block)
    with pytest.raises(LifecycleError, match="not live in this pool"):
        pool.release(block)


def test_device_pool_close_frees_everything_and_reports_leaks() -> None:
    """close() frees idle and live blocks, returns the live count, and is idempotent."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free)
    pool.acquire(100)
    pool.release(pool.acquire(5000))
    assert pool.close() == 1
    assert fake.blocks == {}
    assert pool.close() == 0
    with pytest.raises(LifecycleError, match="closed"):
        pool.acquire(1)


def test_device_pool_keeps_going_when_a_free_fails() -> None:
    """A free that raises (device lost) is logged; the pool's counters stay consistent."""

    def free(address: int) -> None:
        raise DeviceLostError("the device is lost", fix="open a new backend.")

    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, free, max_cached_bytes=0)
    pool.release(pool.acquire(64))
    assert (pool.live_allocations, pool.cached_bytes) == (0, 0)


def test_device_pool_balances_after_random_traffic(rng: np.random.Generator) -> None:
    """After random acquire/release traffic and close, every raw block was freed once."""
    fake = FakeDeviceMemory()
    pool = DeviceMemoryPool(fake.alloc, fake.free, max_cached_bytes=64 * 1024)
    held: list[DeviceAllocation] = []
    for _ in range(2000):
        if held and rng.random() < 0.5:
            pool.release(held.pop(int(rng.integers(len(held)))))
        else:
            held.append(pool.acquire(int(rng.integers(0, 20_000))))
        assert pool.cached_bytes <= 64 * 1024
        assert pool.live_bytes == sum(block.capacity for block in held)
        assert fake.held == pool.live_bytes + pool.cached_bytes
    for block in held:
        pool.release(block)
    assert pool.live_allocations == 0
    pool.close()
    assert fake.blocks == {}
    assert pool.misses == len(fake.allocs)


def test_pinned_buffer_array_is_a_writable_view_of_the_block() -> None:
    """np.copyto into buffer.view() writes the pinned block's own bytes."""
    fake = FakeHostMemory()
    pool = PinnedHostPool(fake.alloc, fake.free)
    buffer = pool.acquire(12)
    assert buffer.array.shape == (12,)
    assert buffer.array.dtype == np.uint8
    np.copyto(buffer.view(np.float32), np.array([1.5, -2.0, 3.25], dtype=np.float32))
    raw = bytes(fake.buffers[buffer.ptr].raw[:12])
    assert np.frombuffer(raw, dtype=np.float32).tolist() == [1.5, -2.0, 3.25]


def test_pinned_buffer_view_refuses_more_items_than_fit() -> None:
    """Asking view() for more items than the buffer holds is a ValueError."""
    fake = FakeHostMemory()
    pool = PinnedHostPool(fake.alloc, fake.free)
    with pytest.raises(ValueError, match="need 16 bytes"):
        pool.acquire(12).view(np.float32, 4)


def test_pinned_buffer_is_unusable_after_release() -> None:
    """A released pinned buffer's array raises LifecycleError."""
    fake = FakeHostMemory()
    pool = PinnedHostPool(fake.alloc, fake.free)
    buffer = pool.acquire(64)
    pool.release(buffer)
    with pytest.raises(LifecycleError, match="was released"):
        _ = buffer.array


def test_pinned_pool_counts_pinned_bytes_live_and_cached() -> None:
    """pinned_bytes is every page-locked byte held, in use or cached."""
    fake = FakeHostMemory()
    pool = PinnedHostPool(fake.alloc, fake.free)
    a = pool.acquire(3000)
    pool.release(pool.acquire(100))
    assert pool.pinned_bytes == a.capacity + 256 == 4096 + 256
    pool.close()
    assert fake.buffers == {}
    assert pool.pinned_bytes == 0


class FakeHandles:
    """cuStreamCreate/cuEventCreate stand-ins handing out distinct integer handles."""

    def __init__(self) -> None:
        self._next = itertools.count(1)
        self.alive: dict[int, object] = {}
        self.destroyed: list[int] = []

    def create(self, flavour: object = None) -> int:
        handle = next(self._next)
        self.alive[handle] = flavour
        return handle

    def destroy(self, handle: int) -> None:
        del self.alive[handle]
        self.destroyed.append(handle)


def test_stream_pool_reuses_released_streams() -> None:
    """A released stream is handed out again instead of a new one."""
    fake = FakeHandles()
    pool = StreamPool(fake.create, fake.destroy)
    stream = pool.acquire()
    pool.release(stream)
    assert pool.streams_cached == 1
    assert pool.acquire() == stream
    assert pool.created == 1


def test_stream_pool_destroys_streams_over_the_cache_cap() -> None:
    """Streams released beyond max_cached are destroyed."""
    fake = FakeHandles()
    pool = StreamPool(fake.create, fake.destroy, max_cached=2)
    streams = [pool.acquire() for _ in range(4)]
    for stream in streams:
        pool.release(stream)
    assert pool.streams_cached == 2
    assert fake.destroyed == streams[2:]


def test_stream_pool_refuses_a_double_release() -> None:
    """Releasing a stream twice raises LifecycleError."""
    fake = FakeHandles()
    pool = StreamPool(fake.create, fake.destroy)
    stream = pool.acquire()
    pool.release(stream)
    with pytest.raises(LifecycleError, match="stream 0x1 is not live"):
        pool.release(stream)


def test_stream_pool_close_destroys_all_and_refuses_more() -> None:
    """close() destroys idle and live streams, reports the live count, then refuses."""
    fake = FakeHandles()
    pool = StreamPool(fake.create, fake.destroy)
    pool.release(pool.acquire())
    pool.acquire()
    assert pool.close() == 1
    assert fake.alive == {}
    with pytest.raises(LifecycleError):
        pool.acquire()


def test_event_pool_makes_timing_events_only_on_request() -> None:
    """Completion events are created with timing off; timing pairs with timing on."""
    fake = FakeHandles()
    pool = EventPool(fake.create, fake.destroy)
    event = pool.acquire()
    assert fake.alive[event] is False
    start, end = pool.acquire_timing_pair()
    assert fake.alive[start] is True
    assert fake.alive[end] is True
    assert pool.live == 3


def test_event_pool_keeps_kinds_apart_in_its_caches() -> None:
    """A released timing event is never handed out as a completion event."""
    fake = FakeHandles()
    pool = EventPool(fake.create, fake.destroy)
    pair = pool.acquire_timing_pair()
    pool.release_timing_pair(pair)
    event = pool.acquire()
    assert event not in pair
    assert pool.events_cached == 2
    pool.release(event)
    assert pool.acquire_timing_pair() in {pair, pair[::-1]}


def test_event_pool_close_leaves_no_live_events() -> None:
    """After releasing everything and closing, the fake driver holds no events."""
    fake = FakeHandles()
    pool = EventPool(fake.create, fake.destroy, max_cached=1, max_cached_timing=1)
    events = [pool.acquire() for _ in range(3)]
    pair = pool.acquire_timing_pair()
    for event in events:
        pool.release(event)
    pool.release_timing_pair(pair)
    assert pool.events_cached == 2
    assert pool.close() == 0
    assert fake.alive == {}
