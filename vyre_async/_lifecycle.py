"""One lifecycle for everything that is opened once and closed once.

Backends, device groups, sessions, the dynamic batcher and the job runner are made
unopened, opened once (entering their ``async with`` block, or starting), and
closed once. Closing twice is a no-op; opening again is refused with a
:class:`~vyre_async.errors.LifecycleError` that says what to make instead. They
all keep their state in a :class:`LifecycleState` through :class:`Lifecycle`.
"""

from __future__ import annotations

import enum
from abc import abstractmethod
from types import TracebackType
from typing import ClassVar

from .errors import LifecycleError

__all__ = ["AsyncLifecycle", "Lifecycle", "LifecycleState"]


class LifecycleState(enum.Enum):
    """Where an object is in its life: made, open (running), closing, closed."""

    UNOPENED = "unopened"
    OPEN = "open"
    #: Draining: admits no new work, finishes what it has (the batcher).
    CLOSING = "closing"
    CLOSED = "closed"


class Lifecycle:
    """Base of objects with a lifecycle: the state and its three transitions.

    Subclasses name themselves for error messages (``_noun``, which may also be set
    per instance, e.g. ``"cuda backend"``) and say how to get a fresh object
    (``_make_fix``) and where the object is usable (``_use_fix``).
    """

    _state: LifecycleState = LifecycleState.UNOPENED
    #: What error messages call the object.
    _noun: str = "object"
    #: How it is opened, for "cannot be <verb> again".
    _open_verb: ClassVar[str] = "opened"
    #: The Fix of a refused reopening: how to make a new one.
    _make_fix: str = "make a new one."
    #: The Fix of a use outside the open state.
    _use_fix: str = "use it inside its `async with` block."

    @property
    def state(self) -> LifecycleState:
        """Unopened, open, closing or closed."""
        return self._state

    def _enter_open(self) -> None:
        """Unopened -> open.

        Raises:
            LifecycleError: It was opened before (open, closing or closed now).
        """
        if self._state is not LifecycleState.UNOPENED:
            raise LifecycleError(
                f"this {self._noun} is {self._state.value} and cannot be {self._open_verb} again",
                fix=self._make_fix,
            )
        self._state = LifecycleState.OPEN

    def _enter_closed(self) -> bool:
        """Any state -> closed; ``False`` when it was closed already (a no-op then)."""
        if self._state is LifecycleState.CLOSED:
            return False
        self._state = LifecycleState.CLOSED
        return True

    def _require_open(self) -> None:
        """Raise unless open.

        Raises:
            LifecycleError: Naming the state it is in, with where it is usable.
        """
        if self._state is not LifecycleState.OPEN:
            raise LifecycleError(f"this {self._noun} is {self._state.value}", fix=self._use_fix)


class AsyncLifecycle(Lifecycle):
    """A :class:`Lifecycle` used with ``async with``: leaving the block closes it.

    Subclasses open in ``__aenter__`` (calling :meth:`_enter_open` first) and free
    everything in :meth:`aclose`, which must be idempotent and finish when cancelled.
    """

    @abstractmethod
    async def aclose(self) -> None:
        """Release everything the object holds (a no-op once closed)."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
