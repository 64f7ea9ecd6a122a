"""What every backend shares: lifecycle, validation, resident bookkeeping, telemetry.

A concrete backend (CPU, CUDA) supplies the few ``_enqueue_*`` / ``_store`` hooks that
actually move bytes and run kernels; everything a caller can get wrong is checked
here, once, before any hook runs.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, Literal, Self, TypeVar

import anyio
import numpy as np

from .._lifecycle import Lifecycle, LifecycleState
from ..errors import LifecycleError, ValidationError, VyreError
from ..kernels import BoundCall, Kernel
from ..logging import get_logger
from ..streams import Completion, DispatchTiming, PendingDispatch
from ..telemetry import Activity, TelemetryCounters, TelemetrySnapshot
from ._config import DispatchConfig
from ._interop import Borrowed, host_view, is_foreign
from ._prepared import PreparedSequence, SequenceResult
from ._prepared_dispatch import PreparedDispatch
from ._resident import Exporter, ResidentBuffer, ResidentRegistry
from ._sequence import ReadRange, SequenceStep, bind_step, resolve_range

S = TypeVar("S")
Outputs = dict[str, np.ndarray]
#: Where ``dispatch`` leaves a dispatch's outputs.
OutputPlace = Literal["host", "device"]
#: (storage, handle, offset, count) of one range to read, already checked.
ReadPlan = tuple[Any, ResidentBuffer, int, int]
#: Bound sequence steps remembered per backend (sessions repeat the same steps).
_BOUND_STEP_CACHE = 4096
#: Seconds a closing backend waits for unfinished work before it gives up on it.
CLOSE_DEADLINE_S = 30.0


class BackendCore(Lifecycle, ABC, Generic[S]):
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
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        try:
            await self._start_background(task_group)
        except BaseException:
            task_group.cancel_scope.cancel()
            with anyio.CancelScope(shield=True):
                await self._close()
            await task_group.__aexit__(None, None, None)
            self._enter_closed()
            raise
        self._task_group = task_group
        self._log = self._log.bind(backend=self.kind, device=self.device_name)
        self._log.info("backend opened")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None

    async def aclose(self) -> None:
        """Refuse new work, wait for unfinished work, free everything. Idempotent."""
        was_open = self._state is LifecycleState.OPEN
        self._enter_closed()
        if not was_open:
            return
        task_group, self._task_group = self._task_group, None
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(CLOSE_DEADLINE_S) as scope:
                for completion in list(self._in_flight):
                    await _quietly(completion)
                await self._drain()
            if scope.cancelled_caught:
                self._log.warning("closing with unfinished work", unfinished=len(self._in_flight))
            for buffer, storage, exported in self._registry.drain():
                if exported:
                    self._outlive_close(buffer, storage)
                else:
                    self._release(storage)
            await self._close()
        if task_group is not None:
            # Outside the shield: a task group's scope must be exited as the innermost one.
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)
        self._log.info("backend closed")

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

    def submit_sequence(
        self,
        steps: Sequence[SequenceStep],
        *,
        reads: Sequence[ReadRange] = (),
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Run steps in order on one stream, then read ranges back; one host sync.

        Returns:
            A pending dispatch whose outputs are the read ranges, in order.
        """
        return self.submit_repeated(steps, (), repeat_count=0, reads=reads, config=config)

    def submit_repeated(
        self,
        prefix: Sequence[SequenceStep],
        repeated: Sequence[SequenceStep],
        *,
        repeat_count: int,
        reads: Sequence[ReadRange] = (),
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Run ``prefix`` once, then ``repeated`` ``repeat_count`` times, then read back.

        Everything runs on one stream with one host synchronisation at the end.

        Raises:
            ValidationError: A step or range is invalid (nothing was enqueued).
        """
        start = time.perf_counter_ns()
        self._check_open()
        check_repeat_count(repeat_count)
        prepared = self.prepare_repeated(prefix, repeated, reads=reads)
        return prepared._submit(repeat_count, None, config, start)

    def prepare_repeated(
        self,
        prefix: Sequence[SequenceStep],
        repeated: Sequence[SequenceStep],
        *,
        reads: Sequence[ReadRange] = (),
    ) -> PreparedSequence:
        """Bind and check a repeated sequence once, to submit it many times.

        ``prepared.submit(repeat_count, scalars=...)`` then does what
        ``submit_repeated`` does with these steps, without binding them, planning the
        reads or working out the buffers' uses again; prefix scalars may change per
        submission. Resident sessions run every traversal this way.

        Raises:
            ValidationError: A step or range is invalid.
            LifecycleError: The backend is not open, or a buffer was freed.
        """
        self._check_open()
        bound_prefix = [self._bind_step(i, s) for i, s in enumerate(prefix)]
        bound_repeated = [self._bind_step(len(prefix) + i, s) for i, s in enumerate(repeated)]
        plans = self._plan_reads(reads)
        uses = _uses([*bound_prefix, *bound_repeated])
        for r in reads:
            uses.setdefault(r.buffer, False)
        return PreparedSequence(self, prefix, bound_prefix, bound_repeated, plans, uses)

    @abstractmethod
    def _submit_bound(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig | None,
        start: int,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Enqueue one run of a prepared sequence (``PreparedSequence.submit``).

        ``prefix`` is the prepared prefix, or its binding with new scalars. ``start``
        is when the submission began (``perf_counter_ns``), for ``enqueue_ns``.
        """

    @abstractmethod
    async def _run_bound(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        start: int,
    ) -> SequenceResult:
        """Run a prepared sequence once and wait for it (``PreparedSequence.run``)."""

    def _bind_step(self, index: int, step: SequenceStep) -> BoundCall[ResidentBuffer]:
        """Bind a sequence step, reusing the binding of an identical earlier step.

        Sessions submit the same steps (kernel, buffers, scalars) batch after batch;
        a binding depends on nothing else, since a buffer's dtype and size never change.
        """
        try:
            key = (
                id(step.kernel),
                tuple((name, b.id) for name, b in step.buffers.items()),
                tuple(step.scalars.items()),
            )
            cached = self._bound_steps.get(key)
        except (AttributeError, TypeError):  # not a SequenceStep of buffers: bind reports it
            return bind_step(index, step)
        if cached is not None and cached.kernel is step.kernel:
            return cached
        call = bind_step(index, step)
        if len(self._bound_steps) >= _BOUND_STEP_CACHE:
            self._bound_steps.clear()
        self._bound_steps[key] = call
        return call

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

    # ----------------------------------------------------------------- resident memory
    async def upload(self, array: np.ndarray) -> ResidentBuffer:
        """Copy an array to the backend; the handle keeps its dtype and shape.

        ``array`` may also be a PyTorch CPU tensor (or any host DLPack producer) and,
        on the CUDA backend, a CuPy/PyTorch/JAX device array (copied device to
        device, after the producer's stream).
        """
        self._check_open()
        source = self._source(array, "upload")
        data = np.ascontiguousarray(source) if isinstance(source, np.ndarray) else source
        storage = await self._store(data.dtype, data.size, data)
        self._counters.bytes_uploaded += data.nbytes
        self._counters.resident_allocations += 1
        return self._registry.add(storage, data.dtype, data.shape)

    async def upload_group(self, arrays: Sequence[np.ndarray]) -> tuple[ResidentBuffer, ...]:
        """Copy several arrays to the backend in one allocation and one transfer.

        Each array gets its own handle (dtype and shape kept, 256-byte aligned) inside
        one slab; the slab's memory is returned when the last of them is freed. A
        resident graph uploads its CSR arrays this way.
        """
        self._check_open()
        for array in arrays:
            if not isinstance(array, np.ndarray):
                raise TypeError(f"upload_group takes NumPy arrays, got {type(array).__name__}")
        datas = [np.ascontiguousarray(a) for a in arrays]
        storages = await self._store_group(datas)
        self._counters.bytes_uploaded += sum(d.nbytes for d in datas)
        self._counters.resident_allocations += 1
        return tuple(
            self._registry.add(storage, d.dtype, d.shape)
            for storage, d in zip(storages, datas, strict=True)
        )

    async def alloc(self, nbytes: int, dtype: Any = np.uint8) -> ResidentBuffer:
        """Allocate a zero-filled resident buffer of ``nbytes`` bytes of ``dtype``."""
        self._check_open()
        dt = np.dtype(dtype)
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise ValueError(f"nbytes must be a non-negative int, got {nbytes!r}")
        if nbytes % dt.itemsize:
            raise ValidationError(
                f"{nbytes} bytes is not a whole number of {dt} elements ({dt.itemsize} bytes)",
                fix=f"ask for a multiple of {dt.itemsize} bytes.",
            )
        storage = await self._store(dt, nbytes // dt.itemsize, None)
        self._counters.resident_allocations += 1
        return self._registry.add(storage, dt, (nbytes // dt.itemsize,))

    async def write(self, buffer: ResidentBuffer, data: np.ndarray, offset: int = 0) -> None:
        """Overwrite elements ``[offset, offset + data.size)`` of a resident buffer.

        ``data`` may be what :meth:`upload` takes.

        Raises:
            ValidationError: Wrong dtype or out-of-range span.
            LifecycleError: The buffer is freed or used by an unfinished dispatch.
        """
        self._check_open()
        storage = self._registry.storage(buffer)
        source = self._source(data, "write")
        if source.dtype != buffer.dtype:
            raise ValidationError(
                f"cannot write {source.dtype} data into resident buffer {buffer.id} of "
                f"{buffer.dtype}",
                fix=f"convert first: data.astype(np.{buffer.dtype}) (PyTorch: data.to(...)).",
            )
        offset, _ = resolve_range(buffer, offset, source.size)
        self._registry.check_idle(buffer, "overwritten")
        completion = self._new_completion()
        # Held while it copies: work submitted meanwhile waits, freeing is refused;
        # backends return from a cancelled copy only once it has ended.
        self._registry.hold_copy_in(buffer, completion)
        if isinstance(source, np.ndarray):
            source = np.ascontiguousarray(source)
        try:
            await self._write(storage, offset * buffer.dtype.itemsize, source)
        finally:
            completion.complete()
        self._counters.bytes_uploaded += source.nbytes

    async def read(
        self,
        buffer: ResidentBuffer,
        offset: int = 0,
        count: int | None = None,
        *,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Copy elements back; a whole-buffer read keeps the uploaded shape.

        Waits for unfinished dispatches that use the buffer first. On the CUDA
        backend a new array of 2-32 MiB is lent over host memory the backend keeps:
        an ordinary writable array whose ``base`` is a lease; once it and every view
        of it are gone, a later read may use that memory again, page-locked (see
        ``vyre_async/backends/_host_results.py``). Arrays held at once never share
        memory.

        Args:
            buffer: The resident buffer.
            offset: First element.
            count: Elements to read (default: to the end).
            out: Copy into this array and return it instead of a new one: writeable,
                C-contiguous, of the buffer's dtype, holding exactly the elements
                read (any shape). On the CUDA backend, a page-locked ``out`` (CuPy's
                ``cupyx.empty_pinned``, memory registered with ``cuMemHostRegister``)
                takes the copy straight from the device with no staging or host copy,
                which for large reads is most of their cost; if the read is
                cancelled, it returns only once the copy stopped writing into ``out``.

        Raises:
            ValidationError: ``out`` does not fit the read (nothing was copied).
        """
        if out is None:
            (result,) = await self.read_many([ReadRange(buffer, offset, count)])
            if offset == 0 and count is None:
                return result.reshape(buffer.shape)
            return result
        self._check_open()
        (plan,) = self._plan_reads([ReadRange(buffer, offset, count)])
        target = self._source(out, "read(out=...)") if is_foreign(out) else out
        check_out(target, buffer.dtype, plan[3])
        completion = await self._hold_for_reading([buffer])
        try:
            await self._read_into(plan, target)
        finally:
            completion.complete()
        self._counters.bytes_downloaded += target.nbytes
        self._counters.sync_points += 1
        return out

    async def read_many(self, ranges: Sequence[ReadRange]) -> list[np.ndarray]:
        """Copy several ranges back behind one fence; arrays in the order asked."""
        self._check_open()
        plans = self._plan_reads(ranges)
        completion = await self._hold_for_reading([plan[1] for plan in plans])
        try:
            arrays = await self._read(plans)
        finally:
            completion.complete()
        self._counters.bytes_downloaded += sum(a.nbytes for a in arrays)
        self._counters.sync_points += 1
        return arrays

    def owns(self, buffer: object) -> bool:
        """Whether ``buffer`` is a live resident buffer of this backend (not freed)."""
        return self._registry.owns(buffer)

    async def settle(self, buffers: Sequence[ResidentBuffer]) -> None:
        """Wait until no unfinished dispatch or sequence uses ``buffers``.

        For cleanup after a cancelled await: the work it started keeps running, and
        its buffers can be freed once this returns.
        """
        self._check_open()
        for buffer in buffers:
            for user in self._registry.users(buffer):
                await _quietly(user)

    async def free(self, buffer: ResidentBuffer) -> None:
        """Release a resident buffer; refused while an unfinished dispatch uses it.

        A buffer handed to another library (``__cuda_array_interface__``, ``__dlpack__``)
        is dead for vyre_async at once, but its memory goes back to the pool only once
        the handle and every exported view of it are gone: freeing never leaves a view
        pointing at reused memory.
        """
        self._check_open()
        storage, exported = self._registry.remove(buffer)
        if exported:
            weakref.finalize(buffer, self._release_late, storage)
        else:
            self._release(storage)

    def _release_late(self, storage: S) -> None:
        """An exported buffer's last reference went (any thread, at collection time)."""
        try:
            if self._state is LifecycleState.OPEN:
                self._release(storage)
            else:
                self._free_orphan(storage)
        except Exception:  # a finalizer must not raise; the memory is lost, not reused
            self._log.exception("releasing an exported buffer failed")

    def _outlive_close(self, buffer: ResidentBuffer, storage: S) -> None:
        """The backend closes while ``buffer`` was exported: keep its memory out of the
        pools (which free everything on close) until the handle and its views go."""
        self._detach(storage)
        weakref.finalize(buffer, self._release_late, storage)

    def _host_array(self, value: Any, what: str) -> np.ndarray:
        """``value`` as a host array: itself, or a NumPy view of a host DLPack producer
        (a PyTorch CPU tensor). A device array is refused here; the CUDA backend takes
        those before asking.

        Raises:
            ValidationError: ``value`` is a device array.
            TypeError: ``value`` is no array at all.
        """
        if isinstance(value, np.ndarray):
            return value
        view = host_view(value)
        if view is not None:
            return view
        if is_foreign(value):
            raise ValidationError(
                f"{what} was given a device array ({type(value).__name__}); the "
                f"{self.kind} backend works on host memory",
                fix="pass a host array (cupy.asnumpy(x), x.cpu().numpy()), or open the "
                "CUDA backend (open_backend('cuda')) to use device arrays in place.",
            )
        raise TypeError(f"{what} takes a NumPy array, got {type(value).__name__}")

    def _source(self, value: Any, what: str) -> Any:
        """An array to copy from or into: a host array here (see :meth:`_host_array`);
        the CUDA backend also borrows device arrays (:class:`~._interop.Borrowed`)."""
        return self._host_array(value, what)

    def _exporter(self) -> Exporter:
        """How this backend shows its buffers to other libraries."""
        return Exporter()

    def _detach(self, storage: S) -> None:
        """Take exported storage out of the pools before they close (CUDA)."""

    def _free_orphan(self, storage: S) -> None:
        """Free exported storage that outlived the backend (CUDA)."""

    async def _hold_for_reading(self, buffers: list[ResidentBuffer]) -> Completion:
        """Hold ``buffers`` as a reader until the returned completion is completed,
        once the work the read must follow has finished.

        While a read copies, freeing or overwriting its buffers is refused and later
        writers wait for it, as for a dispatch that reads them; backends return from a
        cancelled read only once its copies have ended, so the caller completes the
        hold only then. Closing the backend waits for reads in flight too.
        """
        completion = self._new_completion()
        try:
            for earlier in self._registry.reserve(dict.fromkeys(buffers, False), completion):
                await _quietly(earlier)
        except BaseException:
            completion.complete()
            raise
        return completion

    def _plan_reads(self, ranges: Sequence[ReadRange]) -> list[ReadPlan]:
        plans: list[ReadPlan] = []
        for r in ranges:
            if not isinstance(r, ReadRange):
                raise TypeError(f"expected a ReadRange, got {type(r).__name__}")
            storage = self._registry.storage(r.buffer)
            offset, count = resolve_range(r.buffer, r.offset, r.count)
            plans.append((storage, r.buffer, offset, count))
        return plans

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

    @abstractmethod
    async def _store(self, dtype: np.dtype[Any], count: int, data: np.ndarray | None) -> S:
        """New storage of ``count`` elements holding ``data`` (zeros when ``None``)."""

    @abstractmethod
    async def _store_group(self, datas: list[np.ndarray]) -> list[S]:
        """Storage for each array, all inside one allocation, holding the data."""

    @abstractmethod
    async def _write(self, storage: S, byte_offset: int, data: np.ndarray) -> None:
        """Copy ``data`` into storage at ``byte_offset``."""

    @abstractmethod
    async def _read(self, plans: list[ReadPlan]) -> list[np.ndarray]:
        """Copy the planned ranges back as new arrays."""

    @abstractmethod
    async def _read_into(self, plan: ReadPlan, out: np.ndarray) -> None:
        """Copy one planned range into ``out`` (already checked to fit)."""

    @abstractmethod
    def _release(self, storage: S) -> None:
        """Return idle storage to its pool."""


def check_out(out: object, dtype: np.dtype[Any], count: int) -> None:
    """Refuse an ``out`` that is not a writeable, C-contiguous ``dtype`` array of ``count``.

    Raises:
        ValidationError: Naming what does not fit; nothing has been written.
    """
    fix = f"pass np.empty({count}, np.{dtype}) (or cupyx.empty_pinned(({count},), np.{dtype}))."
    if isinstance(out, Borrowed):  # a device array (contiguity was checked borrowing it)
        if out.dtype != dtype or out.size != count:
            raise ValidationError(
                f"out is a {out.dtype} device array of {out.size} element(s); this needs "
                f"{dtype} and {count}",
                fix=f"pass a contiguous {dtype} device array of {count} elements.",
            )
        return
    if is_foreign(out) and host_view(out) is None:
        return  # a device array given to a session: the backend checks it when copying
    if not isinstance(out, np.ndarray):
        raise ValidationError(f"out must be a NumPy array, got {type(out).__name__}", fix=fix)
    if out.dtype != dtype or out.size != count:
        raise ValidationError(
            f"out is a {out.dtype} array of {out.size} element(s); this needs {dtype} and {count}",
            fix=fix,
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValidationError(
            "out must be a writeable, C-contiguous array, not a view or slice", fix=fix
        )


def check_repeat_count(repeat_count: object) -> None:
    """Refuse a repeat count that is not a non-negative int."""
    if isinstance(repeat_count, bool) or not isinstance(repeat_count, int) or repeat_count < 0:
        raise ValueError(f"repeat_count must be a non-negative int, got {repeat_count!r}")


def _placed(outputs: object, scalars: dict[str, Any]) -> dict[str, Any]:
    """Check ``dispatch``'s ``outputs=`` (not ``"host"``); return the scalars unchanged."""
    if outputs != "device":
        raise ValueError(f"outputs must be 'host' or 'device', got {outputs!r}")
    return scalars


def _uses(calls: Sequence[BoundCall[Any]]) -> dict[ResidentBuffer, bool]:
    """Resident buffers the calls touch -> whether any of them writes the buffer."""
    uses: dict[ResidentBuffer, bool] = {}
    for call in calls:
        for p in call.kernel.buffer_params:
            buffer = call.buffers.get(p.name)
            if isinstance(buffer, ResidentBuffer):
                uses[buffer] = uses.get(buffer, False) or p.role != "in"
    return uses


async def _quietly(completion: Completion) -> None:
    """Wait for a completion without caring whether its work failed."""
    # The failure belongs to that dispatch's own awaiter; here only the ordering matters.
    with contextlib.suppress(Exception):
        await completion.wait()
