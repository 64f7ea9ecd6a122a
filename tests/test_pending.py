"""Completions and pending dispatches: waking, results, and dropped work."""

from __future__ import annotations

import gc

import anyio
import pytest

from vyre_async import DispatchTiming, TimedResult
from vyre_async.streams._completion import Completion
from vyre_async.streams._pending import PendingDispatch


def _pending(completion: Completion, released: list[str]) -> PendingDispatch[str]:
    return PendingDispatch(
        completion,
        lambda: released.append("collected") or "outputs",  # type: ignore[func-returns-value]
        discard=lambda: released.append("discarded"),
        label="test",
        submitted_ns=0,
        enqueue_ns=0,
    )


async def test_a_waiter_wakes_on_completion_and_a_late_one_returns_at_once() -> None:
    """Waiting before and after ``complete`` both return; the error is raised to each."""
    completion = Completion()
    woke: list[str] = []

    async def waiter() -> None:
        await completion.wait()
        woke.append("early")

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert not woke
        completion.complete()
    await completion.wait()
    assert woke == ["early"]
    failed = Completion()
    failed.complete(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        await failed.wait()


async def test_a_dropped_pending_dispatch_discards_only_after_the_work_finished() -> None:
    """Unawaited: discard runs once, when the completion fires, never before."""
    completion = Completion()
    released: list[str] = []
    pending = _pending(completion, released)
    del pending
    gc.collect()
    assert released == [], "the work is still running"
    completion.complete()
    assert released == ["discarded"]


async def test_an_awaited_pending_dispatch_collects_once_and_never_discards() -> None:
    """Awaiting collects; awaiting again returns the same outputs; dropping it then is quiet."""
    completion = Completion()
    completion.device_ns = 1234
    released: list[str] = []
    pending = _pending(completion, released)
    completion.complete()
    result = await pending.timed()
    assert isinstance(result, TimedResult)
    assert isinstance(result.timing, DispatchTiming)
    assert (result.outputs, result.timing.device_ns) == ("outputs", 1234)
    assert await pending == "outputs"
    del pending
    gc.collect()
    assert released == ["collected"]
