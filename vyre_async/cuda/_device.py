"""One CUDA device: its primary context, its limits, and whether it is still usable.

:class:`CudaDevice` retains the device's primary context once, for the backend's
lifetime, and makes it current in whichever thread calls the driver (the event-loop
thread and the backend's worker threads alike). :class:`DeviceHealth` remembers the
first sticky error: after it, every call through the device raises
:class:`~vyre_async.errors.DeviceLostError` without touching the driver.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from ..errors import (
    ConfigurationError,
    DeviceLostError,
    LifecycleError,
    UnsupportedFeatureError,
    VyreError,
)
from ..logging import get_logger
from ._driver import CUDA_SUCCESS, DEVICE_LOST_FIX, call, check, load_driver, unavailable

__all__ = ["CudaDevice", "DeviceHealth", "DeviceInfo"]

logger = get_logger("vyre_async.cuda")


class _Current(threading.local):
    """The CudaDevice whose context each thread last made current, by a token unique
    to each open (not the context handle), so a closed device and a new one for the
    same GPU never share a stale "already current" answer."""

    token = 0  # none yet in this thread; a class default, read on every dispatch


_current = _Current()
_tokens = itertools.count(1)


class DeviceInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the driver reports about one device.

    Attributes:
        ordinal: The CUDA device ordinal.
        name: Marketing name (``"NVIDIA H100 80GB HBM3"``).
        compute_capability: ``(major, minor)``, e.g. ``(9, 0)``.
        total_memory: Device memory in bytes.
        driver_version: ``cuDriverGetVersion``, e.g. ``12040`` for 12.4.
        multiprocessor_count: Streaming multiprocessors.
        max_threads_per_block: Upper bound on threads in one block.
        max_block_dims: Upper bounds of ``blockDim`` (x, y, z).
        max_grid_dims: Upper bounds of ``gridDim`` (x, y, z).
        max_shared_memory_per_block: Static shared memory available by default.
        max_shared_memory_per_block_optin: Shared memory a kernel may opt into.
    """

    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    total_memory: int
    driver_version: int
    multiprocessor_count: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    max_shared_memory_per_block: int
    max_shared_memory_per_block_optin: int

    @property
    def arch(self) -> str:
        """The NVRTC architecture name, e.g. ``"sm_90"``."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


class DeviceHealth:
    """Whether a device is still usable; set to lost once, never back.

    Args:
        label: How the device is named in messages (``"device 0 (NVIDIA H100)"``).

    Attributes:
        error: The first device-lost error, when there was one (set by
            :meth:`mark_lost` only; a plain attribute, read on every dispatch).
    """

    __slots__ = ("_label", "error")

    def __init__(self, label: str) -> None:
        self._label = label
        self.error: DeviceLostError | None = None

    @property
    def label(self) -> str:
        """How the device is named in messages."""
        return self._label

    @property
    def lost(self) -> bool:
        """Whether a sticky error has been seen."""
        return self.error is not None

    def mark_lost(self, error: VyreError) -> DeviceLostError:
        """Record that the device is lost (only the first cause is kept).

        A :class:`DeviceLostError` keeps its own fix (it depends on the CUDA error);
        any other error gets the general "restart the process" fix.

        Args:
            error: The error that showed it.

        Returns:
            The recorded :class:`DeviceLostError`.
        """
        if self.error is None:
            if isinstance(error, DeviceLostError):
                what, fix = error.what, error.fix
            else:
                what, fix = str(error), DEVICE_LOST_FIX
            self.error = DeviceLostError(f"{self._label}: {what}", fix=fix)
            logger.error("cuda_device_lost", device=self._label, reason=self.error.what)
        return self.error

    def check(self) -> None:
        """Raise the device-lost error if the device is lost.

        Raises:
            DeviceLostError: A sticky error was seen earlier.
        """
        if self.error is not None:
            raise DeviceLostError(
                f"{self._label} was lost earlier and refuses further work "
                f"(first error: {self.error.what})",
                fix=self.error.fix,
            )


def _attribute(driver: Any, device: Any, name: str) -> int:
    return int(call(driver.cuDeviceGetAttribute, getattr(driver.CUdevice_attribute, name), device))


class CudaDevice:
    """An open CUDA device with its retained primary context.

    Made by :meth:`open`; :meth:`close` releases the context. Calls go through
    :meth:`call`, which makes the context current, refuses work on a lost or closed
    device, and marks the device lost on a sticky error.
    """

    def __init__(self, driver: Any, handle: Any, context: Any, info: DeviceInfo) -> None:
        self.driver = driver
        self.handle = handle
        self.context = context
        self.info = info
        self.health = DeviceHealth(f"device {info.ordinal} ({info.name})")
        self._token = next(_tokens)
        self._closed = False
        self._close_lock = threading.Lock()

    @classmethod
    def open(cls, ordinal: int = 0) -> CudaDevice:
        """Initialise the driver, retain the primary context and read the limits.

        Args:
            ordinal: CUDA device ordinal.

        Returns:
            The open device; its context is current in the calling thread.

        Raises:
            UnsupportedFeatureError: No driver, or no device at all.
            ConfigurationError: ``ordinal`` is past the visible devices.
        """
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
            raise ValueError(f"device ordinal must be a non-negative int, got {ordinal!r}")
        driver = load_driver()
        count = int(call(driver.cuDeviceGetCount))
        if count == 0:
            raise UnsupportedFeatureError(
                "the CUDA driver loaded but reports 0 devices",
                fix="check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or use kind='cpu'.",
            )
        if ordinal >= count:
            raise ConfigurationError(
                f"CUDA device {ordinal} was asked for but only {count} device(s) are visible",
                fix=f"use a device ordinal below {count} (check CUDA_VISIBLE_DEVICES).",
            )
        handle = call(driver.cuDeviceGet, ordinal)
        info = cls._read_info(driver, handle, ordinal)
        context = call(driver.cuDevicePrimaryCtxRetain, handle)
        device = cls(driver, handle, context, info)
        try:
            device.make_current()
        except BaseException:
            device.close()
            raise
        logger.info(
            "cuda_device_opened",
            ordinal=ordinal,
            name=info.name,
            arch=info.arch,
            total_memory=info.total_memory,
            driver_version=info.driver_version,
        )
        return device

    @staticmethod
    def _read_info(driver: Any, handle: Any, ordinal: int) -> DeviceInfo:
        raw_name = call(driver.cuDeviceGetName, 256, handle)
        name = raw_name.split(b"\0", 1)[0].decode(errors="replace").strip()

        def attr(short: str) -> int:
            return _attribute(driver, handle, f"CU_DEVICE_ATTRIBUTE_{short}")

        return DeviceInfo(
            ordinal=ordinal,
            name=name,
            compute_capability=(attr("COMPUTE_CAPABILITY_MAJOR"), attr("COMPUTE_CAPABILITY_MINOR")),
            total_memory=int(call(driver.cuDeviceTotalMem, handle)),
            driver_version=int(call(driver.cuDriverGetVersion)),
            multiprocessor_count=attr("MULTIPROCESSOR_COUNT"),
            max_threads_per_block=attr("MAX_THREADS_PER_BLOCK"),
            max_block_dims=(
                attr("MAX_BLOCK_DIM_X"),
                attr("MAX_BLOCK_DIM_Y"),
                attr("MAX_BLOCK_DIM_Z"),
            ),
            max_grid_dims=(attr("MAX_GRID_DIM_X"), attr("MAX_GRID_DIM_Y"), attr("MAX_GRID_DIM_Z")),
            max_shared_memory_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK"),
            max_shared_memory_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        )

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    @property
    def lost(self) -> bool:
        """Whether a sticky error made the device unusable."""
        return self.health.lost

    def make_current(self) -> None:
        """Make the primary context current in the calling thread.

        The first call in each thread costs one ``cuCtxSetCurrent``; later calls
        compare a thread-local and return.
        """
        if _current.token == self._token:
            return
        call(self.driver.cuCtxSetCurrent, self.context)
        _current.token = self._token

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run one checked driver call in this device's context.

        Args:
            fn: A ``cuda.bindings.driver`` function.
            *args: Its arguments.

        Returns:
            What :func:`~vyre_async.cuda.check` returns.

        Raises:
            LifecycleError: The device was closed.
            DeviceLostError: The device is lost, or this call found it so.
            OutOfMemoryError: The driver ran out of memory.
            DispatchError: Any other failure.
        """
        # The enqueue path makes several calls per submission, so the checks are
        # inlined: one attribute test each while the device is usable and current.
        if self._closed or self.health.lost:
            if self._closed:
                raise LifecycleError(
                    f"{self.health.label} is closed",
                    fix="open a new backend to use the GPU again.",
                )
            self.health.check()
        try:
            if _current.token != self._token:
                self.make_current()
            try:
                returned = fn(*args)
            except RuntimeError as exc:
                raise unavailable(fn, exc) from exc
            if isinstance(returned, tuple):
                if int(returned[0]) == CUDA_SUCCESS:
                    return returned[1] if len(returned) == 2 else (returned[1:] or None)
            elif int(returned) == CUDA_SUCCESS:
                return None
            return check(returned, getattr(fn, "__name__", None) or repr(fn))
        except DeviceLostError as exc:
            self.health.mark_lost(exc)
            raise

    def is_page_locked(self, address: int, nbytes: int) -> bool:
        """Whether host bytes ``[address, address + nbytes)`` lie in one page-locked
        allocation this context can copy from directly (``cudaHostAlloc``'d memory of
        this device's primary context, CuPy's pinned arrays, ``cuMemHostRegister``).

        Pageable memory answers False (the driver reports an invalid value, which is
        not an error here).
        """
        self.make_current()
        driver = self.driver
        attribute = driver.CUpointer_attribute
        found = driver.cuPointerGetAttribute(attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address)
        if int(found[0]) != 0 or int(found[1]) != int(driver.CUmemorytype.CU_MEMORYTYPE_HOST):
            return False
        start = driver.cuPointerGetAttribute(
            attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address
        )
        size = driver.cuPointerGetAttribute(attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE, address)
        if int(start[0]) != 0 or int(size[0]) != 0:
            return False
        first = int(start[1])
        return first <= address and address + nbytes <= first + int(size[1])

    def close(self) -> None:
        """Release the primary context. Idempotent; never raises for a lost device."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if _current.token == self._token:
            _current.token = 0
        try:
            call(self.driver.cuDevicePrimaryCtxRelease, self.handle)
        except VyreError as exc:
            logger.warning("cuda_context_release_failed", device=self.info.ordinal, error=str(exc))
        logger.info("cuda_device_closed", ordinal=self.info.ordinal, lost=self.lost)
