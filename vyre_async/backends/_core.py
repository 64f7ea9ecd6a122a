"""What every backend shares: lifecycle, dispatch checks, completions, telemetry.

A concrete backend (CPU, CUDA) supplies the few hooks that actually move bytes and
run kernels; everything a caller can get wrong is checked here, once, before any
hook runs. :class:`BackendCore` is assembled from the resident-memory half
(:mod:`._residency`) and the sequence half (:mod:`._sequencing`) below it.
"""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Coroutine, Mapping
from typing import Any, Literal, Self, TypeVar

import anyio
import numpy as np

from .._lifecycle import AsyncLifecycle, BackgroundTasks, LifecycleState
from ..errors import LifecycleError, VyreError
from ..kernels import BoundCall, Kernel
from ..logging import get_logger
from ..streams import Completion, DispatchTiming, PendingDispatch
from ..telemetry import Activity, TelemetryCounters, TelemetrySnapshot
from ._checks import wait_quietly
from ._config import DispatchConfig
from ._interop import host_view, is_foreign
from ._prepared_dispatch import PreparedDispatch
from ._resident import ResidentBuffer, ResidentRegistry
from ._sequencing import Sequencing

S = TypeVar("S")
Outputs = dict[str, np.ndarray]
#: Where ``dispatch`` leaves a dispatch's outputs.
OutputPlace = Literal["host", "device"]
#: Seconds a closing backend waits for unfinished work before it gives up on it.
CLOSE_DEADLINE_S = 30.0


