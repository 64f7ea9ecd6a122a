"""The completion watcher and its fences, driven by scripted events (no GPU needed)."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from cuda.bindings import driver
from trio.testing import MockClock

from vyre_async.cuda import DeviceHealth, event_query_failure
from vyre_async.errors import DeviceLostError, DispatchError, LifecycleError
from vyre_async.streams import Backoff, Completion, CompletionWatcher, Lane

R = driver.CUresult
NOT_READY = int(R.CUDA_ERROR_NOT_READY)
SUCCESS = int(R.CUDA_SUCCESS)
#: Upper bound of any wait in these tests; passing tests finish far sooner.
BOUND_S = 5.0
#: A spin budget no test outlives: a waiting task keeps polling.
FOLLOW_S = 60.0
MOCK = pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio-mock")


class ScriptedEvents:
    """Events whose cuEventQuery answer the test sets; every query is recorded.

    Recording an event makes it unfinished (``NOT_READY``) until the test finishes
    it, unless ``ready_on_record`` says it finishes at once with that result.
    """

    def __init__(self) -> None:
        self._next = 0
        self.state: dict[int, int] = {}
        self.queried: list[int] = []
        self.recorded: list[int] = []
        self.ready_on_record: int | None = None

    def acquire(self) -> int:
        self._next += 1
        return self._next

    def record(self, event: int, stream: Any) -> None:
        self.recorded.append(event)
        self.state[event] = NOT_READY if self.ready_on_record is None else self.ready_on_record

    def finish(self, event: int, result: int = SUCCESS) -> None:
        self.state[event] = result

    def query(self, event: int) -> int:
        self.queried.append(event)
        return self.state[event]


def make_watcher(events: ScriptedEvents, **options: Any) -> CompletionWatcher:
    return CompletionWatcher(
        events.query,
        failure=event_query_failure,
        record=events.record,
        acquire_event=events.acquire,
        **options,
    )


class Tracked(Completion):
    """A completion that records when its release hook runs, and can make it fail."""

    __slots__ = ("explode", "log", "name")

    def __init__(self, name: str = "", log: list[str] | None = None) -> None:
        super().__init__()
        self.name = name
        self.log = log if log is not None else []
        self.explode = False

    def _release(self) -> None:
        self.log.append(f"release {self.name}")
        if self.explode:
            raise KeyError("pool bookkeeping")


def put(watcher: CompletionWatcher, lane: Lane, work: Completion | None = None) -> Completion:
    """Add work to ``lane`` in a fence of its own (its event recorded now)."""
    work = work if work is not None else Completion()
    watcher.add(lane, work)
    watcher.seal(work.fence)
    return work


def event_of(work: Completion) -> int:
    event: int = work.fence.event
    return event


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
    """Kicked work is completed by the watcher once its fence's event reports success."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        work = put(watcher, lane)
        watcher.kick()
        await wait_for(lambda: len(events.queried) >= 3)
        assert not work.done
        events.finish(event_of(work))
        await finished(work)
    assert watcher.in_flight == 0


async def test_work_added_in_one_turn_shares_one_fence_and_one_query() -> None:
    """Work added to a lane before it is sealed joins one fence: one event, one query."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        works = [Completion() for _ in range(5)]
        for work in works:
            watcher.add(lane, work)
        assert len({id(work.fence) for work in works}) == 1
        events.ready_on_record = SUCCESS
        await finished(works[0])
    assert all(work.done for work in works)
    assert events.recorded == [events.recorded[0]]
    assert len(events.queried) == 1
    assert watcher.fences == 1


async def test_only_the_oldest_fence_of_a_lane_is_queried() -> None:
    """While a lane's oldest fence is unfinished, its later fences are never queried."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        works = [put(watcher, lane) for _ in range(3)]
        watcher.kick()
        await wait_for(lambda: len(events.queried) >= 20)
        assert set(events.queried) == {event_of(works[0])}
        for work in works:
            events.finish(event_of(work))
        await finished(works[-1])


