"""Resident CUDA buffers shown to CuPy, PyTorch and JAX without a copy.

A consumer must not touch a buffer before the work already enqueued on it has
finished. Neither protocol lets the producer block, so both are ordered on the
device: every unfinished piece of work using the buffer has its fence sealed (its
event recorded), and the consumer's stream waits for those events.

- ``__cuda_array_interface__`` (version 3) names a stream of the backend's own (the
  export stream) that has been made to wait for that work; CAI consumers order their
  work after it. With no unfinished work the stream is ``None``.
- ``__dlpack__(stream=s)`` makes the consumer's stream ``s`` itself wait.

Work the other library enqueues on the memory afterwards is not tracked: synchronise
its stream, or pass its array back as a borrowed input (which waits for the stream
it names), before dispatching on the buffer again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LifecycleError
from .._interop import DL_CUDA, LEGACY_STREAM, dlpack_capsule
from .._resident import Exporter, ResidentBuffer

if TYPE_CHECKING:
    from ...cuda import CudaDevice, DeviceAllocation
    from ...streams import CompletionWatcher
    from .._resident import ResidentRegistry

__all__ = ["CudaExporter"]


class CudaExporter(Exporter):
    """The CUDA backend's exports (see the module docstring).

    Args:
        ordinal: The device's ordinal (DLPack's device id).
    """

    def __init__(self, ordinal: int) -> None:
        self._ordinal = ordinal
        self._registry: ResidentRegistry[DeviceAllocation] | None = None
        self._device: CudaDevice | None = None
        self._watcher: CompletionWatcher | None = None
        self._stream: Any = None

    def attach(
        self,
        registry: ResidentRegistry[DeviceAllocation],
        device: CudaDevice,
        watcher: CompletionWatcher,
        export_stream: Any,
    ) -> None:
        """Connect to the open backend's registry, device, watcher and export stream."""
        self._registry = registry
        self._device = device
        self._watcher = watcher
        self._stream = export_stream

    def detach(self) -> None:
        """The backend closed: exports are refused from now on."""
        self._device = None

    def _parts(self) -> tuple[ResidentRegistry[DeviceAllocation], CudaDevice, CompletionWatcher]:
        if self._registry is None or self._device is None or self._watcher is None:
            raise LifecycleError(
                "this buffer's backend is closed", fix="export buffers while the backend is open."
            )
        return self._registry, self._device, self._watcher

    def pointer(self, buffer: ResidentBuffer) -> int:
        registry, _, _ = self._parts()
        return int(registry.storage(buffer).ptr)

    def cuda_array_interface(self, buffer: ResidentBuffer) -> dict[str, Any]:
        registry, _, _ = self._parts()
        storage = registry.mark_exported(buffer)
        ordered = self._order_after_users(buffer, self._stream)
        return {
            "shape": buffer.shape,
            "typestr": buffer.dtype.str,
            "data": (int(storage.ptr), False),
            "version": 3,
            "strides": None,
            "stream": int(self._stream) if ordered else None,
        }

    def dlpack(self, buffer: ResidentBuffer, stream: int | None) -> Any:
        registry, device, _ = self._parts()
        storage = registry.mark_exported(buffer)
        if stream != -1:
            handle = LEGACY_STREAM if stream is None else int(stream)
            if handle == 0:
                raise BufferError("DLPack stream 0 is ambiguous and not allowed for CUDA")
            self._order_after_users(buffer, device.driver.CUstream(handle))
        return dlpack_capsule(
            int(storage.ptr), buffer.dtype, buffer.shape, (DL_CUDA, self._ordinal), buffer
        )

    def dlpack_device(self, buffer: ResidentBuffer) -> tuple[int, int]:
        return (DL_CUDA, self._ordinal)

    def _order_after_users(self, buffer: ResidentBuffer, stream: Any) -> bool:
        """Make ``stream`` wait for every unfinished user of ``buffer``; return whether
        there was one."""
        registry, device, watcher = self._parts()
        users = registry.users(buffer)
        if not users:
            return False
        driver = device.driver
        for user in users:
            fence = user.fence
            if fence is None:
                raise LifecycleError(
                    f"resident buffer {buffer.id} is used by work not enqueued yet (its "
                    "kernel is still loading, or a host copy is running)",
                    fix="await that work (or `await backend.settle([buffer])`) before "
                    "handing the buffer to another library.",
                )
            event = watcher.seal(fence)
            if event is not None:
                device.call(driver.cuStreamWaitEvent, stream, event, 0)
        return True
