"""The CUDA <-> anyio bridge: checked driver calls, pools, completions and the watcher.

Importing this package never loads ``libcuda``: the driver is loaded by
:func:`load_driver` (and :meth:`CudaDevice.open`) on first use, so the CPU backend
imports :class:`PendingDispatch` and :class:`Completion` from here on machines
without a GPU.
"""

from ._backoff import Backoff as Backoff
from ._bucket_pool import MemoryPoolStats as MemoryPoolStats
from ._bucket_pool import bucket_capacity as bucket_capacity
from ._completion import Completion as Completion
from ._device import CudaDevice as CudaDevice
from ._device import DeviceHealth as DeviceHealth
from ._device import DeviceInfo as DeviceInfo
from ._driver import call as call
from ._driver import check as check
from ._driver import error_for as error_for
from ._driver import is_sticky as is_sticky
from ._driver import load_driver as load_driver
from ._handles import EventPool as EventPool
from ._handles import StreamPool as StreamPool
from ._memory import DeviceAllocation as DeviceAllocation
from ._memory import DeviceMemoryPool as DeviceMemoryPool
from ._memory import PinnedBuffer as PinnedBuffer
from ._memory import PinnedHostPool as PinnedHostPool
from ._pending import DispatchTiming as DispatchTiming
from ._pending import PendingDispatch as PendingDispatch
from ._pending import TimedResult as TimedResult
from ._watcher import CompletionWatcher as CompletionWatcher

__all__ = [
    "Backoff",
    "Completion",
    "CompletionWatcher",
    "CudaDevice",
    "DeviceAllocation",
    "DeviceHealth",
    "DeviceInfo",
    "DeviceMemoryPool",
    "DispatchTiming",
    "EventPool",
    "MemoryPoolStats",
    "PendingDispatch",
    "PinnedBuffer",
    "PinnedHostPool",
    "StreamPool",
    "TimedResult",
    "bucket_capacity",
    "call",
    "check",
    "error_for",
    "is_sticky",
    "load_driver",
]