async def test_a_lane_completes_in_the_order_work_was_added() -> None:
    """Finished work on one lane completes in the order it was added."""
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS
    watcher = make_watcher(events)
    log: list[str] = []
    lane = watcher.lane("s", "stream-s")
    works = [put(watcher, lane, Tracked(str(index), log)) for index in range(5)]
    async with running(watcher):
        watcher.kick()
        await finished(works[-1])
    assert log == [f"release {index}" for index in range(5)]


async def test_a_later_ready_fence_waits_for_the_oldest() -> None:
    """A later fence that reports done still waits until the oldest one finishes."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        first, second = put(watcher, lane), put(watcher, lane)
        events.finish(event_of(second))
        watcher.kick()
        await wait_for(lambda: len(events.queried) >= 10)
        assert not second.done
        events.finish(event_of(first))
        await finished(second)
        assert first.done


async def test_lanes_progress_independently() -> None:
    """A blocked lane does not hold back finished work on another lane."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        blocked = put(watcher, watcher.lane("a", "stream-a"))
        quick = put(watcher, watcher.lane("b", "stream-b"))
        events.finish(event_of(quick))
        watcher.kick()
        await finished(quick)
        assert not blocked.done
        assert watcher.busy_lanes == 1


async def test_idle_watcher_does_not_poll_and_wakes_on_kick() -> None:
    """With nothing added the watcher blocks without querying; kick() wakes it."""
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS
    watcher = make_watcher(events)
    async with running(watcher):
        for _ in range(3):
            await anyio.wait_all_tasks_blocked()
        assert events.queried == []
        work = put(watcher, watcher.lane("s", "stream-s"))
        watcher.kick()
        await finished(work)
        await anyio.wait_all_tasks_blocked()
        queried = len(events.queried)
        await anyio.wait_all_tasks_blocked()
        assert len(events.queried) == queried


