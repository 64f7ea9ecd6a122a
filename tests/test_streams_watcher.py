"""The completion watcher, driven by scripted events (no GPU needed)."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from cuda.bindings import driver
from trio.testing import MockClock

from vyre_async.errors import DeviceLostError, DispatchError, LifecycleError
from vyre_async.streams import Backoff, Completion, CompletionWatcher, DeviceHealth

R = driver.CUresult
NOT_READY = int(R.CUDA_ERROR_NOT_READY)
SUCCESS = int(R.CUDA_SUCCESS)
#: Upper bound of any wait in these tests; passing tests finish far sooner.
BOUND_S = 5.0


class ScriptedEvents:
    """Events whose cuEventQuery answer the test sets; every query is recorded."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.state: dict[int, int] = {}
        self.queried: list[int] = []

    def record(self, result: int = NOT_READY) -> int:
        event = next(self._ids)
        self.state[event] = result
        return event

    def finish(self, event: int, result: int = SUCCESS) -> None:
        self.state[event] = result

    def query(self, event: int) -> int:
        self.queried.append(event)
        return self.state[event]


@asynccontextmanager
async def running(watcher: CompletionWatcher) -> AsyncIterator[None]:
    """Run the watcher in a task group for the block, then cancel it."""
    async with anyio.create_task_group() as tg:
        await tg.start(watcher.run)
        yield
        tg.cancel_scope.cancel()


async def wait_for(condition: Callable[[], bool]) -> None:
    """Yield until ``condition()`` holds; fail the test after a bounded wait."""
    with anyio.fail_after(BOUND_S):
        while not condition():
            await anyio.lowlevel.checkpoint()


async def finished(completion: Completion) -> None:
    """Wait for a completion, failing the test after a bounded wait."""
    with anyio.fail_after(BOUND_S):
        await completion.wait()


async def test_work_completes_once_its_event_is_done() -> None:
    """A registered completion is completed after its event reports success."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    completion = Completion()
    async with running(watcher):
        event = events.record()
        watcher.watch("s", event, completion)
        await wait_for(lambda: len(events.queried) >= 3)
        assert not completion.done
        events.finish(event)
        await finished(completion)
    assert watcher.in_flight == 0


async def test_only_the_oldest_event_of_a_stream_is_queried() -> None:
    """While a stream's oldest event is unfinished, its later events are never queried."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    first, second, third = (events.record() for _ in range(3))
    completions = [Completion() for _ in range(3)]
    async with running(watcher):
        for event, completion in zip((first, second, third), completions, strict=True):
            watcher.watch("s", event, completion)
        await wait_for(lambda: len(events.queried) >= 20)
        assert set(events.queried) == {first}
        for event in (first, second, third):
            events.finish(event)
        await finished(completions[-1])


async def test_a_stream_completes_in_registration_order() -> None:
    """Finished work on one stream completes in the order it was registered."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    order: list[int] = []
    completions = []
    for index in range(5):
        completion = Completion()
        completions.append(completion)
        watcher.watch(
            "s", events.record(SUCCESS), completion, functools.partial(order.append, index)
        )
    async with running(watcher):
        await finished(completions[-1])
    assert order == [0, 1, 2, 3, 4]
    assert all(completion.done for completion in completions)


async def test_a_later_ready_event_waits_for_the_oldest() -> None:
    """A later event that reports done still waits until the oldest one finishes."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    first, second = events.record(), events.record(SUCCESS)
    first_done, second_done = Completion(), Completion()
    async with running(watcher):
        watcher.watch("s", first, first_done)
        watcher.watch("s", second, second_done)
        await wait_for(lambda: len(events.queried) >= 10)
        assert not second_done.done
        events.finish(first)
        await finished(second_done)
        assert first_done.done


