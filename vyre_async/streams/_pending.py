"""Completions and pending dispatches: the awaitable side of submitted work.

A :class:`Completion` is set once, on the event-loop thread, by whoever observes the
work finish (the CUDA completion watcher, or the CPU backend's worker task). Its
callbacks run before any waiter wakes, so memory the work used is back in its pool
by the time the awaiting task resumes, and never before the work has finished.

A :class:`PendingDispatch` wraps a completion with the copy-out step and timing.
Cancelling an ``await`` only stops that waiter; the completion and its callbacks are
untouched, so cancellation can never hand memory back early.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel
import msgspec

from ..errors import DispatchError

T = TypeVar("T")


class Completion:
    """The moment some submitted work finished, successfully or not."""

    __slots__ = ("_callbacks", "_done", "_error", "_event", "device_ns")

    def __init__(self) -> None:
        # Made by the first waiter: most work is awaited once, some never, and an
        # anyio.Event costs about 2 us to make (a backend lookup), paid per submit.
        self._event: anyio.Event | None = None
        self._done = False
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] = []
        #: Device time of the work in nanoseconds, when it was measured.
        self.device_ns: int | None = None

    @property
    def done(self) -> bool:
        """Whether the work has finished (the callbacks have run)."""
        return self._done

    @property
    def error(self) -> BaseException | None:
        """The failure, when the work failed."""
        return self._error

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the work finished (at once if it already has)."""
        if self._done:
            callback()
        else:
            self._callbacks.append(callback)

    def complete(self, error: BaseException | None = None) -> None:
        """Mark the work finished, run callbacks, then wake the waiters. Idempotent."""
        if self._done:
            return
        self._done = True
        self._error = error
        callbacks, self._callbacks = self._callbacks, []
        try:
            for callback in callbacks:
                callback()
        finally:
            if self._event is not None:
                self._event.set()

    async def wait(self) -> None:
        """Wait for the work; re-raise its failure."""
        if self._done:
            await anyio.lowlevel.checkpoint()
        else:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()
        if self._error is not None:
            raise self._error


class DispatchTiming(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the time of one dispatch went, in nanoseconds.

    Attributes:
        wall_ns: From the start of ``submit`` to the outputs being in host arrays.
        device_ns: Device execution time (CUDA events, or the CPU reference's run
            time); ``None`` when timing was not asked for on the CUDA backend.
        enqueue_ns: Time spent inside ``submit`` (validation, staging, enqueue).
        wait_ns: Time the awaiting task spent waiting, copy-out included.
    """

    wall_ns: int
    device_ns: int | None
    enqueue_ns: int
    wait_ns: int


class TimedResult(msgspec.Struct, Generic[T], frozen=True):
    """The result of ``await pending.timed()``: the outputs and their timing.

    A msgspec struct, like :class:`DispatchTiming`: made once per awaited dispatch,
    it costs a fifth of a frozen dataclass.
    """

    outputs: T
    timing: DispatchTiming


class PendingDispatch(Generic[T]):
    """Submitted work whose outputs can be awaited.

    ``await pending`` returns the outputs; awaiting again returns the same objects.
    Dropping a pending dispatch without awaiting it is allowed: its staging memory
    goes back to the pool once the work has finished, never earlier.

    Args:
        completion: Set when the work finishes.
        collect: Produces the outputs once the work finished; called at most once.
        discard: Releases what ``collect`` would have released, for a dispatch that is
            dropped unawaited.
        label: Name used in timeout messages (the kernel or sequence).
        submitted_ns: ``perf_counter_ns()`` when ``submit`` started.
        enqueue_ns: Time spent inside ``submit``.
        timeout: Seconds an ``await`` may take before :class:`DispatchError`.
        observe: Called once with the timing of the first successful await
            (telemetry).
    """

    __slots__ = (
        "__weakref__",
        "_collect",
        "_completion",
        "_discard",
        "_label",
        "_observe",
        "_outputs",
        "_submitted_ns",
        "_timeout",
        "enqueue_ns",
    )

    def __init__(
        self,
        completion: Completion,
        collect: Callable[[], T],
        *,
        discard: Callable[[], None] | None = None,
        label: str,
        submitted_ns: int,
        enqueue_ns: int,
        timeout: float | None = None,
        observe: Callable[[DispatchTiming], None] | None = None,
    ) -> None:
        self._completion = completion
        self._collect = collect
        self._label = label
        self._submitted_ns = submitted_ns
        self._timeout = timeout
        self._observe = observe
        self._outputs: tuple[T] | None = None
        self.enqueue_ns = enqueue_ns
        self._discard = discard

    def __del__(self) -> None:
        # Dropped before its outputs were collected: release what collecting would
        # have, once the work has finished (a finalizer cost ~2 us per submit).
        discard = getattr(self, "_discard", None)
        if discard is not None:
            self._discard = None
            self._completion.add_done_callback(discard)

    def is_ready(self) -> bool:
        """Whether the work has finished; never blocks."""
        return self._completion.done

    def __await__(self) -> Generator[Any, None, T]:
        return self.wait().__await__()

    async def wait(self) -> T:
        """Wait for the work and return its outputs.

        Raises:
            DispatchError: The work failed, or ``timeout`` passed first.
            DeviceLostError: The device failed while running it.
        """
        return (await self.timed()).outputs

    async def timed(self) -> TimedResult[T]:
        """Wait for the work and return its outputs with a :class:`DispatchTiming`."""
        start = time.perf_counter_ns()
        first = False
        if self._outputs is None:
            await self._wait_completion()
            if self._outputs is None:
                first = True
                self._discard = None
                self._outputs = (self._collect(),)
        end = time.perf_counter_ns()
        timing = DispatchTiming(
            wall_ns=end - self._submitted_ns,
            device_ns=self._completion.device_ns,
            enqueue_ns=self.enqueue_ns,
            wait_ns=end - start,
        )
        if first and self._observe is not None:
            self._observe(timing)
        return TimedResult(outputs=self._outputs[0], timing=timing)

    async def _wait_completion(self) -> None:
        if self._timeout is None:
            await self._completion.wait()
            return
        try:
            with anyio.fail_after(self._timeout):
                await self._completion.wait()
        except TimeoutError:
            raise DispatchError(
                f"{self._label} did not finish within its timeout of {self._timeout:g} s; "
                "it keeps running and its memory stays reserved until it does",
                fix="raise DispatchConfig.timeout, or await it again later.",
            ) from None
