"""The CUDA backend's state and the small operations every part of it uses.

:class:`CudaBase` holds what a CUDA backend owns (device, pools, streams and their
lanes, the completion watcher, the bound-launch cache) and the operations the
dispatch, sequence, read and write paths share: picking a lane, making one stream
wait for another's work, timing events, and running a stream operation without
blocking the loop. The backend itself is assembled from one mixin per job in
:mod:`._backend`; attributes made when the device opens are declared here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import numpy as np

from ..._lifecycle import LifecycleState
from ...cuda import (
    CudaDevice,
    DeviceAllocation,
    DeviceInfo,
    DeviceMemoryPool,
    EventPool,
    PinnedBuffer,
    PinnedHostPool,
    StreamPool,
    check,
)
from ...errors import DeviceLostError, LifecycleError, VyreError
from ...kernels import Kernel
from ...streams import Completion, CompletionWatcher, Lane
from .._checks import wait_quietly
from .._core import BackendCore
from ._bound import BoundLaunch
from ._export import CudaExporter
from ._graphs import BodyGraphs, StepPlans
from ._host_results import ResultBlocks
from ._launch import KernelCache
from ._parts import CudaParts
from ._readback import COPY_THREADS
from ._work import Work

#: Streams work is spread over, round robin (dependent work follows its dependency).
STREAMS = 4
#: Bound launches kept per backend (one per kernel and set of bindings seen).
LAUNCH_CACHE_SIZE = 1024
#: Host copies larger than this run in a worker thread, not on the loop.
INLINE_COPY_BYTES = 1 << 20
#: Timing event pairs kept idle for timed work (a list pop instead of the pool's lock).
TIMING_PAIRS_KEPT = 8
#: Read-result blocks (see :mod:`._host_results`) kept idle for the next read.
RESULT_BLOCKS_IDLE_BYTES = 128 << 20
OPEN = LifecycleState.OPEN


class Slab:
    """One device block shared by the members of an ``upload_group``."""

    __slots__ = ("block", "members")

    def __init__(self, block: DeviceAllocation, members: int) -> None:
        self.block = block
        self.members = members


class CudaBase(BackendCore[DeviceAllocation], CudaParts):
    """What every part of the CUDA backend holds and shares (see the module docstring).

    Args:
        device: CUDA device ordinal.
        max_cached_device_bytes: Idle device memory the pool keeps for reuse.
        max_device_bytes: Cap on device memory handed out (``None``: the device's).
        max_cached_pinned_bytes: Idle pinned staging memory kept for reuse.
    """

    # Made when the device opens (:mod:`._lifecycle`), used by every part.
    _memory: DeviceMemoryPool
    _pinned: PinnedHostPool
    _stream_pool: StreamPool
    _events: EventPool
    _streams: list[Any]
    _kernels: KernelCache
    _graphs: BodyGraphs
    _watcher: CompletionWatcher
    _export_stream: Any
    _producer_event: Any
    _exports: CudaExporter
    # The hot path's driver functions, bound once.
    _drv: Any
    _launcher: str  # KernelLauncher.name
    _launch_kernel: Any  # KernelLauncher.call
    _launch_error: type[Exception]  # KernelLauncher.error
    _copy_in: Any
    _copy_out: Any
    _memset: Any
    _wait_event: Any
    _record_event: Any

    def __init__(
        self,
        *,
        device: int = 0,
        max_cached_device_bytes: int = 1 << 30,
        max_device_bytes: int | None = None,
        max_cached_pinned_bytes: int = 256 << 20,
    ) -> None:
        self._ordinal = device  # before BackendCore.__init__, which asks for the exporter
        super().__init__()
        self._pool_options = (max_cached_device_bytes, max_device_bytes, max_cached_pinned_bytes)
        self._device: CudaDevice | None = None
        self._limiter = anyio.CapacityLimiter(2)
        # Host copies out of pinned memory: their own threads, never queued behind a compile.
        self._copy_limiter = anyio.CapacityLimiter(COPY_THREADS)
        self._launches: dict[tuple[Any, ...], BoundLaunch] = {}
        self._uncollected: set[Work] = set()
        self._step_plans = StepPlans()
        self._small_reads: list[PinnedBuffer] = []  # idle page-locked blocks for small reads
        self._timing_pairs: list[tuple[Any, Any]] = []  # idle timing pairs
        self._results = ResultBlocks(RESULT_BLOCKS_IDLE_BYTES, self._unregister)
        self._lock_results = True  # until the driver once refuses to page-lock a block
        self._slab_of: dict[int, Slab] = {}  # id(member view) -> its slab
        self._baseline = (0, 0)
        self._lanes: list[Lane] = []
        #: The lanes round robin, for work that follows nothing in flight.
        self._lane_turns: Iterator[Lane] = iter(())
        self._detached: set[int] = set()  # exported blocks the pool forgot at close

    @property
    def device_name(self) -> str:
        """The GPU's name and ordinal."""
        if self._device is None:
            return f"cuda:{self._ordinal}"
        return f"{self._device.info.name} (cuda:{self._ordinal})"

    @property
    def device_info(self) -> DeviceInfo:
        """Name, compute capability, memory, driver version and launch limits."""
        return self._cuda().info

    @property
    def launcher(self) -> str:
        """What launches kernels: ``"cupy"`` (CuPy's launcher, where CuPy is installed)
        or ``"cuda-bindings"``; see ``VYRE_ASYNC_LAUNCHER`` in the dispatch guide."""
        self._cuda()
        return self._launcher

    def _cuda(self) -> CudaDevice:
        if self._device is None:
            raise LifecycleError(
                f"this cuda backend is {self._state.value} and holds no device",
                fix="use it inside `async with vyre_async.open_backend('cuda') as backend:`.",
            )
        return self._device

    async def free_memory(self) -> int:
        """Device bytes free now (``cuMemGetInfo``), under ``max_device_bytes`` if set.

        Memory this backend's pool keeps idle counts as used, as the driver sees it.
        """
        device = self._cuda()
        free, _total = device.call(device.driver.cuMemGetInfo)
        cap = self._pool_options[1]
        if cap is not None:
            free = min(int(free), max(0, cap - self._memory.live_bytes))
        return int(free)

    def _check_healthy(self) -> None:
        if self._device is not None:
            self._device.health.check()

    async def load_kernels(self, *kernels: Kernel) -> None:
        """Compile (through the caches) and load kernels now, off the event loop.

        Dispatching a kernel loads it anyway; loading ahead keeps the compile out of
        the first dispatch's latency. The kernels not loaded yet load in one worker
        thread call, one after another.
        """
        for kernel in kernels:
            if not isinstance(kernel, Kernel):
                raise TypeError(f"expected a vyre_async Kernel, got {type(kernel).__name__}")
        missing = [k for k in dict.fromkeys(kernels) if self._kernels.get(k) is None]
        if missing:
            load = self._kernels.load
            await anyio.to_thread.run_sync(
                lambda: [load(kernel) for kernel in missing], limiter=self._limiter
            )

    def live_allocations(self) -> dict[str, int]:
        """Device blocks, pinned blocks and events handed out right now (leak checks).

        Memory and events the backend keeps idle for its next work (staging pairs of
        bound launches, small read blocks, spare events) do not count.
        """
        spares = [s for launch in self._launches.values() for s in launch.spares]
        spare_events = sum(len(lane.spare_events) for lane in self._lanes)
        return {
            "device": self._memory.live_allocations - len(spares),
            "pinned": self._pinned.live_allocations - len(self._small_reads) - len(spares),
            # The producer-stream event is the backend's own, held for its lifetime.
            "events": self._events.live - spare_events - 2 * len(self._timing_pairs) - 1,
            "in_flight": self._watcher.in_flight,
        }

    def _next_lane(self) -> Lane:
        return next(self._lane_turns)

    def _lane_after(self, waits: list[Completion]) -> Lane:
        """The lane for work that must follow ``waits``: theirs when they share one (no
        cross-stream wait is then needed), else the next one round robin."""
        first = waits[0].fence
        if first is None or waits[0]._source is not self._watcher:
            return self._next_lane()  # not yet enqueued, or on another device's stream
        lane: Lane = first.lane
        for earlier in waits:
            fence = earlier.fence
            if fence is None or fence.lane is not lane:
                return self._next_lane()
        return lane

    def _wait_for(self, lane: Lane, waits: list[Completion]) -> None:
        """Make ``lane``'s stream wait for unfinished work on other streams."""
        device = self._cuda()
        for earlier in waits:
            fence = earlier.fence
            if earlier._done or fence is None or fence.lane is lane:
                continue  # done, enqueued later (waited for by its caller), or in order
            # A copy from another device joined that device's fence: its own watcher
            # records the event (a stream may wait on another device's event).
            owner = earlier._source
            watcher = owner if isinstance(owner, CompletionWatcher) else self._watcher
            event = watcher.seal(fence)
            if event is not None:
                device.call(self._wait_event, lane.stream, event, 0)

    def _take_timing(self) -> tuple[Any, Any]:
        if self._timing_pairs:
            return self._timing_pairs.pop()
        return self._events.acquire_timing_pair()

    def _give_back_timing(self, pair: tuple[Any, Any]) -> None:
        if len(self._timing_pairs) < TIMING_PAIRS_KEPT:
            self._timing_pairs.append(pair)
        else:
            self._events.release_timing_pair(pair)

    def _elapsed_ns(self, pair: tuple[Any, Any]) -> int | None:
        try:
            device = self._cuda()
            return round(float(device.call(device.driver.cuEventElapsedTime, *pair)) * 1e6)
        except VyreError as exc:
            self._log.warning("event elapsed time failed", error=exc.what)
            return None

    def _sync_after_failure(self, stream: Any) -> None:
        """After a failed enqueue, wait for what was queued before memory is reused."""
        device = self._cuda()
        try:
            device.call(device.driver.cuStreamSynchronize, stream)
        except VyreError as exc:
            self._log.error("stream sync after a failed enqueue failed", error=str(exc))

    def _raise_for(self, returned: Any, name: str) -> None:
        """Raise the mapped error of a failed hot-path driver call."""
        device = self._cuda()
        try:
            check(returned, name)
        except DeviceLostError as exc:
            device.health.mark_lost(exc)
            raise

    async def _stream_op(
        self,
        enqueue: Callable[[Any], None],
        on_done: Callable[[], None],
        on_abandon: Callable[[], None] | None = None,
        *,
        settle: bool = False,
        lane: Lane | None = None,
    ) -> None:
        """Enqueue copies on a stream and wait for them without blocking the loop.

        ``on_done`` runs when the copies end. If the wait is cancelled or fails,
        ``on_abandon`` runs too, once the copies have ended (never earlier). With
        ``settle`` a cancelled wait returns only once the copies have ended: for copies
        into the caller's memory, which must not change after the call returns.
        ``lane``: the stream to use (default: the next one).
        """
        completion = Completion()
        completion.add_done_callback(on_done)
        lane = lane if lane is not None else self._next_lane()
        stream = lane.stream
        try:
            self._watcher.check_accepting()
            self._cuda().make_current()
            enqueue(stream)
        except BaseException:
            self._sync_after_failure(stream)
            on_done()
            if on_abandon is not None:
                on_abandon()
            raise
        self._watcher.add(lane, completion)
        try:
            await completion.wait()
        except BaseException:
            if on_abandon is not None:
                completion.add_done_callback(on_abandon)
            if settle:
                with anyio.CancelScope(shield=True):
                    await wait_quietly(completion)
            raise

    async def _copy_into(self, target: np.ndarray, data: np.ndarray) -> None:
        source = data.reshape(-1).view(np.uint8)
        if data.nbytes > INLINE_COPY_BYTES:
            # Host copies have their own threads: never queued behind a kernel compile,
            # and several large writes copy in parallel (np.copyto drops the GIL).
            await anyio.to_thread.run_sync(np.copyto, target, source, limiter=self._copy_limiter)
        else:
            np.copyto(target, source)
