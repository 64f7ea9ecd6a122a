"""Kernel views: a resident image resolved into one checked pointer (or array) per column.

On the CUDA backend a column is the buffer's device address plus the column's byte
offset; on the CPU backend it is a read-only NumPy view of the same words. Either
way every span is checked first: it must lie inside the buffer, and the pointer
arithmetic must not overflow a 64-bit address. An error names the column and its
byte range.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from ..._lifecycle import LifecycleState
from ...errors import LifecycleError, ValidationError
from ._layout import U64_MAX, WORD_BYTES, EGraphByteLayout

if TYPE_CHECKING:
    from ...backends import Backend
    from ._upload import ResidentEGraph

#: DLPack's device type of host memory (the CPU backend's buffers).
DL_CPU = 1

_RELAYOUT_FIX = (
    "upload the e-graph with vyre_async.upload_egraph() and use the layout it returned "
    "with that same buffer."
)


@dataclass(frozen=True, slots=True)
class DeviceColumn:
    """One column of a resident image on the device.

    Attributes:
        ptr: Device address of the column's first word.
        nbytes: Bytes in the column.
    """

    ptr: int
    nbytes: int

    @property
    def count(self) -> int:
        """``u32`` words in the column."""
        return self.nbytes // WORD_BYTES


@dataclass(frozen=True, eq=False)
class EGraphDeviceView:
    """Per-column device pointers of a resident image (CUDA backend).

    Attributes:
        base_ptr: Device address of the image buffer.
        columns: Column name -> :class:`DeviceColumn`.
    """

    base_ptr: int
    columns: Mapping[str, DeviceColumn]

    def __getitem__(self, name: str) -> DeviceColumn:
        return self.columns[name]


@dataclass(frozen=True, eq=False)
class EGraphHostView:
    """Per-column read-only NumPy views of a resident image (CPU backend).

    Attributes:
        base_ptr: Host address of the image buffer.
        columns: Column name -> ``<u4`` array viewing the buffer (no copy).
    """

    base_ptr: int
    columns: Mapping[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]


def check_column_spans(base_ptr: int, buffer_nbytes: int, layout: EGraphByteLayout) -> None:
    """Refuse any column outside the buffer or whose address arithmetic overflows ``u64``.

    Args:
        base_ptr: Address of the buffer's first byte.
        buffer_nbytes: Bytes the buffer holds.
        layout: The image's byte layout.

    Raises:
        ValidationError: Naming the first bad column and its byte range.
    """
    if not 0 <= base_ptr <= U64_MAX:
        raise ValidationError(
            f"base pointer {base_ptr:#x} is not a 64-bit address",
            fix="resolve views through vyre_async.egraph_view(), which reads the real address.",
        )
    for name, span in layout.spans.items():
        if span.end > buffer_nbytes:
            raise ValidationError(
                f"column {name!r} spans bytes [{span.offset}, {span.end}), outside the "
                f"resident buffer of {buffer_nbytes} bytes",
                fix=_RELAYOUT_FIX,
            )
        if base_ptr + span.end > U64_MAX:
            raise ValidationError(
                f"column {name!r} at bytes [{span.offset}, {span.end}) from base pointer "
                f"{base_ptr:#x} overflows a 64-bit address (end {base_ptr + span.end:#x})",
                fix="shard the e-graph before upload, and resolve views through "
                "vyre_async.egraph_view() so the base pointer is the buffer's own.",
            )


def resolve_device_view(
    base_ptr: int, buffer_nbytes: int, layout: EGraphByteLayout
) -> EGraphDeviceView:
    """Column pointers ``base_ptr + offset``, after :func:`check_column_spans`."""
    check_column_spans(base_ptr, buffer_nbytes, layout)
    columns = {
        name: DeviceColumn(base_ptr + span.offset, span.nbytes)
        for name, span in layout.spans.items()
    }
    return EGraphDeviceView(base_ptr, MappingProxyType(columns))


def resolve_host_view(storage: np.ndarray, layout: EGraphByteLayout) -> EGraphHostView:
    """Read-only column views of a host buffer, after :func:`check_column_spans`."""
    base_ptr = int(storage.__array_interface__["data"][0])
    check_column_spans(base_ptr, storage.nbytes, layout)
    raw = storage.reshape(-1).view(np.uint8)
    columns: dict[str, np.ndarray] = {}
    for name, span in layout.spans.items():
        column = raw[span.offset : span.end].view("<u4")
        column.setflags(write=False)
        columns[name] = column
    return EGraphHostView(base_ptr, MappingProxyType(columns))


def egraph_view(backend: Backend, image: ResidentEGraph) -> EGraphDeviceView | EGraphHostView:
    """The checked per-column view of a resident e-graph image.

    Device pointers on the CUDA backend; read-only NumPy views of the image on the
    CPU backend (exported through DLPack, so the memory outlives a ``free`` for as
    long as the view is held).

    Args:
        backend: The open backend the image was uploaded to.
        image: What :func:`upload_egraph` returned.

    Raises:
        LifecycleError: The backend is not open, or the buffer has work still running
            on the CPU backend.
        ValidationError: The buffer is not a live buffer of ``backend``, a column lies
            outside it, or a column's address overflows.
    """
    if backend.state is not LifecycleState.OPEN:
        raise LifecycleError(
            f"this {backend.kind} backend is {backend.state.value}",
            fix="resolve e-graph views while the backend is open.",
        )
    buffer = image.buffer
    if not backend.owns(buffer):
        raise ValidationError(
            f"resident buffer {buffer.id} is not a live buffer of this {backend.kind} backend",
            fix="resolve the view on the backend upload_egraph() returned the image from, "
            "before freeing it.",
        )
    if buffer.__dlpack_device__()[0] == DL_CPU:
        words = np.from_dlpack(buffer).reshape(-1)
        return resolve_host_view(words, image.layout)
    return resolve_device_view(buffer.ptr, buffer.nbytes, image.layout)