class BackendCore(Sequencing[S], AsyncLifecycle):
    """Shared implementation behind :class:`Backend`; ``S`` is the storage type."""

    kind: str = "abstract"
    _make_fix = "open a new backend with vyre_async.open_backend()."
    _use_fix = "use it inside `async with vyre_async.open_backend() as backend:`."

    def __init__(self) -> None:
        self._noun = f"{self.kind} backend"
        self._counters = TelemetryCounters()
        self._registry: ResidentRegistry[S] = ResidentRegistry(
            self.kind, self._count_resident, self._exporter()
        )
        self._in_flight: set[Completion] = set()
        self._bound_steps: dict[tuple[Any, ...], BoundCall[ResidentBuffer]] = {}
        self._task_group: anyio.abc.TaskGroup | None = None
        self._background = BackgroundTasks(self._noun)
        self._log = get_logger(f"vyre_async.backends.{self.kind}")

    # ----------------------------------------------------------------- lifecycle
    @property
    @abstractmethod
    def device_name(self) -> str:
        """Human name of the device."""

    async def __aenter__(self) -> Self:
        self._enter_open()
        try:
            await self._open()
        except BaseException:
            self._enter_closed()
            raise
        background = self._background
        try:
            task_group = await background.open()
            await self._start_background(task_group)
        except BaseException:
            await background.stop()
            with anyio.CancelScope(shield=True):
                await self._close()
            await background.leave()
            self._enter_closed()
            raise
        self._task_group = task_group
        self._log = self._log.bind(backend=self.kind, device=self.device_name)
        self._log.info("backend opened")
        return self

    async def aclose(self) -> None:
        """Refuse new work, wait for unfinished work, free everything. Idempotent.

        Any task may close the backend; its ``async with`` block is still left in the
        task that entered it.
        """
        was_open = self._state is LifecycleState.OPEN
        self._enter_closed()
        if not was_open:
            return
        self._task_group = None
        try:
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(CLOSE_DEADLINE_S) as scope:
                    for completion in list(self._in_flight):
                        await wait_quietly(completion)
                    await self._drain()
                if scope.cancelled_caught:
                    self._log.warning(
                        "closing with unfinished work", unfinished=len(self._in_flight)
                    )
                for buffer, storage, exported in self._registry.drain():
                    if exported:
                        self._outlive_close(buffer, storage)
                    else:
                        self._release(storage)
                await self._close()
        finally:
            await self._background.stop()
        self._log.info("backend closed")

    async def _leave(self) -> None:
        await self._background.leave()

    def _check_open(self) -> anyio.abc.TaskGroup:
        if self._state is not LifecycleState.OPEN or self._task_group is None:
            self._require_open()
            raise LifecycleError(f"this {self._noun} is still opening", fix=self._use_fix)
        self._check_healthy()
        return self._task_group

    def _check_healthy(self) -> None:
        """Raise when the device can no longer take work (CUDA: device lost)."""

    # ----------------------------------------------------------------- dispatch
    @abstractmethod
    async def free_memory(self) -> int:
        """Device bytes free now (see :class:`Backend`)."""

    @abstractmethod
    async def load_kernels(self, *kernels: Kernel) -> None:
        """Prepare kernels ahead of their first dispatch (see :class:`Backend`)."""

    @abstractmethod
    def submit(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PendingDispatch[Outputs]:
        """Validate and enqueue one kernel dispatch; return a pending dispatch at once.

        Args:
            kernel: The kernel.
            inputs: Buffer parameter -> host array or resident buffer.
            config: Timeout, fixpoint iterations, timing.
            **scalars: Scalar parameters.

        Returns:
            A pending dispatch; awaiting it gives the host-bound ``out``/``inout``
            buffers as new arrays (resident outputs stay resident).

        Raises:
            ValidationError: Bad inputs (nothing was enqueued).
            LifecycleError: The backend is not open, or a buffer was freed.
        """

    @abstractmethod
    def dispatch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        outputs: OutputPlace = "host",
        **scalars: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Run one dispatch and return its host-bound outputs: ``await backend.dispatch(...)``.

        Makes no pending dispatch: for one awaited at once, that is what
        :meth:`submit` costs more. With ``outputs="device"`` the outputs stay on the
        device as new resident buffers (see :meth:`_dispatch_to_device`).
        """

    async def _dispatch_to_device(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: dict[str, Any],
        config: DispatchConfig | None,
    ) -> dict[str, ResidentBuffer]:
        """``dispatch(..., outputs="device")``: every ``out``/``inout`` parameter given as
        a host array (or left out) gets a resident buffer (``inout``: uploaded first),
        and those buffers are returned instead of host arrays. They are new each call
        (and bound each call): for a hot loop, allocate them once and pass them in."""
        call = self._bind(kernel, inputs, scalars)  # validated in full, nothing made yet
        made: dict[str, ResidentBuffer] = {}
        try:
            for p in kernel.buffer_params:
                if p.role == "in":
                    continue
                given = inputs.get(p.name)
                if given is None:
                    length = call.lengths[p.name]
                    made[p.name] = await self.alloc(length * p.dtype.itemsize, p.dtype)
                elif not isinstance(given, ResidentBuffer) and not (
                    is_foreign(given) and host_view(given) is None
                ):
                    made[p.name] = await self.upload(self._host_array(given, p.name))
            await self._dispatch_resident(kernel, {**inputs, **made}, scalars, config)
        except BaseException:
            with anyio.CancelScope(shield=True):
                for buffer in made.values():
                    with contextlib.suppress(VyreError):
                        await self.settle([buffer])
                        await self.free(buffer)
            raise
        return made

    @abstractmethod
    def _bind(
        self, kernel: Kernel, inputs: Mapping[str, Any], scalars: Mapping[str, Any]
    ) -> BoundCall[Any]:
        """Validate a call in full (names, dtypes, lengths, scalars, buffers)."""

    async def _dispatch_resident(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: dict[str, Any],
        config: DispatchConfig | None,
    ) -> None:
        """Run a dispatch whose outputs are all resident (``outputs="device"``)."""
        await self.dispatch(kernel, inputs, config=config, **scalars)

    @abstractmethod
    async def prepare(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PreparedDispatch:
        """Bind and check a dispatch once; ``await prepared(**scalars)`` runs it."""

    def _new_completion(self) -> Completion:
        completion = Completion()
        self._in_flight.add(completion)
        completion.add_done_callback(lambda: self._in_flight.discard(completion))
        return completion

    def _observe(self, timing: DispatchTiming) -> None:
        self._counters.sync_points += 1
        self._counters.wall_ns_total += timing.wall_ns
        self._counters.wait_ns_total += timing.wait_ns
        self._counters.device_ns_total += timing.device_ns or 0

    # ----------------------------------------------------------------- telemetry
    def telemetry(self) -> TelemetrySnapshot:
        """A frozen snapshot of this backend's counters."""
        return self._counters.snapshot(backend=self.kind, device=self.device_name, **self._gauges())

    def activity(self) -> Activity:
        """The activity counters alone: cheaper than :meth:`telemetry` (no gauges)."""
        return self._counters.activity()

    def reset_telemetry(self) -> None:
        """Zero the activity counters (live-memory gauges stay)."""
        self._counters.reset()

    def _gauges(self) -> dict[str, int]:
        return {}

    def _count_resident(self, buffers: int, nbytes: int) -> None:
        self._counters.resident_buffers_live += buffers
        self._counters.resident_bytes_live += nbytes

    # ----------------------------------------------------------------- hooks
    async def _open(self) -> None:
        """Acquire the device (nothing runs in the background yet)."""

    async def _drain(self) -> None:
        """Wait for work the backend tracks itself (CUDA: every fence of its streams),
        before resident storage is released on close."""

    async def _start_background(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start background tasks (the completion watcher) in ``task_group``."""

    async def _close(self) -> None:
        """Release the device after all work finished and buffers were released."""
