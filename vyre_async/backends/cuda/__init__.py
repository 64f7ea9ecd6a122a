"""The CUDA backend: kernels on one NVIDIA GPU through the driver API, never blocking the loop.

Imported only when a CUDA backend is opened (see :func:`vyre_async.open_backend`).
"""

from ._backend import CudaBackend as CudaBackend

__all__ = ["CudaBackend"]
