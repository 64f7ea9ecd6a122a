"""One lifecycle for everything that is opened once and closed once.

Backends, device groups, sessions, the dynamic batcher and the job runner are made
unopened, opened once (entering their ``async with`` block, or starting), and
closed once. Closing twice is a no-op; opening again is refused with a
:class:`~vyre_async.errors.LifecycleError` that says what to make instead. They
all keep their state in a :class:`LifecycleState` through :class:`Lifecycle`.
Those that run tasks while open (backends, sessions with batching) hold them in
:class:`BackgroundTasks`, so that any task may close them.
"""

from __future__ import annotations

import enum
from abc import abstractmethod
from types import TracebackType
from typing import Any, ClassVar

import anyio
from anyio import TaskInfo
from anyio.abc import TaskGroup, TaskStatus

from .errors import LifecycleError

__all__ = ["AsyncLifecycle", "BackgroundTasks", "Lifecycle", "LifecycleState"]


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
    everything in :meth:`aclose`, which must be idempotent, finish when cancelled and
    work from any task. What ``__aenter__`` entered in the calling task (the task group
    of :class:`BackgroundTasks`) is left by :meth:`_leave`, which ``__aexit__`` calls
    after :meth:`aclose`.
    """

    @abstractmethod
    async def aclose(self) -> None:
        """Release everything the object holds (a no-op once closed)."""

    async def _leave(self) -> None:
        """Leave what ``__aenter__`` entered in the calling task (nothing by default)."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        finally:
            await self._leave()


class BackgroundTasks:
    """The tasks an object runs while open, stoppable from any task.

    A task group belongs to the task that entered it, and only that task may leave
    it, as its innermost cancel scope: leaving it from ``aclose()`` called by another
    task (or inside a cancel scope opened since) corrupts the caller's cancel scopes
    ("Attempted to exit a cancel scope that isn't the current task's" on asyncio,
    "Cancel scope stack corrupted" on trio). So the work runs in an inner task group
    held by one host task:

    - :meth:`open` (in ``__aenter__``) enters an outer task group in the calling task,
      the owner, and starts the host task in it; work is started in the inner group
      it returns;
    - :meth:`stop` (in ``aclose``, from any task) cancels the inner group and waits
      for the host task to end, touching no scope of the caller's;
    - :meth:`leave` (in ``__aexit__``) leaves the outer group, empty by then, in the
      task and at the nesting where the owner entered it.

    Args:
        noun: What error messages call the object.
    """

    def __init__(self, noun: str) -> None:
        self._noun = noun
        self._outer: TaskGroup | None = None
        self._inner: TaskGroup | None = None
        self._owner: TaskInfo | None = None
        self._ended: anyio.Event | None = None

    async def open(self) -> TaskGroup:
        """Enter the outer group in this task and start the host of the inner one.

        Returns:
            The inner task group, where the object starts its work.
        """
        self._ended = anyio.Event()
        outer = anyio.create_task_group()
        await outer.__aenter__()
        self._outer, self._owner = outer, anyio.get_current_task()
        try:
            inner: TaskGroup = await outer.start(self._host)
        except BaseException:
            self._outer = self._owner = None
            outer.cancel_scope.cancel()
            await outer.__aexit__(None, None, None)
            raise
        self._inner = inner
        return inner

    async def _host(self, *, task_status: TaskStatus[Any]) -> None:
        try:
            async with anyio.create_task_group() as inner:
                task_status.started(inner)
                await anyio.sleep_forever()
        finally:
            self._inner = None
            assert self._ended is not None  # made by open() before this task started
            self._ended.set()

    async def stop(self) -> None:
        """Cancel what still runs in the inner group and wait until it ended; any task."""
        ended = self._ended
        if self._outer is None or ended is None:
            return
        inner = self._inner
        if inner is not None:
            inner.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await ended.wait()

    async def leave(self) -> None:
        """Leave the outer group: in the owner's ``__aexit__``.

        Waits for the host task first (a close running in another task stops it).

        Raises:
            LifecycleError: Called from another task while the owner still runs: only
                the owner can leave its group (the object is closed all the same).
        """
        outer, owner = self._outer, self._owner
        if outer is None or owner is None:
            return
        if anyio.get_current_task() != owner:
            if owner in anyio.get_running_tasks():
                raise LifecycleError(
                    f"this {self._noun}'s `async with` block was left in another task than "
                    f"the one that entered it ({owner.name}), which still runs",
                    fix="leave the `async with` block in the task that entered it; other "
                    "tasks may close the object with `await obj.aclose()`.",
                )
            self._outer = self._owner = None  # the owner ended: its scopes went with it
            return
        self._outer = self._owner = None
        await outer.__aexit__(None, None, None)
