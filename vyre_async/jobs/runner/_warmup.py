"""Creating a CUDA job's device contexts while the job is checked and its graph prepared.

Opening a CUDA backend spends most of its time creating the device's primary context
(about 95 ms on an H100 host). Before it opens its devices, a job checks its file,
fingerprints it, opens its folder and prepares its graph, none of which needs a device;
so the runner retains the primary contexts in a background thread meanwhile, and the
backends then open on contexts that already exist. The warm-up lets go of them once the
job's devices are open, and before any reopen after a lost device (which needs the old
context gone). A warm-up that fails changes nothing: the backend's own open reports why.
"""

from __future__ import annotations

import threading
from typing import Any

from ...backends import BackendKind, DeviceSelector
from ...cuda import call, load_driver
from ...logging import get_logger

__all__ = ["ContextWarmup"]

_log = get_logger("vyre_async.jobs")


class ContextWarmup:
    """Primary contexts retained in a background thread, until :meth:`release`.

    Args:
        devices: An ordinal, ``"all"`` or a list of ordinals.
    """

    def __init__(self, devices: DeviceSelector) -> None:
        self._held: list[Any] = []
        self._driver: Any = None
        self._thread = threading.Thread(
            target=self._retain, args=(devices,), name="vyre-context-warmup", daemon=True
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

    def _retain(self, devices: DeviceSelector) -> None:
        try:
            driver = self._driver = load_driver()
            if devices == "all":
                ordinals = list(range(int(call(driver.cuDeviceGetCount))))
            else:
                ordinals = [devices] if isinstance(devices, int) else list(devices)
            for ordinal in ordinals:
                handle = call(driver.cuDeviceGet, ordinal)
                call(driver.cuDevicePrimaryCtxRetain, handle)
                self._held.append(handle)
        except Exception as exc:  # the backend's own open says what is wrong
            _log.debug("context_warmup_failed", error=str(exc))

    def release(self) -> None:
        """Wait for the warm-up, then let go of its contexts (blocking: call in a thread)."""
        self._thread.join()
        while self._held:
            handle = self._held.pop()
            try:
                call(self._driver.cuDevicePrimaryCtxRelease, handle)
            except Exception as exc:
                _log.debug("context_warmup_release_failed", error=str(exc))
