"""``open_backend``: pick, open and always close a backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio

from ..errors import ConfigurationError, UnsupportedFeatureError
from ..logging import get_logger
from ._core import BackendCore
from ._cpu import CpuBackend
from ._protocol import Backend

BackendKind = Literal["auto", "cuda", "cpu"]

_log = get_logger("vyre_async.backends")


def _cuda_backend_class() -> type[BackendCore[Any]]:
    # Imported late, so only CUDA users pay for the driver bindings, and in a worker
    # thread: the first import reads files, which must not block the event loop.
    from ._cuda import CudaBackend

    return CudaBackend


async def _make_cuda(device: int, max_device_bytes: int | None) -> BackendCore[Any]:
    cls = await anyio.to_thread.run_sync(_cuda_backend_class)
    backend: BackendCore[Any] = cls(device=device, max_device_bytes=max_device_bytes)  # type: ignore[call-arg]
    return backend


@asynccontextmanager
async def open_backend(
    kind: BackendKind = "auto",
    *,
    device: int = 0,
    cpu_workers: int | None = None,
    max_device_bytes: int | None = None,
) -> AsyncIterator[Backend]:
    """Open a backend for the duration of an ``async with`` block.

    Args:
        kind: ``"cuda"``, ``"cpu"``, or ``"auto"``: CUDA when the driver loads and
            the device answers, else the CPU backend (the reason is logged).
        device: CUDA device ordinal.
        cpu_workers: Worker threads of the CPU backend.
        max_device_bytes: Cap on device memory the CUDA backend hands out (``None``:
            whatever the device has); beyond it allocations raise OutOfMemoryError.

    Yields:
        The open backend; it is closed (unfinished work awaited, memory freed) when
        the block exits, also on error or cancellation.

    Raises:
        ConfigurationError: Unknown ``kind``.
        UnsupportedFeatureError: ``kind="cuda"`` and no usable GPU.
    """
    if kind not in ("auto", "cuda", "cpu"):
        raise ConfigurationError(
            f"unknown backend kind {kind!r}", fix="use 'auto', 'cuda' or 'cpu'."
        )
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise ValueError(f"device must be a non-negative int ordinal, got {device!r}")
    backend: BackendCore[Any]
    if kind == "cpu":
        backend = CpuBackend(workers=cpu_workers)
    elif kind == "cuda":
        backend = await _make_cuda(device, max_device_bytes)
    else:
        try:
            backend = await _make_cuda(device, max_device_bytes)
            await backend.__aenter__()
        except UnsupportedFeatureError as exc:
            _log.info("falling back to the cpu backend", reason=exc.what)
            backend = CpuBackend(workers=cpu_workers)
        else:
            async with _owned(backend):
                yield backend
            return
    async with backend:
        yield backend


@asynccontextmanager
async def _owned(backend: BackendCore[Any]) -> AsyncIterator[None]:
    """Close an already-entered backend on the way out."""
    try:
        yield
    finally:
        await backend.aclose()
