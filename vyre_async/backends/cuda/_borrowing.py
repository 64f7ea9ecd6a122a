"""Other libraries' device arrays (CuPy, PyTorch, JAX) used in place.

An array given through ``__cuda_array_interface__`` or DLPack is borrowed for the
work that uses it: checked to live on this backend's device, waited on after its
producer's stream (CAI v3) with an event, and handed back when the work has ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import ValidationError
from .._interop import Borrowed, borrow, host_view, is_foreign
from ._base import CudaBase
from ._bound import BoundLaunch
from ._work import Work, let_go


class CudaBorrowing(CudaBase):
    """Other libraries' device arrays borrowed in place, after their producer's stream."""

    def _source(self, value: Any, what: str) -> Any:
        """A host array, or another library's device array borrowed on lane 0."""
        if isinstance(value, np.ndarray):
            return value
        if is_foreign(value) and host_view(value) is None:
            return self._borrow(value, what, self._lanes[0].stream)
        return self._host_array(value, what)

    def _borrow(self, value: Any, name: str, stream: Any) -> Borrowed:
        """Borrow a device array for work on ``stream``, checked to be on this device."""
        borrowed = borrow(value, name, int(stream))
        device = self._cuda()
        on = borrowed.device
        if on is None and borrowed.nbytes:
            driver = device.driver
            attribute = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
            found = driver.cuPointerGetAttribute(attribute, borrowed.ptr)
            on = int(found[1]) if int(found[0]) == 0 else -1
        if borrowed.nbytes and on != self._ordinal:
            let_go([borrowed])
            raise ValidationError(
                f"buffer {name!r} is memory of "
                + (f"CUDA device {on}" if on is not None and on >= 0 else "no CUDA device")
                + f"; this backend runs on device {self._ordinal}",
                fix=f"copy it to device {self._ordinal} first (cupy: with "
                f"cupy.cuda.Device({self._ordinal}): cupy.asarray(x); torch: "
                f"x.to('cuda:{self._ordinal}')).",
            )
        return borrowed

    def _wait_producer(self, borrowed: Borrowed, stream: Any) -> None:
        """Make ``stream`` wait for the work the producer's stream had queued (CAI v3)."""
        if borrowed.stream is None:
            return
        device = self._cuda()
        driver = device.driver
        producer = driver.CUstream(borrowed.stream)
        device.call(driver.cuEventRecord, self._producer_event, producer)
        device.call(driver.cuStreamWaitEvent, stream, self._producer_event, 0)

    async def _copy_device(self, address: int, borrowed: Borrowed, *, into_borrowed: bool) -> None:
        """Copy device to device between ``address`` and a borrowed array (either way),
        on lane 0 after the producer's stream; returns once the copy has ended."""
        device = self._cuda()
        lane = self._lanes[0]

        def enqueue(stream: Any) -> None:
            self._wait_producer(borrowed, stream)
            if borrowed.nbytes:
                dst, src = (borrowed.ptr, address) if into_borrowed else (address, borrowed.ptr)
                device.call(device.driver.cuMemcpyDtoDAsync, dst, src, borrowed.nbytes, stream)

        await self._stream_op(enqueue, lambda: let_go([borrowed]), settle=True, lane=lane)

    def _bind_borrowed(
        self, launch: BoundLaunch, work: Work, inputs: Mapping[str, Any], stream: Any
    ) -> None:
        """Point a launch's borrowed parameters at this dispatch's arrays, after their
        producers' streams; clear the ``out`` ones. The work keeps them alive."""
        borrowed = work.borrowed = []
        device = self._cuda()
        memset = device.driver.cuMemsetD8Async
        for slot, name, clear in launch.foreign:
            item = self._borrow(inputs[name], name, stream)
            borrowed.append(item)
            self._wait_producer(item, stream)
            slot.value = item.ptr
            if clear:
                device.call(memset, item.ptr, 0, clear, stream)
