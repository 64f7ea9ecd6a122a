"""Bound launches: one kernel with one set of bindings on one CUDA device, made once.

The first dispatch of a kernel with given bindings (which resident buffers, the
shapes and dtypes of the host arrays) validates everything and builds a
:class:`BoundLaunch`: the loaded function, the launch shape, an argument block of
its own with the buffers' pointers and the scalars in place, the staging layout of
the host-bound buffers, and the resolved records of the resident ones. A repeated
dispatch finds it by a dictionary lookup, writes scalars that changed into the
block, and launches. What validation checks is either part of the lookup key
(kernel, buffer identities, shapes, dtypes) or checked again when it can change: the
scalars when their values or types differ from the last call, and the resident
buffers whenever one left the registry (a freed buffer is refused there).

Host-bound buffers travel through a :class:`Staging` pair (a page-locked block and a
device block with the same layout, see :mod:`._staging`); a launch keeps a few
idle pairs so a repeated dispatch takes one from a list.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...kernels import BoundCall, Kernel
from .._interop import Borrowed, is_foreign
from .._resident import ResidentBuffer
from ._staging import StagingPlan, plan_staging

if TYPE_CHECKING:
    from ...cuda import DeviceAllocation, PinnedBuffer
    from .._resident import ResidentRegistry
    from ._launch import LoadedKernel

#: Idle staging pairs a bound launch keeps for its next dispatches...
SPARE_STAGING = 4
#: ...when a pair is at most this large (larger ones go back to the pools).
SPARE_STAGING_MAX_BYTES = 1 << 20


def launch_key(kernel: Kernel, inputs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The lookup key of a dispatch with host arrays among its inputs.

    A resident buffer stands for itself (identity); anything else for its type,
    shape and dtype. Resident-only dispatches use ``(kernel, *inputs.items())``,
    which this equals for them.
    """
    parts: list[Any] = [kernel]
    for name, value in inputs.items():
        if value.__class__ is ResidentBuffer:
            parts.append((name, value))
        elif is_foreign(value):  # borrowed: its pointer is read at every dispatch
            parts.append((name, value.__class__, "foreign", value.shape, value.dtype))
        else:
            parts.append(
                (
                    name,
                    value.__class__,
                    getattr(value, "shape", None),
                    getattr(value, "dtype", None),
                )
            )
    return tuple(parts)


class Staging:
    """A page-locked block and a device block holding one dispatch's host-bound buffers.

    Attributes:
        pinned: The page-locked block (host side of both copies).
        block: The device block the kernel reads and writes.
        typed: ``name -> view`` of each host-bound buffer in ``pinned``, of its dtype
            and shape (the host array's for inputs), so staging is one ``np.copyto``.
    """

    __slots__ = ("block", "pinned", "typed")

    def __init__(self, pinned: PinnedBuffer, block: DeviceAllocation, plan: StagingPlan) -> None:
        self.pinned = pinned
        self.block = block
        array = pinned.array
        self.typed = {
            s.name: array[s.offset : s.offset + s.nbytes].view(s.dtype).reshape(s.shape)
            for s in plan.slots
        }


