"""Kernels: CUDA C source, a typed signature, a launch rule and a CPU reference.

Also the built-in kernel library and NVRTC compilation to CUBIN with a memory and
disk cache.
"""

from __future__ import annotations

from ._axpy import axpy as axpy
from ._compile import CompiledKernel as CompiledKernel
from ._compile import arch_for as arch_for
from ._compile import compile_kernel as compile_kernel
from ._histogram import histogram256 as histogram256
from ._kernel import BoundCall as BoundCall
from ._kernel import Kernel as Kernel
from ._kernel import LaunchShape as LaunchShape
from ._kernel import grid_stride as grid_stride
from ._nvrtc import nvrtc_version as nvrtc_version
from ._reduce import sum_reduce as sum_reduce
from ._signature import BufferParam as BufferParam
from ._signature import ScalarParam as ScalarParam

#: Every kernel that ships with vyre_async, in a stable order.
BUILTIN_KERNELS: tuple[Kernel, ...] = (axpy, sum_reduce, histogram256)

__all__ = [
    "BUILTIN_KERNELS",
    "BoundCall",
    "BufferParam",
    "CompiledKernel",
    "Kernel",
    "LaunchShape",
    "ScalarParam",
    "arch_for",
    "axpy",
    "compile_kernel",
    "grid_stride",
    "histogram256",
    "nvrtc_version",
    "sum_reduce",
]
