"""The dynamic batcher, driven by a scripted executor (no GPU needed)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
from anyio.abc import TaskGroup, TaskStatus
from trio.testing import MockClock

from vyre_async import LifecycleState
from vyre_async.batching import BatcherStats, DynamicBatcher
from vyre_async.errors import (
    DispatchError,
    LifecycleError,
    OutOfMemoryError,
    QueueFullError,
    QueueTimeoutError,
    ValidationError,
    VyreError,
)

#: Upper bound of any wait in these tests; passing tests finish far sooner.
BOUND_S = 5.0
#: Most times wait_for polls before failing the test.
MAX_POLLS = 200_000
#: What a submitter records when its call was cancelled.
CANCELLED = "cancelled"


def timed_backends() -> pytest.MarkDecorator:
    """asyncio on real time with short delays, and trio on a mock clock with exact times."""
    return pytest.mark.parametrize(
        "anyio_backend",
        [
            pytest.param("asyncio", id="asyncio"),
            pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio-mock"),
        ],
    )


class Outcomes(dict[int, object]):
    """Each request's result, VyreError or ``CANCELLED``; callers can wait for entries.

    Waiting blocks on an event rather than polling, so a mock clock can jump ahead
    while a test waits for something that a timer causes.
    """

    def __init__(self) -> None:
        super().__init__()
        self._changed = anyio.Event()

    def __setitem__(self, request: int, outcome: object) -> None:
        super().__setitem__(request, outcome)
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def wait_for(self, *requests: int) -> None:
        """Wait until every request in ``requests`` has an outcome (bounded)."""
        with anyio.fail_after(BOUND_S):
            while not all(r in self for r in requests):
                await self._changed.wait()


class Executor:
    """Doubles each request; records every batch; holds batches with a gated request."""

    def __init__(
        self,
        *,
        hold: Iterable[int] = (),
        fail_on: Iterable[int] = (),
        error: Callable[[], Exception] = lambda: RuntimeError("the device said no"),
    ) -> None:
        self.batches: list[list[int]] = []
        self.started_at: list[float] = []
        self.gates = {r: anyio.Event() for r in hold}
        self.fail_on = set(fail_on)
        self.error = error

    def release(self, *requests: int) -> None:
        for r in requests:
            self.gates[r].set()

    async def __call__(self, requests: Sequence[int]) -> Sequence[int]:
        self.batches.append(list(requests))
        self.started_at.append(anyio.current_time())
        for r in requests:
            if r in self.gates:
                await self.gates[r].wait()
        await anyio.lowlevel.checkpoint()
        if self.fail_on & set(requests):
            raise self.error()
        return [2 * r for r in requests]


def batcher_for(executor: Executor, **options: object) -> DynamicBatcher[int, int]:
    options.setdefault("max_batch", 4)
    return DynamicBatcher(executor, **options)  # type: ignore[arg-type]


@asynccontextmanager
async def running(batcher: DynamicBatcher[int, int]) -> AsyncIterator[TaskGroup]:
    """Run the batcher in a task group for the block, then drain it; all bounded in time."""
    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            await tg.start(batcher.run)
            yield tg
            await batcher.aclose()


async def record(
    batcher: DynamicBatcher[int, int],
    request: int,
    out: Outcomes,
    *,
    priority: int = 0,
    queue_timeout: float | None = None,
    scope: anyio.CancelScope | None = None,
) -> None:
    """Submit one request and record its result, its VyreError, or that it was cancelled."""
    scope = scope or anyio.CancelScope()
    with scope:
        try:
            out[request] = await batcher.submit(
                request, priority=priority, queue_timeout=queue_timeout
            )
        except VyreError as exc:
            out[request] = exc
    if scope.cancelled_caught:
        out[request] = CANCELLED


async def wait_for(condition: Callable[[], bool]) -> None:
    """Yield until ``condition()`` holds; fail the test after a bounded wait.

    Only for conditions that need no timer: polling keeps a mock clock from jumping,
    so the number of polls is bounded too (``fail_after`` alone would never fire).
    """
    with anyio.fail_after(BOUND_S):
        for _ in range(MAX_POLLS):
            if condition():
                return
            await anyio.lowlevel.checkpoint()
    pytest.fail(f"condition still false after {MAX_POLLS} polls")


async def start_in_line(
    tg: TaskGroup,
    batcher: DynamicBatcher[int, int],
    submitter: Callable[[], Coroutine[Any, Any, None]],
) -> None:
    """Start a task that submits one request, and return once the request has its place.

    A request has its place once ``submitted`` counts it (admission does not yield
    before taking a place); waiting also for a batch in flight lets the first request
    to an idle batcher form its own batch. Every caller keeps a batch in flight.
    """
    before = batcher.stats().submitted
    tg.start_soon(submitter)
    await wait_for(lambda: batcher.stats().submitted > before and batcher.stats().in_flight > 0)


async def submit_in_order(
    tg: TaskGroup,
    batcher: DynamicBatcher[int, int],
    requests: Iterable[int | tuple[int, int]],
    out: Outcomes,
) -> None:
    """Submit each request (or (request, priority)) from its own task, in this order."""
    for item in requests:
        request, priority = item if isinstance(item, tuple) else (item, 0)
        await start_in_line(
            tg, batcher, functools.partial(record, batcher, request, out, priority=priority)
        )


# --------------------------------------------------------------------- flushing
@timed_backends()
async def test_a_lone_request_on_an_idle_batcher_runs_at_once() -> None:
    """With nothing running, one request is flushed immediately, not after max_delay."""
    executor = Executor()
    batcher = batcher_for(executor, max_delay=60.0)
    async with running(batcher):
        started = anyio.current_time()
        assert await batcher.submit(7) == 14
        assert anyio.current_time() - started < 60.0
    assert executor.batches == [[7]]


async def test_requests_arriving_during_a_batch_form_the_next_batches() -> None:
    """A burst that arrives while a batch runs is coalesced into batches of max_batch."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=4)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, *range(1, 11)], out)
        assert batcher.stats().queued == 10
        executor.release(0)
    assert executor.batches == [[0], [1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]
    assert out == {r: 2 * r for r in range(11)}
    stats = batcher.stats()
    assert (stats.batches, stats.lanes_max, stats.lanes_mean) == (4, 4, 11 / 4)


@timed_backends()
async def test_a_group_flushes_after_max_delay_while_a_batch_runs(anyio_backend_name: str) -> None:
    """With a batch running and a free slot, a small group waits exactly max_delay."""
    delay = 0.5 if anyio_backend_name == "trio" else 0.05
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=8, max_delay=delay, max_in_flight=2)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0], out)
        queued_at = anyio.current_time()
        await submit_in_order(tg, batcher, [1, 2], out)
        await out.wait_for(1, 2)
        assert executor.batches == [[0], [1, 2]]
        waited = executor.started_at[1] - queued_at
        assert waited >= delay
        if anyio_backend_name == "trio":
            assert waited == pytest.approx(delay, abs=1e-9)
        executor.release(0)
    assert out == {0: 0, 1: 2, 2: 4}


