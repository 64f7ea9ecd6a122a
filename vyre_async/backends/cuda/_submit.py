"""``backend.submit(...)``: enqueue now, return a pending dispatch at once.

Work whose kernel must load first, whose host inputs are large, or which must wait
for earlier work not enqueued yet is enqueued from a task of the backend instead;
its buffers are claimed at once either way, so submission order holds. The pending
dispatch collects the outputs when awaited.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import numpy as np

from ...errors import DispatchError, VyreError
from ...kernels import BoundCall, Kernel
from ...logging import tracing_enabled
from ...streams import Completion, PendingDispatch
from .._checks import uses_of
from .._config import DispatchConfig
from .._core import Outputs
from .._resident import ResidentBuffer
from ._base import INLINE_COPY_BYTES, CudaBase
from ._bound import BoundLaunch, launch_key
from ._work import NO_WAITS, DispatchWork, SequenceWork, Work, snapshot_inputs, unrecorded


class CudaSubmit(CudaBase):
    """``submit``: enqueue now or from a task, and the pending dispatch that collects."""

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
            work = DispatchWork(self, launch)
            work.keep = bool(launch.outputs)
            records = launch.records
            waits = registry.claim(records, work) if records else NO_WAITS
            large = launch.plan is not None and launch.plan.total > INLINE_COPY_BYTES
            if large or unrecorded(waits):
                held = dict(inputs) if large else snapshot_inputs(inputs)
                self._task_group_or_raise().start_soon(
                    self._enqueue_later, launch, work, held, dict(scalars), waits, config
                )
                self._closing_waits_for(work)
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
    ) -> Work:
        """A submission whose kernel must load first: validated and its buffers claimed
        now (so submission order holds), bound and enqueued from a task once loaded."""
        work = DispatchWork(self, None)
        registry = self._registry
        records = registry.resolve(uses_of([call]))
        waits = registry.claim(records, work)
        held = snapshot_inputs(inputs)

        async def later() -> None:
            launch = await self._bound_launch(kernel, held, scalars)
            work.launch = launch
            work.keep = bool(launch.outputs)
            self._counters.dispatches += 1
            self._counters.kernel_launches += launch.launches * config.fixpoint_iterations
            await self._enqueue_later(launch, work, held, scalars, waits, config)

        self._task_group_or_raise().start_soon(self._guarded, later, work)
        self._closing_waits_for(work)
        return work

    def _closing_waits_for(self, work: Work) -> None:
        """Make ``aclose`` wait for work a task of the backend enqueues later: closing
        must not free the kernels, pools and streams that task is about to use."""
        in_flight = self._in_flight
        in_flight.add(work)
        work.add_done_callback(lambda: in_flight.discard(work))

    async def _guarded(self, fn: Callable[[], Coroutine[Any, Any, None]], work: Work) -> None:
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
        work: DispatchWork,
        inputs: dict[str, Any],
        scalars: dict[str, Any],
        waits: list[Completion],
        config: DispatchConfig,
    ) -> None:
        async def later() -> None:
            nonlocal waits
            staging = None
            if launch.plan is not None and launch.plan.total > INLINE_COPY_BYTES:
                staging = await self._stage_in_thread(launch, inputs)
            if waits:
                waits = await self._await_unrecorded(work, waits, staging)
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
        self, work: Work, config: DispatchConfig, label: str, start: int
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
            if isinstance(work, DispatchWork):
                if work.launch is not None:
                    self._counters.bytes_downloaded += work.launch.download[1]
            else:
                assert isinstance(work, SequenceWork)
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

    def _copy_out_outputs(self, work: Work) -> Any:
        if isinstance(work, DispatchWork):
            launch = work.launch
            return launch.take_outputs(work.host) if launch is not None else {}
        assert isinstance(work, SequenceWork)
        return work.plan.copy_out(work.host.array) if work.host is not None else []
