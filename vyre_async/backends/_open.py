"""``open_backend`` and ``open_devices``: pick, open and always close backends."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio

from ..errors import ConfigurationError, UnsupportedFeatureError
from ..logging import get_logger
from ._core import BackendCore
from ._cpu import CpuBackend
from ._group import DeviceGroup
from ._placement import MemoryLimit, check_memory_limit
from ._protocol import Backend
from ._toolchain import check_cuda_toolchain

BackendKind = Literal["auto", "cuda", "cpu"]
#: ``open_devices``' ``devices``: an ordinal, ``"all"``, or a list of ordinals.
DeviceSelector = int | Literal["all"] | Sequence[int]

_log = get_logger("vyre_async.backends")


def _cuda_backend_class() -> type[BackendCore[Any]]:
    # Imported late, so only CUDA users pay for the driver bindings, and in a worker
    # thread: the first import reads files, which must not block the event loop.
    # The toolchain check first: a driver older than the installed CUDA major is an
    # UnsupportedFeatureError (with the extra to install), so "auto" falls back.
    check_cuda_toolchain()
    from .cuda import CudaBackend

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
    """Open a backend on one device for the duration of an ``async with`` block.

    Args:
        kind: ``"cuda"``, ``"cpu"``, or ``"auto"``: CUDA when the driver loads and
            the device answers, else the CPU backend (the reason is logged).
        device: The CUDA device ordinal (ignored by the CPU backend). For several
            devices at once use :func:`open_devices`.
        cpu_workers: Worker threads of the CPU backend.
        max_device_bytes: Cap on device memory the CUDA backend hands out (``None``:
            whatever the device has); beyond it allocations raise OutOfMemoryError.

    Yields:
        The open backend; it is closed (unfinished work awaited, memory freed) when
        the block exits, also on error or cancellation.

    Raises:
        ConfigurationError: Unknown ``kind``.
        UnsupportedFeatureError: ``kind="cuda"`` and no usable GPU.
        TypeError: ``device`` is not one ordinal.
    """
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(
            f"device must be one int ordinal, got {device!r}; for several devices use "
            "vyre_async.open_devices(devices=...)"
        )
    async with contextlib.AsyncExitStack() as stack:
        (backend,) = await _open_each(
            stack, _checked_kind(kind), _ordinals(device), cpu_workers, max_device_bytes
        )
        yield backend


@asynccontextmanager
async def open_devices(
    kind: BackendKind = "auto",
    *,
    devices: DeviceSelector = "all",
    cpu_workers: int | None = None,
    max_device_bytes: int | None = None,
    memory_limit: MemoryLimit = None,
) -> AsyncIterator[DeviceGroup]:
    """Open one backend per device, as a :class:`DeviceGroup`, for an ``async with`` block.

    Args:
        kind: As for :func:`open_backend`; ``"auto"`` falls back to one CPU backend.
        devices: ``"all"`` (every visible GPU), an ordinal, or a list of ordinals.
            With ``kind="cpu"`` a list of n entries gives n CPU backends as logical
            devices, and ``"all"`` or an ordinal one CPU backend.
        cpu_workers: Worker threads of each CPU backend.
        max_device_bytes: Cap on device memory each CUDA backend hands out.
        memory_limit: Each device's memory budget in bytes, for placing a graph on the
            group (replicated while a copy fits every budget, else partitioned): one
            number for every device, or a list of one per device in the order opened
            (``None``: each device's free memory; the CPU backends of a group share the
            host's available memory equally). It caps nothing else.

    Yields:
        The open group; every backend in it is closed when the block exits, also on
        error or cancellation, all of them at the same time.

    Raises:
        ConfigurationError: Unknown ``kind``, a device ordinal twice, or a
            ``memory_limit`` that is not a positive byte count (or a list of one per
            device).
        UnsupportedFeatureError: ``kind="cuda"`` and no usable GPU.
        ValueError: An empty list, or an entry that is not a non-negative ordinal.
    """
    checked = _checked_kind(kind)
    ordinals = _ordinals(devices)
    check_memory_limit(memory_limit, None)
    async with contextlib.AsyncExitStack() as stack:
        backends = await _open_each(stack, checked, ordinals, cpu_workers, max_device_bytes)
        group = DeviceGroup(backends, check_memory_limit(memory_limit, len(backends)))
        group._enter_open()
        if len(group) > 1:
            _log.info("device group opened", devices=" + ".join(group.device_names))
        try:
            yield group
        finally:
            group._enter_closed()
            # Every device at once (each frees its memory and its context in a worker
            # thread); the stack then leaves each backend's block, the last opened first.
            await _close_each(backends)


async def _close_each(backends: list[BackendCore[Any]]) -> None:
    """Close ``backends`` at the same time, also when cancelled.

    Raises:
        Exception: What the first backend whose close failed raised.
    """
    if len(backends) < 2:
        return  # the stack closes it
    errors: list[Exception] = []

    async def close(backend: BackendCore[Any]) -> None:
        try:
            await backend.aclose()
        except Exception as exc:  # the others still close
            errors.append(exc)

    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as tg:
            for backend in backends:
                tg.start_soon(close, backend)
    if errors:
        raise errors[0]


def _checked_kind(kind: object) -> BackendKind:
    if kind not in ("auto", "cuda", "cpu"):
        raise ConfigurationError(
            f"unknown backend kind {kind!r}", fix="use 'auto', 'cuda' or 'cpu'."
        )
    return kind


async def _open_each(
    stack: contextlib.AsyncExitStack,
    kind: BackendKind,
    ordinals: list[int] | None,
    cpu_workers: int | None,
    max_device_bytes: int | None,
) -> list[BackendCore[Any]]:
    """Open a backend per ordinal (``None``: every visible GPU) into ``stack``."""
    backends: list[BackendCore[Any]] = []
    if kind == "cpu":
        for _ in ordinals or [0]:
            backends.append(await stack.enter_async_context(CpuBackend(workers=cpu_workers)))
        return backends
    try:
        for ordinal in ordinals if ordinals is not None else await _all_cuda_devices():
            made = await _make_cuda(ordinal, max_device_bytes)
            backends.append(await stack.enter_async_context(made))
    except UnsupportedFeatureError as exc:
        if kind == "cuda":
            raise
        _log.info("falling back to the cpu backend", reason=exc.what, fix=exc.fix)
        await stack.aclose()  # any device opened before the failure
        backends = [await stack.enter_async_context(CpuBackend(workers=cpu_workers))]
    return backends


def _ordinals(devices: DeviceSelector) -> list[int] | None:
    """The ordinals asked for; ``None`` for every visible device."""
    if devices == "all":
        return None
    chosen: list[Any] = [devices] if isinstance(devices, int) else list(devices)
    if not chosen or isinstance(devices, str | bytes):  # a typo'd "all" is not a list
        raise ValueError(
            f"devices must be an ordinal, 'all' or a list of ordinals, got {devices!r}"
        )
    for ordinal in chosen:
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
            raise ValueError(f"a device must be a non-negative int ordinal, got {ordinal!r}")
    if len(set(chosen)) != len(chosen):
        raise ConfigurationError(
            f"device ordinals {list(chosen)} name a device twice",
            fix="list each device once.",
        )
    return list(chosen)


async def _all_cuda_devices() -> list[int]:
    def count() -> int:
        from ..cuda import call, load_driver

        driver = load_driver()
        return int(call(driver.cuDeviceGetCount))

    found = await anyio.to_thread.run_sync(count)
    if found == 0:
        raise UnsupportedFeatureError(
            "the CUDA driver loaded but reports 0 devices",
            fix="check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or use kind='cpu'.",
        )
    return list(range(found))
