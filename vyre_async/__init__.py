"""vyre_async: an asynchronous GPU batch runner.

CUDA streams and events become awaitable pending dispatches on an anyio event loop
(asyncio or trio); with no GPU, the same API runs on a CPU backend.

Example:
    >>> import anyio, numpy as np, vyre_async as va
    >>> async def main() -> None:
    ...     async with va.open_backend() as backend:
    ...         x = np.arange(4, dtype=np.float32)
    ...         out = await backend.dispatch(va.kernels.axpy, {"x": x, "y": x}, a=2.0)
    ...         assert (out["y"] == 3 * x).all()
    ...         graph = va.graphs.rmat(scale=10, edge_factor=8, seed=1)
    ...         async with va.resident_graph(backend, graph) as session:
    ...             assert (await session.bfs(0))[0] == 0
    >>> anyio.run(main)
"""

# First: `python -m vyre_async` handles SIGINT/SIGTERM before the imports below run.
from . import _startup_signals as _startup_signals
from . import algorithms as algorithms
from . import errors as errors
from . import graphs as graphs
from . import jobs as jobs
from . import kernels as kernels
from ._lifecycle import LifecycleState as LifecycleState
from ._version import __version__ as __version__
from .algorithms import egraph as egraph
from .algorithms.egraph import egraph_view as egraph_view
from .algorithms.egraph import upload_egraph as upload_egraph
from .backends import Backend as Backend
from .backends import CpuBackend as CpuBackend
from .backends import DeviceGroup as DeviceGroup
from .backends import DispatchConfig as DispatchConfig
from .backends import PreparedDispatch as PreparedDispatch
from .backends import PreparedSequence as PreparedSequence
from .backends import ReadRange as ReadRange
from .backends import ResidentBuffer as ResidentBuffer
from .backends import SequenceResult as SequenceResult
from .backends import SequenceStep as SequenceStep
from .backends import open_backend as open_backend
from .backends import open_devices as open_devices
from .errors import CompileError as CompileError
from .errors import ConfigurationError as ConfigurationError
from .errors import DeviceLostError as DeviceLostError
from .errors import DispatchError as DispatchError
from .errors import LifecycleError as LifecycleError
from .errors import OutOfMemoryError as OutOfMemoryError
from .errors import QueueFullError as QueueFullError
from .errors import QueueTimeoutError as QueueTimeoutError
from .errors import UnsupportedFeatureError as UnsupportedFeatureError
from .errors import ValidationError as ValidationError
from .errors import VyreError as VyreError
from .kernels import Kernel as Kernel
from .logging import configure_logging as configure_logging
from .sessions import BatchingConfig as BatchingConfig
from .sessions import ResidentGraphSession as ResidentGraphSession
from .sessions import SessionStats as SessionStats
from .sessions import egraph_session as egraph_session
from .sessions import resident_graph as resident_graph
from .streams import DispatchTiming as DispatchTiming
from .streams import PendingDispatch as PendingDispatch
from .streams import TimedResult as TimedResult
from .telemetry import Activity as Activity
from .telemetry import TelemetrySnapshot as TelemetrySnapshot
from .telemetry import to_prometheus_text as to_prometheus_text

__all__ = [
    "Activity",
    "Backend",
    "BatchingConfig",
    "CompileError",
    "ConfigurationError",
    "CpuBackend",
    "DeviceGroup",
    "DeviceLostError",
    "DispatchConfig",
    "DispatchError",
    "DispatchTiming",
    "Kernel",
    "LifecycleError",
    "LifecycleState",
    "OutOfMemoryError",
    "PendingDispatch",
    "PreparedDispatch",
    "PreparedSequence",
    "QueueFullError",
    "QueueTimeoutError",
    "ReadRange",
    "ResidentBuffer",
    "ResidentGraphSession",
    "SequenceResult",
    "SequenceStep",
    "SessionStats",
    "TelemetrySnapshot",
    "TimedResult",
    "UnsupportedFeatureError",
    "ValidationError",
    "VyreError",
    "algorithms",
    "configure_logging",
    "egraph",
    "egraph_session",
    "egraph_view",
    "errors",
    "graphs",
    "jobs",
    "kernels",
    "open_backend",
    "open_devices",
    "resident_graph",
    "to_prometheus_text",
    "upload_egraph",
]
