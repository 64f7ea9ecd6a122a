"""A process's start-up as a timeline: when each stage ended, from the process's start.

A job's first result waits on a chain of stages (the interpreter and its imports, the
job's checks, each device's context and kernels, the graph's load and its upload to
each device, the first block, the first commit). A :class:`StartupTimeline` records
each stage once, as its offset in seconds on the monotonic clock from the timeline's
origin (the process's start, where the system says when that was) and, for a stage
that took time, how long it took; whoever listens (the job runner logs each stage)
hears of each as it is marked, and of the ones marked before it listened.

Code in any layer marks a stage with :func:`startup_stage`, which costs one context
variable lookup and does nothing unless a timeline is recording in the calling
context (:func:`recording_startup`), so library code marks its stages freely and only
a job's start-up hears of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

__all__ = [
    "StartupStage",
    "StartupTimeline",
    "process_started_at",
    "recording_startup",
    "startup_stage",
]


class StartupStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One stage of a start-up.

    Attributes:
        stage: What ended (``"graph_ready"``, ``"device_context"``, ...).
        at_s: When it ended: seconds from the timeline's origin (monotonic clock).
        took_s: How long it took, for a stage with a beginning (``None``: a moment).
        device: The device it happened on, for per-device stages.
        fields: What else the stage says (its origin, bytes, modules...).
    """

    stage: str
    at_s: float
    took_s: float | None = None
    device: str | None = None
    fields: dict[str, Any] = msgspec.field(default_factory=dict)


def process_started_at() -> float:
    """When this process started, on the :func:`time.monotonic` clock.

    Read from ``/proc/self/stat`` (the start in clock ticks since boot, against the
    boot-time clock now), so the interpreter's own start and its imports count; where
    that cannot be read (no ``/proc``), the time of this call.
    """
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as stat:
            text = stat.read()
        # Fields after the command name, which may hold spaces: starttime is field 22.
        started_ticks = int(text[text.rindex(b")") + 2 :].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - max(0.0, age)


class StartupTimeline:
    """The stages of one start-up, each marked once, as offsets from ``origin``.

    Thread-safe: stages are marked from the event loop and from worker threads.

    Args:
        origin: The moment offsets count from, on the :func:`time.monotonic` clock
            (``None``: the process's start, see :func:`process_started_at`; a
            ``process_started`` stage is marked at offset 0 then).
    """

    def __init__(self, origin: float | None = None) -> None:
        self._origin = process_started_at() if origin is None else origin
        self._stages: list[StartupStage] = []
        self._marked: set[tuple[str, str | None]] = set()
        self._listeners: list[Callable[[StartupStage], None]] = []
        self._closed = False
        self._lock = threading.Lock()
        if origin is None:
            self._add(StartupStage("process_started", 0.0))

    @property
    def origin(self) -> float:
        """The monotonic time offsets count from."""
        return self._origin

    @property
    def stages(self) -> list[StartupStage]:
        """The stages marked so far, in the order they were marked."""
        with self._lock:
            return list(self._stages)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (later marks are dropped)."""
        return self._closed

    def since_origin(self, moment: float | None = None) -> float:
        """Seconds from the origin to ``moment`` (a monotonic time; ``None``: now)."""
        return (time.monotonic() if moment is None else moment) - self._origin

    def mark(
        self,
        stage: str,
        *,
        began: float | None = None,
        device: str | None = None,
        **fields: Any,
    ) -> None:
        """Mark ``stage`` as ended now (a stage already marked for ``device`` is kept).

        Args:
            stage: Its name.
            began: When it began (a monotonic time), for a stage that took time.
            device: The device, for a stage each device goes through.
            **fields: What else to record (plain values).
        """
        now = time.monotonic()
        took = None if began is None else round(max(0.0, now - began), 6)
        self._add(StartupStage(stage, round(now - self._origin, 6), took, device, fields))

    def _add(self, entry: StartupStage) -> None:
        with self._lock:
            key = (entry.stage, entry.device)
            if self._closed or key in self._marked:
                return
            self._marked.add(key)
            self._stages.append(entry)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(entry)

    def listen(self, listener: Callable[[StartupStage], None]) -> None:
        """Call ``listener`` with every stage marked before now, then with each new one."""
        with self._lock:
            before = list(self._stages)
            self._listeners.append(listener)
        for entry in before:
            listener(entry)

    def close(self) -> None:
        """End the start-up: later marks are dropped, and listeners hear nothing more."""
        with self._lock:
            self._closed = True
            self._listeners.clear()


_recording: contextvars.ContextVar[StartupTimeline | None] = contextvars.ContextVar(
    "vyre_async_startup", default=None
)


@contextlib.contextmanager
def recording_startup(timeline: StartupTimeline) -> Iterator[StartupTimeline]:
    """Let :func:`startup_stage` calls in this context (and in tasks and worker
    threads started from it) mark stages on ``timeline``, inside the block."""
    token = _recording.set(timeline)
    try:
        yield timeline
    finally:
        _recording.reset(token)


def startup_stage(
    stage: str, *, began: float | None = None, device: str | None = None, **fields: Any
) -> None:
    """Mark ``stage`` on the timeline recording in this context, if one is (see
    :meth:`StartupTimeline.mark` for the arguments); otherwise do nothing."""
    timeline = _recording.get()
    if timeline is not None and not timeline.closed:
        timeline.mark(stage, began=began, device=device, **fields)
