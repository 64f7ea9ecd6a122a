"""Opening a local job's devices while its graph is prepared.

A job's first block waits for its graph (read from the cache, generated or loaded)
and for its devices (each one's context, pools, streams and the kernels the job's
workloads launch). Neither needs the other, so the local executor opens the devices
in a background task as soon as the job is checked, and loads on every device at once
the kernels the job's kinds name (:meth:`~vyre_async.algorithms.QueryKind.kernels`),
no others. The first target takes the open devices; a later one (after a device was
lost) opens its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
from anyio.abc import TaskStatus

from ..._groups import sole_vyre_error
from ...backends import BackendKind, DeviceGroup, DeviceSelector, open_devices
from ...kernels import Kernel
from ...logging import get_logger
from ...telemetry import startup_stage
from ..spec import JobSpec

__all__ = ["DeviceStart", "job_kernels", "load_kernels_everywhere"]

_log = get_logger("vyre_async.jobs")


def job_kernels(spec: JobSpec) -> tuple[Kernel, ...]:
    """The kernels the job's workloads launch, each once, in workload order."""
    kernels = (k for w in spec.workload for k in w.unit.kernels(w.params))
    return tuple(dict.fromkeys(kernels))


async def load_kernels_everywhere(group: DeviceGroup, kernels: Sequence[Kernel]) -> None:
    """Load ``kernels`` on every device of ``group`` at once, each device's marked on
    the start-up timeline by its place in the group.

    Raises:
        VyreError: A device could not load them (that error, not a group of them).
    """

    async def load(index: int) -> None:
        began = time.monotonic()
        await group.backends[index].load_kernels(*kernels)
        startup_stage("kernels_loaded", began=began, device=str(index), modules=len(kernels))

    try:
        async with anyio.create_task_group() as tg:
            for index in range(len(group)):
                tg.start_soon(load, index)
    except BaseExceptionGroup as errors:
        error = sole_vyre_error(errors)
        if error is None:
            raise
        raise error from None


class DeviceStart:
    """A job's devices being opened in the background, for its first target to take.

    Made and run by the local executor's ``connect``; :meth:`run` holds the open
    devices until :meth:`release` (or until the run is cancelled).

    Args:
        kind: The backend kind.
        devices: The devices (an ordinal, ``"all"``, a list).
        kernels: What to load on each device once it is open.
    """

    def __init__(
        self,
        kind: BackendKind,
        devices: DeviceSelector,
        kernels: Sequence[Kernel],
        memory_limit: int | None = None,
    ):
        self._kind = kind
        self._devices = devices
        self._memory_limit = memory_limit
        self._kernels = tuple(kernels)
        self._ready = anyio.Event()
        self._released = anyio.Event()
        self._ended = anyio.Event()
        self._group: DeviceGroup | None = None
        self._error: Exception | None = None
        self._close_error: Exception | None = None
        self._taken = False

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the devices and load the kernels, then hold them until released
        (leaving ``open_devices`` closes every device at once)."""
        task_status.started()
        began = time.monotonic()
        try:
            async with open_devices(
                self._kind, devices=self._devices, memory_limit=self._memory_limit
            ) as group:
                startup_stage("devices_opened", began=began, devices=len(group))
                await load_kernels_everywhere(group, self._kernels)
                self._group = group
                self._ready.set()
                await self._released.wait()
        except Exception as exc:  # the target that takes the devices raises it
            _log.debug("device_start_failed", error=str(exc))
            if self._group is None:
                self._error = exc
            else:
                self._close_error = exc
            self._ready.set()
        finally:
            self._ended.set()

    async def take(self) -> DeviceGroup | None:
        """The open devices, once (waiting for them); ``None`` for every later call.

        Raises:
            VyreError: Opening the devices failed (what their own open raised).
        """
        if self._taken:
            return None
        self._taken = True
        await self._ready.wait()
        if self._error is not None:
            raise self._error
        return self._group

    async def release(self) -> None:
        """End :meth:`run`, which closes the devices taken, and wait for that (also
        when cancelled).

        Raises:
            Exception: What closing a device raised.
        """
        self._released.set()
        with anyio.CancelScope(shield=True):
            await self._ended.wait()
        error, self._close_error = self._close_error, None
        if error is not None:
            raise error
