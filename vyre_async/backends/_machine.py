"""What this machine offers, as ``vyre-async info`` reports it: one flat record.

Every key is always there and every value is a string, a number or ``None``, so a
script reads ``info --json`` without guessing: a status (``cuda_status``,
``nvrtc_status``) is apart from the prose that explains it (``cuda_error``,
``nvrtc_error``, ``None`` when all is well).
"""

from __future__ import annotations

from typing import Literal

import anyio
import msgspec

from .._version import __version__
from ..errors import VyreError
from ..kernels import cache_root, nvrtc_version
from ._open import open_backend
from ._toolchain import describe_cuda_toolchain


class MachineReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``vyre-async info`` prints (``--json``: these keys, always all of them).

    Attributes:
        vyre_async: The installed vyre_async version.
        backend: The backend ``open_backend("auto")`` picks here: ``"cuda"`` or ``"cpu"``.
        device: That backend's device name.
        cuda_status: ``"ok"``, ``"not_installed"`` (CPU backend only) or ``"unusable"``.
        cuda_error: Why CUDA is not usable and the fix; ``None`` when ``cuda_status`` is ok.
        cuda_bindings: cuda-bindings' version, or ``None`` when not installed.
        driver_cuda: The CUDA version the NVIDIA driver supports (``"13.0"``), or ``None``.
        nvrtc: NVRTC's version (``"13.0"``), or ``None`` when it does not load.
        nvrtc_status: ``"ok"`` or ``"unavailable"``.
        nvrtc_error: Why NVRTC does not load and the fix; ``None`` when it does.
        gpu_name: The GPU's name when the backend is CUDA, else ``None``.
        gpu_compute_capability: Its compute capability (``"9.0"``), else ``None``.
        gpu_arch: The architecture kernels are compiled for (``"sm_90"``), else ``None``.
        gpu_memory_bytes: Its memory in bytes, else ``None``.
        gpu_multiprocessors: Its streaming multiprocessors, else ``None``.
        launcher: What launches kernels on the CUDA backend (``"cupy"`` or
            ``"cuda-bindings"``), else ``None``.
        kernel_cache: The folder compiled kernels are cached in.
    """

    vyre_async: str
    backend: str
    device: str
    cuda_status: Literal["ok", "not_installed", "unusable"]
    cuda_error: str | None
    cuda_bindings: str | None
    driver_cuda: str | None
    nvrtc: str | None
    nvrtc_status: Literal["ok", "unavailable"]
    nvrtc_error: str | None
    gpu_name: str | None
    gpu_compute_capability: str | None
    gpu_arch: str | None
    gpu_memory_bytes: int | None
    gpu_multiprocessors: int | None
    launcher: str | None
    kernel_cache: str


async def describe_machine() -> MachineReport:
    """Find out what this machine offers: opens the backend ``auto`` picks, then closes it.

    Returns:
        The report.

    Raises:
        VyreError: The backend ``auto`` picks fails to open.
    """
    try:
        nvrtc: str | None = "{}.{}".format(*nvrtc_version())
        nvrtc_error = None
    except VyreError as exc:
        nvrtc, nvrtc_error = None, str(exc)
    cuda = await anyio.to_thread.run_sync(describe_cuda_toolchain)
    async with open_backend("auto") as backend:
        info = getattr(backend, "device_info", None)
        launcher = getattr(backend, "launcher", None)
        return MachineReport(
            vyre_async=__version__,
            backend=backend.kind,
            device=backend.device_name,
            cuda_status=cuda.status,
            cuda_error=cuda.error,
            cuda_bindings=cuda.bindings_version,
            driver_cuda=cuda.driver_cuda,
            nvrtc=nvrtc,
            nvrtc_status="ok" if nvrtc_error is None else "unavailable",
            nvrtc_error=nvrtc_error,
            gpu_name=None if info is None else info.name,
            gpu_compute_capability=None
            if info is None
            else "{}.{}".format(*info.compute_capability),
            gpu_arch=None if info is None else info.arch,
            gpu_memory_bytes=None if info is None else info.total_memory,
            gpu_multiprocessors=None if info is None else info.multiprocessor_count,
            launcher=None if launcher is None else str(launcher),
            kernel_cache=str(cache_root()),
        )
