"""Resident sequences: kernel steps over resident buffers, plus the ranges to read back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import ValidationError
from ..kernels import BoundCall, Kernel, Scalar
from ._resident import ResidentBuffer

_set = object.__setattr__  # how a frozen dataclass sets its own fields

#: (storage, handle, offset, count) of one range to read, already checked.
ReadPlan = tuple[Any, ResidentBuffer, int, int]


@dataclass(frozen=True, slots=True)
class SequenceStep:
    """One kernel launch inside a resident sequence.

    A step is immutable: its mappings are copied into read-only ones when it is
    made, so a prepared sequence that binds it once (and binds its prefix again for
    new scalar values) stays what was prepared.

    Args:
        kernel: The kernel to launch.
        buffers: Every buffer parameter bound to a resident buffer (outputs included:
            a sequence has nowhere else to put them).
        scalars: Scalar arguments, as for ``dispatch``.
    """

    kernel: Kernel
    buffers: Mapping[str, ResidentBuffer]
    scalars: Mapping[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            buffers = MappingProxyType(dict(self.buffers))
            scalars = MappingProxyType(dict(self.scalars))
        except (TypeError, ValueError):  # not mappings: bind_step reports it, with the index
            return
        _set(self, "buffers", buffers)
        _set(self, "scalars", scalars)


@dataclass(frozen=True, slots=True)
class ReadRange:
    """A range of a resident buffer to copy back, in elements of its dtype.

    Args:
        buffer: The buffer.
        offset: First element.
        count: Number of elements; ``None`` reads to the end.
    """

    buffer: ResidentBuffer
    offset: int = 0
    count: int | None = None


def bind_step(index: int, step: SequenceStep) -> BoundCall[ResidentBuffer]:
    """Validate one step: every parameter bound, and bound to a resident buffer."""
    if not isinstance(step, SequenceStep):
        raise TypeError(f"sequence step {index} must be a SequenceStep, got {type(step).__name__}")
    for name, value in step.buffers.items():
        if not isinstance(value, ResidentBuffer):
            raise ValidationError(
                f"sequence step {index} ({step.kernel.name}) binds {name!r} to a "
                f"{type(value).__name__}; sequences run on resident buffers only",
                fix=f"upload it first: {name} = await backend.upload(array).",
            )
    call = step.kernel.bind(step.buffers, step.scalars)
    for p in step.kernel.buffer_params:
        if p.name not in step.buffers:
            raise ValidationError(
                f"sequence step {index} ({step.kernel.name}) leaves output {p.name!r} unbound",
                fix=f"bind {p.name!r} to a resident buffer of {call.lengths[p.name]} "
                f"{p.dtype} elements.",
            )
    return call


def resolve_range(buffer: ResidentBuffer, offset: int, count: int | None) -> tuple[int, int]:
    """Check a read or write range against the buffer; return (offset, count) in elements."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int, got {type(offset).__name__}")
    size = buffer.size
    if count is None:
        count = size - offset
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"count must be an int or None, got {type(count).__name__}")
    if offset < 0 or count < 0 or offset + count > size:
        raise ValidationError(
            f"range [{offset}, {offset + count}) is outside resident buffer {buffer.id}, "
            f"which holds {size} {buffer.dtype} elements",
            fix=f"keep offset >= 0 and offset + count <= {size}.",
        )
    return offset, count
