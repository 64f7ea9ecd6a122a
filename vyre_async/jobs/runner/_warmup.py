"""Creating a CUDA job's device contexts while the job is checked and its graph prepared.

Opening a CUDA backend spends most of its time creating the device's primary context
(about 95 ms on an H100 host). Before it opens its devices, a job checks them (loading
and initialising the driver), checks its file, fingerprints it, opens its folder and
prepares its graph, none of which needs a context; so the runner starts the warm-up
with the devices' check (the driver initialises once, in whichever thread asks
first, and the contexts follow at once) and retains the primary contexts in
background threads meanwhile, one
thread per device, so that the devices' contexts are made at the same time, and the
backends then open on contexts that already exist. Each context is marked on the
start-up timeline (``device_context``, the device by its place among the job's). The
warm-up lets go of them once the job's devices are open, and before any reopen after a
lost device (which needs the old context gone). A warm-up that fails changes nothing:
the backend's own open reports why.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import Any

from ...backends import BackendKind, DeviceSelector
from ...cuda import call, load_driver
from ...logging import get_logger
from ...telemetry import startup_stage

__all__ = ["ContextWarmup"]

_log = get_logger("vyre_async.jobs")


class ContextWarmup:
    """Primary contexts retained in background threads, until :meth:`release`.

    Args:
        devices: An ordinal, ``"all"`` or a list of ordinals.
    """

    def __init__(self, devices: DeviceSelector) -> None:
        self._held: list[Any] = []
        self._lock = threading.Lock()
        self._driver: Any = None
        # The threads mark the start-up timeline recording where the warm-up began.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run,
            args=(self._retain_all, devices),
            name="vyre-context-warmup",
            daemon=True,
        )
        self._thread.start()

    @classmethod
    def start(
        cls, kind: BackendKind, devices: DeviceSelector, executor: str
    ) -> ContextWarmup | None:
        """A warm-up for a local CUDA job; ``None`` for any other."""
        if kind != "cuda" or executor != "local":
            return None
        return cls(devices)

    def _retain_all(self, devices: DeviceSelector) -> None:
        try:
            driver = self._driver = load_driver()
            if devices == "all":
                ordinals = list(range(int(call(driver.cuDeviceGetCount))))
            else:
                ordinals = [devices] if isinstance(devices, int) else list(devices)
        except Exception as exc:  # the backend's own open says what is wrong
            _log.debug("context_warmup_failed", error=str(exc))
            return
        threads = [
            threading.Thread(
                target=contextvars.copy_context().run,
                args=(self._retain, place, ordinal),
                name=f"vyre-context-warmup-{ordinal}",
                daemon=True,
            )
            for place, ordinal in enumerate(ordinals)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _retain(self, place: int, ordinal: int) -> None:
        began = time.monotonic()
        try:
            handle = call(self._driver.cuDeviceGet, ordinal)
            call(self._driver.cuDevicePrimaryCtxRetain, handle)
        except Exception as exc:  # the backend's own open says what is wrong
            _log.debug("context_warmup_failed", ordinal=ordinal, error=str(exc))
            return
        with self._lock:
            self._held.append(handle)
        startup_stage("device_context", began=began, device=str(place), ordinal=ordinal)

    def release(self) -> None:
        """Wait for the warm-up, then let go of its contexts (blocking: call in a thread)."""
        self._thread.join()
        while self._held:
            handle = self._held.pop()
            try:
                call(self._driver.cuDevicePrimaryCtxRelease, handle)
            except Exception as exc:
                _log.debug("context_warmup_release_failed", error=str(exc))
