"""Completions: the moment some submitted work finished, successfully or not.

A :class:`Completion` is set once, on the event-loop thread, by whoever observes the
work finish (the CUDA completion watcher or a task polling for it, or the CPU
backend's worker task). Its release hook and callbacks run before any waiter wakes,
so memory the work used is back in its pool by the time the awaiting task resumes,
and never before the work has finished.

Work on a CUDA stream has a *source*: the :class:`~._watcher.CompletionWatcher`
that polls its fence. Waiting on such a completion asks the source to poll from the
waiting task itself (see :meth:`CompletionWatcher.follow`), so short work is noticed
within microseconds without a detour through another task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from ..errors import DispatchError
from ..logging import get_logger
from ._park import FUTURE, Spot

__all__ = ["Completion", "CompletionSource"]

logger = get_logger("vyre_async.streams")


class CompletionSource(Protocol):
    """What completes a completion and can be asked to poll for it."""

    async def follow(self, completion: Completion) -> None:
        """Return once ``completion`` is done (its failure is not raised here)."""


class Completion:
    """The end of one piece of submitted work.

    Subclasses override :meth:`_release` to give back what the work held (buffers,
    staging memory, events); it runs exactly once, first, when the work finishes.

    Attributes:
        device_ns: Device time of the work in nanoseconds, when it was measured.
        fence: The fence the work joined on a CUDA stream (``None`` elsewhere).
        after: The earlier work this work was to start after, when it had to wait for
            any (set by the resident registry's claim). Dropped when the work
            succeeds; kept when it fails, since it may have failed before waiting for
            them, and work that waited for it must then wait for those instead.
    """

    __slots__ = (
        "_callbacks",
        "_done",
        "_error",
        "_source",
        "_waiters",
        "after",
        "device_ns",
        "fence",
    )

    def __init__(self, source: CompletionSource | None = None) -> None:
        self._done = False
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] | None = None
        # Where tasks waiting for this work sleep (see _park); made only by a waiter
        # that must sleep: most work is awaited by its poller.
        self._waiters: list[Spot] | None = None
        self._source = source
        self.device_ns: int | None = None
        self.fence: Any = None
        self.after: list[Completion] | None = None

    @property
    def done(self) -> bool:
        """Whether the work has finished (the release hook and callbacks have run)."""
        return self._done

    @property
    def error(self) -> BaseException | None:
        """The failure, when the work failed."""
        return self._error

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the work finished (at once if it already has)."""
        if self._done:
            callback()
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def _release(self) -> None:
        """Give back what the work held (subclasses); runs once, before the callbacks."""

    def complete(self, error: BaseException | None = None, *, release: bool = True) -> None:
        """Mark the work finished, release, run callbacks, then wake waiters. Idempotent.

        A release hook that raises fails the work with a :class:`DispatchError`
        (unless it had already failed); the callbacks and waiters still run.

        Args:
            error: The work's failure, if it failed. A cancellation or interrupt (what
                stopped the task enqueueing the work) is kept as a
                :class:`DispatchError`: raised in the tasks waiting for the work, the
                cancellation itself would cancel them.
            release: ``False`` skips the release hook: for work abandoned while the
                device may still be using its memory (a stopped watcher).
        """
        if self._done:
            return
        self._done = True
        if error is None:
            self.after = None  # finished in order: nobody needs what it waited for
        else:
            self._error = error if isinstance(error, Exception) else _interrupted(error)
        if release:
            try:
                self._release()
            except Exception as exc:
                logger.exception("completion_release_failed")
                if self._error is None:
                    self._error = DispatchError(
                        f"the work finished but releasing its resources raised {exc!r}",
                        fix="report this bug with the log.",
                    )
        try:
            callbacks = self._callbacks
            if callbacks is not None:
                self._callbacks = None
                for callback in callbacks:
                    callback()
        finally:
            waiters = self._waiters
            if waiters is not None:
                self._waiters = None
                for spot in waiters:  # wake(spot), inlined: once per parked waiter
                    if spot.__class__ is FUTURE:
                        if not spot.done():
                            spot.set_result(None)
                    else:
                        spot.set()

    def _add_waiter(self, new_spot: Callable[[], Spot] = anyio.Event) -> Spot:
        """A new parking spot that :meth:`complete` wakes; for a waiter about to sleep."""
        spot = new_spot()
        if self._waiters is None:
            self._waiters = [spot]
        else:
            self._waiters.append(spot)
        return spot

    def _discard_waiter(self, spot: Spot) -> None:
        if self._waiters is not None and spot in self._waiters:
            self._waiters.remove(spot)

    async def wait(self) -> None:
        """Wait for the work; re-raise its failure.

        Raises:
            BaseException: The work's failure, as it was completed with.
        """
        if not self._done:
            if self._source is not None:
                await self._source.follow(self)
            else:
                event = self._add_waiter()
                try:
                    await event.wait()
                except BaseException:
                    self._discard_waiter(event)
                    raise
        else:
            await anyio.lowlevel.checkpoint()
        if self._error is not None:
            raise self._error


def _interrupted(error: BaseException) -> DispatchError:
    # Not chained: the cancellation's traceback would keep the cancelled task's frames.
    return DispatchError(
        f"the work was stopped before it was enqueued: the task enqueueing it was "
        f"interrupted ({type(error).__name__})",
        fix="submit it again from a task that is not cancelled while it enqueues.",
    )
