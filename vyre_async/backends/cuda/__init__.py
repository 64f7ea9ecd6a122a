"""The CUDA backend: kernels on one NVIDIA GPU through the driver API, never blocking the loop.

Imported only when a CUDA backend is opened (see :func:`vyre_async.open_backend`).
"""

from ._backend import CudaBackend as CudaBackend
from ._peer import enqueue_peer_copy as enqueue_peer_copy
from ._peer import peer_route as peer_route

__all__ = ["CudaBackend", "enqueue_peer_copy", "peer_route"]