@timed_backends()
async def test_a_full_group_flushes_without_waiting_for_max_delay() -> None:
    """Queued lanes reaching max_batch start a batch at once while another runs."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=4, max_delay=60.0, max_in_flight=2)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0], out)
        started = anyio.current_time()
        await submit_in_order(tg, batcher, [1, 2, 3, 4], out)
        await out.wait_for(1, 2, 3, 4)
        assert anyio.current_time() - started < 60.0
        executor.release(0)
    assert executor.batches == [[0], [1, 2, 3, 4]]


async def test_requests_of_different_groups_never_share_a_batch() -> None:
    """Only requests with equal group keys are batched together."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=4, group=lambda r: r % 3)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0], out)
        for r in range(1, 30):
            tg.start_soon(record, batcher, r, out)
        await wait_for(lambda: batcher.stats().queued == 29)
        executor.release(0)
    assert out == {r: 2 * r for r in range(30)}
    for batch in executor.batches:
        assert len({r % 3 for r in batch}) == 1, batch
        assert len(batch) <= 4


async def test_higher_priority_requests_run_first() -> None:
    """A batch takes the highest priorities first, FIFO among equal priorities."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=2)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, (1, 0), (2, 0), (3, 5), (4, 1), (5, 5), (6, 0)], out)
        executor.release(0)
    assert executor.batches == [[0], [3, 5], [4, 1], [2, 6]]


async def test_equal_priorities_run_in_arrival_order() -> None:
    """Requests of one priority are batched first come, first served."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=3)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 7, 3, 9, 1, 8, 2, 6], out)
        executor.release(0)
    assert executor.batches == [[0], [7, 3, 9], [1, 8, 2], [6]]


