"""The :class:`Backend` protocol: what the CPU and CUDA backends both offer.

Everything above ``backends/`` (sessions, jobs) is written against this protocol
alone, so it runs unchanged on either backend.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from .._lifecycle import LifecycleState
from ..kernels import Kernel
from ..streams import PendingDispatch
from ..telemetry import Activity, TelemetrySnapshot
from ._config import DispatchConfig
from ._prepared import PreparedSequence
from ._prepared_dispatch import PreparedDispatch
from ._resident import ResidentBuffer
from ._sequence import ReadRange, SequenceStep


class Backend(Protocol):
    """An open device: dispatches, resident memory, sequences and telemetry.

    Obtain one with :func:`vyre_async.open_backend`. Methods raise
    :class:`~vyre_async.errors.LifecycleError` outside the ``async with`` block.
    """

    kind: str

    @property
    def device_name(self) -> str:
        """Human name of the device."""
        ...

    @property
    def state(self) -> LifecycleState:
        """Unopened, open or closed."""
        ...

    async def free_memory(self) -> int:
        """Device bytes free now (the CPU backend: the host's available memory)."""
        ...

    async def load_kernels(self, *kernels: Kernel) -> None:
        """Prepare kernels ahead of their first dispatch, off the event loop: the CUDA
        backend compiles and loads them, the CPU backend checks each has a reference."""
        ...

    def submit(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PendingDispatch[dict[str, np.ndarray]]:
        """Validate and enqueue a dispatch; return a pending handle at once."""
        ...

    def dispatch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        outputs: Literal["host", "device"] = "host",
        **scalars: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Run a dispatch; ``await`` it for its outputs: host arrays, or resident buffers
        with ``outputs="device"`` (no pending handle made)."""
        ...

    async def prepare(
        self,
        kernel: Kernel,
        inputs: Mapping[str, np.ndarray | ResidentBuffer],
        *,
        config: DispatchConfig | None = None,
        **scalars: Any,
    ) -> PreparedDispatch:
        """Bind and check a dispatch once; ``await prepared(**scalars)`` runs it."""
        ...

    def submit_sequence(
        self,
        steps: Sequence[SequenceStep],
        *,
        reads: Sequence[ReadRange] = (),
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Run resident steps in order with one host sync; read ranges back."""
        ...

    def submit_repeated(
        self,
        prefix: Sequence[SequenceStep],
        repeated: Sequence[SequenceStep],
        *,
        repeat_count: int,
        reads: Sequence[ReadRange] = (),
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Run ``prefix`` once and ``repeated`` ``repeat_count`` times, then read back."""
        ...

    def prepare_repeated(
        self,
        prefix: Sequence[SequenceStep],
        repeated: Sequence[SequenceStep],
        *,
        reads: Sequence[ReadRange] = (),
    ) -> PreparedSequence:
        """Bind and check a repeated sequence once; ``prepared.submit(n)`` runs it."""
        ...

    async def upload(self, array: np.ndarray) -> ResidentBuffer:
        """Copy an array to the device, keeping dtype and shape."""
        ...

    async def upload_group(self, arrays: Sequence[np.ndarray]) -> tuple[ResidentBuffer, ...]:
        """Copy several arrays in one allocation and one transfer; one handle each."""
        ...

    async def alloc(self, nbytes: int, dtype: Any = np.uint8) -> ResidentBuffer:
        """Allocate a zero-filled resident buffer."""
        ...

    async def write(self, buffer: ResidentBuffer, data: np.ndarray, offset: int = 0) -> None:
        """Overwrite part of a resident buffer (elements from ``offset``)."""
        ...

    async def read(
        self,
        buffer: ResidentBuffer,
        offset: int = 0,
        count: int | None = None,
        *,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Copy a resident buffer (or a range of it) back to the host (into ``out``)."""
        ...

    async def read_many(self, ranges: Sequence[ReadRange]) -> list[np.ndarray]:
        """Copy several ranges back behind one fence."""
        ...

    def owns(self, buffer: object) -> bool:
        """Whether ``buffer`` is a live resident buffer of this backend."""
        ...

    async def settle(self, buffers: Sequence[ResidentBuffer]) -> None:
        """Wait until no unfinished work uses the buffers."""
        ...

    async def free(self, buffer: ResidentBuffer) -> None:
        """Release a resident buffer."""
        ...

    def telemetry(self) -> TelemetrySnapshot:
        """A frozen snapshot of the counters."""
        ...

    def activity(self) -> Activity:
        """The activity counters a run's statistics need, without a full snapshot."""
        ...

    def reset_telemetry(self) -> None:
        """Zero the activity counters."""
        ...

    async def aclose(self) -> None:
        """Wait for unfinished work and release everything (idempotent; any task)."""
        ...
