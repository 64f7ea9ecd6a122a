"""Prepared sequences on one CUDA device: what enqueueing one needs, worked out once.

A resident session submits the same prepared sequence traversal after traversal;
only the prefix's scalars (the source) change. Its repeated body (planned steps,
their loaded kernels, the key of its CUDA graph per repeat count) and the layout of
its reads in the page-locked block are the same every time, so a
:class:`SequencePlan` holds them from the first submission on.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...kernels import BoundCall, Kernel
from .._resident import ResidentBuffer
from ._graphs import GRAPH_MIN_LAUNCHES, Step, StepPlans

if TYPE_CHECKING:
    from ...cuda import DeviceInfo
    from .._sequence import ReadPlan
    from ._launch import LoadedKernel

#: Alignment of each read's bytes in the page-locked block.
READ_ALIGN = 256


class SequencePlan:
    """A prepared sequence's body, kernels and reads on one device.

    Made on the sequence's first submission, which looks each buffer up (a freed
    one is refused there); a pointer in it stays right for as long as its buffer
    lives, and every submission reserves (checks) the buffers again before anything
    is enqueued.

    Args:
        step_plans: The backend's step plans (pointers and output clears per call).
        pointer_of: Device address of a resident buffer.
        prefix: The prefix as prepared (its kernels; scalars may change later).
        repeated: The repeated steps.
        reads: The ranges read back after the steps.
    """

    __slots__ = (
        "_graph_keys",
        "_step_plans",
        "body",
        "body_graphable",
        "body_launches",
        "bytes_read",
        "kernels",
        "loaded",
        "read_bytes",
        "reads",
    )

    def __init__(
        self,
        step_plans: StepPlans,
        pointer_of: Callable[[ResidentBuffer], int],
        prefix: list[BoundCall[ResidentBuffer]],
        repeated: list[BoundCall[ResidentBuffer]],
        reads: list[ReadPlan],
    ) -> None:
        self._step_plans = step_plans
        self.kernels: list[Kernel] = list(dict.fromkeys(c.kernel for c in (*prefix, *repeated)))
        self.body: list[Step] = [step_plans.plan(c, pointer_of) for c in repeated]
        self.body_launches = sum(not c.launch.empty for c in repeated)
        self.body_graphable = not any(c.launch.empty for c in repeated)
        #: (device address, bytes, offset in the block, dtype) of each read.
        self.reads: list[tuple[int, int, int, np.dtype[Any]]] = []
        at = 0
        for storage, buffer, offset, count in reads:
            size = buffer.dtype.itemsize
            nbytes = count * size
            self.reads.append((storage.ptr + offset * size, nbytes, at, buffer.dtype))
            at += -(-nbytes // READ_ALIGN) * READ_ALIGN
        #: Bytes of page-locked memory the reads land in (0: nothing is read).
        self.read_bytes = at
        #: Bytes the reads bring back (telemetry).
        self.bytes_read = sum(nbytes for _, nbytes, _, _ in self.reads)
        #: ``id(kernel) -> LoadedKernel`` once every kernel is loaded and the body's
        #: launch shapes were checked against the device.
        self.loaded: dict[int, LoadedKernel] | None = None
        self._graph_keys: dict[int, Hashable] = {}

    def load(
        self, get: Callable[[Kernel], LoadedKernel | None], info: DeviceInfo
    ) -> dict[int, LoadedKernel] | None:
        """The loaded kernels by ``id(kernel)``, or ``None`` while one is not loaded yet.

        The first time all are, the body's launch shapes are checked against the
        device and the result is kept (``loaded``).

        Raises:
            UnsupportedFeatureError: A body step's launch shape exceeds the device.
        """
        if self.loaded is not None:
            return self.loaded
        loaded = {}
        for kernel in self.kernels:
            found = get(kernel)
            if found is None:
                return None
            loaded[id(kernel)] = found
        for call, _, _ in self.body:
            loaded[id(call.kernel)].check_launch(call.launch, info)
        self.loaded = loaded
        return loaded

    def launches(self, prefix: list[BoundCall[ResidentBuffer]], repeat_count: int) -> int:
        """Kernel launches of one submission (telemetry)."""
        return sum(not c.launch.empty for c in prefix) + repeat_count * self.body_launches

    def graph_key(self, repeat_count: int) -> Hashable | None:
        """The key of the body repeated ``repeat_count`` times as one CUDA graph, or
        ``None`` when it is not worth capturing (or has a step with nothing to launch).
        """
        if not self.body_graphable or repeat_count * len(self.body) < GRAPH_MIN_LAUNCHES:
            return None
        key = self._graph_keys.get(repeat_count)
        if key is None:
            key = self._graph_keys[repeat_count] = self._step_plans.body_key(
                self.body, repeat_count
            )
        return key

    def copy_out(self, block: np.ndarray) -> list[np.ndarray]:
        """The reads, copied out of the page-locked block they landed in."""
        return [block[at : at + nbytes].view(dtype).copy() for _, nbytes, at, dtype in self.reads]
