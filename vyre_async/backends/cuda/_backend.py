"""The CUDA backend: dispatches as stream work, completions from recorded events.

A dispatch is a :class:`~._bound.BoundLaunch` (made on the first dispatch of a
kernel with given bindings, found by a dictionary lookup afterwards) enqueued on one
of the backend's streams from the event-loop thread without waiting: host inputs
copied into the launch's page-locked staging block, one host-to-device copy, output
buffers cleared, ``fixpoint_iterations`` launches, one device-to-host copy. The work
then joins its stream's open fence (:mod:`vyre_async.streams`): an event recorded
after it, shared by every dispatch submitted to that stream in the same turn of the
event loop. The awaiting task polls that event between checkpoints while the work is
short; the :class:`~vyre_async.streams.CompletionWatcher` task takes over work that
is long, cancelled or never awaited. Only once the event has completed does the
dispatch's memory go back to its pool.

Work that shares a resident buffer with unfinished work runs after it: on the same
stream when all it waits for is there, else behind ``cuStreamWaitEvent``. So
submission order holds across streams, as on the CPU backend. A kernel not yet
loaded is compiled in a worker thread first (``await backend.load_kernels(kernel)``
does that ahead of time).

Reads: a few bytes land in kept page-locked blocks; 2-32 MiB in a block lent from
:class:`~._host_results.ResultBlocks` (page-locked once it comes back); larger reads
come back in 2 MiB pieces through page-locked staging (:mod:`._readback`); a
page-locked ``out=`` takes the device's copy directly.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Coroutine, Mapping
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
    bucket_capacity,
    call,
    check,
)
from ...errors import (
    DeviceLostError,
    DispatchError,
    LifecycleError,
    OutOfMemoryError,
    ValidationError,
    VyreError,
)
from ...kernels import BoundCall, Kernel, builtin_kernels
from ...logging import tracing_enabled
from ...streams import Completion, CompletionWatcher, Lane, PendingDispatch
from .._config import DispatchConfig
from .._core import (
    BackendCore,
    OutputPlace,
    Outputs,
    ReadPlan,
    _placed,
    _quietly,
    _uses,
    check_repeat_count,
)
from .._interop import Borrowed, borrow, host_view, is_foreign
from .._prepared import PreparedSequence, SequenceResult
from .._prepared_dispatch import PreparedDispatch
from .._resident import ResidentBuffer, slab_layout
from ._bound import (
    SPARE_STAGING,
    SPARE_STAGING_MAX_BYTES,
    BoundLaunch,
    Staging,
    launch_key,
)
from ._export import CudaExporter
from ._graphs import BodyGraphs, StepPlans
from ._host_results import HostBlock, ResultBlocks
from ._launch import KernelCache, LoadedKernel
from ._readback import COPY_THREADS, copy_out_pieces, plan_read_pieces
from ._sequence_plan import SequencePlan
from ._staging import COPY_PAD

#: Streams work is spread over, round robin (dependent work follows its dependency).
STREAMS = 4
#: Bound launches kept per backend (one per kernel and set of bindings seen).
LAUNCH_CACHE_SIZE = 1024
#: Host copies larger than this run in a worker thread, not on the loop.
_INLINE_COPY_BYTES = 1 << 20
#: Reads into fresh arrays between these sizes use the driver's pageable copy.
PAGEABLE_READ_MIN_BYTES = 2 << 20
PAGEABLE_READ_MAX_BYTES = 32 << 20
#: Sequence reads up to this size (a traversal's state words) use kept blocks...
SMALL_READ_BYTES = 4096
#: ...of which this many are kept idle.
SMALL_READS_KEPT = 16
#: Timing event pairs kept idle for timed work (a list pop instead of the pool's lock).
TIMING_PAIRS_KEPT = 8
#: Read-result blocks (see :mod:`._host_results`) kept idle for the next read...
RESULT_BLOCKS_IDLE_BYTES = 128 << 20
#: ...and page-locked once they come back, up to this many bytes in all.
RESULT_BLOCKS_LOCKED_BYTES = 256 << 20
_SMALL_READ_CAPACITY = bucket_capacity(SMALL_READ_BYTES)
_OPEN = LifecycleState.OPEN
_NO_WAITS: list[Completion] = []


def _driver_copies(nbytes: int) -> bool:
    """Whether a read of ``nbytes`` into pageable memory takes the driver's copy."""
    return PAGEABLE_READ_MIN_BYTES <= nbytes <= PAGEABLE_READ_MAX_BYTES