async def test_a_batch_never_holds_more_lanes_than_max_batch() -> None:
    """Wide requests are packed in order and a batch stops at the first that does not fit."""
    executor = Executor(hold=[10])
    batcher = batcher_for(executor, max_batch=4, lanes=lambda r: r // 10)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [10, 30, 20, 21, 11], out)
        executor.release(10)
    assert executor.batches == [[10], [30], [20, 21], [11]]
    assert batcher.stats().lanes_max == 4


async def test_a_request_wider_than_a_batch_is_refused() -> None:
    """A request needing more lanes than max_batch raises ValidationError with a fix."""
    batcher = batcher_for(Executor(), max_batch=4, lanes=lambda r: r)
    async with running(batcher):
        with pytest.raises(ValidationError, match=r"5 lanes.*Fix: .*max_batch >= 5"):
            await batcher.submit(5)
        assert await batcher.submit(4) == 8
    assert batcher.stats().submitted == 1


# ------------------------------------------------------------------ full queue
async def test_a_full_queue_makes_submit_wait_for_room() -> None:
    """By default a submit to a full queue waits, and goes in once room frees."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, queue_size=2)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1, 2, 3], out)
        assert batcher.stats().queued == 2
        assert out == {}
        executor.release(0)
        await out.wait_for(3)  # before closing, which would refuse a request still waiting
    assert out == {0: 0, 1: 2, 2: 4, 3: 6}
    assert executor.batches == [[0], [1, 2], [3]]
    assert batcher.stats().rejected == 0


async def test_a_full_queue_rejects_when_asked() -> None:
    """With reject_when_full a submit to a full queue raises QueueFullError at once."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, queue_size=2, reject_when_full=True)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1, 2], out)
        with pytest.raises(QueueFullError, match=r"queue is full \(2 requests wait\)\. Fix: "):
            await batcher.submit(3)
        executor.release(0)
    assert out == {0: 0, 1: 2, 2: 4}
    assert batcher.stats().rejected == 1
    assert issubclass(QueueFullError, DispatchError)


# -------------------------------------------------------------------- timeouts
@timed_backends()
async def test_a_request_timing_out_in_the_queue_raises_and_is_counted(
    anyio_backend_name: str,
) -> None:
    """A request still queued at its timeout is removed and its caller gets
    QueueTimeoutError (a DispatchError)."""
    timeout = 1.0 if anyio_backend_name == "trio" else 0.05
    executor = Executor(hold=[0])
    batcher = batcher_for(executor)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0], out)
        queued_at = anyio.current_time()
        await start_in_line(tg, batcher, lambda: record(batcher, 1, out, queue_timeout=timeout))
        await submit_in_order(tg, batcher, [2], out)
        await out.wait_for(1)
        if anyio_backend_name == "trio":
            assert anyio.current_time() - queued_at == pytest.approx(timeout, abs=1e-9)
        assert batcher.stats().queued == 1
        executor.release(0)
    error = out.pop(1)
    assert isinstance(error, QueueTimeoutError)
    assert isinstance(error, DispatchError)
    assert f"timed out after {timeout:g} s in the dynamic batcher's queue" in str(error)
    assert "Fix: " in str(error)
    assert out == {0: 0, 2: 4}
    assert executor.batches == [[0], [2]]
    assert batcher.stats().timed_out == 1


@timed_backends()
async def test_a_request_whose_batch_started_outlives_its_timeout(anyio_backend_name: str) -> None:
    """Once a batch took a request, its timeout no longer applies: it gets its result."""
    timeout = 1.0 if anyio_backend_name == "trio" else 0.05
    executor = Executor(hold=[0])
    batcher = batcher_for(executor)
    out = Outcomes()
    async with running(batcher) as tg:
        await start_in_line(tg, batcher, lambda: record(batcher, 0, out, queue_timeout=timeout))
        # A twin queued behind it times out, which proves the deadline has passed.
        await start_in_line(tg, batcher, lambda: record(batcher, 1, out, queue_timeout=timeout))
        await out.wait_for(1)
        executor.release(0)
    assert out[0] == 0
    assert isinstance(out[1], DispatchError)
    assert batcher.stats().timed_out == 1


