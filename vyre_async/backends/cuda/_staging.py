"""Staging plans: where each host-bound buffer of a dispatch lives in pinned and device memory.

Resident buffers and borrowed device arrays (:mod:`.._interop`) are used in place and
have no slot here.

One dispatch gets one pinned block and one device block. Inside both, buffers are
laid out in the same order: ``in`` buffers, then ``inout``, then ``out``. So every
input travels in one host-to-device copy (``in`` + ``inout``) and every output in one
device-to-host copy (``inout`` + ``out``), whatever the number of parameters. Each
buffer starts on a 256-byte boundary and every copy is padded to 16 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...kernels import BoundCall, Kernel
from .._interop import Borrowed
from .._resident import ResidentBuffer

ALIGN = 256
COPY_PAD = 16


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


@dataclass(frozen=True, slots=True)
class Slot:
    """One host-bound buffer inside the dispatch's blocks."""

    name: str
    offset: int
    nbytes: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StagingPlan:
    """The layout of one dispatch's host-bound buffers.

    Attributes:
        kernel: The kernel the plan is for.
        slots: Every host-bound buffer, in layout order.
        total: Bytes of the blocks (0 when every buffer is resident).
        upload: ``(offset, nbytes)`` of the single host-to-device copy.
        download: ``(offset, nbytes)`` of the single device-to-host copy.
        clears: Slot names to zero before launch (host-bound ``out`` buffers).
        outputs: Slot names returned to the caller (host-bound ``inout`` and ``out``).
    """

    kernel: Kernel
    slots: tuple[Slot, ...]
    total: int
    upload: tuple[int, int]
    download: tuple[int, int]
    clears: tuple[str, ...]
    outputs: tuple[str, ...]

    def slot(self, name: str) -> Slot:
        """The slot of one parameter."""
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(name)


def plan_staging(call: BoundCall[Any]) -> StagingPlan:
    """Lay out the host-bound buffers of a validated call."""
    order = {"in": 0, "inout": 1, "out": 2}
    params = sorted(
        (
            p
            for p in call.kernel.buffer_params
            if not isinstance(call.buffers.get(p.name), ResidentBuffer | Borrowed)
        ),
        key=lambda p: order[p.role],
    )
    slots: list[Slot] = []
    offset = 0
    upload_end = download_start = None
    for p in params:
        given = call.buffers.get(p.name)
        shape = np.shape(given) if given is not None else (call.lengths[p.name],)
        if p.role != "in" and download_start is None:
            download_start = offset
        nbytes = call.lengths[p.name] * p.dtype.itemsize
        slots.append(Slot(p.name, offset, nbytes, p.dtype, tuple(shape)))
        offset = _round_up(offset + nbytes, ALIGN)
        if p.role != "out":
            upload_end = _round_up(slots[-1].offset + nbytes, COPY_PAD)
    end = _round_up(slots[-1].offset + slots[-1].nbytes, COPY_PAD) if slots else 0
    start = download_start if download_start is not None else end
    roles = {p.name: p.role for p in params}
    return StagingPlan(
        kernel=call.kernel,
        slots=tuple(slots),
        total=_round_up(end, ALIGN) if slots else 0,
        upload=(0, upload_end or 0),
        download=(start, end - start),
        clears=tuple(s.name for s in slots if roles[s.name] == "out"),
        outputs=tuple(s.name for s in slots if roles[s.name] != "in"),
    )


def fill_inputs(plan: StagingPlan, pinned: np.ndarray, buffers: Mapping[str, Any]) -> None:
    """Copy the host inputs into the pinned block (the snapshot taken at submit)."""
    for slot in plan.slots:
        given = buffers.get(slot.name)
        if given is None:
            continue
        target = pinned[slot.offset : slot.offset + slot.nbytes].view(slot.dtype)
        np.copyto(target, np.asarray(given).reshape(-1))


def take_outputs(plan: StagingPlan, pinned: np.ndarray) -> dict[str, np.ndarray]:
    """Copy the outputs out of the pinned block into new arrays."""
    out: dict[str, np.ndarray] = {}
    for name in plan.outputs:
        slot = plan.slot(name)
        view = pinned[slot.offset : slot.offset + slot.nbytes].view(slot.dtype)
        out[name] = view.copy().reshape(slot.shape)
    return out
