"""Resident sequences: steps over resident buffers run on one stream, one host sync.

A prepared sequence is planned once (:class:`~._sequence_plan.SequencePlan`): its
prefix steps, its repeated body (captured as a CUDA graph when long enough), and the
ranges it reads back into one page-locked block. Small reads (a traversal's state
words) use blocks kept on a free list.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...cuda import PinnedBuffer, bucket_capacity
from ...errors import DispatchError
from ...kernels import BoundCall
from ...logging import tracing_enabled
from ...streams import Completion, PendingDispatch
from .._checks import check_repeat_count
from .._config import DispatchConfig
from .._prepared import PreparedSequence, SequenceResult
from .._resident import ResidentBuffer
from ._base import CudaBase
from ._launch import LoadedKernel
from ._sequence_plan import SequencePlan
from ._work import SequenceWork

#: Sequence reads up to this size (a traversal's state words) use kept blocks...
SMALL_READ_BYTES = 4096
#: ...of which this many are kept idle.
SMALL_READS_KEPT = 16
_SMALL_READ_CAPACITY = bucket_capacity(SMALL_READ_BYTES)


class CudaSequences(CudaBase):
    """Prepared sequences: planned once, enqueued on one stream, read back in one block."""

    def _plan_of(self, prepared: PreparedSequence) -> SequencePlan:
        plan = prepared.backend_plan
        if not isinstance(plan, SequencePlan):
            plan = SequencePlan(
                self._step_plans,
                self._pointer_of,
                prepared.prefix,
                prepared.repeated,
                prepared.reads,
            )
            prepared.backend_plan = plan
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
    ) -> SequenceWork:
        """Claim a prepared sequence's buffers and enqueue one run of it."""
        self._check_open()
        check_repeat_count(repeat_count)
        plan = self._plan_of(prepared)
        loaded = plan.loaded
        if loaded is None:
            await self.load_kernels(*plan.kernels)
            loaded = self._loaded_kernels(plan)
        work = SequenceWork(self, plan)
        records = self._resolved(prepared)
        waits = self._registry.claim(records, work)
        if waits:
            waits = await self._await_unrecorded(work, waits, None)
        self._enqueue_sequence(plan, loaded, work, prefix, repeat_count, waits, timing)
        return work

    def _resolved(self, prepared: PreparedSequence) -> list[Any]:
        """A prepared sequence's buffer records, resolved again only after a buffer
        left the registry."""
        registry = self._registry
        cached = prepared.reservation
        if cached is None or cached[0] != registry.generation:
            cached = prepared.reservation = (registry.generation, registry.resolve(prepared.uses))
        records: list[Any] = cached[1]
        return records

    def _enqueue_sequence(
        self,
        plan: SequencePlan,
        loaded: dict[int, LoadedKernel],
        work: SequenceWork,
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

    def submit_prepared(
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
        work = SequenceWork(self, plan)
        records = self._resolved(prepared)
        waits = self._registry.claim(records, work)
        if loaded is None or any(w.fence is None and not w._done for w in waits):

            async def later() -> None:
                nonlocal loaded, waits
                if loaded is None:
                    await self.load_kernels(*plan.kernels)
                    loaded = self._loaded_kernels(plan)
                if waits:
                    waits = await self._await_unrecorded(work, waits, None)
                self._check_healthy()
                self._enqueue_sequence(
                    plan, loaded, work, prefix, repeat_count, waits, config.timing
                )
                self._watcher.kick()

            self._task_group_or_raise().start_soon(self._guarded, later, work)
        else:
            self._enqueue_sequence(plan, loaded, work, prefix, repeat_count, waits, config.timing)
            self._watcher.kick()
        repeated = len(prepared.repeated)
        label = config.label or f"sequence of {len(prefix)}+{repeated}x{repeat_count} steps"
        pending: PendingDispatch[list[np.ndarray]] = self._pending(work, config, label, start)
        return pending

    async def run_prepared(
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
