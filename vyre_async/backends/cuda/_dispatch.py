"""The awaited dispatch path: ``await backend.dispatch(...)`` and prepared dispatches.

A dispatch of a bound launch claims its resident buffers, is enqueued on a stream
from the event-loop thread (staging copy in, output clears, the launches, the copy
out) and joins the stream's open fence; the awaiting task then polls for it through
the completion watcher. No pending dispatch, timing events or log line is made
unless asked for. This is the hot path: per call it does only what can change.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from functools import partial
from typing import Any

import anyio
import numpy as np

from ...cuda import failed_launch
from ...errors import DispatchError
from ...kernels import Kernel
from ...streams import Completion, Lane
from .._checks import check_place, still_ahead, wait_quietly
from .._config import DispatchConfig
from .._core import OutputPlace, Outputs
from .._prepared_dispatch import PreparedDispatch
from .._resident import ResidentBuffer
from ._base import INLINE_COPY_BYTES, OPEN, CudaBase
from ._bound import BoundLaunch, Staging
from ._work import NO_WAITS, DispatchWork, LaunchWork, Work, unrecorded


class CudaDispatch(CudaBase):
    """The awaited dispatch path: ``dispatch``, ``prepare`` and the enqueue they share."""

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
        if self._state is not OPEN:
            self._check_open()
        if outputs != "host":
            return self._dispatch_to_device(kernel, inputs, check_place(outputs, scalars), config)
        try:
            launch = self._launches[(kernel, *inputs.items())]
        except (KeyError, TypeError, AttributeError):  # new, host arrays, or bad inputs
            return self._dispatch_new(kernel, inputs, scalars, config)
        return self._run_launch(launch, inputs, config, scalars)

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
        await self._run_launch(launch, inputs, config, scalars)

    async def _dispatch_new(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: dict[str, Any],
        config: DispatchConfig | None,
    ) -> Outputs:
        launch = await self._bound_launch(kernel, inputs, scalars)
        return await self._run_launch(launch, inputs, config, scalars)

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
        # The launch keeps this very mapping as its last scalars, so a call without
        # new scalars passes it back and is recognised by identity.
        defaults = dict(scalars)
        launch = await self._bound_launch(kernel, held, defaults, cache=False)
        launch.keeps_spares = False  # the backend does not track it: nothing kept idle
        return PreparedDispatch(kernel, partial(self._run_launch, launch, held, config), defaults)

    async def _run_launch(
        self,
        launch: BoundLaunch,
        inputs: Mapping[str, Any],
        config: DispatchConfig | None,
        scalars: Mapping[str, Any],
    ) -> Outputs:
        """Enqueue one dispatch of a bound launch and wait for it (the awaited path).

        It keeps the counts of telemetry (dispatches, launches, sync points), not its
        time totals: measuring costs clock reads per dispatch, paid only when asked
        for (``DispatchConfig(timing=True)`` adds the device time; ``submit(...)`` and
        ``timed()`` measure the rest).
        """
        if self._state is not OPEN:  # a prepared dispatch comes here directly
            self._check_open()
        if scalars is not launch.raw_scalars and (
            scalars != launch.raw_scalars or [*map(type, scalars.values())] != launch.raw_types
        ):  # the same mapping again (a prepared call's own, never mutated): nothing to do
            launch.set_scalars(scalars)  # validated before anything is claimed
        registry = self._registry
        if launch.generation != registry.generation:
            launch.refresh(registry)
        bare = config is None and launch.direct
        work: LaunchWork | DispatchWork
        if bare:  # one launch over resident buffers, nothing else: claimed and enqueued now
            work = LaunchWork()
            records = launch.records
            waits = registry.claim(records, work) if records else NO_WAITS
            if waits and unrecorded(waits):
                waits = await self._await_unrecorded(work, waits, None)
                if scalars != launch.raw_scalars:
                    launch.set_scalars(scalars)  # another dispatch of this launch ran meanwhile
            # _enqueue_dispatch, for one launch: inlined, as this is most dispatches.
            device = self._device
            assert device is not None
            device.make_current()
            lane = self._lane_after(waits) if waits else next(self._lane_turns)
            watcher = self._watcher
            try:
                if watcher.stopped or device.health.error is not None:
                    watcher.check_accepting()  # raises why no work is taken
                if waits:
                    self._wait_for(lane, waits)
                # lane.key is the stream's handle. CuPy's launcher raises a failure,
                # cuda-bindings' returns it: both end in _raise_for.
                try:
                    returned = self._launch_kernel(*launch.head, lane.key, launch.args, 0)
                except self._launch_error as exc:
                    returned = failed_launch(exc)
                if returned is not None and returned[0]:
                    self._raise_for(returned, "cuLaunchKernel")
            except BaseException as exc:
                self._sync_after_failure(lane.stream)  # its memory is reused only then
                work.complete(exc)
                raise
            watcher.add(lane, work)
        else:
            work = await self._enqueue_staged(launch, inputs, config, scalars)
        if not work._done:
            if config is not None and config.timeout is not None:
                try:
                    await self._follow_with_timeout(work, config)
                except BaseException:
                    work.drop()
                    raise
            else:
                # watcher.follow(work), its parking half inlined: a task waiting behind
                # the poller awaits its spot here, one coroutine less at every wake.
                watcher = self._watcher
                poll = True  # nobody polls for a task: this one does
                spot = watcher.wait_behind(work)
                if spot is not None:
                    try:
                        poll = await spot  # True: the poller handed this task its role
                    except BaseException:
                        watcher.stop_waiting(work, spot)
                        work.drop()
                        raise
                if poll:
                    try:
                        await watcher.follow(work, poll=True)
                    except BaseException:
                        work.drop()
                        raise
        counters = self._counters
        if bare:
            counters.awaited_launches += 1  # a dispatch, a kernel launch and a sync point
            if work._error is not None:
                raise work._error
            return {}
        assert isinstance(work, DispatchWork)
        times = 1 if config is None else config.fixpoint_iterations
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
        if config is not None and config.timing and work.device_ns is not None:
            counters.device_ns_total += work.device_ns
        return outputs

    async def _enqueue_staged(
        self,
        launch: BoundLaunch,
        inputs: Mapping[str, Any],
        config: DispatchConfig | None,
        scalars: Mapping[str, Any],
    ) -> DispatchWork:
        """Claim and enqueue a dispatch that is more than one launch over resident
        buffers: host inputs staged (in a worker thread when large), outputs cleared
        or copied out, borrowed arrays, timing or repeated launches."""
        times, timing = 1, False
        if config is not None:
            times, timing = config.fixpoint_iterations, config.timing
        staging = None
        waited = False
        plan = launch.plan
        registry = self._registry
        if plan is not None and plan.total > INLINE_COPY_BYTES:
            staging = await self._stage_in_thread(launch, inputs)
            waited = True
            if launch.generation != registry.generation:  # a buffer left meanwhile
                try:
                    launch.refresh(registry)  # a freed one is refused
                except BaseException:
                    self._give_back_staging(launch, staging)
                    raise
        work = DispatchWork(self, launch)
        if launch.outputs:
            work.keep = True
        records = launch.records
        waits = registry.claim(records, work) if records else NO_WAITS
        if waits and unrecorded(waits):
            waits = await self._await_unrecorded(work, waits, staging)
            waited = True
        if waited and scalars != launch.raw_scalars:
            launch.set_scalars(scalars)  # another dispatch of this launch ran meanwhile
        self._enqueue_dispatch(launch, work, inputs, waits, times, timing, staging)
        return work

    async def _follow_with_timeout(self, work: Completion, config: DispatchConfig) -> None:
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
        self, work: Completion, waits: list[Completion], staging: Staging | None
    ) -> list[Completion]:
        """Wait for earlier work not enqueued yet (it has no event to wait on).

        Returns:
            The work to enqueue behind: ``waits``, and for any of it that failed
            before it was enqueued, the work that one was to start after.
        """
        order = list(waits)
        try:
            index = 0
            while index < len(order):
                earlier = order[index]
                index += 1
                if earlier.fence is None and not earlier._done:
                    await wait_quietly(earlier)
                    self._check_healthy()
                if earlier._done:
                    order += [w for w in still_ahead(earlier) if w not in order]
        except BaseException as exc:
            if staging is not None:  # only a dispatch's own work is given staging
                assert isinstance(work, Work)
                work.host = staging
                work.keep = False  # nobody collects its outputs: the release frees it
            work.complete(exc)
            raise
        return order

    def _enqueue_dispatch(
        self,
        launch: BoundLaunch,
        work: DispatchWork,
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
            lane = next(self._lane_turns)
        watcher = self._watcher
        try:
            if watcher.stopped or device.health.error is not None:
                watcher.check_accepting()  # raises why no work is taken
            if waits:
                self._wait_for(lane, waits)
            self._enqueue_on(launch, work, inputs, lane, times, timing, staging)
        except BaseException as exc:
            self._sync_after_failure(lane.stream)  # its memory is reused only then
            work.keep = False
            work.complete(exc)
            raise
        watcher.add(lane, work)

    def _enqueue_on(
        self,
        launch: BoundLaunch,
        work: DispatchWork,
        inputs: Mapping[str, Any],
        lane: Lane,
        times: int,
        timing: bool,
        staging: Staging | None,
    ) -> None:
        """Enqueue a dispatch's work on ``lane``'s stream: borrowed arrays bound,
        staging copy in, output clears, timing events, the launches, copy out."""
        device = self._device
        assert device is not None
        stream = lane.stream
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
            launch_kernel, head, args, handle = (
                self._launch_kernel,
                launch.head,
                launch.args,
                lane.key,
            )
            for _ in range(times):
                try:
                    returned = launch_kernel(*head, handle, args, 0)
                except self._launch_error as exc:
                    returned = failed_launch(exc)
                if returned is not None and returned[0]:
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
            self._counters.bytes_uploaded += launch.upload[1]
