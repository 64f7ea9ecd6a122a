"""Pools of CUDA streams and events, so submitting work creates neither.

Streams are non-blocking (``CU_STREAM_NON_BLOCKING``: no implicit sync with the
legacy default stream). Completion events are created with
``CU_EVENT_DISABLE_TIMING``, the cheapest kind to record and query; timing events
(default flags) are made only when a dispatch asks for device time. Each pool keeps
a capped cache of idle handles and destroys what does not fit.

Handles are opaque (``CUstream`` / ``CUevent``); the create and destroy functions
are constructor arguments so the pools are tested without a GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import LifecycleError, VyreError
from ..logging import get_logger

if TYPE_CHECKING:
    from ._device import CudaDevice

__all__ = ["EventPool", "HandlePool", "StreamPool"]

logger = get_logger("vyre_async.cuda")


class HandlePool:
    """A capped cache of reusable driver handles of one kind.

    Args:
        create: Makes a new handle.
        destroy: Destroys a handle.
        kind: What the handles are, for messages (``"stream"``).
        max_cached: Idle handles kept; more are destroyed on release.
    """

    def __init__(
        self,
        create: Callable[[], Any],
        destroy: Callable[[Any], None],
        *,
        kind: str,
        max_cached: int,
    ) -> None:
        if max_cached < 0:
            raise ValueError(f"max_cached must be >= 0, got {max_cached}")
        self._create = create
        self._destroy = destroy
        self._kind = kind
        self.max_cached = max_cached
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._live: dict[int, Any] = {}
        self._closed = False
        #: Handles created since the pool opened.
        self.created = 0
        #: Handles destroyed since the pool opened.
        self.destroyed = 0

    @property
    def cached(self) -> int:
        """Idle handles kept for reuse."""
        return len(self._idle)

    @property
    def live(self) -> int:
        """Handles handed out and not yet released."""
        return len(self._live)

    def acquire(self) -> Any:
        """Return an idle handle, or a new one.

        Raises:
            LifecycleError: The pool is closed.
        """
        with self._lock:
            self._check_open()
            if self._idle:
                handle = self._idle.pop()
                self._live[int(handle)] = handle
                return handle
        handle = self._create()
        with self._lock:
            self.created += 1
            closed = self._closed
            if not closed:
                self._live[int(handle)] = handle
        if closed:
            self._destroy_all([handle])
            self._check_open()
        return handle

    def release(self, handle: Any) -> None:
        """Give a handle back for reuse (or destroy it when the cache is full).

        Raises:
            LifecycleError: Released twice, or not from this pool.
        """
        with self._lock:
            if self._live.pop(int(handle), None) is None:
                raise LifecycleError(
                    f"{self._kind} 0x{int(handle):x} is not live in this pool",
                    fix=f"release each {self._kind} once, to the pool that made it.",
                )
            if not self._closed and len(self._idle) < self.max_cached:
                self._idle.append(handle)
                return
        self._destroy_all([handle])

    def _destroy_all(self, handles: list[Any]) -> None:
        for handle in handles:
            try:
                self._destroy(handle)
            except VyreError as exc:  # a lost device: the context release frees it
                logger.warning("handle_destroy_failed", kind=self._kind, error=str(exc))
            with self._lock:
                self.destroyed += 1

    def _check_open(self) -> None:
        if self._closed:
            raise LifecycleError(f"the {self._kind} pool is closed", fix="open a new backend.")

    def close(self) -> int:
        """Destroy every handle, idle and live. Idempotent.

        Returns:
            How many handles were still live (logged as a leak).
        """
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
            live = list(self._live.values())
            handles = [*self._idle, *live]
            self._idle.clear()
            self._live.clear()
        if live:
            logger.warning("handle_pool_closed_with_live_handles", kind=self._kind, live=len(live))
        self._destroy_all(handles)
        return len(live)


class StreamPool(HandlePool):
    """Reusable non-blocking streams.

    Args:
        create: Makes a stream.
        destroy: Destroys a stream.
        max_cached: Idle streams kept.
    """

    def __init__(
        self, create: Callable[[], Any], destroy: Callable[[Any], None], *, max_cached: int = 8
    ) -> None:
        super().__init__(create, destroy, kind="stream", max_cached=max_cached)

    @classmethod
    def for_device(cls, device: CudaDevice, *, max_cached: int = 8) -> StreamPool:
        """Make a pool over ``cuStreamCreate(CU_STREAM_NON_BLOCKING)``."""
        driver = device.driver
        flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
        return cls(
            lambda: device.call(driver.cuStreamCreate, flags),
            lambda stream: device.call(driver.cuStreamDestroy, stream),
            max_cached=max_cached,
        )

    @property
    def streams_cached(self) -> int:
        """Idle streams kept for reuse."""
        return self.cached


class EventPool:
    """Reusable events: completion events, and timing events on request.

    Args:
        create: ``create(timing)`` makes an event; ``timing=False`` must give a
            ``CU_EVENT_DISABLE_TIMING`` event.
        destroy: Destroys an event.
        max_cached: Idle completion events kept.
        max_cached_timing: Idle timing events kept.
    """

    def __init__(
        self,
        create: Callable[[bool], Any],
        destroy: Callable[[Any], None],
        *,
        max_cached: int = 64,
        max_cached_timing: int = 16,
    ) -> None:
        self.completion = HandlePool(
            lambda: create(False), destroy, kind="completion event", max_cached=max_cached
        )
        self.timing = HandlePool(
            lambda: create(True), destroy, kind="timing event", max_cached=max_cached_timing
        )

    @classmethod
    def for_device(
        cls, device: CudaDevice, *, max_cached: int = 64, max_cached_timing: int = 16
    ) -> EventPool:
        """Make a pool over ``cuEventCreate`` (``DISABLE_TIMING`` or default flags)."""
        driver = device.driver
        disable = int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        default = int(driver.CUevent_flags.CU_EVENT_DEFAULT)
        return cls(
            lambda timing: device.call(driver.cuEventCreate, default if timing else disable),
            lambda event: device.call(driver.cuEventDestroy, event),
            max_cached=max_cached,
            max_cached_timing=max_cached_timing,
        )

    def acquire(self) -> Any:
        """Return a completion event (timing disabled)."""
        return self.completion.acquire()

    def release(self, event: Any) -> None:
        """Give a completion event back."""
        self.completion.release(event)

    def acquire_timing_pair(self) -> tuple[Any, Any]:
        """Return ``(start, end)`` timing events for ``cuEventElapsedTime``."""
        start = self.timing.acquire()
        try:
            return start, self.timing.acquire()
        except BaseException:
            self.timing.release(start)
            raise

    def release_timing_pair(self, pair: tuple[Any, Any]) -> None:
        """Give a timing pair back."""
        for event in pair:
            self.timing.release(event)

    @property
    def events_cached(self) -> int:
        """Idle events of both kinds kept for reuse."""
        return self.completion.cached + self.timing.cached

    @property
    def live(self) -> int:
        """Events of both kinds handed out and not yet released."""
        return self.completion.live + self.timing.live

    def close(self) -> int:
        """Destroy every event. Idempotent. Returns how many were still live."""
        return self.completion.close() + self.timing.close()
