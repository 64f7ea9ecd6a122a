"""The kernel launch call of a dispatch: CuPy's launcher where CuPy is installed.

Both candidates call the driver's ``cuLaunchKernel`` in the calling thread's current
context with the same arguments (function and stream as integer handles, the
argument block's address). They differ only in their Python wrapper: on an H100 and
an H200, cuda-bindings' ``cuLaunchKernel`` took 0.5-0.9 us more per call than CuPy's
``launchKernel``, a Cython function of plain integers (``bench/launch_call.py``
measures both). An awaited single launch spends most of its time in that call, so
the backend uses CuPy's when it can:

- only with the real driver bindings (a stand-in driver, as the tests' simulator,
  keeps its own ``cuLaunchKernel``);
- only when ``cupy_backends`` imports (it does not import ``cupy`` itself) and its
  ``launchKernel`` declares the parameters it is called with;
- unless ``VYRE_ASYNC_LAUNCHER=cuda-bindings`` asks for cuda-bindings' own.

The two report failures differently: cuda-bindings' returns ``(CUresult,)``, CuPy's
returns ``None`` and raises its driver error, whose ``status`` is the same code. A
call site handles both::

    try:
        returned = launcher.call(*head, stream, params, 0)
    except launcher.error as exc:
        returned = failed_launch(exc)
    if returned is not None and returned[0]:
        ...  # map the code as for any driver call
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

from ..errors import ValidationError

__all__ = ["ENVIRONMENT", "KernelLauncher", "failed_launch", "kernel_launcher"]

#: The environment variable that picks the launcher: ``auto`` (the default) or
#: ``cuda-bindings``.
ENVIRONMENT = "VYRE_ASYNC_LAUNCHER"
_CHOICES = ("auto", "cuda-bindings")
#: What CuPy's ``launchKernel`` must declare (its Cython signature) to be used.
_CUPY_SIGNATURE = (
    "launchKernel(intptr_t f, unsigned int grid_dim_x, unsigned int grid_dim_y, "
    "unsigned int grid_dim_z, unsigned int block_dim_x, unsigned int block_dim_y, "
    "unsigned int block_dim_z, unsigned int shared_mem_bytes, intptr_t stream, "
    "intptr_t kernel_params, intptr_t extra)"
)


class _NeverRaisedError(Exception):
    """The error class of a launcher that reports failures by its return value."""


class KernelLauncher(NamedTuple):
    """How a dispatch calls ``cuLaunchKernel``.

    Attributes:
        call: ``(function, grid x, y, z, block x, y, z, shared bytes, stream,
            argument block, extra) -> (CUresult,) | None``, all integers.
        error: What ``call`` raises for a failed launch (its ``status`` is the
            code); a class it never raises when failures are returned.
        name: ``"cupy"`` or ``"cuda-bindings"``.
    """

    call: Callable[..., Any]
    error: type[Exception]
    name: str


def kernel_launcher(driver: Any) -> KernelLauncher:
    """The launcher for ``driver`` (what :func:`~._driver.load_driver` returned).

    CuPy's driver module finds and loads ``libcuda`` at its first call (file-system
    work); a CuPy launcher is made to do that here, so call this off the event loop.
    Where that first call fails, the cuda-bindings launcher is used.

    Raises:
        ValidationError: ``VYRE_ASYNC_LAUNCHER`` names no launcher.
    """
    choice = os.environ.get(ENVIRONMENT, "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValidationError(
            f"{ENVIRONMENT} is {choice!r}",
            fix=f"set {ENVIRONMENT} to 'auto' or 'cuda-bindings', or unset it.",
        )
    own = KernelLauncher(driver.cuLaunchKernel, _NeverRaisedError, "cuda-bindings")
    if choice != "auto" or not _is_the_bindings(driver):
        return own
    try:
        cupy_driver = importlib.import_module("cupy_backends.cuda.api.driver")
    except ImportError:  # no CuPy (or a build without the CUDA driver module)
        return own
    launch = getattr(cupy_driver, "launchKernel", None)
    error = getattr(cupy_driver, "CUDADriverError", None)
    doc = getattr(launch, "__doc__", None) or ""
    if not (callable(launch) and doc.startswith(_CUPY_SIGNATURE)):
        return own
    if not (isinstance(error, type) and issubclass(error, Exception)):
        return own
    initialize = getattr(cupy_driver, "ctxGetCurrent", None)  # any call binds libcuda
    try:
        if callable(initialize):
            initialize()
    except Exception:  # CuPy could not load the driver: keep to cuda-bindings
        return own
    return KernelLauncher(launch, error, "cupy")


def failed_launch(exc: Exception) -> tuple[int]:
    """The driver's code of a launch failure that ``KernelLauncher.error`` raised."""
    return (int(getattr(exc, "status", -1)),)


def _is_the_bindings(driver: Any) -> bool:
    return isinstance(driver, ModuleType) and driver.__name__ == "cuda.bindings.driver"
