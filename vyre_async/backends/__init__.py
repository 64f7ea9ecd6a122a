"""Backends: the :class:`Backend` protocol, :func:`open_backend`, CPU and CUDA."""

from ._config import DispatchConfig as DispatchConfig
from ._core import BackendState as BackendState
from ._cpu import CpuBackend as CpuBackend
from ._multi import MultiDeviceBackend as MultiDeviceBackend
from ._open import BackendKind as BackendKind
from ._open import DeviceSelector as DeviceSelector
from ._open import open_backend as open_backend
from ._prepared import PreparedSequence as PreparedSequence
from ._prepared import SequenceResult as SequenceResult
from ._prepared_dispatch import PreparedDispatch as PreparedDispatch
from ._protocol import Backend as Backend
from ._resident import ResidentBuffer as ResidentBuffer
from ._sequence import ReadRange as ReadRange
from ._sequence import SequenceStep as SequenceStep

__all__ = [
    "Backend",
    "BackendKind",
    "BackendState",
    "CpuBackend",
    "DeviceSelector",
    "DispatchConfig",
    "MultiDeviceBackend",
    "PreparedDispatch",
    "PreparedSequence",
    "ReadRange",
    "ResidentBuffer",
    "SequenceResult",
    "SequenceStep",
    "open_backend",
]
