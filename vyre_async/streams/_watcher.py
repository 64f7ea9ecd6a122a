"""The completion watcher: turns recorded CUDA events into finished completions.

Work is added to a stream's :class:`~._fence.Lane` (see :mod:`._fence`): it joins
the lane's open fence, which is sealed (its event recorded) when someone needs to
observe it. One *poller* at a time queries the oldest sealed fence of every busy
lane and finishes the completions of each fence that is done, in stream order.

Who polls:

- **The task that awaits.** A task waiting for its work becomes the poller when
  nobody else is polling: it seals the open fences, then queries between event-loop
  checkpoints, so a dispatch of a few microseconds is noticed within microseconds,
  without a detour through another task. Tasks that arrive while one polls wait on
  an event; the poller's queries finish their work too (fences of every lane), and
  when the poller's own work is done it hands the role to one of them.
- **The watcher task**, one per backend, for what nobody awaits right now: work
  submitted and not yet awaited, work whose poller ran out of its spin budget
  (long kernels), and work whose waiter was cancelled. It spins on checkpoints for a
  short budget after each registration or completion, then sleeps in steps growing
  from ``min_sleep_s`` to ``max_sleep_s``, so a long kernel keeps no core busy. Taking
  over from a task that spun out, it goes straight to sleeping: the budget is spent.

Clocks come from the event loop (``anyio.current_time``) unless one is injected, so
a mock clock drives the back-off; a spin budget also ends after a bounded number of
polls, since a spinning task never lets a mock clock jump.

Naps under a millisecond sleep in a worker thread while little is in flight: the
event loop's own timers wait in whole milliseconds (asyncio and trio poll epoll
with a millisecond timeout, rounded up), so a 100 µs nap on the loop lasts 1 ms. A
thread's sleep ends within tens of microseconds of asking, and its return wakes the
loop at once. With much in flight the loop's coarser timer stays.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

from ..errors import DeviceLostError, DispatchError, LifecycleError, VyreError
from ..logging import get_logger
from ._backoff import Backoff
from ._completion import Completion
from ._fence import Fence, Lane
from ._park import EventSpot, Spot, checkpoint_for, park_factory, wake

__all__ = ["CompletionWatcher"]

logger = get_logger("vyre_async.streams")

#: Naps shorter than this sleep in a worker thread (see the module docstring)...
PRECISE_NAP_S = 1e-3
#: ...while at most this many pieces of work are in flight.
PRECISE_NAP_MAX_IN_FLIGHT = 4
#: How long a waiting task polls without progress before the watcher takes over.
FOLLOW_SPIN_S = 2e-3
#: ...and at most this many polls (a mock clock does not move while a task spins).
FOLLOW_MAX_POLLS = 4096
#: A waiting task reads the clock only after this many polls without progress (most
#: work is done by then, and a read costs calls)...
_CLOCK_AFTER_POLLS = 16
#: ...and then every this many polls.
_CLOCK_EVERY = 8
#: Events kept per lane for its next fences.
SPARE_EVENTS = 8
#: Waiting tasks remembered beyond which finished ones are swept out; after a sweep
#: the next comes at twice the tasks still waiting, so a sweep costs O(1) a wait.
_CANDIDATES_SWEEP = 64


#: What ``query`` returns for an event whose work has finished (``cuEventQuery``'s code).
DONE = 0
#: What ``query`` returns for an event whose work is still running.
NOT_READY = 600
#: Maps any other code ``query`` returned to the error of the fence's work, and whether
#: it is sticky (the device is lost: every piece of work fails with it).
Failure = Callable[[int], tuple[VyreError, bool]]


class Health(Protocol):
    """Whether the device can still take work (a CUDA device's ``DeviceHealth``)."""

    @property
    def error(self) -> VyreError | None:
        """The device-lost error once the device is lost, else ``None``."""
        ...

    def check(self) -> None:
        """Raise the device-lost error if the device is lost."""
        ...

    def mark_lost(self, error: VyreError) -> VyreError:
        """Record that the device is lost; return the error every waiter gets."""
        ...


def _unclassified(code: int) -> tuple[VyreError, bool]:
    return (
        DispatchError(
            f"querying a completion event returned {code}",
            fix="pass the watcher a failure mapping for its driver's result codes.",
        ),
        False,
    )


class _Role:
    """Who polls now: nobody, the watcher task, or a waiting task."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_WATCHER = _Role("watcher")
_TASK = _Role("task")


def _query_failed(exc: Exception) -> DispatchError:
    return DispatchError(
        f"querying a completion event raised {exc!r}", fix="report this bug with the log."
    )


class CompletionWatcher:
    """Finishes completions when the events of their fences have completed.

    Args:
        query: ``event -> code``, like ``cuEventQuery``: :data:`DONE`, :data:`NOT_READY`,
            or a failure code for ``failure``.
        failure: Maps a failure code to the work's error and whether it is sticky
            (the CUDA backend passes the driver layer's mapping).
        record: ``(event, stream) -> None``, like a checked ``cuEventRecord``.
        acquire_event: Makes (or takes from a pool) a completion event.
        release_event: Gives an event back (lanes keep a few for reuse).
        synchronize: ``stream -> None``: waits for a stream (only after recording a
            fence's event failed, so its work's memory is not handed back early).
        health: Marked lost on a sticky error; checked by :meth:`check_accepting`.
        on_start: Run once in the loop thread before polling (make the context current).
        spin_s: The watcher's spin budget after each registration or completion.
        few_spin_s: Its spin budget while at most :data:`PRECISE_NAP_MAX_IN_FLIGHT`
            pieces are in flight (``None``: ``spin_s``).
        follow_spin_s: How long a waiting task polls without progress before it
            leaves the work to the watcher.
        follow_max_polls: The most polls a waiting task makes without progress.
        min_sleep_s: First back-off sleep.
        max_sleep_s: Longest back-off sleep. 2 ms: on an H100 VM each wake cost
            60-160 µs of CPU, so a 1 ms cap put a long kernel at 6-13 % of a core.
        precise_nap_s: Naps shorter than this sleep in a worker thread (0: never;
            tests on a mock clock use 0, since a thread sleeps in real time).
        clock: Monotonic seconds; the event loop's clock when ``None``.
    """

    def __init__(
        self,
        query: Callable[[Any], int],
        *,
        failure: Failure = _unclassified,
        record: Callable[[Any, Any], None] | None = None,
        acquire_event: Callable[[], Any] | None = None,
        release_event: Callable[[Any], None] | None = None,
        synchronize: Callable[[Any], None] | None = None,
        health: Health | None = None,
        on_start: Callable[[], None] | None = None,
        spin_s: float = 150e-6,
        few_spin_s: float | None = None,
        follow_spin_s: float = FOLLOW_SPIN_S,
        follow_max_polls: int = FOLLOW_MAX_POLLS,
        min_sleep_s: float = 20e-6,
        max_sleep_s: float = 2e-3,
        precise_nap_s: float = PRECISE_NAP_S,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._query = query
        self._failure = failure
        self._record = record or (lambda event, stream: None)
        self._acquire_event = acquire_event or _counter_events()
        self._release_event = release_event or (lambda event: None)
        self._synchronize = synchronize or (lambda stream: None)
        self._health = health
        self._on_start = on_start
        self._clock = clock
        self._now: Callable[[], float] = clock or anyio.current_time
        self._checkpoint: Callable[[], Awaitable[None]] = anyio.lowlevel.checkpoint
        self._new_spot: Callable[[], Spot] = lambda: EventSpot(anyio.Event())
        self._backoff = Backoff(spin_s=spin_s, min_sleep_s=min_sleep_s, max_sleep_s=max_sleep_s)
        self._few_spin_s = spin_s if few_spin_s is None else few_spin_s
        self._follow_spin_s = follow_spin_s
        self._follow_max_polls = max(1, follow_max_polls)
        self._precise_nap_s = precise_nap_s
        # Lanes with work not yet finished, in the order they became busy.
        self._busy: dict[Lane, None] = {}
        self._lanes: list[Lane] = []
        self._role: _Role | Spot | None = None
        # (spot, work) of tasks waiting while another polls: the role is handed to them.
        self._candidates: deque[tuple[Spot, Completion]] = deque()
        self._sweep_at = _CANDIDATES_SWEEP
        self._wake = anyio.Event()
        self._idle: anyio.Event | None = None
        self._nap: anyio.CancelScope | None = None
        # Threads for short naps; a cancelled nap's thread sleeps out its (< 1 ms) nap.
        self._nappers = anyio.CapacityLimiter(2)
        self._state = "unstarted"
        #: Whether the watcher task has stopped (new work would never be polled): a
        #: plain attribute, so a hot path reads it before calling :meth:`check_accepting`.
        self.stopped = False
        #: Event queries made.
        self.queries = 0
        #: Fences sealed (events recorded for completions).
        self.fences = 0

    # ----------------------------------------------------------------- state
    @property
    def in_flight(self) -> int:
        """Work added and not yet finished."""
        return sum(lane.pending() for lane in self._busy)

    def _few_in_flight(self) -> bool:
        """Whether at most :data:`PRECISE_NAP_MAX_IN_FLIGHT` pieces of work are in flight
        (counted only when the watcher is about to sleep, never per dispatch)."""
        count = 0
        for lane in self._busy:
            count += lane.pending()
            if count > PRECISE_NAP_MAX_IN_FLIGHT:
                return False
        return True

    @property
    def busy_lanes(self) -> int:
        """Lanes with work not yet finished."""
        return len(self._busy)

    @property
    def polled_by_watcher(self) -> bool:
        """Whether the watcher task (not a waiting task) is the poller now."""
        return self._role is _WATCHER

    def check_accepting(self) -> None:
        """Raise unless new work may be added.

        Raises:
            LifecycleError: The watcher has stopped.
            DeviceLostError: The device is lost.
        """
        if self.stopped:
            raise LifecycleError(
                "the completion watcher has stopped", fix="open a new backend to submit work."
            )
        health = self._health
        if health is not None and health.error is not None:
            health.check()

    # ----------------------------------------------------------------- adding work
    def lane(self, key: Hashable, stream: Any) -> Lane:
        """A new lane for ``stream``; the watcher returns its spare events at close."""
        lane = Lane(key, stream)
        self._lanes.append(lane)
        return lane

    def add(self, lane: Lane, work: Completion) -> None:
        """Add work just enqueued on ``lane``'s stream: it joins the open fence.

        Call from the event-loop thread right after enqueueing the work, in stream
        order, after :meth:`check_accepting`. The work is finished (``complete``)
        once an event recorded after it has completed. Someone must then wait for it
        at once (``await work.wait()``), or :meth:`kick` the watcher.
        """
        fence = lane.open
        if fence is None:
            fence = lane.open = Fence(lane)
            self._busy[lane] = None
        fence.works.append(work)
        work.fence = fence
        work._source = self

    def seal(self, fence: Fence) -> Any:
        """Record the event of ``fence`` now if it is still open; return the event.

        For work on another stream that must wait for this fence's work
        (``cuStreamWaitEvent``). Returns ``None`` when recording failed (the fence's
        work then failed and is finished).
        """
        if fence.event is None and fence.lane.open is fence:
            self._seal(fence.lane)
        return fence.event

    def kick(self) -> None:
        """Make sure added work gets polled although nobody awaits it now."""
        role = self._role
        if role is None:
            self._role = _WATCHER
            self._wake_watcher()
        elif role is _WATCHER:
            self._backoff.reset(self._now())
            if self._nap is not None:
                self._nap.cancel()

    # ----------------------------------------------------------------- waiting
    def wait_behind(self, work: Completion) -> Spot | None:
        """Park a task waiting for ``work`` behind the task that polls now.

        The hot path's half of :meth:`follow`, for a caller that awaits the spot
        itself (one coroutine less to resume at every wake). Returns ``None`` when no
        task polls (the watcher task or nobody does): the caller polls itself,
        ``await follow(work, poll=True)``. Otherwise ``await spot`` returns once the
        work is done, or returns ``True`` when the poller handed this task its role;
        it then polls the same way. A caller whose ``await spot`` raised (it was
        cancelled) must call :meth:`stop_waiting`.
        """
        role = self._role
        if role is None or role is _WATCHER:
            return None
        spot = self._new_spot()
        waiters = work._waiters  # work._add_waiter, inlined: once per parked dispatch
        if waiters is None:
            work._waiters = [spot]
        else:
            waiters.append(spot)
        self._candidates.append((spot, work))
        return spot

    def stop_waiting(self, work: Completion, spot: Spot) -> None:
        """A task parked by :meth:`wait_behind` stops waiting (it was cancelled): the
        poller's role, if it was just handed to it, goes on to another."""
        work._discard_waiter(spot)
        if self._role is spot:  # handed the role while being cancelled
            self._hand_on()
        else:
            with contextlib.suppress(ValueError):
                self._candidates.remove((spot, work))

    async def follow(self, work: Completion, *, poll: bool = False) -> None:
        """Return once ``work`` is done, polling for it while nobody else does.

        Its failure is not raised here (``Completion.wait`` raises it). Cancelling
        the wait leaves the work to the next poller (another waiting task or the
        watcher), so its release still runs once the device has finished it.

        Args:
            work: Work added to one of the watcher's lanes.
            poll: This task is to poll at once: :meth:`wait_behind` returned ``None``
                or its spot returned ``True`` (the caller holds the role).
        """
        while True:
            if not poll:
                if work._done:
                    return
                spot = self.wait_behind(work)
                if spot is not None:
                    try:
                        poll = await spot
                    except BaseException:
                        self.stop_waiting(work, spot)
                        raise
                    continue
            if work._done:  # handed the role, but a sticky error finished the work
                self._hand_on()
                return
            role = self._role
            self._role = _TASK
            if role is _WATCHER and self._nap is not None:
                self._nap.cancel()
            # The poll loop is inlined: every checkpoint resumes each coroutine the
            # waiting task is nested in, so one frame less is one call less per poll.
            spun_out = False
            mine: Completion = work  # not narrowed by the ``work._done`` checks above (mypy)
            try:
                fence = work.fence
                if fence is not None and fence.event is None and fence.lane.open is fence:
                    self._seal(fence.lane)  # the others are sealed by the first poll
                checkpoint = self._checkpoint
                polls = 0
                deadline = 0.0
                while True:
                    await checkpoint()
                    if self._poll():
                        if mine._done:
                            break
                        polls = 0
                        if len(self._candidates) > self._sweep_at:
                            self._sweep_candidates()
                        continue
                    if mine._done:  # finished by whoever else looked (a sticky error)
                        break
                    polls += 1
                    if polls < _CLOCK_AFTER_POLLS:
                        continue
                    if polls == _CLOCK_AFTER_POLLS:
                        deadline = self._now() + self._follow_spin_s
                    elif polls >= self._follow_max_polls or (
                        polls % _CLOCK_EVERY == 0 and self._now() >= deadline
                    ):
                        spun_out = True
                        break
            except BaseException:
                self._hand_on()
                raise
            if not spun_out:
                if self._candidates or self._busy:
                    self._hand_on()
                else:  # nobody waits, nothing pending: nothing to hand on
                    self._role = None
                return
            # Long work: the watcher's back-off counts from when this task began to
            # spin, so it sleeps at once (a second spin budget would only burn as
            # much CPU again).
            read_clock = polls >= _CLOCK_AFTER_POLLS  # else spun out by poll count
            self._to_watcher(deadline - self._follow_spin_s if read_clock else None)
            spot = work._add_waiter(self._new_spot)
            try:
                await spot
            except BaseException:
                work._discard_waiter(spot)
                raise
            poll = False

    def _sweep_candidates(self) -> None:
        """Forget waiting tasks whose work is done (they were woken by its completion).

        Run by the polling task when its polls finish work: a task parks again only
        after its work finished, so between two such polls the candidates grow by at
        most one per waiting task. The next sweep comes at twice those still waiting,
        so sweeping costs O(1) a wait.
        """
        candidates = deque(c for c in self._candidates if not c[1]._done)
        self._candidates = candidates
        self._sweep_at = max(_CANDIDATES_SWEEP, 2 * len(candidates))

    def _hand_on(self) -> None:
        """A waiting task stops polling: hand the role to another waiting task, or
        to the watcher while work is pending."""
        candidates = self._candidates
        while candidates:
            spot, work = candidates.popleft()
            if not work._done:  # done work's waiter was woken by its completion
                self._role = spot
                wake(spot, True)  # its ``await spot`` returns True: it polls next
                return
        self._role = None
        if self._busy:
            self._to_watcher()

    def _to_watcher(self, since: float | None = None) -> None:
        """Make the watcher the poller; its back-off counts from ``since`` (default now)."""
        self._role = _WATCHER
        self._backoff.reset(self._now() if since is None else since)
        self._wake_watcher()

    def _wake_watcher(self) -> None:
        self._wake.set()
        if self._nap is not None:
            self._nap.cancel()

    async def drain(self) -> None:
        """Wait until every piece of added work has finished.

        Raises:
            LifecycleError: The watcher is not running, so nothing would finish.
        """
        while self._busy:
            if self._state != "running":
                raise LifecycleError(
                    f"the completion watcher is {self._state} with {self.in_flight} "
                    "piece(s) of work added",
                    fix="start the watcher in the backend's task group before draining.",
                )
            if self._role is None:
                self._to_watcher()
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    # ----------------------------------------------------------------- the watcher task
    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Poll whenever the role is the watcher's, until cancelled.

        Start with ``await task_group.start(watcher.run)``. On the way out
        (cancellation) every completion still pending fails with
        :class:`LifecycleError` without its release, because the device may still be
        using its memory.

        Raises:
            LifecycleError: The watcher was started before.
        """
        if self._state != "unstarted":
            raise LifecycleError(
                f"the completion watcher is {self._state}", fix="make one watcher per run."
            )
        self._state = "running"
        self._bind_loop()
        try:
            if self._on_start is not None:
                self._on_start()
            task_status.started()
            await self._loop()
        finally:
            self._state = "closed"
            self.stopped = True
            self._abandon()

    def _bind_loop(self) -> None:
        """Take checkpoint, clock and events straight from the running loop's anyio backend.

        ``anyio.lowlevel.checkpoint()`` and ``anyio.current_time()`` look the backend
        up on every call (about a microsecond per poll, three calls), and
        ``anyio.Event()`` also initialises its event twice; the backend of a running
        loop does not change, so its functions are looked up once.
        This reaches into anyio's ``_core`` (there is no public accessor); if that
        moves, the public functions are used as before.
        """
        try:
            from anyio._core._eventloop import get_async_backend

            backend = get_async_backend()
            checkpoint, current_time = backend.checkpoint, backend.current_time
            new_event = backend.create_event
        except (ImportError, AttributeError, RuntimeError):
            return
        self._checkpoint = checkpoint_for(checkpoint)
        self._new_spot = park_factory(new_event)
        if self._clock is None:
            self._now = current_time

    async def _loop(self) -> None:
        backoff = self._backoff
        while True:
            if self._role is not _WATCHER or not self._busy:
                if self._role is _WATCHER:
                    self._role = None
                self._note_idle()
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            progressed = self._poll()
            if self._role is not _WATCHER:
                continue
            if progressed:
                backoff.reset(self._now())
                await anyio.lowlevel.checkpoint()  # let the woken waiters run
                continue
            few = self._few_in_flight()
            wait = backoff.next_wait(self._now(), self._few_spin_s if few else None)
            if wait <= 0.0:
                await anyio.lowlevel.checkpoint()
                continue
            # A plain sleep in a scope that new work cancels: the common case (the
            # sleep runs out) then costs no cancellation, only the rare wake does.
            with anyio.CancelScope() as self._nap:
                if wait < self._precise_nap_s and few:
                    await anyio.to_thread.run_sync(
                        time.sleep, wait, limiter=self._nappers, abandon_on_cancel=True
                    )
                else:
                    await anyio.sleep(wait)
            self._nap = None

    # ----------------------------------------------------------------- polling
    def _seal(self, lane: Lane) -> None:
        """Record the event of ``lane``'s open fence; it joins the sealed ones."""
        fence = lane.open
        if fence is None:
            return
        lane.open = None
        try:
            event = lane.spare_events.pop() if lane.spare_events else self._acquire_event()
            self._record(event, lane.stream)
        except VyreError as exc:
            self._seal_failed(lane, fence, exc)
            return
        fence.event = event
        lane.sealed.append(fence)
        self.fences += 1

    def _seal_failed(self, lane: Lane, fence: Fence, exc: VyreError) -> None:
        if isinstance(exc, DeviceLostError):
            self._fail_everything(exc, fence)
            return
        # The work's end cannot be observed: wait for the stream before its memory
        # goes back (a failure path only; it blocks the loop for as long as it takes).
        try:
            self._synchronize(lane.stream)
        except VyreError as sync_exc:
            if isinstance(sync_exc, DeviceLostError):
                self._fail_everything(sync_exc, fence)
                return
        self._finish(fence, exc)
        if lane.idle:
            self._busy.pop(lane, None)
            self._note_idle()

    def _seal_open(self) -> None:
        for lane in list(self._busy):
            if lane.open is not None:
                self._seal(lane)

    def _poll(self) -> bool:
        """Seal open fences, then query the oldest sealed fence of each busy lane;
        return whether any work finished."""
        progressed = False
        busy = self._busy
        for lane in list(busy):
            if lane.open is not None:
                self._seal(lane)
            sealed = lane.sealed
            while sealed:
                fence = sealed[0]
                self.queries += 1
                try:
                    result = int(self._query(fence.event))
                except Exception as exc:  # a broken query must not stop the poller
                    sealed.popleft()
                    self._finish(fence, _query_failed(exc))
                    progressed = True
                    continue
                if result == NOT_READY:
                    break
                sealed.popleft()
                progressed = True
                if result == DONE:
                    self._finish(fence, None)
                    continue
                error, sticky = self._failure(result)
                if sticky:
                    self._fail_everything(error, fence)
                    return True
                self._finish(fence, error)
            if lane.open is None and not sealed:
                busy.pop(lane, None)
        if not busy and self._idle is not None:
            self._note_idle()
        return progressed

    def _finish(self, fence: Fence, error: BaseException | None) -> None:
        event = fence.event
        if event is not None:
            spares = fence.lane.spare_events
            if len(spares) < SPARE_EVENTS:
                spares.append(event)
            else:
                self._give_back(event)
        works = fence.works
        fence.works = []  # a finished work still names its fence: no cycle left to collect
        for work in works:
            try:
                work.complete(error)
            except Exception:
                logger.exception("completion_callback_failed")

    def _give_back(self, event: Any) -> None:
        try:
            self._release_event(event)
        except VyreError as exc:
            logger.warning("completion_event_release_failed", error=str(exc))

    def _note_idle(self) -> None:
        if self._idle is not None and not self._busy:
            self._idle.set()
            self._idle = None

    def _take_all(self) -> list[Completion]:
        works: list[Completion] = []
        for lane in self._busy:
            for fence in lane.sealed:
                works += fence.works
                fence.works = []
                if fence.event is not None:
                    lane.spare_events.append(fence.event)
            if lane.open is not None:
                works += lane.open.works
                lane.open.works = []
            lane.sealed.clear()
            lane.open = None
        self._busy.clear()
        return works

    def _fail_everything(self, error: VyreError, *taken: Fence) -> None:
        """A sticky error: the device is lost, so is every piece of work on it.

        ``taken``: fences already taken out of their lanes.
        """
        lost = self._health.mark_lost(error) if self._health is not None else error
        works = [work for fence in taken for work in fence.works]
        for fence in taken:
            fence.works = []
        works += self._take_all()
        logger.error("completions_failed_device_lost", count=len(works), reason=lost.what)
        for work in works:
            # A fresh exception per waiter: one instance raised in many tasks would
            # pile their tracebacks onto each other.
            try:
                work.complete(DeviceLostError(lost.what, fix=lost.fix))
            except Exception:
                logger.exception("completion_callback_failed")
        self._note_idle()

    def _abandon(self) -> None:
        works = self._take_all()
        if self._idle is not None:
            self._idle.set()
            self._idle = None
        if works:
            logger.warning("completion_watcher_stopped_with_work", count=len(works))
        for work in works:
            try:
                work.complete(
                    LifecycleError(
                        f"the backend stopped watching with {len(works)} piece(s) of "
                        "work in flight; this one may still run on the device",
                        fix="await pending dispatches before closing the backend.",
                    ),
                    release=False,
                )
            except Exception:
                logger.exception("completion_callback_failed")
        for spot, _ in self._candidates:
            wake(spot)
        self._candidates.clear()
        self._role = None

    def release_events(self) -> None:
        """Give every lane's spare events back (backend close, after the watcher stopped)."""
        for lane in self._lanes:
            while lane.spare_events:
                self._give_back(lane.spare_events.pop())


def _counter_events() -> Callable[[], int]:
    """Event handles for a watcher without a pool: plain increasing numbers."""
    count = iter(range(1, 1 << 62))
    return lambda: next(count)
