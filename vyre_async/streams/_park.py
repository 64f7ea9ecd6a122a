"""Parking a waiting task until its work is done: the cheapest sleep each event loop has.

A task waiting behind the poller sleeps once per dispatch, so what the sleep costs
is paid per dispatch. ``anyio.Event()`` on asyncio makes two ``asyncio.Event`` s
(its ``__new__`` and ``__init__`` each make one), and waiting on it passes through
two more coroutine frames before the future at its bottom. On asyncio a task here
parks on that future itself, which anyio's cancellation reaches the same way (it
cancels the task, which cancels the future it awaits); a wake round trip cost about
a third less on the development machine. On every other loop (trio) it parks on an
:class:`EventSpot` around the loop backend's own event. Either kind of spot is
awaited directly (no coroutine of its own: each coroutine a parked task is nested
in is resumed again at its wake) and returns what :func:`wake` passed. A polling
task's checkpoint is likewise asyncio's own bare yield there. This is the one place
the bridge touches asyncio directly.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import anyio

__all__ = ["FUTURE", "EventSpot", "Spot", "checkpoint_for", "park_factory", "wake"]

#: What a parked task sleeps on: a future (asyncio) or an :class:`EventSpot`.
Spot = Any
#: The class of asyncio's futures (the C one): a spot of this class is a future.
FUTURE: type[asyncio.Future[Any]] = asyncio.Future


class EventSpot:
    """A parking spot on an anyio event, awaitable like a future: ``await spot``
    returns the value :func:`wake` passed (``None`` when woken by :meth:`set`)."""

    __slots__ = ("_event", "_value")

    def __init__(self, event: anyio.Event) -> None:
        self._event = event
        self._value: Any = None

    def __await__(self) -> Generator[Any, None, Any]:
        yield from self._event.wait().__await__()
        return self._value

    def wake(self, value: Any) -> None:
        """Wake the parked task with ``value``; nothing once woken."""
        if not self._event.is_set():
            self._value = value
            self._event.set()

    def set(self) -> None:
        """Wake the parked task (``await`` returns ``None``), as an event's ``set``."""
        self.wake(None)


def park_factory(new_event: Callable[[], anyio.Event]) -> Callable[[], Spot]:
    """How to make a parking spot in the running loop.

    Args:
        new_event: Makes an anyio event (used where the loop is not asyncio).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio
        return lambda: EventSpot(new_event())
    return loop.create_future


@types.coroutine
def _yield_to_the_loop() -> Generator[None, None, None]:
    # What asyncio.sleep(0) does underneath: a bare yield reschedules the task at once
    # (and is where a cancellation lands).
    yield


def checkpoint_for(fallback: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    """The cheapest checkpoint of the running loop: on asyncio a bare yield to the loop
    (``anyio.lowlevel.checkpoint`` reaches it through two more frames, resumed at every
    poll of a waiting task); elsewhere ``fallback`` (the loop backend's checkpoint)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio
        return fallback
    return _yield_to_the_loop


def wake(spot: Spot, value: Any = None) -> None:
    """Wake the task parked on ``spot``, its ``await`` returning ``value``; nothing
    when it has already been woken or has gone."""
    if spot.__class__ is FUTURE:
        if not spot.done():
            spot.set_result(value)
    else:
        spot.wake(value)