class BoundLaunch:
    """Everything a repeated dispatch of one kernel with one set of bindings needs.

    Made by the CUDA backend on the first dispatch with these bindings; the backend
    keeps it in a bounded cache, and ``backend.prepare`` hands one to a
    :class:`~._prepared_dispatch.PreparedDispatch`.

    Args:
        call: The validated first call.
        loaded: The kernel's module and function on the device.
    """

    __slots__ = (
        "_empty",
        "_pointers",
        "args",
        "block_ptr",
        "call",
        "direct",
        "download",
        "empty",
        "foreign",
        "generation",
        "head",
        "host_clears",
        "host_inputs",
        "host_slots",
        "keeps_spares",
        "kernel",
        "launches",
        "loaded",
        "outputs",
        "plan",
        "raw_scalars",
        "raw_types",
        "records",
        "resident",
        "resident_clears",
        "resident_out",
        "scalar_slots",
        "spares",
        "upload",
        "uses",
    )

    def __init__(self, call: BoundCall[Any], loaded: LoadedKernel) -> None:
        kernel = call.kernel
        self.kernel = kernel
        self.call = call
        self.loaded = loaded
        shape = call.launch
        self.empty = shape.empty
        #: ``cuLaunchKernel``'s arguments before the stream: function (its handle as an
        #: integer, what either launcher takes), grid, block, shared bytes.
        self.head = (int(loaded.function), *shape.grid, *shape.block, shape.shared_bytes)
        slots, self._pointers = loaded.new_block()
        self.args = ctypes.addressof(self._pointers)
        by_name = dict(zip((p.name for p in kernel.params), slots, strict=True))
        #: (name, slot) of every scalar parameter.
        self.scalar_slots = [(p.name, by_name[p.name]) for p in kernel.scalar_params]
        for name, slot in self.scalar_slots:
            slot.value = call.scalars[name].item()
        self.raw_scalars: Mapping[str, Any] = {}
        self.raw_types: list[type] = []
        #: (slot, buffer) of every resident buffer parameter.
        self.resident: list[tuple[Any, ResidentBuffer]] = []
        #: Each resident buffer -> whether the kernel writes it.
        self.uses: dict[ResidentBuffer, bool] = {}
        #: (buffer, elements) of every resident ``out`` buffer (cleared before launch).
        self.resident_out: list[tuple[ResidentBuffer, int]] = []
        #: (slot, name, bytes to clear) of every borrowed device array (other
        #: libraries' arrays, used in place): read again at every dispatch.
        self.foreign: list[tuple[Any, str, int]] = []
        for p in kernel.buffer_params:
            given = call.buffers.get(p.name)
            if isinstance(given, Borrowed):
                clear = call.lengths[p.name] * p.dtype.itemsize if p.role == "out" else 0
                self.foreign.append((by_name[p.name], p.name, clear))
            elif isinstance(given, ResidentBuffer):
                self.resident.append((by_name[p.name], given))
                self.uses[given] = self.uses.get(given, False) or p.role != "in"
                if p.role == "out":
                    self.resident_out.append((given, call.lengths[p.name]))
        self.records: list[Any] = []
        self.generation = -1
        self.resident_clears: list[tuple[int, int]] = []
        plan = plan_staging(call)
        self.plan: StagingPlan | None = plan if plan.total else None
        #: (slot, offset in the staging block) of every host-bound parameter.
        self.host_slots = [(by_name[s.name], s.offset) for s in plan.slots]
        roles = {p.name: p.role for p in kernel.buffer_params}
        #: Names of host-bound inputs copied into the staging block per dispatch.
        self.host_inputs = [s.name for s in plan.slots if roles[s.name] != "out"]
        self.host_clears = [(s.offset, s.nbytes) for s in plan.slots if roles[s.name] == "out"]
        self.upload = plan.upload
        self.download = plan.download
        #: Names of the host-bound outputs, in layout order.
        self.outputs = list(plan.outputs)
        self._empty = [(s.name, s.dtype, s.shape) for s in plan.slots if s.name in plan.outputs]
        self.spares: list[Staging] = []
        #: Whether idle staging pairs are kept here (the backend's cached launches);
        #: a prepared dispatch's launch gives them back to the pools, which cache them.
        self.keeps_spares = True
        self.block_ptr = 0
        self.launches = 0 if shape.empty else 1
        self._note_direct()

    def _note_direct(self) -> None:
        #: Whether a dispatch is one launch and nothing else: no staging, no borrowed
        #: arrays, no outputs to clear or return (the awaited path's shortest branch).
        self.direct = not (
            self.empty
            or self.foreign
            or self.plan is not None
            or self.resident_clears
            or self.outputs
        )

    def set_scalars(self, scalars: Mapping[str, Any]) -> None:
        """Validate new scalar values and write them into the argument block.

        Raises:
            ValidationError: An unknown name or a value the kernel refuses (the block
                keeps its previous values).
        """
        values = self.kernel.bind_scalars(scalars, self.call.sizes)
        for name, slot in self.scalar_slots:
            slot.value = values[name].item()
        self.raw_scalars = scalars
        self.raw_types = [*map(type, scalars.values())]

    def refresh(self, registry: ResidentRegistry[Any]) -> None:
        """Resolve the resident buffers again (after one left the registry).

        Raises:
            LifecycleError: A buffer was freed.
            ValidationError: A buffer belongs to another backend.
        """
        records = registry.resolve(self.uses)
        storage = {record.buffer: record.storage for record, _ in records}
        for slot, buffer in self.resident:
            slot.value = storage[buffer].ptr
        self.resident_clears = [
            (storage[buffer].ptr, length * buffer.dtype.itemsize)
            for buffer, length in self.resident_out
        ]
        self.records = records
        self.generation = registry.generation
        self._note_direct()

    def point_at(self, staging: Staging) -> None:
        """Write the staging block's addresses of the host-bound buffers into the block."""
        base = staging.block.ptr
        for slot, offset in self.host_slots:
            slot.value = base + offset
        self.block_ptr = base

    def take_outputs(self, staging: Staging | None) -> dict[str, np.ndarray]:
        """The host-bound outputs, copied out of the page-locked block into new arrays
        (empty arrays when every host-bound buffer is empty: nothing was staged)."""
        if staging is None:
            return {name: np.zeros(shape, dtype) for name, dtype, shape in self._empty}
        typed = staging.typed
        return {name: typed[name].copy() for name in self.outputs}
