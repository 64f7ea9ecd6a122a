"""Resident buffers: handles to memory that stays on a backend between dispatches.

The handle (:class:`ResidentBuffer`) is what callers hold; the backend keeps the
storage and the bookkeeping in a :class:`ResidentRegistry`: who owns a handle,
whether it was freed, which unfinished work uses it (dispatches, sequences, reads
and host writes), and which completions a later user must wait for so that work on
one buffer runs in submission order.

A buffer's users are the completions its record names: its last writer, its readers
since, earlier users a writer displaced while they were unfinished (work that failed
early can finish before the work it waited for), and its host writes copying in.
Finished ones stop counting by themselves: a claim costs a few stores and its end
costs nothing, since nothing has to be undone when work finishes. Finished ones are
swept out by later claims.

A claim returns the unfinished work the new work must start after, and leaves that
list on the new work (``Completion.after``). If the new work then fails before it is
enqueued (its enqueue fails, or its task is cancelled while it waits), work claimed
behind it in the meantime waits for that list instead (see
``backends._checks.still_ahead``): otherwise it would run beside the writer before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from ..errors import LifecycleError, ValidationError
from ..streams import Completion

S = TypeVar("S")

_ids = itertools.count(1)

#: Readers a record names beyond which finished ones are swept out at the next read
#: (earlier, whenever the oldest has finished).
_SWEEP_READS = 16

#: Alignment of each member inside a slab (what a kernel's widest loads want).
SLAB_ALIGN = 256


def slab_layout(sizes: list[int]) -> list[int]:
    """Start offsets of members of the given byte sizes in one slab, plus the slab size.

    Returns:
        ``len(sizes) + 1`` offsets: each member's start, then the total (at least 16).
    """
    offsets = [0]
    for size in sizes:
        offsets.append(offsets[-1] + -(-size // SLAB_ALIGN) * SLAB_ALIGN)
    offsets[-1] = max(offsets[-1], 16)
    return offsets


class Exporter:
    """How a backend shows its resident buffers to other libraries (see :mod:`._interop`).

    Every registry has one; this base exports nothing. Backends subclass it.
    """

    def pointer(self, buffer: ResidentBuffer) -> int:
        """The buffer's address (device memory on CUDA, host memory on the CPU backend)."""
        raise LifecycleError(
            f"resident buffer {buffer.id} belongs to no open backend",
            fix="use buffers only inside the backend's `async with` block.",
        )

    def cuda_array_interface(self, buffer: ResidentBuffer) -> dict[str, Any]:
        """The CUDA Array Interface (v3) of a device buffer; AttributeError elsewhere."""
        raise AttributeError("__cuda_array_interface__")

    def dlpack(self, buffer: ResidentBuffer, stream: int | None) -> Any:
        """A DLPack capsule over the buffer, ordered after its unfinished work."""
        raise BufferError(f"resident buffer {buffer.id} cannot be exported")

    def dlpack_device(self, buffer: ResidentBuffer) -> tuple[int, int]:
        """``(DLPack device type, ordinal)``."""
        raise BufferError(f"resident buffer {buffer.id} cannot be exported")


