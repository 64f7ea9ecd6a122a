"""The plain CUDA driver layer: checked driver calls, the device, memory and handle pools.

Everything here is synchronous and knows nothing of an event loop: the anyio side
(completions, pending dispatches, the completion watcher) is :mod:`vyre_async.streams`,
built on top of this package.

Importing this package never loads ``libcuda`` or the driver bindings: the driver is
loaded by :func:`load_driver` (and :meth:`CudaDevice.open`) on first use, so machines
without a GPU import it freely.
"""

from ._bucket_pool import MemoryPoolStats as MemoryPoolStats
from ._bucket_pool import bucket_capacity as bucket_capacity
from ._device import CudaDevice as CudaDevice
from ._device import DeviceHealth as DeviceHealth
from ._device import DeviceInfo as DeviceInfo
from ._driver import CUDA_ERROR_NOT_READY as CUDA_ERROR_NOT_READY
from ._driver import CUDA_SUCCESS as CUDA_SUCCESS
from ._driver import call as call
from ._driver import check as check
from ._driver import error_for as error_for
from ._driver import event_query_failure as event_query_failure
from ._driver import is_sticky as is_sticky
from ._driver import load_driver as load_driver
from ._driver import start_loading_driver as start_loading_driver
from ._handles import EventPool as EventPool
from ._handles import StreamPool as StreamPool
from ._launcher import KernelLauncher as KernelLauncher
from ._launcher import failed_launch as failed_launch
from ._launcher import kernel_launcher as kernel_launcher
from ._memory import DeviceAllocation as DeviceAllocation
from ._memory import DeviceMemoryPool as DeviceMemoryPool
from ._memory import PinnedBuffer as PinnedBuffer
from ._memory import PinnedHostPool as PinnedHostPool
from ._peer import PeerRoute as PeerRoute
from ._peer import copy_peer_async as copy_peer_async
from ._peer import open_peer_route as open_peer_route

__all__ = [
    "CUDA_ERROR_NOT_READY",
    "CUDA_SUCCESS",
    "CudaDevice",
    "DeviceAllocation",
    "DeviceHealth",
    "DeviceInfo",
    "DeviceMemoryPool",
    "EventPool",
    "KernelLauncher",
    "MemoryPoolStats",
    "PeerRoute",
    "PinnedBuffer",
    "PinnedHostPool",
    "StreamPool",
    "bucket_capacity",
    "call",
    "check",
    "copy_peer_async",
    "error_for",
    "event_query_failure",
    "failed_launch",
    "is_sticky",
    "kernel_launcher",
    "load_driver",
    "open_peer_route",
    "start_loading_driver",
]