async def test_sticky_error_fails_every_completion_with_device_lost() -> None:
    """A sticky query result fails all work on all lanes and marks the device lost."""
    events = ScriptedEvents()
    health = DeviceHealth("device 0 (test)")
    watcher = make_watcher(events, health=health)
    log: list[str] = []
    async with running(watcher):
        lane_a, lane_b = watcher.lane("a", "stream-a"), watcher.lane("b", "stream-b")
        works = [
            put(watcher, lane_a, Tracked("0", log)),
            put(watcher, lane_a, Tracked("1", log)),
            put(watcher, lane_b, Tracked("2", log)),
        ]
        watcher.add(lane_b, open_work := Tracked("3", log))  # still in an open fence
        events.finish(event_of(works[0]), int(R.CUDA_ERROR_ILLEGAL_ADDRESS))
        watcher.kick()
        for work in [*works, open_work]:
            with pytest.raises(DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
                await finished(work)
        assert sorted(log) == [f"release {i}" for i in range(4)]
        assert health.lost
        assert watcher.in_flight == 0
        with pytest.raises(DeviceLostError, match="lost earlier"):
            watcher.check_accepting()
    errors = [work.error for work in works]
    assert len({id(error) for error in errors}) == 3


async def test_non_sticky_query_error_fails_only_that_fence() -> None:
    """An ordinary query error fails its own fence's work; the lane goes on."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        broken, after = put(watcher, lane), put(watcher, lane)
        events.finish(event_of(broken), int(R.CUDA_ERROR_INVALID_HANDLE))
        events.finish(event_of(after))
        watcher.kick()
        await finished(after)
        with pytest.raises(DispatchError, match="CUDA_ERROR_INVALID_HANDLE"):
            await finished(broken)


async def test_without_a_failure_mapping_a_failed_query_names_its_code() -> None:
    """A watcher given no driver mapping fails the work with DispatchError naming the code."""
    events = ScriptedEvents()
    watcher = CompletionWatcher(events.query, record=events.record, acquire_event=events.acquire)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        broken, after = put(watcher, lane), put(watcher, lane)
        events.finish(event_of(broken), 4711)
        events.finish(event_of(after))
        watcher.kick()
        await finished(after)
        with pytest.raises(DispatchError, match=r"returned 4711.*Fix:"):
            await finished(broken)


async def test_one_failed_piece_of_a_shared_fence_does_not_fail_the_others() -> None:
    """Work sharing a fence with work whose release fails still completes cleanly."""
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS
    watcher = make_watcher(events)
    log: list[str] = []
    works = [Tracked(str(index), log) for index in range(3)]
    works[1].explode = True
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        for work in works:
            watcher.add(lane, work)
        watcher.kick()
        await finished(works[2])
        await finished(works[0])
        with pytest.raises(DispatchError, match="releasing its resources raised"):
            await finished(works[1])
    assert len(log) == 3


async def test_release_runs_before_callbacks_and_before_waiters_wake() -> None:
    """The release hook runs first: memory is back before anyone sees the work done."""
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS
    watcher = make_watcher(events)
    log: list[str] = []
    async with running(watcher):
        work = Tracked("w", log)
        work.add_done_callback(lambda: log.append("callback"))
        put(watcher, watcher.lane("s", "stream-s"), work)
        watcher.kick()
        await finished(work)
        log.append("waiter woke")
    assert log == ["release w", "callback", "waiter woke"]


async def test_a_failing_release_fails_its_completion_but_not_the_watcher() -> None:
    """A release that raises fails that completion; the watcher keeps serving others."""
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS
    watcher = make_watcher(events)
    broken = Tracked("broken")
    broken.explode = True
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        put(watcher, lane, broken)
        watcher.kick()
        with pytest.raises(DispatchError, match="releasing its resources raised"):
            await finished(broken)
        later = put(watcher, lane)
        watcher.kick()
        await finished(later)


async def test_work_stopped_by_a_cancellation_fails_with_an_error_not_the_cancellation() -> None:
    """Completing work with what cancelled its enqueueing task keeps a DispatchError:
    raising the cancellation in the tasks that wait for the work would cancel them.
    The work it was to start after is kept on failure and dropped on success."""
    earlier = Completion()
    stopped, finished_ok = Completion(), Completion()
    stopped.after, finished_ok.after = [earlier], [earlier]
    cancellation: list[BaseException] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep(1)
        except BaseException as exc:  # the loop's own cancellation class
            cancellation.append(exc)
            stopped.complete(exc)
    finished_ok.complete()
    assert not isinstance(cancellation[0], Exception)
    assert isinstance(stopped.error, DispatchError)
    assert "interrupted" in str(stopped.error)
    assert str(stopped.error).rstrip().endswith(".")
    assert "Fix:" in str(stopped.error)
    with pytest.raises(DispatchError, match="before it was enqueued"):
        await stopped.wait()
    assert stopped.after == [earlier]
    assert finished_ok.after is None


async def test_cancelling_the_watcher_fails_pending_work_without_releasing_it() -> None:
    """On cancel, pending completions fail with LifecycleError and are not released."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    log: list[str] = []
    work = Tracked("w", log)
    async with running(watcher):
        put(watcher, watcher.lane("s", "stream-s"), work)
        watcher.kick()
        await wait_for(lambda: len(events.queried) >= 2)
    assert isinstance(work.error, LifecycleError)
    assert log == []
    assert watcher.in_flight == 0
    with pytest.raises(LifecycleError, match="stopped"):
        watcher.check_accepting()


async def test_drain_returns_once_all_added_work_finished() -> None:
    """drain() waits for every piece of added work, then returns."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    async with running(watcher):
        lanes = [watcher.lane(key, f"stream-{key}") for key in (0, 1)]
        works = [put(watcher, lanes[index % 2]) for index in range(4)]
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.drain)
            await wait_for(lambda: len(events.queried) >= 5)
            for work in works:
                events.finish(event_of(work))
        assert all(work.done for work in works)


async def test_drain_without_a_running_watcher_is_refused() -> None:
    """drain() on a watcher that never started raises instead of hanging."""
    events = ScriptedEvents()
    watcher = make_watcher(events)
    put(watcher, watcher.lane("s", "stream-s"))
    with pytest.raises(LifecycleError, match="unstarted"):
        await watcher.drain()


async def test_a_watcher_runs_only_once() -> None:
    """Starting a watcher a second time raises LifecycleError."""
    watcher = make_watcher(ScriptedEvents())
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


def test_backoff_spin_budget_can_be_replaced_per_call() -> None:
    """A per-call spin budget overrides the configured one for that call only."""
    backoff = Backoff(spin_s=150e-6, min_sleep_s=20e-6, max_sleep_s=1e-3)
    backoff.reset(1.0)
    assert backoff.next_wait(1.001, spin_s=2e-3) == 0.0
    assert backoff.next_wait(1.001) == pytest.approx(125e-6)
    assert backoff.next_wait(1.0024, spin_s=2e-3) == pytest.approx(300e-6)


@pytest.mark.parametrize("anyio_backend", [MOCK])
async def test_long_running_work_is_polled_at_most_about_once_per_ms() -> None:
    """A kernel that runs for 1 s (mock clock) costs about 1000 queries, not a busy core.

    The watcher's back-off reads the event loop's clock, so the mock clock drives it
    whatever the machine's uptime.
    """
    # ~1000 at the 1 ms cap, plus the ~40 shorter sleeps of the first 8 ms.
    events = ScriptedEvents()
    # precise_nap_s=0: a thread's nap would sleep in real time, not on the mock clock.
    watcher = make_watcher(events, spin_s=0.0, max_sleep_s=1e-3, precise_nap_s=0.0)
    async with running(watcher):
        work = put(watcher, watcher.lane("s", "stream-s"))
        watcher.kick()
        await anyio.sleep(1.0)
        assert 990 <= len(events.queried) <= 1060
        events.finish(event_of(work))
        started = anyio.current_time()
        await finished(work)
        assert anyio.current_time() - started <= 1e-3


@pytest.mark.parametrize("anyio_backend", [MOCK])
async def test_kicking_wakes_a_backed_off_watcher_at_once() -> None:
    """New work on another lane is seen without waiting out the current back-off sleep."""
    events = ScriptedEvents()
    watcher = make_watcher(events, spin_s=0.0, min_sleep_s=0.5, max_sleep_s=0.5)
    async with running(watcher):
        put(watcher, watcher.lane("slow", "stream-slow"))
        watcher.kick()
        await anyio.sleep(0.1)
        started = anyio.current_time()
        quick = put(watcher, watcher.lane("fast", "stream-fast"))
        events.finish(event_of(quick))
        watcher.kick()
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
    watcher = make_watcher(events, spin_s=0.0, min_sleep_s=max_sleep_s, max_sleep_s=max_sleep_s)
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        works = [put(watcher, lane) for _ in range(in_flight)]  # one lane: one query a poll
        watcher.kick()
        while len(events.queried) < 3:
            await anyio.lowlevel.checkpoint()
        for work in works:
            events.finish(event_of(work))
        for work in works:
            await finished(work)
    assert bool(slept_in_threads) is threaded
    assert all(nap < 1e-3 for nap in slept_in_threads)


class HandClock:
    """A clock the test moves by hand (spin budgets and back-off read it)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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
    clock = HandClock()
    watcher = make_watcher(
        events,
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
    async with running(watcher):
        lane = watcher.lane("s", "stream-s")
        works = [put(watcher, lane) for _ in range(in_flight)]
        watcher.kick()
        for step in range(1, 40):  # the watcher's clock moves 100 us per step
            clock.now = step * 100e-6
            count = len(sleeps)
            while len(sleeps) == count:
                await anyio.lowlevel.checkpoint()
        for work in works:
            events.finish(event_of(work))
        for work in works:
            await finished(work)
    first_sleep = next(now for now, wait in sleeps if wait > 0)
    # The first poll that sleeps comes at the first step past the budget.
    assert spins_for_s <= first_sleep <= spins_for_s + 100e-6


async def test_a_waiting_task_polls_its_own_work_and_the_watcher_stays_idle() -> None:
    """A task awaiting its work seals and polls it itself; the watcher never polls."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    log: list[str] = []
    async with running(watcher), anyio.create_task_group() as tg:
        lane = watcher.lane("s", "stream-s")
        work = Tracked("w", log)
        watcher.add(lane, work)
        tg.start_soon(finished, work)
        await wait_for(lambda: len(events.queried) >= 3)
        assert not watcher.polled_by_watcher
        assert watcher.in_flight == 1
        events.finish(event_of(work))
    assert work.done
    assert work.error is None
    assert log == ["release w"]
    assert watcher.in_flight == 0


async def test_a_waiting_task_hands_over_to_the_watcher_after_the_spin_budget() -> None:
    """Past its spin budget without progress, a waiting task leaves the work to the watcher."""
    events = ScriptedEvents()
    clock = HandClock()
    watcher = make_watcher(events, follow_spin_s=1e-3, precise_nap_s=0.0, clock=clock)
    async with running(watcher), anyio.create_task_group() as tg:
        work = Completion()
        watcher.add(watcher.lane("s", "stream-s"), work)
        tg.start_soon(finished, work)
        await wait_for(lambda: len(events.queried) >= 20)
        assert not watcher.polled_by_watcher
        clock.now = 2e-3
        await wait_for(lambda: watcher.polled_by_watcher)
        events.finish(event_of(work))
    assert work.done
    assert work.error is None
    assert watcher.in_flight == 0


async def test_after_a_task_spun_out_the_watcher_backs_off_without_spinning_again() -> None:
    """The task spent the spin budget: the watcher's first poll already sleeps.

    A second budget of spinning would only burn as much CPU again on long work.
    """
    events = ScriptedEvents()
    clock = HandClock()
    waits: list[float] = []  # every wait the watcher's back-off chose
    watcher = make_watcher(
        events, spin_s=1e-3, few_spin_s=1e-3, follow_spin_s=1e-3, precise_nap_s=0.0, clock=clock
    )

    class RecordingBackoff(Backoff):
        def next_wait(self, now: float, spin_s: float | None = None) -> float:
            wait = super().next_wait(now, spin_s)
            waits.append(wait)
            return wait

    watcher._backoff = RecordingBackoff(spin_s=1e-3, min_sleep_s=20e-6, max_sleep_s=1e-3)
    async with running(watcher), anyio.create_task_group() as tg:
        work = Completion()
        watcher.add(watcher.lane("s", "stream-s"), work)
        tg.start_soon(finished, work)
        await wait_for(lambda: len(events.queried) >= 20)  # the task spins from clock 0
        clock.now = 1.2e-3
        await wait_for(lambda: bool(waits))
        events.finish(event_of(work))
    assert work.done
    # 1.2 ms after the task began to spin: an eighth of that, not a yield.
    assert waits[0] == pytest.approx(150e-6)


@pytest.mark.parametrize("anyio_backend", [MOCK])
async def test_a_spinning_task_hands_over_after_bounded_polls_on_a_mock_clock() -> None:
    """A mock clock never moves while a task spins: a poll count ends the spin too."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_max_polls=50, precise_nap_s=0.0)
    async with running(watcher), anyio.create_task_group() as tg:
        work = Completion()
        watcher.add(watcher.lane("s", "stream-s"), work)
        tg.start_soon(finished, work)
        await wait_for(lambda: watcher.polled_by_watcher)
        assert 50 <= len(events.queried) <= 52
        events.finish(event_of(work))
    assert work.done


async def test_a_cancelled_wait_leaves_the_work_to_the_watcher() -> None:
    """Cancelling the waiting task hands the work over; its release still runs once."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    log: list[str] = []
    async with running(watcher):
        work = Tracked("w", log)
        watcher.add(watcher.lane("s", "stream-s"), work)
        with anyio.move_on_after(0.05) as scope:
            await work.wait()
        assert scope.cancelled_caught
        assert not work.done
        assert log == []
        assert watcher.polled_by_watcher
        events.finish(event_of(work))
        await finished(work)
    assert log == ["release w"]
    assert watcher.in_flight == 0


async def test_tasks_waiting_behind_a_poller_get_their_work_and_the_role() -> None:
    """While one task polls, others sleep: its polls finish their work, and when its own
    work is done one of them takes over polling (the watcher is not needed)."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    async with running(watcher):
        lane_a, lane_b = watcher.lane("a", "stream-a"), watcher.lane("b", "stream-b")
        first, second, third = Completion(), Completion(), Completion()
        watcher.add(lane_a, first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(finished, first)
            await wait_for(lambda: len(events.queried) >= 1)  # the first task polls
            watcher.add(lane_b, second)
            watcher.add(lane_b, third)
            tg.start_soon(finished, second)
            tg.start_soon(finished, third)
            await wait_for(lambda: lane_b.open is None)  # sealed by the first task's poll
            events.finish(event_of(first))
            await wait_for(lambda: first.done)
            assert not second.done
            queried = len(events.queried)
            await wait_for(lambda: len(events.queried) > queried + 3)  # someone still polls
            assert not watcher.polled_by_watcher
            events.finish(event_of(second))
    assert second.done
    assert third.done
    assert watcher.in_flight == 0


async def test_a_waiter_cancelled_just_after_it_was_handed_the_role_passes_it_on() -> None:
    """The poller hands its role to a parked waiter, which is cancelled before it
    resumes: stopping its wait passes the role on (here to the watcher, for the work
    still pending), so that work still finishes and nobody is left holding the role."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    async with running(watcher):
        first = put(watcher, watcher.lane("a", "stream-a"))
        second = put(watcher, watcher.lane("b", "stream-b"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(finished, first)
            await wait_for(lambda: len(events.queried) >= 1)  # that task polls
            # This task plays the parked waiter of ``second``, never resuming.
            spot = watcher.wait_behind(second)
            assert spot is not None
            events.finish(event_of(first))
            await wait_for(lambda: first.done)  # the poller handed its role on at once
            assert not watcher.polled_by_watcher
            watcher.stop_waiting(second, spot)  # what its cancellation runs
            assert watcher.polled_by_watcher
            events.finish(event_of(second))
            await wait_for(lambda: second.done)
    assert watcher.in_flight == 0


async def test_a_waiter_raises_the_work_failure() -> None:
    """A failed query result fails the work, and its waiter raises it."""
    events = ScriptedEvents()
    events.ready_on_record = int(R.CUDA_ERROR_INVALID_HANDLE)
    watcher = make_watcher(events)
    async with running(watcher):
        work = Completion()
        watcher.add(watcher.lane("s", "stream-s"), work)
        with pytest.raises(DispatchError, match="CUDA_ERROR_INVALID_HANDLE"):
            await finished(work)


async def test_sticky_error_seen_by_a_waiting_task_fails_every_piece_of_work() -> None:
    """A sticky result seen by a polling task fails its own work and all other work."""
    events = ScriptedEvents()
    health = DeviceHealth("device 0 (test)")
    watcher = make_watcher(events, health=health, follow_spin_s=FOLLOW_S)
    async with running(watcher):
        other = put(watcher, watcher.lane("other", "stream-other"))
        followed = Completion()
        watcher.add(watcher.lane("s", "stream-s"), followed)
        async with anyio.create_task_group() as tg:

            async def follow() -> None:
                with pytest.raises(DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
                    await finished(followed)

            tg.start_soon(follow)
            await wait_for(lambda: followed.fence.event in events.queried)
            events.finish(event_of(followed), int(R.CUDA_ERROR_ILLEGAL_ADDRESS))
        with pytest.raises(DeviceLostError):
            await finished(other)
    assert health.lost
    assert watcher.in_flight == 0


async def test_drain_waits_for_work_a_task_polls() -> None:
    """drain() returns only once work polled by its waiting task has finished too."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    drained: list[bool] = []
    work = Completion()

    async def drain() -> None:
        await watcher.drain()
        drained.append(work.done)

    async with running(watcher), anyio.create_task_group() as tg:
        watcher.add(watcher.lane("s", "stream-s"), work)
        tg.start_soon(finished, work)
        await wait_for(lambda: len(events.queried) >= 1)
        tg.start_soon(drain)
        await wait_for(lambda: len(events.queried) >= 5)
        assert drained == []
        assert not watcher.polled_by_watcher  # still polled by its waiter
        events.finish(event_of(work))
    assert drained == [True]


async def test_stopping_the_watcher_fails_work_a_task_polls() -> None:
    """Cancelling the watcher fails work a waiting task was polling, without release."""
    events = ScriptedEvents()
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    log: list[str] = []
    work = Tracked("w", log)
    async with anyio.create_task_group() as outer, anyio.create_task_group() as tg:
        await tg.start(watcher.run)
        watcher.add(watcher.lane("s", "stream-s"), work)

        async def follow() -> None:
            with pytest.raises(LifecycleError, match="stopped watching"):
                await finished(work)

        outer.start_soon(follow)
        await wait_for(lambda: len(events.queried) >= 2)
        tg.cancel_scope.cancel()
    assert log == []
    assert watcher.in_flight == 0


async def _calls_per_wait(tasks: int, rounds: int) -> float:
    """Python calls per awaited piece of work while ``tasks`` tasks each await
    ``rounds`` pieces in turn, every piece on its task's own lane."""
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS  # the first query finds every fence done
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    async with running(watcher):
        lanes = [watcher.lane(index, f"stream-{index}") for index in range(tasks)]

        async def task(lane: Lane) -> None:
            for _ in range(rounds):
                work = Completion()
                watcher.add(lane, work)
                await work.wait()

        sys.setprofile(profile)
        try:
            async with anyio.create_task_group() as tg:
                for lane in lanes:
                    tg.start_soon(task, lane)
        finally:
            sys.setprofile(None)
    assert watcher.in_flight == 0
    return calls / (tasks * rounds)


async def test_the_cost_of_a_wait_does_not_grow_with_the_tasks_waiting() -> None:
    """Finished waiters are swept out of the hand-over queue at a threshold that grows
    with the tasks still waiting: 400 waiting tasks cost each wait about what 40 do
    (a sweep at a fixed threshold walked every waiter on nearly every wait)."""
    few = await _calls_per_wait(40, 20)
    many = await _calls_per_wait(400, 20)
    assert many < 1.5 * few, (few, many)


async def test_the_hand_over_queue_stays_bounded_while_one_task_polls_long_work() -> None:
    """While one task polls for long work, other tasks' short work finishes and they
    park behind it again and again: the queue of tasks to hand the role to is swept
    as the poller's polls finish work, so it holds about the tasks still waiting, not
    every wait since the poller began."""
    tasks, rounds = 40, 20
    events = ScriptedEvents()
    events.ready_on_record = SUCCESS  # short work: done at its first query
    watcher = make_watcher(events, follow_spin_s=FOLLOW_S)
    longest = 0
    async with running(watcher):
        long_work = put(watcher, watcher.lane("long", "stream-long"))
        events.state[event_of(long_work)] = NOT_READY
        async with anyio.create_task_group() as tg:
            tg.start_soon(finished, long_work)
            await wait_for(lambda: len(events.queried) >= 1)  # that task polls

            async def task(lane: Lane) -> None:
                nonlocal longest
                for _ in range(rounds):
                    work = Completion()
                    watcher.add(lane, work)
                    await work.wait()
                    longest = max(longest, len(watcher._candidates))

            async with anyio.create_task_group() as short:
                for index in range(tasks):
                    short.start_soon(task, watcher.lane(index, f"stream-{index}"))
            assert not long_work.done  # one poller throughout
            events.finish(event_of(long_work))
    assert watcher.in_flight == 0
    assert 0 < longest <= 64 + 2 * tasks, longest
