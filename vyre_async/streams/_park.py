"""Parking a waiting task until its work is done: the cheapest sleep each event loop has.

A task waiting behind the poller sleeps once per dispatch, so what the sleep costs
is paid per dispatch. ``anyio.Event()`` on asyncio makes two ``asyncio.Event`` s
(its ``__new__`` and ``__init__`` each make one), and waiting on it passes through
two more coroutine frames before the future at its bottom. On asyncio a task here
parks on that future itself, which anyio's cancellation reaches the same way (it
cancels the task, which cancels the future it awaits); a wake round trip cost about
a third less on the development machine. On every other loop (trio) it parks on the
loop backend's own event. A polling task's checkpoint is likewise asyncio's own bare
yield there. This is the one place the bridge touches asyncio directly.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import anyio

__all__ = ["FUTURE", "Spot", "checkpoint_for", "park_factory", "sleep_on", "wake", "woken"]

#: What a parked task sleeps on: a future (asyncio) or an anyio event.
Spot = Any
#: The class of asyncio's futures (the C one): a spot of this class is a future.
FUTURE: type[asyncio.Future[Any]] = asyncio.Future


def park_factory(new_event: Callable[[], anyio.Event]) -> Callable[[], Spot]:
    """How to make a parking spot in the running loop.

    Args:
        new_event: Makes an anyio event (used where the loop is not asyncio).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio
        return new_event
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


def wake(spot: Spot) -> None:
    """Wake the task parked on ``spot``; nothing when it has already gone."""
    if spot.__class__ is FUTURE:
        if not spot.done():
            spot.set_result(None)
    else:
        spot.set()


def woken(spot: Spot) -> bool:
    """Whether ``spot`` was woken (or its task has gone)."""
    if spot.__class__ is FUTURE:
        return bool(spot.done())
    return bool(spot.is_set())


async def sleep_on(spot: Spot) -> None:
    """Park the calling task on ``spot`` until :func:`wake` (or cancellation)."""
    if spot.__class__ is FUTURE:
        await spot
    else:
        await spot.wait()
