"""Where the algorithms' CUDA C comes from: ``.cu`` files beside each algorithm's Python.

Each algorithm package ships its kernels' CUDA C as package data (``*.cu``, and
``*.cuh`` headers they ``#include``); headers shared by several algorithms sit in
this package. :func:`cuda_file` reads one with its headers inlined, so a kernel's
source (what is compiled and cached) holds everything that changes its image.
"""

from __future__ import annotations

from ..kernels import load_cuda_source

_SHARED = __name__.rpartition(".")[0]


def cuda_file(package: str, name: str) -> str:
    """The CUDA C of ``name`` in algorithm ``package``, local and shared headers inlined."""
    return load_cuda_source(package, name, include_from=(_SHARED,))