@dataclass(frozen=True, eq=False, slots=True, weakref_slot=True)
class ResidentBuffer:
    """A handle to memory resident on one backend.

    It also exports that memory to other libraries without a copy:
    ``cupy.asarray(buf)`` reads ``__cuda_array_interface__``, and
    ``torch.from_dlpack(buf)`` (or ``cupy.from_dlpack``, ``np.from_dlpack`` on the CPU
    backend) reads ``__dlpack__``. Either is ordered after the buffer's unfinished
    work on the device, without a host synchronisation. A buffer freed while an
    exported view still holds it is freed late: the handle is dead at once, its
    memory goes back to the pool once the handle and every view are gone.

    Attributes:
        id: Unique across all backends of the process (appears in error messages).
        dtype: Element type.
        shape: Shape kept from the uploaded array (``(n,)`` for ``alloc``).
        nbytes: Size in bytes.
        backend: ``"cuda"`` or ``"cpu"``.
    """

    id: int
    dtype: np.dtype[np.generic]
    shape: tuple[int, ...]
    nbytes: int
    backend: str
    _owner: Exporter = field(repr=False)

    @property
    def size(self) -> int:
        """Number of elements."""
        return self.nbytes // self.dtype.itemsize

    @property
    def ptr(self) -> int:
        """The address of the first element (device memory on the CUDA backend).

        Raises:
            LifecycleError: The buffer was freed.
        """
        return self._owner.pointer(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA Array Interface v3 (CUDA backend only), with the stream to order after."""
        return self._owner.cuda_array_interface(self)

    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule over the buffer's memory (no copy).

        Args:
            stream: The consumer's stream (CUDA): it is made to wait for the
                buffer's unfinished work. ``None`` or 1: the legacy default stream;
                2: the per-thread default stream; -1: no ordering.
            max_version: Accepted for the protocol; a legacy (unversioned) capsule
                is returned.
            dl_device: Must be the buffer's own device when given.
            copy: ``True`` is refused (the export never copies).

        Raises:
            BufferError: A copy or another device was asked for.
            LifecycleError: The buffer was freed, or has work not enqueued yet.
        """
        if copy:
            raise BufferError("resident buffers export their memory without a copy")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"resident buffer {self.id} lives on {self.__dlpack_device__()}")
        return self._owner.dlpack(self, stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(DLPack device type, ordinal)``: ``(2, n)`` on CUDA, ``(1, 0)`` on the CPU."""
        return self._owner.dlpack_device(self)


@dataclass(slots=True)
class _Record(Generic[S]):
    buffer: ResidentBuffer
    storage: S
    # Whether another library was handed the memory (its free may have to wait).
    exported: bool = False
    # The last work that writes the buffer, and work that reads it since (finished
    # ones included until the next claim sweeps them out).
    last_write: Completion | None = None
    reads: list[Completion] = field(default_factory=list)
    # Unfinished users a writer displaced from ``last_write`` and ``reads``.
    displaced: list[Completion] = field(default_factory=list)
    # Host writes copying in now; several may, into ranges of the caller's choosing.
    copies_in: list[Completion] = field(default_factory=list)

    def forget_users(self) -> None:
        """Drop the completions named (the buffer left the registry): a finished
        one's launch names this record, and the cycle would outlive the buffer."""
        self.last_write = None
        self.reads = []
        self.displaced = []

    def busy(self, *, with_copies_in: bool = True) -> int:
        """How many unfinished pieces of work use the buffer."""
        users = sum(not c._done for c in self.reads) + sum(not c._done for c in self.displaced)
        last = self.last_write
        if last is not None and not last._done:
            users += 1
        return users + len(self.copies_in) if with_copies_in else users


class ResidentRegistry(Generic[S]):
    """The live resident buffers of one backend and their in-flight state.

    Args:
        backend: The backend kind, recorded on each handle.
        on_change: Called with (buffers delta, bytes delta) so telemetry stays exact.
    """

    def __init__(
        self,
        backend: str,
        on_change: Callable[[int, int], None],
        exporter: Exporter | None = None,
    ) -> None:
        self._backend = backend
        self._owner = exporter if exporter is not None else Exporter()
        self._records: dict[int, _Record[S]] = {}
        self._on_change = on_change
        #: Bumped whenever a buffer leaves the registry: records resolved earlier
        #: (:meth:`resolve`) stay valid for as long as it is unchanged.
        self.generation = 0

    def __len__(self) -> int:
        return len(self._records)

    def add(
        self, storage: S, dtype: np.dtype[np.generic], shape: tuple[int, ...]
    ) -> ResidentBuffer:
        """Register new storage and return its handle."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buffer = ResidentBuffer(next(_ids), dtype, shape, nbytes, self._backend, self._owner)
        self._records[buffer.id] = _Record(buffer, storage)
        self._on_change(1, nbytes)
        return buffer

    def storage(self, buffer: object) -> S:
        """The storage behind a handle, after owner and liveness checks."""
        return self._record(buffer).storage

    def owns(self, buffer: object) -> bool:
        """Whether ``buffer`` is a live handle of this backend."""
        return (
            isinstance(buffer, ResidentBuffer)
            and buffer.id in self._records
            and (buffer._owner is self._owner)
        )

    def check_idle(self, buffer: ResidentBuffer, action: str) -> None:
        """Refuse ``action`` (free / overwrite) while unfinished work uses the buffer.

        Overwriting is refused for dispatches, sequences and reads, not for other host
        writes: those copy into ranges of the caller's choosing, as
        ``upload_egraph``'s chunks do side by side.
        """
        users = self._record(buffer).busy(with_copies_in=action != "overwritten")
        if users:
            single = users == 1
            plural = "dispatch, read or write" if single else "dispatches, reads or writes"
            raise LifecycleError(
                f"resident buffer {buffer.id} is used by {users} unfinished "
                f"{plural}, so it cannot be {action}",
                fix=f"await the pending work before the buffer is {action}.",
            )

    def resolve(self, uses: Mapping[ResidentBuffer, bool]) -> list[tuple[_Record[S], bool]]:
        """The records of ``uses``' buffers, checked live and owned, for :meth:`claim`
        while :attr:`generation` stays the same (a prepared sequence or bound launch
        resolves its buffers once and again only after a buffer left).
        """
        return [(self._record(b), writes) for b, writes in uses.items()]

    def reserve(
        self, uses: Mapping[ResidentBuffer, bool], completion: Completion
    ) -> list[Completion]:
        """Mark buffers in use until ``completion``; return what must finish first.

        Args:
            uses: Each buffer the work touches -> whether the work writes it.
            completion: Set when the work finished.

        Returns:
            The unfinished earlier work the new work must start after: the last
            writer of every buffer it touches, plus, for a buffer it writes, every
            reader since (readers of one buffer never wait for each other).
        """
        return self.claim(self.resolve(uses), completion)

    def claim(
        self, records: list[tuple[_Record[S], bool]], completion: Completion
    ) -> list[Completion]:
        """:meth:`reserve` for records :meth:`resolve` gave in this :attr:`generation`:
        mark their buffers in use by ``completion`` until it is done.

        Nothing is undone when it finishes: a finished completion no longer counts
        as a user (see the module docstring).

        Returns:
            The unfinished earlier work the new work must start after.
        """
        waits: list[Completion] = []
        for record, writes in records:
            last = record.last_write
            if last is not None and not last._done:
                waits.append(last)  # it started after everything it displaced
            else:
                last = None
                if record.displaced:  # its displacer failed early: they may still run
                    record.displaced = [c for c in record.displaced if not c._done]
                    waits += record.displaced
            if record.copies_in:
                waits += record.copies_in
            if writes:
                reads = record.reads
                if reads:
                    reads = [reader for reader in reads if not reader._done]
                    record.reads = []
                if last is not None or reads:
                    self._displace(record, last, reads)
                    waits += reads
                record.last_write = completion
            else:
                reads = record.reads
                if reads and (reads[0]._done or len(reads) >= _SWEEP_READS):
                    if len(reads) == 1:  # the one before, finished: this one replaces it
                        reads[0] = completion
                        continue
                    record.reads = reads = [r for r in reads if not r._done]
                reads.append(completion)
        if waits:
            if len(waits) > 1:
                waits = list({id(w): w for w in waits}.values())
            completion.after = waits  # for whoever waits for it, should it fail first
        return waits

    @staticmethod
    def _displace(record: _Record[S], last: Completion | None, reads: list[Completion]) -> None:
        """Keep the unfinished users a writer replaces: the buffer is theirs until done."""
        displaced = [c for c in record.displaced if not c._done]
        if last is not None:
            displaced.append(last)
        record.displaced = displaced + reads

    def hold_copy_in(self, buffer: ResidentBuffer, completion: Completion) -> None:
        """Mark a host write into ``buffer`` in flight until ``completion``.

        Call after ``check_idle(buffer, "overwritten")``: no dispatch, sequence or read
        uses the buffer, so the write waits for nothing; work submitted while it copies
        waits for it (see :meth:`claim`), and freeing is refused.
        """
        copies_in = self._record(buffer).copies_in
        copies_in.append(completion)
        completion.add_done_callback(lambda: copies_in.remove(completion))

    def users(self, buffer: ResidentBuffer) -> list[Completion]:
        """Every unfinished piece of work that reads or writes ``buffer``."""
        record = self._record(buffer)
        users = [c for c in (*record.reads, *record.displaced, *record.copies_in) if not c.done]
        if record.last_write is not None and not record.last_write.done:
            users.append(record.last_write)
        return users

    def remove(self, buffer: ResidentBuffer) -> tuple[S, bool]:
        """Forget an idle buffer; return its storage for the backend to release, and
        whether it was exported (then the release waits for the handle to go)."""
        self.check_idle(buffer, "freed")
        record = self._records.pop(buffer.id)
        record.forget_users()
        self.generation += 1
        self._on_change(-1, -buffer.nbytes)
        return record.storage, record.exported

    def mark_exported(self, buffer: ResidentBuffer) -> S:
        """Note that another library was handed ``buffer``'s memory; return its storage."""
        record = self._record(buffer)
        record.exported = True
        return record.storage

    def drain(self) -> list[tuple[ResidentBuffer, S, bool]]:
        """Forget every buffer (backend close); return (handle, storage, exported) each."""
        records, self._records = list(self._records.values()), {}
        self.generation += 1
        for record in records:
            record.forget_users()
            self._on_change(-1, -record.buffer.nbytes)
        return [(record.buffer, record.storage, record.exported) for record in records]

    def _record(self, buffer: object) -> _Record[S]:
        if not isinstance(buffer, ResidentBuffer):
            raise TypeError(f"expected a ResidentBuffer, got {type(buffer).__name__}")
        if buffer._owner is not self._owner:
            raise ValidationError(
                f"resident buffer {buffer.id} belongs to another {buffer.backend} backend, "
                f"not this {self._backend} backend",
                fix="use buffers only with the backend that made them; read it there and "
                "upload the array here.",
            )
        record = self._records.get(buffer.id)
        if record is None:
            raise LifecycleError(
                f"resident buffer {buffer.id} ({buffer.nbytes} bytes) was already freed",
                fix="allocate or upload a new buffer; a freed handle cannot be used again.",
            )
        return record