@timed_backends()
async def test_a_request_waiting_for_room_times_out() -> None:
    """The timeout also bounds the wait for room in a full queue."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, queue_size=1)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1], out)
        await start_in_line(tg, batcher, lambda: record(batcher, 2, out, queue_timeout=0.05))
        await out.wait_for(2)
        executor.release(0)
    assert isinstance(out[2], QueueTimeoutError)
    assert "waiting for room in the dynamic batcher's full queue (1 requests)" in str(out[2])
    assert (out[0], out[1]) == (0, 2)
    assert batcher.stats().timed_out == 1


# ---------------------------------------------------------------- cancellation
async def test_cancelling_a_queued_request_removes_it() -> None:
    """A cancelled queued request never runs; the others get their results."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor)
    out = Outcomes()
    scope = anyio.CancelScope()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1], out)
        await start_in_line(tg, batcher, lambda: record(batcher, 2, out, scope=scope))
        await submit_in_order(tg, batcher, [3], out)
        scope.cancel()
        await out.wait_for(2)
        assert batcher.stats().queued == 2
        executor.release(0)
    assert out == {0: 0, 1: 2, 2: CANCELLED, 3: 6}
    assert executor.batches == [[0], [1, 3]]
    assert batcher.stats().cancelled == 1


async def test_cancelling_a_running_request_leaves_its_batch_mates_their_results() -> None:
    """A waiter cancelled mid-batch does not stop the batch or disturb the others."""
    executor = Executor(hold=[9, 0])
    batcher = batcher_for(executor)
    out = Outcomes()
    scope = anyio.CancelScope()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [9], out)
        await start_in_line(tg, batcher, lambda: record(batcher, 0, out, scope=scope))
        await submit_in_order(tg, batcher, [1], out)
        executor.release(9)
        await wait_for(lambda: executor.batches == [[9], [0, 1]])
        scope.cancel()
        await out.wait_for(0)
        assert 1 not in out
        executor.release(0)
    assert out == {9: 18, 0: CANCELLED, 1: 2}
    stats = batcher.stats()
    assert (stats.cancelled, stats.served, stats.batches) == (1, 2, 2)


# ---------------------------------------------------------------------- errors
async def test_an_executor_error_reaches_only_its_batch() -> None:
    """Every waiter of the failed batch gets its own DispatchError; other batches succeed."""
    executor = Executor(hold=[100], fail_on=[1])
    batcher = batcher_for(executor, group=lambda r: r % 2)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [100, 1, 2, 3, 4], out)
        executor.release(100)
    assert executor.batches == [[100], [1, 3], [2, 4]]
    assert (out[100], out[2], out[4]) == (200, 4, 8)
    errors = [out[1], out[3]]
    for error in errors:
        assert isinstance(error, DispatchError)
        assert "batch of 2 requests (2 lanes)" in str(error)
        assert "RuntimeError: the device said no" in str(error)
        assert isinstance(error.__cause__, RuntimeError)
    assert errors[0] is not errors[1]
    stats = batcher.stats()
    assert (stats.failed, stats.batches_failed, stats.served) == (2, 1, 3)


async def test_a_vyre_error_from_the_executor_keeps_its_class() -> None:
    """An OutOfMemoryError raised by the executor reaches the waiter as OutOfMemoryError."""
    executor = Executor(fail_on=[1], error=lambda: OutOfMemoryError("no room", fix="free some"))
    batcher = batcher_for(executor)
    async with running(batcher):
        with pytest.raises(OutOfMemoryError, match=r"^no room\. Fix: free some$") as info:
            await batcher.submit(1)
        assert isinstance(info.value.__cause__, OutOfMemoryError)
        assert await batcher.submit(2) == 4


async def test_a_wrong_number_of_results_fails_that_batch() -> None:
    """An executor returning fewer results than requests fails the batch with a fix."""

    async def short(requests: Sequence[int]) -> Sequence[int]:
        await anyio.lowlevel.checkpoint()
        return list(requests)[1:]

    batcher: DynamicBatcher[int, int] = DynamicBatcher(short, max_batch=4)
    async with running(batcher):
        with pytest.raises(DispatchError, match=r"returned 0 results for a batch of 1 .*Fix: "):
            await batcher.submit(1)


