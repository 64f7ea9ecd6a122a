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
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np

from ..errors import DispatchError, LifecycleError, UnsupportedFeatureError, VyreError
from ..kernels._kernel import BoundCall, Reference
from ..streams._pending import Completion
from ._config import DispatchConfig
from ._core import BackendCore, Enqueued, ReadPlan, _quietly
from ._prepared import PreparedSequence
from ._resident import ResidentBuffer, slab_layout

#: Copies larger than this go to a worker thread instead of running on the loop.
_INLINE_COPY_BYTES = 1 << 20


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

    @property
    def device_name(self) -> str:
        """The host's architecture and core count."""
        return self._device_name

    def _enqueue_dispatch(
        self,
        task_group: anyio.abc.TaskGroup,
        call: BoundCall[Any],
        config: DispatchConfig,
        completion: Completion,
        waits: list[Completion],
    ) -> Enqueued:
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

        return collect, None

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
        def bind(call: BoundCall[ResidentBuffer]) -> Callable[[], None]:
            reference = _reference_of(call)
            arrays = {name: self._registry.storage(b) for name, b in call.buffers.items()}
            outs = [arrays[p.name] for p in call.kernel.buffer_params if p.role == "out"]

            def step() -> None:
                for array in outs:
                    array.fill(0)
                reference(arrays, call.scalars)

            return step

        reads = prepared._reads
        prefix_steps = [bind(c) for c in prefix]
        repeated_steps = [bind(c) for c in prepared._repeated]
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

        return collect, None

    async def _run(
        self,
        work: Callable[[], None],
        completion: Completion,
        waits: list[Completion],
        label: str,
    ) -> None:
        error: BaseException | None = None
        try:
            for earlier in waits:
                await _quietly(earlier)
            start = time.perf_counter_ns()
            await anyio.to_thread.run_sync(work, limiter=self._limiter)
            completion.device_ns = time.perf_counter_ns() - start
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


def _reference_of(call: BoundCall[Any]) -> Reference:
    """The kernel's NumPy reference; a CUDA-only kernel (none) is refused before any work."""
    reference = call.kernel.reference
    if reference is None:
        raise UnsupportedFeatureError(
            f"kernel {call.kernel.name!r} has no NumPy reference, so the CPU backend cannot run it",
            fix="run it on a GPU (open_backend('cuda')), or give the Kernel a reference= "
            "function that computes the same outputs with NumPy.",
        )
    return reference
