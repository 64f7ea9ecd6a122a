"""The CUDA backend: dispatches as stream work, completions from recorded events.

The dispatch path, all enqueued from the event-loop thread without waiting:
host inputs are copied into one pinned block at submit; one async host-to-device
copy; output-only buffers cleared; ``fixpoint_iterations`` launches; one async
device-to-host copy into the pinned block; the completion event recorded last. The
:class:`~vyre_async.streams.CompletionWatcher` finishes the completion when that
event has completed, and only then does the dispatch's device memory go back to its
pool. Outputs are copied out of the pinned block when the dispatch is awaited.

Work that shares a resident buffer with unfinished work waits for it on the device
(``cuStreamWaitEvent``), so submission order holds across streams, as on the CPU
backend. A kernel not yet loaded is compiled in a worker thread and its launch
enqueued from a task once it is ready; ``await backend.prepare(kernel)`` does that
ahead of time.

Reads: a few bytes land in kept page-locked blocks; 2-32 MiB in a block lent from
:class:`~._host_results.ResultBlocks` (page-locked once it comes back); larger reads
come back in 2 MiB pieces through page-locked staging (:mod:`._cuda_readback`); a
page-locked ``out=`` takes the device's copy directly.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np

from ..errors import DispatchError, LifecycleError, OutOfMemoryError, VyreError
from ..kernels import BUILTIN_KERNELS
from ..kernels._kernel import BoundCall, Kernel
from ..logging import tracing_enabled
from ..streams._bucket_pool import bucket_capacity
from ..streams._device import CudaDevice, DeviceInfo
from ..streams._handles import EventPool, StreamPool
from ..streams._memory import DeviceAllocation, DeviceMemoryPool, PinnedBuffer, PinnedHostPool
from ..streams._pending import Completion
from ..streams._watcher import CompletionWatcher
from ._config import DispatchConfig
from ._core import BackendCore, Enqueued, ReadPlan, _quietly, check_repeat_count
from ._cuda_graphs import BodyGraphs, StepPlans
from ._cuda_launch import KernelCache, LoadedKernel
from ._cuda_readback import COPY_THREADS, copy_out_pieces, plan_read_pieces
from ._cuda_sequence import SequencePlan
from ._cuda_staging import COPY_PAD, StagingPlan, fill_inputs, plan_staging, take_outputs
from ._host_results import HostBlock, ResultBlocks
from ._prepared import PreparedSequence, SequenceResult
from ._resident import ResidentBuffer, slab_layout

#: Streams dispatches are spread over, round robin.
STREAMS = 4
#: Staging plans kept per backend (one per kernel and host-bound shape seen).
_PLAN_CACHE_SIZE = 1024
#: Host copies larger than this run in a worker thread, not on the loop.
_INLINE_COPY_BYTES = 1 << 20
#: Reads into fresh arrays between these sizes use the driver's pageable copy.
PAGEABLE_READ_MIN_BYTES = 2 << 20
PAGEABLE_READ_MAX_BYTES = 32 << 20
#: Sequence reads up to this size (a traversal's state words) use kept blocks...
SMALL_READ_BYTES = 4096
#: ...of which this many are kept idle.
SMALL_READS_KEPT = 16
#: Event sets (timing pair and completion event) kept idle for ``PreparedSequence.run``:
#: a list pop instead of three trips through the event pools' locks and back.
RUN_EVENT_SETS = 8
#: Read-result blocks (see :mod:`._host_results`) kept idle for the next read...
RESULT_BLOCKS_IDLE_BYTES = 128 << 20
#: ...and page-locked once they come back, up to this many bytes in all.
RESULT_BLOCKS_LOCKED_BYTES = 256 << 20
_SMALL_READ_CAPACITY = bucket_capacity(SMALL_READ_BYTES)


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


class _StagedOutputs:
    """Outputs waiting in a pinned block until they are collected, dropped, or the backend closes.

    Closing the backend releases the context, and pinned memory with it, so a
    dispatch that was never awaited has its outputs copied into ordinary host memory
    first: awaiting it after the close still returns them.
    """

    __slots__ = ("_owner", "_release", "_result", "_settled", "_take")

    def __init__(
        self, owner: set[_StagedOutputs], take: Callable[[], Any], release: Callable[[], None]
    ) -> None:
        self._owner = owner
        self._take = take
        self._release = release
        self._result: Any = None
        self._settled = False
        owner.add(self)

    def collect(self) -> Any:
        """The outputs; the first call copies them out and releases the pinned block."""
        if not self._settled:
            try:
                self._result = self._take()
            finally:
                self.discard()
        return self._result

    def discard(self) -> None:
        """Release the pinned block without copying (a dropped dispatch). Idempotent."""
        if not self._settled:
            self._settled = True
            self._owner.discard(self)
            self._release()


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
        super().__init__()
        self._ordinal = device
        self._pool_options = (max_cached_device_bytes, max_device_bytes, max_cached_pinned_bytes)
        self._device: CudaDevice | None = None
        self._limiter = anyio.CapacityLimiter(2)
        # Host copies out of pinned memory: their own threads, never queued behind a compile.
        self._copy_limiter = anyio.CapacityLimiter(COPY_THREADS)
        self._recorded: dict[int, Any] = {}  # id(completion) -> its recorded event
        self._uncollected: set[_StagedOutputs] = set()
        self._plans: dict[tuple[Any, ...], StagingPlan] = {}
        self._step_plans = StepPlans()
        self._small_reads: list[PinnedBuffer] = []  # idle page-locked blocks for small reads
        self._run_events: list[tuple[Any, Any, Any]] = []  # idle (start, end, done) for run()
        self._results = ResultBlocks(RESULT_BLOCKS_IDLE_BYTES, self._unregister)
        self._lock_results = True  # until the driver once refuses to page-lock a block
        self._slab_of: dict[int, _Slab] = {}  # id(member view) -> its slab
        self._next_stream = itertools.count()
        self._baseline = (0, 0)

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
            self._watcher = CompletionWatcher.for_device(device)
        except BaseException:
            await anyio.to_thread.run_sync(device.close)
            raise
        self._device = device
        self._log = self._log.bind(ordinal=self._ordinal)

    async def _start_background(self, task_group: anyio.abc.TaskGroup) -> None:
        await task_group.start(self._watcher.run)
        await self.prepare(*BUILTIN_KERNELS)

    async def _close(self) -> None:
        if self._device is None:
            return
        device = self._device
        with anyio.move_on_after(5):
            await self._watcher.drain()
        for staged in list(self._uncollected):
            if device.lost:
                staged.discard()
            else:
                staged.collect()

        locked_results = self._results.close()  # lent arrays stay valid, just pageable

        def release_all() -> None:
            try:
                if device.lost:
                    # The context is poisoned: freeing through it only raises again.
                    self._log.warning("closing a lost device without freeing its handles")
                    return
                device.make_current()
                for stream in self._streams:
                    self._stream_pool.release(stream)
                while self._small_reads:
                    self._pinned.release(self._small_reads.pop())
                while self._run_events:
                    start, end, done = self._run_events.pop()
                    self._events.release_timing_pair((start, end))
                    self._events.release(done)
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

    async def prepare(self, *kernels: Kernel) -> None:
        """Compile (through the caches) and load kernels now, off the event loop."""
        for kernel in kernels:
            if self._kernels.get(kernel) is None:
                await anyio.to_thread.run_sync(self._kernels.load, kernel, limiter=self._limiter)

    def live_allocations(self) -> dict[str, int]:
        """Device blocks, pinned blocks and events handed out right now (leak checks)."""
        return {
            "device": self._memory.live_allocations,
            "pinned": self._pinned.live_allocations - len(self._small_reads),  # kept idle: not out
            "events": self._events.live - 3 * len(self._run_events),  # kept idle: not out
            "in_flight": self._watcher.in_flight,
        }

    # ----------------------------------------------------------------- stream plumbing
    def _stream(self) -> tuple[int, Any]:
        index = next(self._next_stream) % STREAMS
        return index, self._streams[index]

    def _wait_for(self, stream: Any, waits: list[Completion]) -> None:
        driver = self._cuda().driver
        for earlier in waits:
            event = self._recorded.get(id(earlier))
            if event is not None and not earlier.done:
                self._cuda().call(driver.cuStreamWaitEvent, stream, event, 0)

    def _finish_on(
        self,
        stream_key: int,
        stream: Any,
        completion: Completion,
        on_done: Callable[[], None],
        timing: tuple[Any, Any] | None = None,
    ) -> None:
        """Record the completion event last and hand it to the watcher."""
        device = self._cuda()
        event = self._events.acquire()
        device.call(device.driver.cuEventRecord, event, stream)
        key = id(completion)
        self._recorded[key] = event

        def done() -> None:
            self._recorded.pop(key, None)
            self._events.release(event)
            if timing is not None:
                self._events.release_timing_pair(timing)
            on_done()

        self._watcher.watch(stream_key, event, completion, done, timing=timing)

    def _sync_after_failure(self, stream: Any) -> None:
        """After a failed enqueue, wait for what was queued before memory is reused."""
        device = self._cuda()
        try:
            device.call(device.driver.cuStreamSynchronize, stream)
        except VyreError as exc:
            self._log.error("stream sync after a failed enqueue failed", error=str(exc))

    # ----------------------------------------------------------------- dispatch
    def _enqueue_dispatch(
        self,
        task_group: anyio.abc.TaskGroup,
        call: BoundCall[Any],
        config: DispatchConfig,
        completion: Completion,
        waits: list[Completion],
    ) -> Enqueued:
        plan = self._plan(call)
        pinned: PinnedBuffer | None = None
        block: DeviceAllocation | None = None
        if plan.total:
            pinned = self._pinned.acquire(plan.total)
            try:
                block = self._memory.acquire(plan.total)
                fill_inputs(plan, pinned.array, call.buffers)
            except BaseException:
                self._pinned.release(pinned)
                if block is not None:
                    self._memory.release(block)
                raise
        pointers = {
            name: self._registry.storage(b).ptr
            for name, b in call.buffers.items()
            if isinstance(b, ResidentBuffer)
        }
        if block is not None:
            pointers.update((s.name, block.ptr + s.offset) for s in plan.slots)
        resident_clears = [
            (
                self._registry.storage(call.buffers[p.name]).ptr,
                call.lengths[p.name] * p.dtype.itemsize,
            )
            for p in call.kernel.buffer_params
            if p.role == "out" and isinstance(call.buffers.get(p.name), ResidentBuffer)
        ]
        clears = resident_clears + [(pointers[n], plan.slot(n).nbytes) for n in plan.clears]

        release_pinned = self._once(self._pinned.release, pinned)

        def take() -> dict[str, np.ndarray]:
            self._counters.bytes_downloaded += plan.download[1]
            if pinned is None:
                return {
                    name: np.zeros(plan.slot(name).shape, plan.slot(name).dtype)
                    for name in plan.outputs
                }
            return take_outputs(plan, pinned.array)

        staged = _StagedOutputs(self._uncollected, take, release_pinned)

        def release_block() -> None:
            if block is not None:
                self._memory.release(block)

        def release_all() -> None:
            release_block()
            staged.discard()

        def enqueue() -> None:
            device = self._cuda()
            loaded = self._loaded(call.kernel)
            loaded.check_launch(call.launch, device.info)
            driver = device.driver
            key, stream = self._stream()
            timing = None
            try:
                self._wait_for(stream, waits)
                offset, nbytes = plan.upload
                if nbytes and block is not None and pinned is not None:
                    device.call(
                        driver.cuMemcpyHtoDAsync,
                        block.ptr + offset,
                        pinned.ptr + offset,
                        nbytes,
                        stream,
                    )
                for ptr, size in clears:
                    if size:
                        device.call(driver.cuMemsetD8Async, ptr, 0, size, stream)
                timing = self._events.acquire_timing_pair() if config.timing else None
                if timing is not None:
                    device.call(driver.cuEventRecord, timing[0], stream)
                loaded.launch(call, pointers, stream, config.fixpoint_iterations)
                if timing is not None:
                    device.call(driver.cuEventRecord, timing[1], stream)
                offset, nbytes = plan.download
                if nbytes and block is not None and pinned is not None:
                    device.call(
                        driver.cuMemcpyDtoHAsync,
                        pinned.ptr + offset,
                        block.ptr + offset,
                        nbytes,
                        stream,
                    )
                self._finish_on(key, stream, completion, release_block, timing)
            except BaseException:
                self._sync_after_failure(stream)
                if timing is not None:
                    self._events.release_timing_pair(timing)
                raise

        self._start(task_group, [call.kernel], enqueue, completion, waits, release_all)

        self._counters.bytes_uploaded += plan.upload[1]
        return staged.collect, staged.discard

    def _plan(self, call: BoundCall[Any]) -> StagingPlan:
        """The staging plan of a call, cached by kernel and host-bound shapes."""
        key = (
            id(call.kernel),
            tuple(
                (name, None if isinstance(b, ResidentBuffer) else np.shape(b))
                for name, b in call.buffers.items()
            ),
            tuple(call.lengths.values()),
        )
        plan = self._plans.get(key)
        if plan is None or plan.kernel is not call.kernel:
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.pop(next(iter(self._plans)))
            plan = self._plans[key] = plan_staging(call)
        return plan

    @staticmethod
    def _once(release: Callable[[Any], None], item: Any) -> Callable[[], None]:
        """``release(item)`` at most once, whichever path (collect, drop, failure) comes first."""
        done = item is None

        def run() -> None:
            nonlocal done
            if not done:
                done = True
                release(item)

        return run

    def _loaded(self, kernel: Kernel) -> LoadedKernel:
        loaded = self._kernels.get(kernel)
        if loaded is None:  # _start loads every kernel before it enqueues
            raise DispatchError(
                f"kernel {kernel.name!r} is not loaded", fix="report this bug with the log."
            )
        return loaded

    def _start(
        self,
        task_group: anyio.abc.TaskGroup,
        kernels: list[Kernel],
        enqueue: Callable[[], None],
        completion: Completion,
        waits: list[Completion],
        release: Callable[[], None],
    ) -> None:
        """Enqueue now when everything is ready, else from a task once it is.

        Not ready means: a kernel still has to be compiled and loaded, or an earlier
        user of a shared buffer has not been enqueued yet (it has no event to wait on).
        """
        missing = [k for k in kernels if self._kernels.get(k) is None]
        unrecorded = [w for w in waits if not w.done and id(w) not in self._recorded]
        if not missing and not unrecorded:
            try:
                enqueue()
            except BaseException:
                release()
                raise
            return
        task_group.start_soon(
            self._enqueue_later, missing, enqueue, completion, unrecorded, release
        )

    async def _enqueue_later(
        self,
        missing: list[Kernel],
        enqueue: Callable[[], None],
        completion: Completion,
        unrecorded: list[Completion],
        release: Callable[[], None],
    ) -> None:
        try:
            await self.prepare(*missing)
            for earlier in unrecorded:
                await _quietly(earlier)
            self._check_healthy()
            enqueue()
        except VyreError as exc:
            release()
            completion.complete(exc)
        except Exception as exc:
            release()
            self._log.exception("enqueue failed")
            completion.complete(
                DispatchError(f"enqueueing failed: {exc!r}", fix="report this bug with the log.")
            )
        except BaseException:
            release()
            completion.complete(
                DispatchError(
                    "the backend closed before this work was enqueued",
                    fix="await pending dispatches before closing the backend.",
                )
            )
            raise

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

    def _enqueue_steps(
        self,
        stream: Any,
        plan: SequencePlan,
        loaded: dict[int, LoadedKernel],
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        waits: list[Completion],
        timing: tuple[Any, Any] | None,
    ) -> None:
        """Enqueue a planned sequence's waits, start timing event, prefix, body (one
        graph launch when captured) and end timing event on ``stream``.

        The device is busy from the body on, so what a submission can do later (its
        read block, its completion event) it does after this returns.
        """
        device = self._cuda()
        driver = device.driver
        if waits:
            self._wait_for(stream, waits)
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

    def _enqueue_sequence(
        self,
        task_group: anyio.abc.TaskGroup,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig,
        completion: Completion,
        waits: list[Completion],
    ) -> Enqueued:
        plan = self._plan_of(prepared)
        pinned = self._read_block(plan.read_bytes) if plan.read_bytes else None

        def enqueue() -> None:
            loaded = self._loaded_kernels(plan)  # _start loaded them
            timing = self._events.acquire_timing_pair() if config.timing else None
            key, stream = self._stream()
            try:
                self._enqueue_steps(stream, plan, loaded, prefix, repeat_count, waits, timing)
                self._enqueue_reads(stream, plan, pinned)
                self._finish_on(key, stream, completion, lambda: None, timing)
            except BaseException:
                self._sync_after_failure(stream)
                if timing is not None:
                    self._events.release_timing_pair(timing)
                raise

        release_pinned = self._once(self._release_read_block, pinned)

        def take() -> list[np.ndarray]:
            staged = pinned.array if pinned is not None else np.empty(0, np.uint8)
            self._counters.bytes_downloaded += plan.bytes_read
            return plan.copy_out(staged)

        staged = _StagedOutputs(self._uncollected, take, release_pinned)
        self._start(task_group, plan.kernels, enqueue, completion, waits, staged.discard)

        return staged.collect, staged.discard

    async def _run_bound(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        start: int,
    ) -> SequenceResult:
        """``prepared.run``: enqueue, then wait through ``watch_and_wait``; no pending
        dispatch, no staged outputs (the waiting task copies its reads out itself).
        """
        self._check_open()
        check_repeat_count(repeat_count)
        plan = self._plan_of(prepared)
        loaded = plan.loaded
        if loaded is None:
            await self.prepare(*plan.kernels)
            loaded = self._loaded_kernels(plan)
        completion = self._new_completion()
        try:
            waits = self._reserve_prepared(prepared, completion)
            for earlier in waits:  # enqueued from a task and not yet: no event to wait on
                if not earlier.done and id(earlier) not in self._recorded:
                    await _quietly(earlier)
                    self._check_healthy()
        except BaseException as exc:
            completion.complete(exc)
            raise
        kit = self._run_events.pop() if self._run_events else self._new_run_events()
        timing, event = kit[:2], kit[2]
        key, stream = self._stream()
        pinned = None
        try:
            self._enqueue_steps(stream, plan, loaded, prefix, repeat_count, waits, timing)
            pinned = self._read_block(plan.read_bytes) if plan.read_bytes else None
            self._enqueue_reads(stream, plan, pinned)
            self._watcher.check_accepting()
            device = self._cuda()
            device.call(device.driver.cuEventRecord, event, stream)
        except BaseException as exc:
            self._sync_after_failure(stream)
            self._release_run_events(kit)
            if pinned is not None:
                self._release_read_block(pinned)
            completion.complete(exc)
            raise
        recorded = self._recorded
        recorded[id(completion)] = event
        counters = self._counters
        launches = plan.launches(prefix, repeat_count)
        counters.dispatches += 1
        counters.kernel_launches += launches
        if tracing_enabled():
            self._log.debug("sequence run", launches=launches)
        enqueued = time.perf_counter_ns()
        counters.enqueue_ns_total += enqueued - start

        def done() -> None:
            recorded.pop(id(completion), None)
            self._release_run_events(kit)

        try:
            await self._watcher.watch_and_wait(key, event, completion, done, timing=timing)
        except BaseException:
            if pinned is not None:  # now, or once the device is done with it
                completion.add_done_callback(functools.partial(self._release_read_block, pinned))
            raise
        if pinned is not None:
            try:
                outputs = plan.copy_out(pinned.array)
            finally:
                self._release_read_block(pinned)
        else:
            outputs = []
        device_ns = completion.device_ns or 0
        end = time.perf_counter_ns()
        counters.sync_points += 1
        counters.bytes_downloaded += plan.bytes_read
        counters.wall_ns_total += end - start
        counters.wait_ns_total += end - enqueued
        counters.device_ns_total += device_ns
        return SequenceResult(outputs, device_ns)

    def _new_run_events(self) -> tuple[Any, Any, Any]:
        start, end = self._events.acquire_timing_pair()
        try:
            return start, end, self._events.acquire()
        except BaseException:
            self._events.release_timing_pair((start, end))
            raise

    def _release_run_events(self, kit: tuple[Any, Any, Any]) -> None:
        if len(self._run_events) < RUN_EVENT_SETS:
            self._run_events.append(kit)
        else:
            self._events.release_timing_pair(kit[:2])
            self._events.release(kit[2])

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
    ) -> None:
        """Enqueue copies on a stream and wait for them without blocking the loop.

        ``on_done`` runs when the copies end. If the wait is cancelled or fails,
        ``on_abandon`` runs too, once the copies have ended (never earlier). With
        ``settle`` a cancelled wait returns only once the copies have ended: for copies
        into the caller's memory, which must not change after the call returns.
        """
        completion = Completion()
        key, stream = self._stream()
        try:
            enqueue(stream)
            self._finish_on(key, stream, completion, on_done)
        except BaseException:
            self._sync_after_failure(stream)
            on_done()
            if on_abandon is not None:
                on_abandon()
            raise
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

    async def _store(
        self, dtype: np.dtype[Any], count: int, data: np.ndarray | None
    ) -> DeviceAllocation:
        nbytes = count * dtype.itemsize
        block = self._memory.acquire(max(_padded(nbytes), COPY_PAD))
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

    async def _write(self, storage: DeviceAllocation, byte_offset: int, data: np.ndarray) -> None:
        if not data.nbytes:
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

    def _launch_steps(self, steps: list[Any], loaded: dict[int, LoadedKernel], stream: Any) -> None:
        """Enqueue steps once each: their output clears, then their launches."""
        device = self._cuda()
        driver = device.driver
        for c, ptrs, clears in steps:
            for ptr, size in clears:
                if size:
                    device.call(driver.cuMemsetD8Async, ptr, 0, size, stream)
            loaded[id(c.kernel)].launch_step(c, ptrs, stream)

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

        release_pinned = self._once(self._pinned.release, pinned)
        # settle: the caller's hold on the buffers ends when this returns.
        await self._stream_op(enqueue, lambda: None, on_abandon=release_pinned, settle=True)
        arrays = [
            pinned.array[at : at + size].view(buffer.dtype).copy()
            for (_, buffer, _, _), size, at in zip(plans, sizes, offsets, strict=False)
        ]
        release_pinned()
        return arrays

    async def _read_into(self, plan: ReadPlan, out: np.ndarray) -> None:
        _, buffer, _, count = plan
        nbytes = count * buffer.dtype.itemsize
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
        (see :mod:`._cuda_readback`). The pinned block goes back to its pool once no
        copy reads it: at once on success, after the last piece has landed when the
        wait is cancelled or fails.
        """
        device = self._cuda()
        outs = [np.empty(count, buffer.dtype) for _, buffer, _, count in plans]
        pieces = plan_read_pieces(sizes, offsets[:-1])
        landed = [Completion() for _ in pieces]
        pinned = self._pinned.acquire(offsets[-1])
        release_pinned = self._once(self._pinned.release, pinned)
        key, stream = self._stream()
        try:
            for piece, completion in zip(pieces, landed, strict=True):
                storage, buffer, offset, _ = plans[piece.range_index]
                device.call(
                    device.driver.cuMemcpyDtoHAsync,
                    pinned.ptr + piece.staged,
                    storage.ptr + offset * buffer.dtype.itemsize + piece.start,
                    piece.nbytes,
                    stream,
                )
                self._finish_on(key, stream, completion, lambda: None)
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
        if slab is None:
            self._memory.release(storage)
            return
        slab.members -= 1
        if slab.members == 0:
            self._memory.release(slab.block)

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