# ------------------------------------------------------------------------ load
async def test_hundreds_of_submitters_with_random_cancellations_get_their_own_results(
    rng: np.random.Generator,
) -> None:
    """500 concurrent callers each get 2*request or Cancelled, and the stats add up."""
    n = 500
    lanes_of = {r: int(rng.integers(1, 5)) for r in range(n)}
    priority_of = {r: int(rng.integers(0, 3)) for r in range(n)}
    executed: list[list[int]] = []

    async def doubled(requests: Sequence[int]) -> Sequence[int]:
        executed.append(list(requests))
        for _ in range(int(rng.integers(0, 4))):
            await anyio.lowlevel.checkpoint()
        return [2 * r for r in requests]

    batcher: DynamicBatcher[int, int] = DynamicBatcher(
        doubled,
        max_batch=16,
        max_delay=0.001,
        queue_size=64,
        lanes=lanes_of.__getitem__,
        group=lambda r: r % 4,
        max_in_flight=2,
    )
    out = Outcomes()
    scopes = {r: anyio.CancelScope() for r in range(n)}

    async def cancel_some() -> None:
        for r in rng.permutation(n)[: n // 3]:
            for _ in range(int(rng.integers(0, 3))):
                await anyio.lowlevel.checkpoint()
            scopes[int(r)].cancel()

    async with running(batcher) as tg:
        for r in range(n):
            tg.start_soon(
                functools.partial(record, batcher, r, out, priority=priority_of[r], scope=scopes[r])
            )
        tg.start_soon(cancel_some)
        await out.wait_for(*range(n))

    served = {r for r, v in out.items() if v != CANCELLED}
    assert all(out[r] == 2 * r for r in served)
    ran = [r for batch in executed for r in batch]
    assert len(ran) == len(set(ran)), "a request ran twice"
    assert served <= set(ran)
    for batch in executed:
        assert sum(lanes_of[r] for r in batch) <= 16
        assert len({r % 4 for r in batch}) == 1
    stats = batcher.stats()
    assert stats.submitted == n
    assert stats.served == len(served)
    assert stats.cancelled == n - len(served)
    assert stats.failed == stats.rejected == stats.timed_out == 0
    assert stats.queued == stats.in_flight == 0
    assert stats.batches == len(executed)
    assert stats.lanes_max <= 16


# ------------------------------------------------------------------- lifecycle
async def test_aclose_drains_queued_and_running_requests() -> None:
    """aclose refuses new requests at once, runs the queued ones, then returns."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=2)
    out = Outcomes()
    closed = anyio.Event()

    async def close() -> None:
        await batcher.aclose()
        closed.set()

    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, range(6), out)
        tg.start_soon(close)
        await wait_for(lambda: batcher.state is LifecycleState.CLOSING)
        with pytest.raises(LifecycleError, match=r"closing and admits no new requests\. Fix: "):
            await batcher.submit(99)
        assert not closed.is_set()
        executor.release(0)
        await closed.wait()
        assert batcher.state is LifecycleState.CLOSED
        await batcher.aclose()  # idempotent
    assert out == {r: 2 * r for r in range(6)}
    assert executor.batches == [[0], [1, 2], [3, 4], [5]]


async def test_aclose_without_drain_fails_queued_requests() -> None:
    """aclose(drain=False) fails queued requests at once; the running batch still finishes."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1, 2], out)
        tg.start_soon(lambda: batcher.aclose(drain=False))
        await out.wait_for(1, 2)
        for r in (1, 2):
            assert isinstance(out[r], LifecycleError)
            assert "closed without draining" in str(out[r])
        assert 0 not in out
        executor.release(0)
    assert out[0] == 0
    assert executor.batches == [[0]]
    assert batcher.stats().failed == 2


async def test_cancelling_run_fails_every_waiting_request() -> None:
    """When run() is cancelled, queued and running requests fail with LifecycleError."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor)
    out = Outcomes()
    run_scope = anyio.CancelScope()

    async def run_until_cancelled(*, task_status: TaskStatus[None]) -> None:
        with run_scope:
            await batcher.run(task_status=task_status)

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            await tg.start(run_until_cancelled)
            await submit_in_order(tg, batcher, [0, 1], out)
            run_scope.cancel()
    assert batcher.state is LifecycleState.CLOSED
    assert isinstance(out[0], LifecycleError)
    assert "stopped while this request's batch ran" in str(out[0])
    assert isinstance(out[1], LifecycleError)
    assert "stopped before this request ran" in str(out[1])
    with pytest.raises(LifecycleError, match="closed"):
        await batcher.submit(2)
    assert batcher.stats().failed == 2


async def test_submitters_waiting_for_room_are_refused_on_close() -> None:
    """Closing wakes submitters blocked on a full queue with LifecycleError at once."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, queue_size=1)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1, 2], out)
        tg.start_soon(batcher.aclose)
        await out.wait_for(2)
        assert isinstance(out[2], LifecycleError)
        assert 1 not in out
        executor.release(0)
    assert (out[0], out[1]) == (0, 2)
    assert batcher.stats().rejected == 1


async def test_a_batcher_is_started_once_and_only_used_while_running() -> None:
    """Submitting before run, or starting twice or after close, raises LifecycleError."""
    batcher = batcher_for(Executor())
    with pytest.raises(LifecycleError, match=r"not running yet\. Fix: start it"):
        await batcher.submit(1)
    async with running(batcher):
        with pytest.raises(LifecycleError, match="open and cannot be started again"):
            await batcher.run()
    unused = batcher_for(Executor())
    await unused.aclose()
    with pytest.raises(LifecycleError, match="closed and cannot be started again"):
        await unused.run()


def test_out_of_range_bounds_are_value_errors() -> None:
    """Bounds below their minimum, or an infinite max_delay, raise ValueError."""
    for options in (
        {"max_batch": 0},
        {"queue_size": 0},
        {"max_in_flight": 0},
        {"max_delay": -1.0},
        {"max_delay": float("inf")},
        {"stats_window": 0},
    ):
        with pytest.raises(ValueError, match="must be"):
            batcher_for(Executor(), **options)


# ----------------------------------------------------------------------- stats
@pytest.mark.parametrize(
    "anyio_backend", [pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio")]
)
async def test_stats_report_batches_lanes_and_queue_waits() -> None:
    """Queue-wait percentiles and lanes per batch come from what happened (mock clock)."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, max_batch=4)
    out = Outcomes()
    async with running(batcher) as tg:
        await submit_in_order(tg, batcher, [0, 1, 2, 3], out)
        await anyio.sleep(1.0)
        executor.release(0)
    stats = batcher.stats()
    assert stats == BatcherStats(
        submitted=4,
        served=4,
        failed=0,
        rejected=0,
        timed_out=0,
        cancelled=0,
        queued=0,
        in_flight=0,
        batches=2,
        batches_failed=0,
        lanes_mean=2.0,
        lanes_max=3,
        queue_wait_p50_s=1.0,
        queue_wait_p95_s=1.0,
    )
    assert msgspec.json.decode(msgspec.json.encode(stats), type=BatcherStats) == stats


async def test_a_request_that_fills_a_batch_runs_at_once_in_its_callers_task() -> None:
    """With a slot free and nothing queued, a full request is its own batch at once: the
    executor runs in the caller's task (no ticket, task or scheduler turn), and it is
    counted as a batch like any other."""
    tasks: list[int] = []
    executor = Executor()

    async def noting(requests: Sequence[int]) -> Sequence[int]:
        tasks.append(anyio.get_current_task().id)
        return await executor(requests)

    batcher = DynamicBatcher(noting, max_batch=4, lanes=lambda r: 4)
    async with running(batcher):
        assert await batcher.submit(5) == 10
        assert tasks == [anyio.get_current_task().id]
    stats = batcher.stats()
    assert (stats.batches, stats.served, stats.submitted) == (1, 1, 1)


async def test_a_full_request_waits_its_turn_behind_queued_ones() -> None:
    """A full request arriving while requests are queued does not jump them: batches
    run in arrival order."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, lanes=lambda r: 4 if r != 1 else 1, max_in_flight=1)
    out = Outcomes()
    async with running(batcher) as tg:
        tg.start_soon(record, batcher, 0, out)
        await wait_for(lambda: executor.batches == [[0]])
        tg.start_soon(record, batcher, 1, out)
        await wait_for(lambda: batcher.stats().queued == 1)
        tg.start_soon(record, batcher, 2, out)
        await wait_for(lambda: batcher.stats().queued == 2)
        executor.release(0)
        await out.wait_for(0, 1, 2)
    assert executor.batches == [[0], [1], [2]]
    assert [out[r] for r in (0, 1, 2)] == [0, 2, 4]


async def test_cancelling_the_caller_of_a_lone_batch_frees_its_slot() -> None:
    """The caller of a batch it fills alone owns the batch: cancelling it cancels the
    batch, and the slot is free for the next request."""
    executor = Executor(hold=[0])
    batcher = batcher_for(executor, lanes=lambda r: 4, max_in_flight=1)
    async with running(batcher):
        with anyio.move_on_after(0.05):
            await batcher.submit(0)
        assert batcher.stats().in_flight == 0
        assert await batcher.submit(3) == 6
    stats = batcher.stats()
    assert (stats.cancelled, stats.served) == (1, 1)