def _padded(nbytes: int) -> int:
    return -(-nbytes // COPY_PAD) * COPY_PAD


class _Slab:
    """One device block shared by the members of an ``upload_group``."""

    __slots__ = ("block", "members")

    def __init__(self, block: DeviceAllocation, members: int) -> None:
        self.block = block
        self.members = members


class _Work(Completion):
    """Stream work of the backend: what its release gives back once it has finished.

    ``keep`` says whether a caller will still copy outputs out of ``host``'s memory
    (then the caller gives it back); otherwise the release does.
    """

    __slots__ = ("backend", "borrowed", "host", "keep", "outputs", "records", "timing")

    def __init__(self, backend: CudaBackend) -> None:
        # Completion.__init__ inlined: one object per dispatch, made on the hot path.
        self._done = False
        self._error = None
        self._callbacks = None
        self._waiters = None
        self._source = None
        self.device_ns = None
        self.fence = None
        self.backend = backend
        #: The outputs, copied out when the backend closed before they were collected.
        self.outputs: Any = None
        self.records: list[Any] = _NO_WAITS
        self.timing: tuple[Any, Any] | None = None
        self.host: Any = None
        self.keep = False
        #: Other libraries' arrays the work uses in place: kept alive until it ends.
        self.borrowed: list[Borrowed] | None = None

    def _release(self) -> None:
        backend = self.backend
        if self.records:
            backend._registry.unclaim(self.records, self)
        if self.borrowed is not None:
            _let_go(self.borrowed)
            self.borrowed = None
        if self.timing is not None:
            self.device_ns = backend._elapsed_ns(self.timing)
            backend._give_back_timing(self.timing)
        if self.host is not None and not self.keep:
            self.give_back_host()

    def give_back_host(self) -> None:
        """Return the host-side memory (staging pair or read block). Idempotent."""
        raise NotImplementedError

    def drop(self) -> None:
        """Nobody will collect the outputs: give their memory back once finished."""
        self.keep = False
        if self._done and self.host is not None:
            self.give_back_host()


class _DispatchWork(_Work):
    """One dispatch in flight; ``host`` is its :class:`Staging` pair, if any."""

    __slots__ = ("launch",)

    def __init__(self, backend: CudaBackend, launch: BoundLaunch | None) -> None:
        # _Work.__init__ inlined (one call less per dispatch).
        self._done = False
        self._error = None
        self._callbacks = None
        self._waiters = None
        self._source = None
        self.device_ns = None
        self.fence = None
        self.backend = backend
        self.outputs = None
        self.records = _NO_WAITS
        self.timing = None
        self.host = None
        self.keep = False
        self.borrowed = None
        #: ``None`` only until a submission whose kernel had to load is bound.
        self.launch = launch

    def give_back_host(self) -> None:
        staging, self.host = self.host, None
        if staging is not None and self.launch is not None:
            self.backend._give_back_staging(self.launch, staging)


class _SequenceWork(_Work):
    """One sequence run in flight; ``host`` is the page-locked block its reads land in."""

    __slots__ = ("plan",)

    def __init__(self, backend: CudaBackend, plan: SequencePlan) -> None:
        super().__init__(backend)
        self.plan = plan

    def give_back_host(self) -> None:
        block, self.host = self.host, None
        if block is not None:
            self.backend._release_read_block(block)


class CudaBackend(BackendCore[DeviceAllocation]):
    """Runs kernels on one NVIDIA GPU through the CUDA driver API.

    Args:
        device: CUDA device ordinal.
        max_cached_device_bytes: Idle device memory the pool keeps for reuse.
        max_device_bytes: Cap on device memory handed out (``None``: the device's).
        max_cached_pinned_bytes: Idle pinned staging memory kept for reuse.
    """

    kind = "cuda"

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
        self._uncollected: set[_Work] = set()
        self._step_plans = StepPlans()
        self._small_reads: list[PinnedBuffer] = []  # idle page-locked blocks for small reads
        self._timing_pairs: list[tuple[Any, Any]] = []  # idle timing pairs
        self._results = ResultBlocks(RESULT_BLOCKS_IDLE_BYTES, self._unregister)
        self._lock_results = True  # until the driver once refuses to page-lock a block
        self._slab_of: dict[int, _Slab] = {}  # id(member view) -> its slab
        self._turn = 0
        self._baseline = (0, 0)
        self._lanes: list[Lane] = []
        self._detached: set[int] = set()  # exported blocks the pool forgot at close

    # ----------------------------------------------------------------- lifecycle
    async def _open(self) -> None:
        # Opening loads libcuda and retains the context: blocking driver work.
        device = await anyio.to_thread.run_sync(CudaDevice.open, self._ordinal)
        try:
            cached_device, device_cap, cached_pinned = self._pool_options
            device.make_current()
            self._memory = DeviceMemoryPool.for_device(
                device, max_cached_bytes=cached_device, max_live_bytes=device_cap
            )
            self._pinned = PinnedHostPool.for_device(device, max_cached_bytes=cached_pinned)
            self._stream_pool = StreamPool.for_device(device, max_cached=STREAMS)
            self._events = EventPool.for_device(device)
            self._streams = [self._stream_pool.acquire() for _ in range(STREAMS)]
            self._kernels = KernelCache(device)
            self._graphs = BodyGraphs(device)
            driver = device.driver
            self._watcher = CompletionWatcher.for_device(
                device,
                acquire_event=self._events.acquire,
                release_event=self._events.release,
                synchronize=lambda stream: device.call(driver.cuStreamSynchronize, stream),
            )
            self._lanes = [self._watcher.lane(int(s), s) for s in self._streams]
            self._export_stream = self._stream_pool.acquire()
            self._producer_event = self._events.acquire()
            self._exports.attach(self._registry, device, self._watcher, self._export_stream)
            self._drv = driver
            self._launch_kernel = driver.cuLaunchKernel
            self._copy_in = driver.cuMemcpyHtoDAsync
            self._copy_out = driver.cuMemcpyDtoHAsync
            self._memset = driver.cuMemsetD8Async
            self._wait_event = driver.cuStreamWaitEvent
            self._record_event = driver.cuEventRecord
        except BaseException:
            await anyio.to_thread.run_sync(device.close)
            raise
        self._device = device
        self._log = self._log.bind(ordinal=self._ordinal)

    async def _start_background(self, task_group: anyio.abc.TaskGroup) -> None:
        await task_group.start(self._watcher.run)
        await self.load_kernels(*builtin_kernels())

    async def _drain(self) -> None:
        if self._device is not None:
            await self._watcher.drain()

    async def _close(self) -> None:
        self._exports.detach()
        if self._device is None:
            return
        device = self._device
        with anyio.move_on_after(5):
            await self._watcher.drain()
        for work in list(self._uncollected):
            self._uncollected.discard(work)
            if work.done and work.error is None and not device.lost:
                work.outputs = self._copy_out_outputs(work)
            work.drop()

        locked_results = self._results.close()  # lent arrays stay valid, just pageable
        launches, self._launches = list(self._launches.values()), {}

        def release_all() -> None:
            try:
                if device.lost:
                    # The context is poisoned: freeing through it only raises again.
                    self._log.warning("closing a lost device without freeing its handles")
                    return
                device.make_current()
                for launch in launches:
                    self._free_spares(launch)
                for stream in (*self._streams, self._export_stream):
                    self._stream_pool.release(stream)
                self._events.release(self._producer_event)
                while self._small_reads:
                    self._pinned.release(self._small_reads.pop())
                while self._timing_pairs:
                    self._events.release_timing_pair(self._timing_pairs.pop())
                self._watcher.release_events()
                for block in locked_results:
                    try:
                        device.call(device.driver.cuMemHostUnregister, block.address)
                    except VyreError as exc:
                        self._log.warning("unregistering a read result failed", error=exc.what)
                self._graphs.close()
                self._kernels.close()
                leaks = {
                    "streams": self._stream_pool.close(),
                    "events": self._events.close(),
                    "device blocks": self._memory.close(),
                    "pinned blocks": self._pinned.close(),
                }
                if any(leaks.values()):
                    self._log.warning("closing with live handles", **leaks)
            except VyreError as exc:
                self._log.error("releasing device handles failed", error=str(exc))
            finally:
                device.close()

        await anyio.to_thread.run_sync(release_all)

    def _exporter(self) -> CudaExporter:
        self._exports = CudaExporter(self._ordinal)
        return self._exports

    # ----------------------------------------------------------------- borrowed arrays
    def _source(self, value: Any, what: str) -> Any:
        """A host array, or another library's device array borrowed on lane 0."""
        if isinstance(value, np.ndarray):
            return value
        if is_foreign(value) and host_view(value) is None:
            return self._borrow(value, what, self._lanes[0].stream)
        return self._host_array(value, what)

    def _borrow(self, value: Any, name: str, stream: Any) -> Borrowed:
        """Borrow a device array for work on ``stream``, checked to be on this device."""
        borrowed = borrow(value, name, int(stream))
        device = self._cuda()
        on = borrowed.device
        if on is None and borrowed.nbytes:
            driver = device.driver
            attribute = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
            found = driver.cuPointerGetAttribute(attribute, borrowed.ptr)
            on = int(found[1]) if int(found[0]) == 0 else -1
        if borrowed.nbytes and on != self._ordinal:
            _let_go([borrowed])
            raise ValidationError(
                f"buffer {name!r} is memory of "
                + (f"CUDA device {on}" if on is not None and on >= 0 else "no CUDA device")
                + f"; this backend runs on device {self._ordinal}",
                fix=f"copy it to device {self._ordinal} first (cupy: with "
                f"cupy.cuda.Device({self._ordinal}): cupy.asarray(x); torch: "
                f"x.to('cuda:{self._ordinal}')).",
            )
        return borrowed

    def _wait_producer(self, borrowed: Borrowed, stream: Any) -> None:
        """Make ``stream`` wait for the work the producer's stream had queued (CAI v3)."""
        if borrowed.stream is None:
            return
        device = self._cuda()
        driver = device.driver
        producer = driver.CUstream(borrowed.stream)
        device.call(driver.cuEventRecord, self._producer_event, producer)
        device.call(driver.cuStreamWaitEvent, stream, self._producer_event, 0)

    async def _copy_device(self, address: int, borrowed: Borrowed, *, into_borrowed: bool) -> None:
        """Copy device to device between ``address`` and a borrowed array (either way),
        on lane 0 after the producer's stream; returns once the copy has ended."""
        device = self._cuda()
        lane = self._lanes[0]

        def enqueue(stream: Any) -> None:
            self._wait_producer(borrowed, stream)
            if borrowed.nbytes:
                dst, src = (borrowed.ptr, address) if into_borrowed else (address, borrowed.ptr)
                device.call(device.driver.cuMemcpyDtoDAsync, dst, src, borrowed.nbytes, stream)

        await self._stream_op(enqueue, lambda: _let_go([borrowed]), settle=True, lane=lane)

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

    def _cuda(self) -> CudaDevice:
        if self._device is None:
            raise LifecycleError(
                f"this cuda backend is {self._state.value} and holds no device",
                fix="use it inside `async with vyre_async.open_backend('cuda') as backend:`.",
            )
        return self._device

    def _check_healthy(self) -> None:
        if self._device is not None:
            self._device.health.check()

    async def load_kernels(self, *kernels: Kernel) -> None:
        """Compile (through the caches) and load kernels now, off the event loop.

        Dispatching a kernel loads it anyway; loading ahead keeps the compile out of
        the first dispatch's latency.
        """
        for kernel in kernels:
            if not isinstance(kernel, Kernel):
                raise TypeError(f"expected a vyre_async Kernel, got {type(kernel).__name__}")
            if self._kernels.get(kernel) is None:
                await anyio.to_thread.run_sync(self._kernels.load, kernel, limiter=self._limiter)

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

    # ----------------------------------------------------------------- streams and events
    def _next_lane(self) -> Lane:
        self._turn += 1
        return self._lanes[self._turn % STREAMS]

    def _lane_after(self, waits: list[Completion]) -> Lane:
        """The lane for work that must follow ``waits``: theirs when they share one (no
        cross-stream wait is then needed), else the next one round robin."""
        first = waits[0].fence
        if first is None:
            return self._next_lane()
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
            event = self._watcher.seal(fence)
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

    # ----------------------------------------------------------------- dispatch
    def dispatch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        outputs: OutputPlace = "host",
        **scalars: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Run one kernel dispatch and return its host-bound outputs; use with ``await``.

        The first dispatch of a kernel with given bindings builds a bound launch;
        later ones find it by a lookup and only write changed scalars. No pending
        dispatch, timing events or log line is made (see :meth:`submit` for those).
        Validation errors of a repeated binding are raised at the call; the work is
        enqueued when the returned coroutine runs. Inputs may be host arrays, resident
        buffers, or other libraries' device arrays (CuPy, PyTorch, JAX), used in place
        after their producer's stream. ``outputs="device"`` leaves host-bound outputs
        on the device, returned as new resident buffers.

        Raises:
            ValidationError: Bad inputs (nothing was enqueued).
            LifecycleError: The backend is not open, or a buffer was freed.
            DispatchError: The dispatch failed on the device, or ``config.timeout``
                passed first.
        """
        if self._state is not _OPEN:
            self._check_open()
        if outputs != "host":
            return self._dispatch_to_device(kernel, inputs, _placed(outputs, scalars), config)
        try:
            launch = self._launches[(kernel, *inputs.items())]
        except (KeyError, TypeError, AttributeError):  # new, host arrays, or bad inputs
            return self._dispatch_new(kernel, inputs, scalars, config)
        return self._run_launch(launch, inputs, scalars, config)

    async def _dispatch_resident(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: dict[str, Any],
        config: DispatchConfig | None,
    ) -> None:
        # Not cached: its buffers are new every call and would only crowd the cache out.
        launch = await self._bound_launch(kernel, inputs, scalars, cache=False)
        launch.keeps_spares = False
        await self._run_launch(launch, inputs, scalars, config)

    async def _dispatch_new(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: dict[str, Any],
        config: DispatchConfig | None,
    ) -> Outputs:
        launch = await self._bound_launch(kernel, inputs, scalars)
        return await self._run_launch(launch, inputs, scalars, config)

    async def prepare(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PreparedDispatch:
        """Bind and check a dispatch once, for a hot loop: ``await prepared(**scalars)``.

        The kernel is loaded now. Host arrays among ``inputs`` are held by the
        prepared dispatch and copied at each call (their contents may change, their
        shape and dtype may not); resident buffers are checked again at each call
        only after a buffer left the backend (a freed one is refused).

        Raises:
            ValidationError: Bad inputs or scalars.
            LifecycleError: The backend is not open, or a buffer was freed.
        """
        self._check_open()
        held = dict(inputs)
        launch = await self._bound_launch(kernel, held, scalars, cache=False)
        launch.keeps_spares = False  # the backend does not track it: nothing kept idle

        def run(new_scalars: Mapping[str, Any]) -> Coroutine[Any, Any, Outputs]:
            if self._state is not _OPEN:
                self._check_open()
            return self._run_launch(launch, held, new_scalars, config)

        return PreparedDispatch(kernel, run, dict(scalars))

    async def _bound_launch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: Mapping[str, Any],
        *,
        cache: bool = True,
    ) -> BoundLaunch:
        """The bound launch of ``kernel`` with these bindings, made (and cached) if new."""
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a vyre_async Kernel, got {type(kernel).__name__}")
        if not isinstance(inputs, Mapping):
            raise TypeError(f"inputs must be a mapping, got {type(inputs).__name__}")
        key = launch_key(kernel, inputs)
        launch = self._launches.get(key) if cache else None
        if launch is None:
            call = self._bind(kernel, inputs, scalars)
            loaded = self._kernels.get(kernel)
            if loaded is None:
                await self.load_kernels(kernel)
                loaded = self._loaded(kernel)
            launch = self._new_launch(call, loaded, scalars)
            if cache:
                self._remember(key, launch)
        return launch

    def _bind(
        self, kernel: Kernel, inputs: Mapping[str, Any], scalars: Mapping[str, Any]
    ) -> BoundCall[Any]:
        """Validate a call in full: names, dtypes, lengths, scalars, resident buffers,
        and other libraries' arrays (borrowed to check them, then let go)."""
        converted: dict[str, Any] = {}
        for name, value in inputs.items():
            if is_foreign(value):
                view = host_view(value)
                if view is None:
                    borrowed = self._borrow(value, name, self._lanes[0].stream)
                    _let_go([borrowed])
                    converted[name] = borrowed
                else:
                    converted[name] = view
            else:
                converted[name] = value
        call = kernel.bind(converted, scalars)
        for p in kernel.buffer_params:
            given = call.buffers.get(p.name)
            if isinstance(given, ResidentBuffer):
                self._registry.storage(given)
            elif given is not None and not isinstance(given, Borrowed):
                if p.role == "out":
                    raise ValidationError(
                        f"{p.name!r} is an output of kernel {kernel.name!r}; a host array "
                        "cannot receive it",
                        fix=f"leave {p.name!r} out of the inputs (it is returned), or bind a "
                        "ResidentBuffer to keep it on the device.",
                    )
                if not isinstance(given, np.ndarray):
                    raise ValidationError(
                        f"buffer {p.name!r} of kernel {kernel.name!r} must be a NumPy array "
                        f"or a ResidentBuffer, got {type(given).__name__}",
                        fix=f"pass np.asarray(..., dtype=np.{p.dtype}) for {p.name!r}.",
                    )
        return call

    def _new_launch(
        self, call: BoundCall[Any], loaded: LoadedKernel, scalars: Mapping[str, Any]
    ) -> BoundLaunch:
        loaded.check_launch(call.launch, self._cuda().info)
        launch = BoundLaunch(call, loaded)
        launch.raw_scalars = scalars
        launch.raw_types = [*map(type, scalars.values())]
        launch.refresh(self._registry)
        return launch

    def _remember(self, key: tuple[Any, ...], launch: BoundLaunch) -> None:
        launches = self._launches
        if len(launches) >= LAUNCH_CACHE_SIZE:
            self._free_spares(launches.pop(next(iter(launches))))
        launches[key] = launch

    def _loaded(self, kernel: Kernel) -> LoadedKernel:
        loaded = self._kernels.get(kernel)
        if loaded is None:  # callers load every kernel before they enqueue
            raise DispatchError(
                f"kernel {kernel.name!r} is not loaded", fix="report this bug with the log."
            )
        return loaded

    async def _run_launch(
        self,
        launch: BoundLaunch,
        inputs: Mapping[str, Any],
        scalars: Mapping[str, Any],
        config: DispatchConfig | None,
    ) -> Outputs:
        """Enqueue one dispatch of a bound launch and wait for it (the awaited path).

        It keeps the counts of telemetry (dispatches, launches, sync points), not its
        time totals: measuring costs clock reads per dispatch, paid only when asked
        for (``DispatchConfig(timing=True)`` adds the device time; ``submit(...)`` and
        ``timed()`` measure the rest).
        """
        if scalars != launch.raw_scalars or [*map(type, scalars.values())] != launch.raw_types:
            launch.set_scalars(scalars)  # validated before anything is claimed
        registry = self._registry
        if launch.generation != registry.generation:
            launch.refresh(registry)
        times, timing = 1, False
        if config is not None:
            times, timing = config.fixpoint_iterations, config.timing
        staging = None
        waited = False
        if launch.plan is not None and launch.plan.total > _INLINE_COPY_BYTES:
            staging = await self._stage_in_thread(launch, inputs)
            waited = True
        work = _DispatchWork(self, launch)
        work.keep = bool(launch.outputs)
        records = launch.records
        waits = registry.claim(records, work) if records else _NO_WAITS
        work.records = records
        if waits and _unrecorded(waits):
            await self._await_unrecorded(work, waits, staging)
            waited = True
        if waited and scalars != launch.raw_scalars:
            launch.set_scalars(scalars)  # another dispatch of this launch ran meanwhile
        self._enqueue_dispatch(launch, work, inputs, waits, times, timing, staging)
        if not work._done:
            try:
                if config is not None and config.timeout is not None:
                    await self._follow_with_timeout(work, config)
                else:
                    await self._watcher.follow(work)
            except BaseException:
                work.drop()
                raise
        counters = self._counters
        counters.dispatches += 1
        counters.kernel_launches += launch.launches * times
        counters.sync_points += 1
        if work._error is not None:
            work.drop()
            raise work._error
        outputs: Outputs = {}
        if work.keep:
            outputs = launch.take_outputs(work.host)
            counters.bytes_downloaded += launch.download[1]
            work.drop()
        if work.device_ns is not None:
            counters.device_ns_total += work.device_ns
        return outputs

    async def _follow_with_timeout(self, work: _Work, config: DispatchConfig) -> None:
        try:
            with anyio.fail_after(config.timeout):
                await self._watcher.follow(work)
        except TimeoutError:
            label = config.label or "the dispatch"
            raise DispatchError(
                f"{label} did not finish within its timeout of {config.timeout:g} s; "
                "it keeps running and its memory stays reserved until it does",
                fix="raise DispatchConfig.timeout, or await the work again later.",
            ) from None

    async def _await_unrecorded(
        self, work: _Work, waits: list[Completion], staging: Staging | None
    ) -> None:
        """Wait for earlier work not enqueued yet (it has no event to wait on)."""
        try:
            for earlier in waits:
                if earlier.fence is None and not earlier._done:
                    await _quietly(earlier)
                    self._check_healthy()
        except BaseException as exc:
            if staging is not None:
                work.host = staging
            work.keep = False
            work.complete(exc)
            raise

    def _enqueue_dispatch(
        self,
        launch: BoundLaunch,
        work: _DispatchWork,
        inputs: Mapping[str, Any],
        waits: list[Completion],
        times: int,
        timing: bool,
        staging: Staging | None,
    ) -> None:
        """Enqueue a claimed dispatch on a stream and add it to the stream's lane.

        On failure the work is completed with the error (its memory given back once
        the stream has drained) and the error raised.
        """
        device = self._device
        assert device is not None
        device.make_current()
        if launch.foreign:  # borrowed arrays: one stream, so they keep submission order
            lane = self._lanes[0]
        elif waits:
            lane = self._lane_after(waits)
        else:
            self._turn = turn = self._turn + 1
            lane = self._lanes[turn % STREAMS]
        stream = lane.stream
        try:
            self._watcher.check_accepting()
            if waits:
                self._wait_for(lane, waits)
            if launch.foreign:
                self._bind_borrowed(launch, work, inputs, stream)
            plan = launch.plan
            if plan is not None:
                if staging is None:
                    staging = self._stage(launch, inputs)
                work.host = staging
                block = staging.block.ptr
                if block != launch.block_ptr:
                    launch.point_at(staging)
                offset, nbytes = launch.upload
                if nbytes:
                    returned = self._copy_in(
                        block + offset, staging.pinned.ptr + offset, nbytes, stream
                    )
                    if returned[0]:
                        self._raise_for(returned, "cuMemcpyHtoDAsync")
                for offset, nbytes in launch.host_clears:
                    returned = self._memset(block + offset, 0, nbytes, stream)
                    if returned[0]:
                        self._raise_for(returned, "cuMemsetD8Async")
            for ptr, nbytes in launch.resident_clears:
                if nbytes:
                    returned = self._memset(ptr, 0, nbytes, stream)
                    if returned[0]:
                        self._raise_for(returned, "cuMemsetD8Async")
            if timing:
                work.timing = pair = self._take_timing()
                device.call(self._record_event, pair[0], stream)
            if not launch.empty:
                launch_kernel, function, args = self._launch_kernel, launch.function, launch.args
                (gx, gy, gz), (bx, by, bz) = launch.grid, launch.block
                shared = launch.shared_bytes
                for _ in range(times):
                    returned = launch_kernel(
                        function, gx, gy, gz, bx, by, bz, shared, stream, args, 0
                    )
                    if returned[0]:
                        self._raise_for(returned, "cuLaunchKernel")
            if timing:
                device.call(self._record_event, work.timing[1], stream)  # type: ignore[index]
            if plan is not None:
                offset, nbytes = launch.download
                if nbytes:
                    returned = self._copy_out(
                        staging.pinned.ptr + offset,  # type: ignore[union-attr]
                        staging.block.ptr + offset,  # type: ignore[union-attr]
                        nbytes,
                        stream,
                    )
                    if returned[0]:
                        self._raise_for(returned, "cuMemcpyDtoHAsync")
        except BaseException as exc:
            self._sync_after_failure(stream)
            work.keep = False
            work.complete(exc)
            raise
        self._watcher.add(lane, work)
        if plan is not None:
            self._counters.bytes_uploaded += launch.upload[1]

    def _bind_borrowed(
        self, launch: BoundLaunch, work: _Work, inputs: Mapping[str, Any], stream: Any
    ) -> None:
        """Point a launch's borrowed parameters at this dispatch's arrays, after their
        producers' streams; clear the ``out`` ones. The work keeps them alive."""
        borrowed = work.borrowed = []
        device = self._cuda()
        memset = device.driver.cuMemsetD8Async
        for slot, name, clear in launch.foreign:
            item = self._borrow(inputs[name], name, stream)
            borrowed.append(item)
            self._wait_producer(item, stream)
            slot.value = item.ptr
            if clear:
                device.call(memset, item.ptr, 0, clear, stream)

    def _stage(self, launch: BoundLaunch, inputs: Mapping[str, Any]) -> Staging:
        """A staging pair holding this dispatch's host inputs (copied on the loop)."""
        staging = self._take_staging(launch)
        try:
            typed = staging.typed
            for name in launch.host_inputs:
                np.copyto(typed[name], inputs[name])
        except BaseException:
            self._give_back_staging(launch, staging)
            raise
        return staging

    async def _stage_in_thread(self, launch: BoundLaunch, inputs: Mapping[str, Any]) -> Staging:
        """A staging pair for large host inputs, copied in a worker thread (the loop
        stays free; np.copyto drops the GIL)."""
        staging = self._take_staging(launch)
        typed = staging.typed
        pairs = [(typed[name], inputs[name]) for name in launch.host_inputs]

        def copy() -> None:
            for target, source in pairs:
                np.copyto(target, source)

        try:
            # Not abandoned on cancellation: the wait returns once the copy has ended.
            await anyio.to_thread.run_sync(copy, limiter=self._copy_limiter)
        except BaseException:
            self._give_back_staging(launch, staging)
            raise
        return staging

    def _take_staging(self, launch: BoundLaunch) -> Staging:
        if launch.spares:
            return launch.spares.pop()
        plan = launch.plan
        assert plan is not None
        pinned = self._pinned.acquire(plan.total)
        try:
            block = self._memory.acquire(plan.total)
        except BaseException:
            self._pinned.release(pinned)
            raise
        return Staging(pinned, block, plan)

    def _give_back_staging(self, launch: BoundLaunch, staging: Staging) -> None:
        if (
            launch.keeps_spares
            and len(launch.spares) < SPARE_STAGING
            and staging.pinned.capacity <= SPARE_STAGING_MAX_BYTES
            and self._state is _OPEN
        ):
            launch.spares.append(staging)
            return
        self._free_staging(staging)

    def _free_staging(self, staging: Staging) -> None:
        if self._device is None or self._device.lost:
            return
        self._pinned.release(staging.pinned)
        self._memory.release(staging.block)

    def _free_spares(self, launch: BoundLaunch) -> None:
        while launch.spares:
            self._free_staging(launch.spares.pop())

    def _copy_out_outputs(self, work: _Work) -> Any:
        if isinstance(work, _DispatchWork):
            launch = work.launch
            return launch.take_outputs(work.host) if launch is not None else {}
        assert isinstance(work, _SequenceWork)
        return work.plan.copy_out(work.host.array) if work.host is not None else []

    def submit(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PendingDispatch[Outputs]:
        """Validate and enqueue one kernel dispatch; return a pending dispatch at once.

        Host arrays up to 1 MiB in all are copied before this returns; larger ones
        are copied in a worker thread right after (the loop stays free), so leave
        them unchanged until the dispatch is done. A kernel not loaded yet is loaded
        first, in a worker thread, and the dispatch enqueued then.

        Raises:
            ValidationError: Bad inputs (nothing was enqueued).
            LifecycleError: The backend is not open, or a buffer was freed.
        """
        start = time.perf_counter_ns()
        self._check_open()
        config = config or DispatchConfig()
        try:
            launch: BoundLaunch | None = self._launches[(kernel, *inputs.items())]
        except (KeyError, TypeError, AttributeError):  # new, host arrays, or bad inputs
            if not isinstance(kernel, Kernel):
                raise TypeError(
                    f"kernel must be a vyre_async Kernel, got {type(kernel).__name__}"
                ) from None
            if not isinstance(inputs, Mapping):
                raise TypeError(f"inputs must be a mapping, got {type(inputs).__name__}") from None
            key = launch_key(kernel, inputs)
            launch = self._launches.get(key)
            if launch is None:
                call = self._bind(kernel, inputs, scalars)
                loaded = self._kernels.get(kernel)
                if loaded is not None:
                    launch = self._new_launch(call, loaded, scalars)
                    self._remember(key, launch)
        if launch is None:
            work = self._submit_later(kernel, call, dict(inputs), scalars, config)
        else:
            if scalars != launch.raw_scalars or [*map(type, scalars.values())] != launch.raw_types:
                launch.set_scalars(scalars)
            registry = self._registry
            if launch.generation != registry.generation:
                launch.refresh(registry)
            work = _DispatchWork(self, launch)
            work.keep = bool(launch.outputs)
            records = launch.records
            waits = registry.claim(records, work) if records else _NO_WAITS
            work.records = records
            large = launch.plan is not None and launch.plan.total > _INLINE_COPY_BYTES
            if large or _unrecorded(waits):
                held = dict(inputs) if large else _snapshot(inputs)
                self._task_group_or_raise().start_soon(
                    self._enqueue_later, launch, work, held, dict(scalars), waits, config
                )
            else:
                self._enqueue_dispatch(
                    launch, work, inputs, waits, config.fixpoint_iterations, config.timing, None
                )
                self._watcher.kick()
            self._counters.dispatches += 1
            self._counters.kernel_launches += launch.launches * config.fixpoint_iterations
        if tracing_enabled():
            self._log.debug("dispatch submitted", kernel=kernel.name)
        return self._pending(work, config, config.label or kernel.name, start)

    def _submit_later(
        self,
        kernel: Kernel,
        call: BoundCall[Any],
        inputs: dict[str, Any],
        scalars: dict[str, Any],
        config: DispatchConfig,
    ) -> _Work:
        """A submission whose kernel must load first: validated and its buffers claimed
        now (so submission order holds), bound and enqueued from a task once loaded."""
        work = _DispatchWork(self, None)
        registry = self._registry
        records = registry.resolve(_uses([call]))
        waits = registry.claim(records, work)
        work.records = records
        held = _snapshot(inputs)

        async def later() -> None:
            launch = await self._bound_launch(kernel, held, scalars)
            work.launch = launch
            work.keep = bool(launch.outputs)
            self._counters.dispatches += 1
            self._counters.kernel_launches += launch.launches * config.fixpoint_iterations
            await self._enqueue_later(launch, work, held, scalars, waits, config)

        self._task_group_or_raise().start_soon(self._guarded, later, work)
        return work

    async def _guarded(self, fn: Callable[[], Coroutine[Any, Any, None]], work: _Work) -> None:
        """Run a later enqueue; its failure belongs to the work's awaiter, not the group."""
        try:
            await fn()
        except VyreError as exc:
            work.complete(exc)
        except Exception as exc:
            self._log.exception("enqueue failed")
            work.complete(
                DispatchError(f"enqueueing failed: {exc!r}", fix="report this bug with the log.")
            )
        except BaseException:
            work.complete(
                DispatchError(
                    "the backend closed before this work was enqueued",
                    fix="await pending dispatches before closing the backend.",
                )
            )
            raise

    async def _enqueue_later(
        self,
        launch: BoundLaunch,
        work: _DispatchWork,
        inputs: dict[str, Any],
        scalars: dict[str, Any],
        waits: list[Completion],
        config: DispatchConfig,
    ) -> None:
        async def later() -> None:
            staging = None
            if launch.plan is not None and launch.plan.total > _INLINE_COPY_BYTES:
                staging = await self._stage_in_thread(launch, inputs)
            if waits:
                await self._await_unrecorded(work, waits, staging)
            self._check_healthy()
            # The block holds whatever scalars the launch's last dispatch wrote.
            if scalars != launch.raw_scalars:
                launch.set_scalars(scalars)
            if launch.generation != self._registry.generation:
                launch.refresh(self._registry)
            self._enqueue_dispatch(
                launch, work, inputs, waits, config.fixpoint_iterations, config.timing, staging
            )
            self._watcher.kick()  # awaiters sleep on the work: someone must poll it

        if work._done:
            return
        await self._guarded(later, work)

    def _task_group_or_raise(self) -> anyio.abc.TaskGroup:
        return self._check_open()

    def _pending(
        self, work: _Work, config: DispatchConfig, label: str, start: int
    ) -> PendingDispatch[Any]:
        """Wrap submitted work in a pending dispatch that collects its outputs."""
        enqueue_ns = time.perf_counter_ns() - start
        self._counters.enqueue_ns_total += enqueue_ns
        self._uncollected.add(work)

        def collect() -> Any:
            self._uncollected.discard(work)
            if work.outputs is not None:  # copied out when the backend closed
                return work.outputs
            outputs = self._copy_out_outputs(work)
            if isinstance(work, _DispatchWork):
                if work.launch is not None:
                    self._counters.bytes_downloaded += work.launch.download[1]
            else:
                assert isinstance(work, _SequenceWork)
                self._counters.bytes_downloaded += work.plan.bytes_read
            work.drop()
            return outputs

        def discard() -> None:
            self._uncollected.discard(work)
            work.drop()

        return PendingDispatch(
            work,
            collect,
            discard=discard,
            label=label,
            submitted_ns=start,
            enqueue_ns=enqueue_ns,
            timeout=config.timeout,
            observe=self._observe,
        )

    # ----------------------------------------------------------------- sequences
    def _plan_of(self, prepared: PreparedSequence) -> SequencePlan:
        plan = prepared._backend_plan
        if not isinstance(plan, SequencePlan):
            plan = SequencePlan(
                self._step_plans,
                self._pointer_of,
                prepared._prefix,
                prepared._repeated,
                prepared._reads,
            )
            prepared._backend_plan = plan
        return plan

    def _loaded_kernels(self, plan: SequencePlan) -> dict[int, LoadedKernel]:
        loaded = plan.load(self._kernels.get, self._cuda().info)
        if loaded is None:  # every caller loads the kernels first
            raise DispatchError(
                f"a sequence's kernels ({', '.join(k.name for k in plan.kernels)}) are not loaded",
                fix="report this bug with the log.",
            )
        return loaded

    def _launch_steps(self, steps: list[Any], loaded: dict[int, LoadedKernel], stream: Any) -> None:
        """Enqueue steps once each: their output clears, then their launches."""
        device = self._cuda()
        driver = device.driver
        for c, ptrs, clears in steps:
            for ptr, size in clears:
                if size:
                    device.call(driver.cuMemsetD8Async, ptr, 0, size, stream)
            loaded[id(c.kernel)].launch_step(c, ptrs, stream)

    def _enqueue_steps(
        self,
        stream: Any,
        plan: SequencePlan,
        loaded: dict[int, LoadedKernel],
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        timing: tuple[Any, Any] | None,
    ) -> None:
        """Enqueue a planned sequence's start timing event, prefix, body (one graph
        launch when captured) and end timing event on ``stream``."""
        device = self._cuda()
        driver = device.driver
        if timing is not None:
            device.call(driver.cuEventRecord, timing[0], stream)
        step_plans, pointer_of = self._step_plans, self._pointer_of
        prefix_steps = [step_plans.plan(c, pointer_of) for c in prefix]
        for c, _, _ in prefix_steps:
            loaded[id(c.kernel)].check_launch(c.launch, device.info)
        self._launch_steps(prefix_steps, loaded, stream)
        if repeat_count:
            graph = plan.graph_key(repeat_count)

            def record(stream: Any) -> None:
                for _ in range(repeat_count):
                    self._launch_steps(plan.body, loaded, stream)

            if graph is None or not self._graphs.launch(graph, record, stream):
                record(stream)
        if timing is not None:
            device.call(driver.cuEventRecord, timing[1], stream)

    def _enqueue_reads(self, stream: Any, plan: SequencePlan, pinned: PinnedBuffer | None) -> None:
        """Copy a planned sequence's read ranges into ``pinned`` on ``stream``."""
        if pinned is None:
            return
        device = self._cuda()
        copy = device.driver.cuMemcpyDtoHAsync
        for source, nbytes, at, _ in plan.reads:
            if nbytes:
                device.call(copy, pinned.ptr + at, source, nbytes, stream)

    async def _start_sequence(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        timing: bool,
    ) -> _SequenceWork:
        """Claim a prepared sequence's buffers and enqueue one run of it."""
        self._check_open()
        check_repeat_count(repeat_count)
        plan = self._plan_of(prepared)
        loaded = plan.loaded
        if loaded is None:
            await self.load_kernels(*plan.kernels)
            loaded = self._loaded_kernels(plan)
        work = _SequenceWork(self, plan)
        records = self._resolved(prepared)
        waits = self._registry.claim(records, work)
        work.records = records
        if waits:
            await self._await_unrecorded(work, waits, None)
        self._enqueue_sequence(plan, loaded, work, prefix, repeat_count, waits, timing)
        return work

    def _resolved(self, prepared: PreparedSequence) -> list[Any]:
        """A prepared sequence's buffer records, resolved again only after a buffer
        left the registry."""
        registry = self._registry
        cached = prepared._reservation
        if cached is None or cached[0] != registry.generation:
            cached = prepared._reservation = (registry.generation, registry.resolve(prepared._uses))
        records: list[Any] = cached[1]
        return records

    def _enqueue_sequence(
        self,
        plan: SequencePlan,
        loaded: dict[int, LoadedKernel],
        work: _SequenceWork,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        waits: list[Completion],
        timing: bool,
    ) -> None:
        device = self._cuda()
        device.make_current()
        lane = self._lane_after(waits) if waits else self._next_lane()
        stream = lane.stream
        try:
            self._watcher.check_accepting()
            if waits:
                self._wait_for(lane, waits)
            if timing:
                work.timing = self._take_timing()
            self._enqueue_steps(stream, plan, loaded, prefix, repeat_count, work.timing)
            if plan.read_bytes:
                work.host = self._read_block(plan.read_bytes)
                work.keep = True
                self._enqueue_reads(stream, plan, work.host)
        except BaseException as exc:
            self._sync_after_failure(stream)
            work.keep = False
            work.complete(exc)
            raise
        self._watcher.add(lane, work)
        counters = self._counters
        launches = plan.launches(prefix, repeat_count)
        counters.dispatches += 1
        counters.kernel_launches += launches
        if tracing_enabled():
            self._log.debug("sequence enqueued", launches=launches, reads=len(plan.reads))

    def _submit_bound(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig | None,
        start: int,
    ) -> PendingDispatch[list[np.ndarray]]:
        """``PreparedSequence.submit``: enqueue now, or from a task when a kernel must
        load or earlier work is not enqueued yet."""
        self._check_open()
        check_repeat_count(repeat_count)
        config = config or DispatchConfig()
        plan = self._plan_of(prepared)
        loaded = plan.loaded
        work = _SequenceWork(self, plan)
        records = self._resolved(prepared)
        waits = self._registry.claim(records, work)
        work.records = records
        if loaded is None or any(w.fence is None and not w._done for w in waits):

            async def later() -> None:
                nonlocal loaded
                if loaded is None:
                    await self.load_kernels(*plan.kernels)
                    loaded = self._loaded_kernels(plan)
                if waits:
                    await self._await_unrecorded(work, waits, None)
                self._check_healthy()
                self._enqueue_sequence(
                    plan, loaded, work, prefix, repeat_count, waits, config.timing
                )
                self._watcher.kick()

            self._task_group_or_raise().start_soon(self._guarded, later, work)
        else:
            self._enqueue_sequence(plan, loaded, work, prefix, repeat_count, waits, config.timing)
            self._watcher.kick()
        repeated = len(prepared._repeated)
        label = config.label or f"sequence of {len(prefix)}+{repeated}x{repeat_count} steps"
        pending: PendingDispatch[list[np.ndarray]] = self._pending(work, config, label, start)
        return pending

    async def _run_bound(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        start: int,
    ) -> SequenceResult:
        """``prepared.run``: enqueue, then wait as a poller; no pending dispatch."""
        work = await self._start_sequence(prepared, prefix, repeat_count, True)
        enqueued = time.perf_counter_ns()
        if not work._done:
            try:
                await self._watcher.follow(work)
            except BaseException:
                work.drop()
                raise
        if work._error is not None:
            work.drop()
            raise work._error
        plan = work.plan
        block = work.host
        outputs = plan.copy_out(block.array) if block is not None else []
        work.drop()
        device_ns = work.device_ns or 0
        end = time.perf_counter_ns()
        counters = self._counters
        counters.sync_points += 1
        counters.bytes_downloaded += plan.bytes_read
        counters.enqueue_ns_total += enqueued - start
        counters.wall_ns_total += end - start
        counters.wait_ns_total += end - enqueued
        counters.device_ns_total += device_ns
        return SequenceResult(outputs, device_ns)

    def _read_block(self, nbytes: int) -> PinnedBuffer:
        """Page-locked memory for a sequence's reads; small ones from a free list.

        A traversal reads its state words back after every batch: through the pool
        (lock, bucket, a new buffer record) that was ~4 us of its host time per
        batch on an H200 host, against a list pop here.
        """
        if nbytes <= SMALL_READ_BYTES and self._small_reads:
            return self._small_reads.pop()
        return self._pinned.acquire(max(nbytes, SMALL_READ_BYTES))

    def _release_read_block(self, block: PinnedBuffer) -> None:
        if self._device is None or self._device.lost:
            return
        if block.capacity == _SMALL_READ_CAPACITY and len(self._small_reads) < SMALL_READS_KEPT:
            self._small_reads.append(block)
        else:
            self._pinned.release(block)

    # ----------------------------------------------------------------- resident memory
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
                    await _quietly(completion)
            raise

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
        block = self._memory.acquire(max(_padded(nbytes), COPY_PAD))
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
        block = self._memory.acquire(layout[-1])
        await self._fill(block, datas, layout)
        views = [
            DeviceAllocation(ptr=block.ptr + start, nbytes=d.nbytes, capacity=d.nbytes)
            for d, start in zip(datas, layout, strict=False)
        ]
        slab = _Slab(block, len(views))
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
            enqueue, lambda: self._pinned.release(pinned), on_abandon=lambda: self._release(block)
        )

    async def _copy_into(self, target: np.ndarray, data: np.ndarray) -> None:
        source = data.reshape(-1).view(np.uint8)
        if data.nbytes > _INLINE_COPY_BYTES:
            # Host copies have their own threads: never queued behind a kernel compile,
            # and several large writes copy in parallel (np.copyto drops the GIL).
            await anyio.to_thread.run_sync(np.copyto, target, source, limiter=self._copy_limiter)
        else:
            np.copyto(target, source)

    async def _write(self, storage: DeviceAllocation, byte_offset: int, data: Any) -> None:
        if not data.nbytes:
            return
        if isinstance(data, Borrowed):
            await self._copy_device(storage.ptr + byte_offset, data, into_borrowed=False)
            return
        device = self._cuda()
        if (
            data.nbytes > _INLINE_COPY_BYTES
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

        await self._stream_op(enqueue, functools.partial(_keep_alive, data), settle=True)

    async def _read(self, plans: list[ReadPlan]) -> list[np.ndarray]:
        device = self._cuda()
        sizes = [count * buffer.dtype.itemsize for _, buffer, _, count in plans]
        offsets = list(itertools.accumulate((-(-s // 256) * 256 for s in sizes), initial=0))
        total = sum(sizes)
        if _driver_copies(total):
            if len(plans) == 1:
                return [await self._read_recycled(plans[0])]
            return await self._read_pageable(plans)
        if total > _INLINE_COPY_BYTES:
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

        release_pinned = _once(self._pinned.release, pinned)
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
        if nbytes <= _INLINE_COPY_BYTES or not device.is_page_locked(out.ctypes.data, nbytes):
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

        await self._stream_op(enqueue, functools.partial(_keep_alive, out), settle=True)

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
        pieces through page-locked staging by 1.1-2x on an H200 (run 39,
        bench/readback_sweep.py); at 64 MiB it took twice as long, so larger reads
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
        release_pinned = _once(self._pinned.release, pinned)
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
                await _quietly(landed[-1])
            raise
        release_pinned()
        return outs

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

    # ----------------------------------------------------------------- telemetry
    def _gauges(self) -> dict[str, int]:
        stats = self._memory.stats()
        return {
            "pool_hits": stats.hits - self._baseline[0],
            "pool_misses": stats.misses - self._baseline[1],
            "pinned_bytes": self._pinned.pinned_bytes,
            "streams_cached": self._stream_pool.streams_cached,
            "events_cached": self._events.events_cached,
            "graphs_captured": self._graphs.captured,
            "graph_replays": self._graphs.replayed,
        }

    def reset_telemetry(self) -> None:
        """Zero the activity counters, pool hits and misses included."""
        super().reset_telemetry()
        if self._device is not None:
            stats = self._memory.stats()
            self._baseline = (stats.hits, stats.misses)


def _keep_alive(*_: object) -> None:
    """A completion callback whose only job is to hold its arguments until it runs."""


def _let_go(borrowed: list[Borrowed]) -> None:
    """Hand borrowed arrays back (DLPack deleters run; the producer may free them)."""
    for item in borrowed:
        if item.release is not None:
            item.release()


def _snapshot(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs with host arrays copied: what a submission enqueued later reads.

    ``submit`` promises that small host inputs are copied before it returns.
    """
    return {
        name: value.copy() if isinstance(value, np.ndarray) else value
        for name, value in inputs.items()
    }


def _unrecorded(waits: list[Completion]) -> bool:
    """Whether earlier work among ``waits`` is not enqueued yet (it has no fence)."""
    return any(w.fence is None and not w._done for w in waits)


def _once(release: Callable[[Any], None], item: Any) -> Callable[[], None]:
    """``release(item)`` at most once, whichever path (collect, drop, failure) comes first."""
    done = item is None

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            release(item)

    return run