async def test_streams_progress_independently() -> None:
    """A blocked stream does not hold back finished work on another stream."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    blocked, quick = Completion(), Completion()
    async with running(watcher):
        watcher.watch("a", events.record(), blocked)
        watcher.watch("b", events.record(SUCCESS), quick)
        await finished(quick)
        assert not blocked.done
        assert watcher.busy_streams == 1


async def test_idle_watcher_does_not_poll_and_wakes_on_register() -> None:
    """With nothing registered the watcher blocks without querying; watch() wakes it."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    completion = Completion()
    async with running(watcher):
        for _ in range(3):
            await anyio.wait_all_tasks_blocked()
        assert events.queried == []
        watcher.watch("s", events.record(SUCCESS), completion)
        await finished(completion)
        await anyio.wait_all_tasks_blocked()
        queried = len(events.queried)
        await anyio.wait_all_tasks_blocked()
        assert len(events.queried) == queried


async def test_sticky_error_fails_every_completion_with_device_lost() -> None:
    """A sticky query result fails all work on all streams and marks the device lost."""
    events = ScriptedEvents()
    health = DeviceHealth("device 0 (test)")
    watcher = CompletionWatcher(events.query, health=health)
    completions = [Completion() for _ in range(3)]
    released: list[int] = []
    bad = events.record()
    async with running(watcher):
        watcher.watch("a", bad, completions[0], lambda: released.append(0))
        watcher.watch("a", events.record(), completions[1], lambda: released.append(1))
        watcher.watch("b", events.record(), completions[2], lambda: released.append(2))
        events.finish(bad, int(R.CUDA_ERROR_ILLEGAL_ADDRESS))
        for completion in completions:
            with pytest.raises(DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
                await finished(completion)
        assert sorted(released) == [0, 1, 2]
        assert health.lost
        assert watcher.in_flight == 0
        with pytest.raises(DeviceLostError, match="lost earlier"):
            watcher.watch("a", events.record(SUCCESS), Completion())
    errors = [completion.error for completion in completions]
    assert len({id(error) for error in errors}) == 3


async def test_non_sticky_query_error_fails_only_that_work() -> None:
    """An ordinary query error fails its own completion; the stream goes on."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    broken, after = Completion(), Completion()
    async with running(watcher):
        watcher.watch("s", events.record(int(R.CUDA_ERROR_INVALID_HANDLE)), broken)
        watcher.watch("s", events.record(SUCCESS), after)
        await finished(after)
        with pytest.raises(DispatchError, match="CUDA_ERROR_INVALID_HANDLE"):
            await finished(broken)


async def test_timing_pair_sets_device_ns_before_release() -> None:
    """With a timing pair, device_ns comes from elapsed time, read before on_done runs."""
    events = ScriptedEvents()
    steps: list[str] = []

    def elapsed_ms(start: Any, end: Any) -> float:
        steps.append(f"elapsed {start}-{end}")
        return 1.5

    watcher = CompletionWatcher(events.query, elapsed_ms=elapsed_ms)
    completion = Completion()
    async with running(watcher):
        watcher.watch(
            "s",
            events.record(SUCCESS),
            completion,
            lambda: steps.append("release"),
            timing=("t0", "t1"),
        )
        await finished(completion)
    assert completion.device_ns == 1_500_000
    assert steps == ["elapsed t0-t1", "release"]


async def test_on_done_runs_before_the_completion_is_done() -> None:
    """on_done runs while the completion is still unfinished, so waiters see it done."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    completion = Completion()
    seen: list[bool] = []
    async with running(watcher):
        watcher.watch("s", events.record(SUCCESS), completion, lambda: seen.append(completion.done))
        await finished(completion)
    assert seen == [False]


async def test_failing_on_done_fails_its_completion_but_not_the_watcher() -> None:
    """An on_done that raises fails that completion; the watcher keeps serving others."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    broken, later = Completion(), Completion()

    def explode() -> None:
        raise KeyError("pool bookkeeping")

    async with running(watcher):
        watcher.watch("s", events.record(SUCCESS), broken, explode)
        with pytest.raises(DispatchError, match="releasing its resources raised"):
            await finished(broken)
        watcher.watch("s", events.record(SUCCESS), later)
        await finished(later)


async def test_cancelling_the_watcher_fails_pending_work_without_releasing_it() -> None:
    """On cancel, pending completions fail with LifecycleError and on_done is not run."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    completion = Completion()
    released: list[bool] = []
    async with running(watcher):
        watcher.watch("s", events.record(), completion, lambda: released.append(True))
        await wait_for(lambda: len(events.queried) >= 2)
    assert isinstance(completion.error, LifecycleError)
    assert released == []
    assert watcher.in_flight == 0
    with pytest.raises(LifecycleError, match="stopped"):
        watcher.watch("s", events.record(SUCCESS), Completion())


async def test_drain_returns_once_all_registered_work_finished() -> None:
    """drain() waits for every registered completion, then returns."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    pending = [events.record() for _ in range(4)]
    completions = [Completion() for _ in pending]
    async with running(watcher):
        for index, (event, completion) in enumerate(zip(pending, completions, strict=True)):
            watcher.watch(index % 2, event, completion)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.drain)
            await wait_for(lambda: len(events.queried) >= 5)
            for event in pending:
                events.finish(event)
        assert all(completion.done for completion in completions)


async def test_drain_without_a_running_watcher_is_refused() -> None:
    """drain() on a watcher that never started raises instead of hanging."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    watcher.watch("s", events.record(), Completion())
    with pytest.raises(LifecycleError, match="unstarted"):
        await watcher.drain()


async def test_a_watcher_runs_only_once() -> None:
    """Starting a watcher a second time raises LifecycleError."""
    watcher = CompletionWatcher(ScriptedEvents().query)
    async with running(watcher):
        pass
    with pytest.raises(LifecycleError):
        await watcher.run()


def test_backoff_spins_then_sleeps_an_eighth_of_the_wait_within_bounds() -> None:
    """Within the spin budget waits are 0; then 1/8 of the time waited, 20 us to 1 ms."""
    backoff = Backoff(spin_s=150e-6, min_sleep_s=20e-6, max_sleep_s=1e-3)
    backoff.reset(10.0)
    assert backoff.next_wait(10.0001) == 0.0
    assert backoff.next_wait(10.0002) == pytest.approx(25e-6)
    assert backoff.next_wait(10.00016) == pytest.approx(20e-6)
    assert backoff.next_wait(10.004) == pytest.approx(500e-6)
    assert backoff.next_wait(10.5) == pytest.approx(1e-3)


def test_backoff_reset_returns_to_spinning() -> None:
    """Progress resets the back-off to spinning, then to the shortest sleep."""
    backoff = Backoff(spin_s=150e-6, min_sleep_s=20e-6, max_sleep_s=1e-3)
    for _ in range(10):
        backoff.next_wait(1.0)
    backoff.reset(2.0)
    assert backoff.next_wait(2.0) == 0.0
    assert backoff.next_wait(2.00016) == pytest.approx(20e-6)


def test_backoff_rejects_inverted_bounds() -> None:
    """min_sleep_s above max_sleep_s is a ValueError."""
    with pytest.raises(ValueError, match="min_sleep_s"):
        Backoff(spin_s=0, min_sleep_s=1e-3, max_sleep_s=1e-4)


@pytest.mark.parametrize(
    "anyio_backend", [pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio")]
)
async def test_long_running_work_is_polled_at_most_about_once_per_ms() -> None:
    """A kernel that runs for 1 s (mock clock) costs about 1000 queries, not a busy core."""
    # ~1000 at the 1 ms cap, plus the ~40 shorter sleeps of the first 8 ms.
    events = ScriptedEvents()
    # precise_nap_s=0: a thread's nap would sleep in real time, not on the mock clock.
    watcher = CompletionWatcher(events.query, spin_s=0.0, max_sleep_s=1e-3, precise_nap_s=0.0)
    completion = Completion()
    async with running(watcher):
        event = events.record()
        watcher.watch("s", event, completion)
        await anyio.sleep(1.0)
        assert 990 <= len(events.queried) <= 1060
        events.finish(event)
        started = anyio.current_time()
        await finished(completion)
        assert anyio.current_time() - started <= 1e-3


@pytest.mark.parametrize(
    "anyio_backend", [pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio")]
)
async def test_registering_work_wakes_a_backed_off_watcher_at_once() -> None:
    """New work on another stream is seen without waiting out the current back-off sleep."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query, spin_s=0.0, min_sleep_s=0.5, max_sleep_s=0.5)
    quick = Completion()
    async with running(watcher):
        watcher.watch("slow", events.record(), Completion())
        await anyio.sleep(0.1)
        started = anyio.current_time()
        watcher.watch("fast", events.record(SUCCESS), quick)
        await finished(quick)
        assert anyio.current_time() == started


@pytest.mark.parametrize(
    ("max_sleep_s", "in_flight", "threaded"),
    [(200e-6, 1, True), (5e-3, 1, False), (200e-6, 10, False)],
    ids=["short", "long", "short-but-busy"],
)
async def test_naps_under_a_millisecond_sleep_in_a_thread_longer_ones_on_the_loop(
    monkeypatch: pytest.MonkeyPatch, max_sleep_s: float, in_flight: int, threaded: bool
) -> None:
    """Short naps with little in flight go to a worker thread; long or busy ones do not."""
    slept_in_threads: list[float] = []
    run_sync = anyio.to_thread.run_sync

    async def recording(func: Any, *args: Any, **kwargs: Any) -> Any:
        if func is time.sleep:
            slept_in_threads.append(args[0])
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", recording)
    events = ScriptedEvents()
    watcher = CompletionWatcher(
        events.query, spin_s=0.0, min_sleep_s=max_sleep_s, max_sleep_s=max_sleep_s
    )
    completions = [Completion() for _ in range(in_flight)]
    async with running(watcher):
        recorded = [events.record() for _ in completions]
        for event, completion in zip(recorded, completions, strict=True):
            watcher.watch("s", event, completion)  # one stream: one query per poll
        while len(events.queried) < 3:
            await anyio.lowlevel.checkpoint()
        for event in recorded:
            events.finish(event)
        for completion in completions:
            await finished(completion)
    assert bool(slept_in_threads) is threaded
    assert all(nap < 1e-3 for nap in slept_in_threads)


def test_backoff_spin_budget_can_be_replaced_per_call() -> None:
    """A per-call spin budget overrides the configured one for that call only."""
    backoff = Backoff(spin_s=150e-6, min_sleep_s=20e-6, max_sleep_s=1e-3)
    backoff.reset(1.0)
    assert backoff.next_wait(1.001, spin_s=2e-3) == 0.0
    assert backoff.next_wait(1.001) == pytest.approx(125e-6)
    assert backoff.next_wait(1.0024, spin_s=2e-3) == pytest.approx(300e-6)


@pytest.mark.parametrize(
    ("in_flight", "spins_for_s"),
    [(1, 2e-3), (10, 150e-6)],
    ids=["few-in-flight-spin-long", "many-in-flight-spin-short"],
)
async def test_few_in_flight_spin_longer_before_the_first_sleep(
    in_flight: int, spins_for_s: float
) -> None:
    """With little in flight the watcher only yields for few_spin_s, else for spin_s.

    The back-off reads a hand-moved clock; its naps (20 us to 1 ms) pass in real time.
    """
    events = ScriptedEvents()
    sleeps: list[tuple[float, float]] = []  # (clock, wait) of every poll
    clock_now = [0.0]

    def clock() -> float:
        return clock_now[0]

    watcher = CompletionWatcher(
        events.query,
        spin_s=150e-6,
        few_spin_s=2e-3,
        min_sleep_s=20e-6,
        max_sleep_s=1e-3,
        precise_nap_s=0.0,
        clock=clock,
    )

    class RecordingBackoff(Backoff):
        def next_wait(self, now: float, spin_s: float | None = None) -> float:
            wait = super().next_wait(now, spin_s)
            sleeps.append((now, wait))
            return wait

    watcher._backoff = RecordingBackoff(spin_s=150e-6, min_sleep_s=20e-6, max_sleep_s=1e-3)
    completions = [Completion() for _ in range(in_flight)]
    async with running(watcher):
        recorded = [events.record() for _ in completions]
        for event, completion in zip(recorded, completions, strict=True):
            watcher.watch("s", event, completion)
        for step in range(1, 40):  # the watcher's clock moves 100 us per step
            clock_now[0] = step * 100e-6
            count = len(sleeps)
            while len(sleeps) == count:
                await anyio.lowlevel.checkpoint()
        for event in recorded:
            events.finish(event)
        for completion in completions:
            await finished(completion)
    first_sleep = next(now for now, wait in sleeps if wait > 0)
    # The first poll that sleeps comes at the first step past the budget.
    assert spins_for_s <= first_sleep <= spins_for_s + 100e-6


#: A spin budget no test outlives: the waiter keeps polling its own event.
FOLLOW_S = 60.0


class HandClock:
    """A clock the test moves by hand (the watcher's spin budget reads it)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_watch_and_wait_polls_from_the_waiting_task_alone() -> None:
    """With nothing else in flight the waiter polls its own event; the watcher stays idle."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(
        events.query, elapsed_ms=lambda start, end: 0.25, few_spin_s=FOLLOW_S
    )
    completion = Completion()
    released: list[bool] = []
    event = events.record()
    async with running(watcher), anyio.create_task_group() as tg:
        tg.start_soon(
            functools.partial(
                watcher.watch_and_wait,
                "s",
                event,
                completion,
                lambda: released.append(completion.done),
                timing=("t0", "t1"),
            )
        )
        await wait_for(lambda: len(events.queried) >= 3)
        assert watcher.in_flight == 1
        assert watcher.busy_streams == 0  # not in the watcher's queues
        events.finish(event)
    assert completion.done
    assert completion.error is None
    assert completion.device_ns == 250_000
    assert released == [False]
    assert watcher.in_flight == 0


async def test_watch_and_wait_hands_over_to_the_watcher_after_the_spin_budget() -> None:
    """Past the few-in-flight spin budget the watcher polls the work instead."""
    events = ScriptedEvents()
    clock = HandClock()
    watcher = CompletionWatcher(events.query, few_spin_s=1e-3, precise_nap_s=0.0, clock=clock)
    completion = Completion()
    event = events.record()
    async with running(watcher), anyio.create_task_group() as tg:
        tg.start_soon(watcher.watch_and_wait, "s", event, completion)
        await wait_for(lambda: len(events.queried) >= 2)
        assert watcher.busy_streams == 0
        clock.now = 2e-3
        await wait_for(lambda: watcher.busy_streams == 1)
        assert watcher.in_flight == 1
        events.finish(event)
    assert completion.done
    assert completion.error is None
    assert watcher.in_flight == 0


async def test_cancelled_watch_and_wait_leaves_the_work_to_the_watcher() -> None:
    """Cancelling the waiter hands the work over; on_done still runs once it finishes."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query, few_spin_s=FOLLOW_S)
    completion = Completion()
    released: list[bool] = []
    event = events.record()
    async with running(watcher):
        with anyio.move_on_after(0.05) as scope:
            await watcher.watch_and_wait("s", event, completion, lambda: released.append(True))
        assert scope.cancelled_caught
        assert not completion.done
        assert released == []
        assert watcher.busy_streams == 1
        events.finish(event)
        await finished(completion)
    assert released == [True]
    assert watcher.in_flight == 0


async def test_watch_and_wait_queues_behind_earlier_work_of_its_stream() -> None:
    """With earlier work of the stream registered, the work joins the watcher's queue."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    first, second = Completion(), Completion()
    early, late = events.record(), events.record()
    async with running(watcher), anyio.create_task_group() as tg:
        watcher.watch("s", early, first)
        tg.start_soon(watcher.watch_and_wait, "s", late, second)
        await wait_for(lambda: watcher.in_flight == 2)
        assert watcher.busy_streams == 1
        await wait_for(lambda: len(events.queried) >= 5)
        assert set(events.queried) == {early}  # only the stream's oldest is polled
        events.finish(late)
        events.finish(early)
    assert first.done
    assert second.done


async def test_watch_and_wait_raises_the_work_failure() -> None:
    """A failed query result fails the work, and the waiter raises it."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query)
    completion = Completion()
    async with running(watcher):
        with pytest.raises(DispatchError, match="CUDA_ERROR_INVALID_HANDLE"):
            await watcher.watch_and_wait(
                "s", events.record(int(R.CUDA_ERROR_INVALID_HANDLE)), completion
            )
    assert completion.done


async def test_sticky_error_in_watch_and_wait_fails_every_piece_of_work() -> None:
    """A sticky result seen by a waiter fails its own work and all queued work."""
    events = ScriptedEvents()
    health = DeviceHealth("device 0 (test)")
    watcher = CompletionWatcher(events.query, health=health, few_spin_s=FOLLOW_S)
    queued, followed = Completion(), Completion()
    bad = events.record()
    async with running(watcher):
        watcher.watch("other", events.record(), queued)
        async with anyio.create_task_group() as tg:

            async def follow() -> None:
                with pytest.raises(DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
                    await watcher.watch_and_wait("s", bad, followed)

            tg.start_soon(follow)
            await wait_for(lambda: bad in events.queried)
            events.finish(bad, int(R.CUDA_ERROR_ILLEGAL_ADDRESS))
        with pytest.raises(DeviceLostError):
            await finished(queued)
    assert health.lost
    assert watcher.in_flight == 0


async def test_drain_waits_for_work_its_waiter_polls() -> None:
    """drain() returns only once followed work has finished too."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query, few_spin_s=FOLLOW_S)
    completion = Completion()
    event = events.record()
    drained: list[bool] = []

    async def drain() -> None:
        await watcher.drain()
        drained.append(completion.done)

    async with running(watcher), anyio.create_task_group() as tg:
        tg.start_soon(watcher.watch_and_wait, "s", event, completion)
        await wait_for(lambda: watcher.in_flight == 1)
        tg.start_soon(drain)
        await wait_for(lambda: len(events.queried) >= 5)
        assert drained == []
        assert watcher.busy_streams == 0  # still polled by its waiter
        events.finish(event)
    assert drained == [True]


async def test_stopping_the_watcher_fails_followed_work() -> None:
    """Cancelling the watcher fails work a waiter was polling, without releasing it."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query, few_spin_s=FOLLOW_S)
    completion = Completion()
    released: list[bool] = []
    async with anyio.create_task_group() as outer, anyio.create_task_group() as tg:
        await tg.start(watcher.run)

        async def follow() -> None:
            with pytest.raises(LifecycleError, match="stopped watching"):
                await watcher.watch_and_wait(
                    "s", events.record(), completion, lambda: released.append(True)
                )

        outer.start_soon(follow)
        await wait_for(lambda: len(events.queried) >= 2)
        assert watcher.busy_streams == 0  # polled by its waiter
        tg.cancel_scope.cancel()
    assert released == []
    assert watcher.in_flight == 0


async def test_one_waiter_at_a_time_polls_a_stream_and_few_in_flight_in_all() -> None:
    """A second wait on a followed stream, or one past the in-flight limit, is queued
    for the watcher: a hand-over can then always put a stream's oldest work first."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query, few_spin_s=FOLLOW_S)
    completions = [Completion() for _ in range(6)]
    recorded = [events.record() for _ in completions]
    streams = ["a", "a", "b", "c", "d", "e"]
    async with running(watcher), anyio.create_task_group() as tg:
        for count, (stream, event, completion) in enumerate(
            zip(streams, recorded, completions, strict=True), start=1
        ):
            tg.start_soon(watcher.watch_and_wait, stream, event, completion)
            await wait_for(lambda count=count: watcher.in_flight == count)  # in this order
        # Followed: the first on "a", then "b", "c" (four in flight); queued: the second
        # on "a" and those past the limit ("d", "e").
        assert watcher.busy_streams == 3
        for event in recorded:
            events.finish(event)
    assert all(completion.done for completion in completions)
