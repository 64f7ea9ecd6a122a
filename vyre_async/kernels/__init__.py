"""The kernel framework: CUDA C, a typed signature, a launch rule and a CPU reference.

A :class:`Kernel` is compiled with NVRTC to a CUBIN for the device's exact
architecture, through a memory and a disk cache (:func:`compile_kernel`); kernels
that ship with the package keep their CUDA C in ``.cu`` files read by
:func:`load_cuda_source`. Three small built-ins live here (:data:`axpy`,
:data:`sum_reduce`, :data:`histogram256`); the graph algorithms' kernels live with
their algorithms in :mod:`vyre_async.algorithms` and register themselves as built-ins.
"""

from ._axpy import axpy as axpy
from ._builtin import builtin_kernels as builtin_kernels
from ._builtin import register_builtin as register_builtin
from ._cache import cache_root as cache_root
from ._compile import CompiledKernel as CompiledKernel
from ._compile import arch_for as arch_for
from ._compile import compile_kernel as compile_kernel
from ._histogram import histogram256 as histogram256
from ._kernel import BoundCall as BoundCall
from ._kernel import Kernel as Kernel
from ._kernel import Reference as Reference
from ._launch import LaunchRule as LaunchRule
from ._launch import LaunchShape as LaunchShape
from ._launch import at_least_one_block as at_least_one_block
from ._launch import grid_stride as grid_stride
from ._launch import one_thread as one_thread
from ._nvrtc import nvrtc_version as nvrtc_version
from ._reduce import sum_reduce as sum_reduce
from ._signature import BufferParam as BufferParam
from ._signature import Scalar as Scalar
from ._signature import ScalarParam as ScalarParam
from ._sources import load_cuda_source as load_cuda_source

register_builtin(axpy, sum_reduce, histogram256)

__all__ = [
    "BoundCall",
    "BufferParam",
    "CompiledKernel",
    "Kernel",
    "LaunchRule",
    "LaunchShape",
    "Reference",
    "Scalar",
    "ScalarParam",
    "arch_for",
    "at_least_one_block",
    "axpy",
    "builtin_kernels",
    "cache_root",
    "compile_kernel",
    "grid_stride",
    "histogram256",
    "load_cuda_source",
    "nvrtc_version",
    "one_thread",
    "register_builtin",
    "sum_reduce",
]
