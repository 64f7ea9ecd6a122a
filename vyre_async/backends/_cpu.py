"""The CPU backend: every kernel's NumPy reference, run in worker threads.

It is a full backend, not a stand-in: resident buffers are NumPy arrays kept by the
backend, dispatches run in a worker thread under a :class:`anyio.CapacityLimiter`
so the event loop never blocks, and work on a shared resident buffer runs in
submission order, as it would on one CUDA stream.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import numpy as np

from .._memory import available_host_memory
from ..errors import (
    DispatchError,
    LifecycleError,
    UnsupportedFeatureError,
    ValidationError,
    VyreError,
)
from ..kernels import BoundCall, Kernel, Reference
from ..logging import tracing_enabled
from ..streams import Completion, PendingDispatch
from ._checks import check_place, check_repeat_count, uses_of, wait_in_order
from ._config import DispatchConfig
from ._core import BackendCore, OutputPlace, Outputs
from ._interop import DL_CPU, is_foreign
from ._prepared import PreparedSequence, SequenceResult
from ._prepared_dispatch import PreparedDispatch
from ._resident import Exporter, ResidentBuffer, ResidentRegistry, slab_layout
from ._sequence import ReadPlan

#: Copies larger than this go to a worker thread instead of running on the loop.
_INLINE_COPY_BYTES = 1 << 20
_DEFAULT_CONFIG = DispatchConfig()
_TIMED_CONFIG = DispatchConfig(timing=True)


class _CpuExporter(Exporter):
    """The CPU backend's buffers are NumPy arrays: exported through NumPy's own DLPack."""

    def __init__(self) -> None:
        self.registry: ResidentRegistry[np.ndarray] | None = None

    def _storage(self, buffer: ResidentBuffer) -> np.ndarray:
        if self.registry is None:
            raise LifecycleError(
                "this buffer's backend is closed", fix="export buffers while the backend is open."
            )
        return self.registry.storage(buffer)

    def pointer(self, buffer: ResidentBuffer) -> int:
        return int(self._storage(buffer).ctypes.data)

    def dlpack(self, buffer: ResidentBuffer, stream: int | None) -> Any:
        storage = self._storage(buffer)
        assert self.registry is not None
        if self.registry.users(buffer):
            raise LifecycleError(
                f"resident buffer {buffer.id} is used by unfinished work on the CPU backend, "
                "which may be writing it right now",
                fix="await that work (or `await backend.settle([buffer])`) before handing "
                "the buffer to another library.",
            )
        self.registry.mark_exported(buffer)
        # NumPy's capsule holds the array: it outlives a free() of the handle.
        return storage.reshape(buffer.shape).__dlpack__()

    def dlpack_device(self, buffer: ResidentBuffer) -> tuple[int, int]:
        return (DL_CPU, 0)


class CpuBackend(BackendCore[np.ndarray]):
    """Runs kernels' NumPy references; the embedded default when no GPU answers.

    Args:
        workers: Worker threads running references at once (default: the number of
            cores, at most 8).
    """

    kind = "cpu"

    def __init__(self, *, workers: int | None = None) -> None:
        super().__init__()
        cores = os.cpu_count() or 1
        if workers is not None and (isinstance(workers, bool) or workers < 1):
            raise ValueError(f"workers must be a positive int, got {workers!r}")
        self._limiter = anyio.CapacityLimiter(workers or min(cores, 8))
        self._device_name = f"cpu: {platform.machine() or 'unknown'} x{cores}"
        self._exports.registry = self._registry

    def _exporter(self) -> Exporter:
        self._exports = _CpuExporter()
        return self._exports

    async def _close(self) -> None:
        self._exports.registry = None  # exports are refused once closed

    @property
    def device_name(self) -> str:
        """The host's architecture and core count."""
        return self._device_name

    async def free_memory(self) -> int:
        """Host bytes available now (the kernel's ``MemAvailable``, within the cgroup
        and address-space limits): the CPU backend's device memory is the host's."""
        return await anyio.to_thread.run_sync(available_host_memory)

    async def load_kernels(self, *kernels: Kernel) -> None:
        """Check kernels ahead of their first dispatch; the CPU backend compiles nothing.

        Code written for the CUDA backend's ``load_kernels`` runs unchanged here.

        Raises:
            TypeError: Something other than a :class:`~vyre_async.kernels.Kernel`.
            UnsupportedFeatureError: A kernel without a NumPy reference, which the CPU
                backend cannot run.
            LifecycleError: The backend is not open.
        """
        self._check_open()
        for kernel in kernels:
            if not isinstance(kernel, Kernel):
                raise TypeError(f"expected a vyre_async Kernel, got {type(kernel).__name__}")
            if kernel.reference is None:
                raise _no_reference(kernel)

    # ----------------------------------------------------------------- dispatch
    def submit(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PendingDispatch[Outputs]:
        """Validate and enqueue one kernel dispatch; return a pending dispatch at once.

        Host arrays are copied before this returns, so the caller may reuse them.

        Raises:
            ValidationError: Bad inputs (nothing was enqueued).
            LifecycleError: The backend is not open, or a buffer was freed.
        """
        start = time.perf_counter_ns()
        self._check_open()
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a vyre_async Kernel, got {type(kernel).__name__}")
        return self._submit_call(self._bind(kernel, inputs, scalars), config, start)

    def dispatch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        outputs: OutputPlace = "host",
        **scalars: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Run one dispatch and return its outputs: ``await backend.dispatch(...)``.

        Args:
            kernel: The kernel.
            inputs: Buffer parameter -> host array or resident buffer.
            config: Timeout, fixpoint iterations, timing.
            outputs: ``"host"``: host-bound outputs come back as new arrays;
                ``"device"``: they stay resident, returned as new resident buffers.
            **scalars: Scalar parameters.

        Raises:
            ValidationError: Bad inputs (nothing was run).
            LifecycleError: The backend is not open, or a buffer was freed.
            DispatchError: The kernel's reference failed.
        """
        if outputs != "host":
            return self._dispatch_to_device(kernel, inputs, check_place(outputs, scalars), config)
        return self.submit(kernel, inputs, config=config, **scalars).wait()

    async def prepare(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PreparedDispatch:
        """Bind and check a dispatch once; ``await prepared(**scalars)`` runs it.

        Host arrays among ``inputs`` are held and copied at each call.

        Raises:
            ValidationError: Bad inputs or scalars.
            LifecycleError: The backend is not open, or a buffer was freed.
        """
        self._check_open()
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a vyre_async Kernel, got {type(kernel).__name__}")
        call = self._bind(kernel, dict(inputs), scalars)
        last: Mapping[str, Any] = scalars

        def run(new_scalars: Mapping[str, Any]) -> Coroutine[Any, Any, Outputs]:
            nonlocal call, last
            start = time.perf_counter_ns()
            self._check_open()
            if new_scalars != last:
                values = kernel.bind_scalars(new_scalars, call.sizes)
                call = BoundCall(
                    call.kernel, call.buffers, values, call.sizes, call.lengths, call.launch
                )
                last = new_scalars
            for buffer in call.buffers.values():
                if isinstance(buffer, ResidentBuffer):
                    self._registry.storage(buffer)  # refuses a freed buffer
            return self._submit_call(call, config, start).wait()

        return PreparedDispatch(kernel, run, dict(scalars))

    def _bind(
        self, kernel: Kernel, inputs: Mapping[str, Any], scalars: Mapping[str, Any]
    ) -> BoundCall[Any]:
        if any(is_foreign(value) for value in inputs.values()):
            inputs = {
                name: self._host_array(value, f"buffer {name!r}") if is_foreign(value) else value
                for name, value in inputs.items()
            }
        call = kernel.bind(inputs, scalars)
        for p in kernel.buffer_params:
            given = call.buffers.get(p.name)
            if isinstance(given, ResidentBuffer):
                self._registry.storage(given)
            elif p.role == "out" and given is not None:
                raise ValidationError(
                    f"{p.name!r} is an output of kernel {kernel.name!r}; a host array "
                    "cannot receive it",
                    fix=f"leave {p.name!r} out of the inputs (it is returned), or bind a "
                    "ResidentBuffer to keep it on the device.",
                )
        return call

    def _submit_call(
        self, call: BoundCall[Any], config: DispatchConfig | None, start: int
    ) -> PendingDispatch[Outputs]:
        task_group = self._check_open()
        config = config or _DEFAULT_CONFIG
        completion = self._new_completion()
        waits = self._registry.reserve(uses_of([call]), completion)
        try:
            collect = self._enqueue_dispatch(task_group, call, config, completion, waits)
        except BaseException as exc:
            completion.complete(exc)
            raise
        self._counters.dispatches += 1
        self._counters.kernel_launches += 0 if call.launch.empty else config.fixpoint_iterations
        if tracing_enabled():
            self._log.debug(
                "dispatch submitted",
                kernel=call.kernel.name,
                launches=config.fixpoint_iterations,
            )
        return self._pending(completion, collect, config, config.label or call.kernel.name, start)

    def submit_prepared(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig | None,
        start: int,
    ) -> PendingDispatch[list[np.ndarray]]:
        task_group = self._check_open()
        check_repeat_count(repeat_count)
        config = config or _DEFAULT_CONFIG
        completion = self._new_completion()
        try:
            # A prepared sequence's buffers were checked when it was prepared; reserve
            # checks again that none was freed since, before anything is enqueued.
            waits = self._registry.reserve(prepared.uses, completion)
            collect = self._enqueue_sequence(
                task_group, prepared, prefix, repeat_count, config, completion, waits
            )
        except BaseException as exc:
            completion.complete(exc)
            raise
        repeated = prepared.repeated
        launches = sum(not c.launch.empty for c in prefix) + repeat_count * sum(
            not c.launch.empty for c in repeated
        )
        self._counters.dispatches += 1
        self._counters.kernel_launches += launches
        if tracing_enabled():
            self._log.debug("sequence submitted", launches=launches, reads=len(prepared.reads))
        label = config.label or f"sequence of {len(prefix)}+{len(repeated)}x{repeat_count} steps"
        return self._pending(completion, collect, config, label, start)

    async def run_prepared(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        start: int,
    ) -> SequenceResult:
        pending = self.submit_prepared(prepared, prefix, repeat_count, _TIMED_CONFIG, start)
        result = await pending.timed()
        return SequenceResult(result.outputs, result.timing.device_ns or 0)

    def _pending(
        self,
        completion: Completion,
        collect: Callable[[], Any],
        config: DispatchConfig,
        label: str,
        start: int,
    ) -> PendingDispatch[Any]:
        enqueue_ns = time.perf_counter_ns() - start
        self._counters.enqueue_ns_total += enqueue_ns
        return PendingDispatch(
            completion,
            collect,
            label=label,
            submitted_ns=start,
            enqueue_ns=enqueue_ns,
            timeout=config.timeout,
            observe=self._observe,
        )

    def _enqueue_dispatch(
        self,
        task_group: anyio.abc.TaskGroup,
        call: BoundCall[Any],
        config: DispatchConfig,
        completion: Completion,
        waits: list[Completion],
    ) -> Callable[[], Outputs]:
        reference = _reference_of(call)
        arrays: dict[str, np.ndarray] = {}
        host_outputs: dict[str, tuple[int, ...]] = {}
        to_clear: list[np.ndarray] = []
        for p in call.kernel.buffer_params:
            given = call.buffers.get(p.name)
            if isinstance(given, ResidentBuffer):
                arrays[p.name] = self._registry.storage(given)
                if p.role == "out":
                    to_clear.append(arrays[p.name])
            elif given is None:
                arrays[p.name] = np.zeros(call.lengths[p.name], dtype=p.dtype)
                host_outputs[p.name] = (call.lengths[p.name],)
            else:
                # Host inputs are staged at submit, as the CUDA backend stages them into
                # pinned memory: the caller may reuse its arrays as soon as submit returns.
                arrays[p.name] = np.array(given, dtype=p.dtype, copy=True).reshape(-1)
                if p.role == "inout":
                    host_outputs[p.name] = np.shape(given)

        def work() -> None:
            for array in to_clear:
                array.fill(0)
            for _ in range(config.fixpoint_iterations):
                reference(arrays, call.scalars)

        label = config.label or call.kernel.name
        task_group.start_soon(self._run, work, completion, waits, label)

        def collect() -> dict[str, np.ndarray]:
            outputs = {name: arrays[name].reshape(shape) for name, shape in host_outputs.items()}
            self._counters.bytes_downloaded += sum(a.nbytes for a in outputs.values())
            return outputs

        return collect

    def _enqueue_sequence(
        self,
        task_group: anyio.abc.TaskGroup,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig,
        completion: Completion,
        waits: list[Completion],
    ) -> Callable[[], list[np.ndarray]]:
        def bind(call: BoundCall[ResidentBuffer]) -> Callable[[], None]:
            reference = _reference_of(call)
            arrays = {name: self._registry.storage(b) for name, b in call.buffers.items()}
            outs = [arrays[p.name] for p in call.kernel.buffer_params if p.role == "out"]

            def step() -> None:
                for array in outs:
                    array.fill(0)
                reference(arrays, call.scalars)

            return step

        reads = prepared.reads
        prefix_steps = [bind(c) for c in prefix]
        repeated_steps = [bind(c) for c in prepared.repeated]
        results: list[np.ndarray] = []

        def work() -> None:
            for step in prefix_steps:
                step()
            for _ in range(repeat_count):
                for step in repeated_steps:
                    step()
            results.extend(
                storage[offset : offset + count].copy() for storage, _, offset, count in reads
            )

        label = f"sequence of {len(prefix)}+{len(repeated_steps)}x{repeat_count} steps"
        task_group.start_soon(self._run, work, completion, waits, label)

        def collect() -> list[np.ndarray]:
            self._counters.bytes_downloaded += sum(a.nbytes for a in results)
            return results

        return collect

    async def _run(
        self,
        work: Callable[[], None],
        completion: Completion,
        waits: list[Completion],
        label: str,
    ) -> None:
        error: BaseException | None = None
        try:
            await wait_in_order(waits)
            completion.device_ns = await anyio.to_thread.run_sync(
                _run_timed, work, limiter=self._limiter
            )
        except VyreError as exc:
            error = exc
        except Exception as exc:
            self._log.exception("dispatch failed", kernel=label)
            error = DispatchError(
                f"{label} failed on the CPU backend: {type(exc).__name__}: {exc}",
                fix="check the kernel's reference implementation and its inputs.",
            )
        except BaseException:
            error = LifecycleError(
                f"{label} was cancelled because the backend closed before it ran",
                fix="await pending dispatches before closing the backend.",
            )
            raise
        finally:
            completion.complete(error)

    def enqueue_peer_copy(
        self,
        src: ResidentBuffer,
        src_offset: int,
        target: CpuBackend,
        dst: ResidentBuffer,
        dst_offset: int,
        count: int,
    ) -> Completion:
        """Copy ``count`` elements of ``src`` into ``dst`` on ``target``, in order: after
        the work either buffer must follow, and before later work on either.

        Returns the copy's completion at once; it runs in a worker thread of this
        backend. The ranges were checked by the caller.

        Raises:
            LifecycleError: A backend is closed or a buffer freed (nothing was claimed).
        """
        task_group = self._check_open()
        target._check_open()
        source_records = self._registry.resolve({src: False})
        target_records = target._registry.resolve({dst: True})
        source = self._registry.storage(src)[src_offset : src_offset + count]
        destination = target._registry.storage(dst)[dst_offset : dst_offset + count]
        completion = self._new_completion()
        waits = self._registry.claim(source_records, completion)
        waits += target._registry.claim(target_records, completion)
        if waits:
            completion.after = waits = list({id(w): w for w in waits}.values())

        def work() -> None:
            np.copyto(destination, source)

        task_group.start_soon(self._run, work, completion, waits, "copy between devices")
        return completion

    async def _store(self, dtype: np.dtype[Any], count: int, data: np.ndarray | None) -> np.ndarray:
        if data is None:
            return np.zeros(count, dtype=dtype)
        return await self._copy(data.reshape(-1))

    async def _store_group(self, datas: list[np.ndarray]) -> list[np.ndarray]:
        layout = slab_layout([d.nbytes for d in datas])
        slab = np.empty(layout[-1], dtype=np.uint8)
        views = []
        for data, start in zip(datas, layout, strict=False):
            view = slab[start : start + data.nbytes].view(data.dtype)
            await self._copy_into(view, data.reshape(-1))
            views.append(view)
        return views

    async def _copy_into(self, target: np.ndarray, source: np.ndarray) -> None:
        if source.nbytes > _INLINE_COPY_BYTES:
            await anyio.to_thread.run_sync(np.copyto, target, source, limiter=self._limiter)
        else:
            np.copyto(target, source)

    async def _write(self, storage: np.ndarray, byte_offset: int, data: np.ndarray) -> None:
        start = byte_offset // storage.dtype.itemsize
        await self._copy_into(storage[start : start + data.size], data.reshape(-1))

    async def _read(self, plans: list[ReadPlan]) -> list[np.ndarray]:
        return [
            await self._copy(storage[offset : offset + count])
            for storage, _, offset, count in plans
        ]

    async def _read_into(self, plan: ReadPlan, out: np.ndarray) -> None:
        storage, _, offset, count = plan
        source, target = storage[offset : offset + count], out.reshape(-1)
        if source.nbytes > _INLINE_COPY_BYTES:
            await anyio.to_thread.run_sync(np.copyto, target, source, limiter=self._limiter)
        else:
            np.copyto(target, source)

    def _release(self, storage: np.ndarray) -> None:
        # NumPy storage is garbage-collected once the registry forgets it.
        pass

    async def _copy(self, array: np.ndarray) -> np.ndarray:
        if array.nbytes > _INLINE_COPY_BYTES:
            return await anyio.to_thread.run_sync(np.copy, array, limiter=self._limiter)
        return array.copy()


def _run_timed(work: Callable[[], None]) -> int:
    """Run ``work`` in a worker thread; return its run time in nanoseconds.

    The clock is read in the worker, around the references alone: the time a dispatch
    waited for a free worker is not device time (the awaiting task's ``wait_ns`` has
    it). At most ``workers`` dispatches run at once, so their device times add up to
    at most the elapsed time times ``workers``.
    """
    start = time.perf_counter_ns()
    work()
    return time.perf_counter_ns() - start


def _reference_of(call: BoundCall[Any]) -> Reference:
    """The kernel's NumPy reference; a CUDA-only kernel (none) is refused before any work."""
    reference = call.kernel.reference
    if reference is None:
        raise _no_reference(call.kernel)
    return reference


def _no_reference(kernel: Kernel) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"kernel {kernel.name!r} has no NumPy reference, so the CPU backend cannot run it",
        fix="run it on a GPU (open_backend('cuda')), or give the Kernel a reference= "
        "function that computes the same outputs with NumPy.",
    )
