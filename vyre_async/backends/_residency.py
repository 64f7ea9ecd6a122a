"""Resident memory, as every backend offers it: upload, alloc, write, read, settle, free.

Everything a caller can get wrong (a foreign handle, a freed buffer, a range out of
bounds, an ``out=`` that does not fit, overwriting or freeing what unfinished work
uses) is checked here, once; the backend's hooks (``_store``, ``_write``, ``_read``,
``_release``...) only move bytes. Reads and writes are ordered after the work that
uses their buffers, and a buffer handed to another library is freed only when the
last view of it goes.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import anyio
import numpy as np

from .._lifecycle import LifecycleState
from ..errors import ValidationError
from ..streams import Completion
from ..telemetry import TelemetryCounters
from ._checks import check_out, wait_in_order, wait_quietly
from ._interop import host_view, is_foreign
from ._resident import Exporter, ResidentBuffer, ResidentRegistry
from ._sequence import ReadPlan, ReadRange, resolve_range

S = TypeVar("S")


class ResidentMemory(ABC, Generic[S]):
    """The resident-memory half of :class:`~._core.BackendCore`; ``S`` is the storage type."""

    kind: str
    _state: LifecycleState
    _registry: ResidentRegistry[S]
    _counters: TelemetryCounters
    _log: Any

    @abstractmethod
    def _check_open(self) -> anyio.abc.TaskGroup:
        """Raise unless open (and healthy); the backend's task group."""

    @abstractmethod
    def _new_completion(self) -> Completion:
        """A completion the backend waits for when it closes."""

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
                await wait_quietly(user)

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
            await wait_in_order(self._registry.reserve(dict.fromkeys(buffers, False), completion))
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
