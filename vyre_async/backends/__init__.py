"""Backends: the :class:`Backend` protocol, :func:`open_backend`, CPU and CUDA, device groups.

A backend runs kernels and keeps resident memory on one device; :func:`open_devices`
opens one per device as a :class:`DeviceGroup`. The CUDA backend lives in
:mod:`vyre_async.backends.cuda` and is imported only when one is opened.
"""

from ._checks import check_out as check_out
from ._config import DispatchConfig as DispatchConfig
from ._cpu import CpuBackend as CpuBackend
from ._group import DeviceGroup as DeviceGroup
from ._interop import is_foreign as is_foreign
from ._machine import MachineReport as MachineReport
from ._machine import describe_machine as describe_machine
from ._open import BackendKind as BackendKind
from ._open import DeviceSelector as DeviceSelector
from ._open import open_backend as open_backend
from ._open import open_devices as open_devices
from ._peer import CopyRoute as CopyRoute
from ._peer import DeviceLinks as DeviceLinks
from ._peer import link_devices as link_devices
from ._placement import MemoryLimit as MemoryLimit
from ._placement import Placement as Placement
from ._placement import choose_placement as choose_placement
from ._placement import device_budgets as device_budgets
from ._prepared import PreparedSequence as PreparedSequence
from ._prepared import SequenceResult as SequenceResult
from ._prepared_dispatch import PreparedDispatch as PreparedDispatch
from ._protocol import Backend as Backend
from ._resident import ResidentBuffer as ResidentBuffer
from ._sequence import ReadRange as ReadRange
from ._sequence import SequenceStep as SequenceStep
from ._toolchain import CudaReport as CudaReport
from ._toolchain import describe_cuda_toolchain as describe_cuda_toolchain

__all__ = [
    "Backend",
    "BackendKind",
    "CopyRoute",
    "CpuBackend",
    "CudaReport",
    "DeviceGroup",
    "DeviceLinks",
    "DeviceSelector",
    "DispatchConfig",
    "MachineReport",
    "MemoryLimit",
    "Placement",
    "PreparedDispatch",
    "PreparedSequence",
    "ReadRange",
    "ResidentBuffer",
    "SequenceResult",
    "SequenceStep",
    "check_out",
    "choose_placement",
    "describe_cuda_toolchain",
    "describe_machine",
    "device_budgets",
    "is_foreign",
    "link_devices",
    "open_backend",
    "open_devices",
]
