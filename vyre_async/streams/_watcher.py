"""The completion watcher: turns recorded CUDA events into finished completions.

One watcher per backend runs as a task in the backend's task group. Work is
registered with :meth:`CompletionWatcher.watch` in submission order per stream.
Because a stream runs its work in order, only the oldest event of each busy stream
is queried: when it is done, the next one is queried at once; while it is not, the
later ones cannot be either.

Waiting costs little: with nothing in flight the watcher sleeps on an event until
work is registered. With work in flight it spins on checkpoints for a short budget
after each registration or completion (short kernels finish within microseconds),
then sleeps in steps growing from ``min_sleep_s`` to ``max_sleep_s``, so a long
kernel keeps no core busy. Registering new work wakes it at once.

While little is in flight (at most :data:`PRECISE_NAP_MAX_IN_FLIGHT` pieces), the
backend's watcher spins longer, :data:`FEW_IN_FLIGHT_SPIN_S`: a resident traversal
or a one-at-a-time dispatch loop then learns of its completion within microseconds
instead of a nap later (on an H100, the short budget noticed a 1 ms traversal about
110 µs later than spinning did). The cost is bounded: at most that budget of polling
per completion, about 1 % of a core while a 200 ms kernel runs (bench/dispatch.py
(f) went from 4.9 % to 6.2 %). CUDA's own default for a synchronizing host thread
spins for the whole wait.

While little is in flight, naps under a millisecond sleep in a worker thread: the
event loop's own timers wait in whole milliseconds (asyncio and trio both poll epoll
with a millisecond timeout, rounded up), so a 100 µs nap on the loop lasted 1 ms and
every wait for work of a millisecond or two ended up to a millisecond late. A
thread's sleep ends within tens of microseconds of asking, and its return wakes the
loop at once. With much in flight the loop's coarser timer stays: completions then
arrive often anyway, and fewer, larger polls cost less per completion.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

from ..errors import DeviceLostError, DispatchError, LifecycleError, VyreError
from ..logging import get_logger
from ._backoff import Backoff
from ._driver import CUDA_ERROR_NOT_READY, CUDA_SUCCESS, error_for, is_sticky
from ._pending import Completion

if TYPE_CHECKING:
    from ._device import CudaDevice, DeviceHealth

__all__ = ["CompletionWatcher"]

logger = get_logger("vyre_async.streams")

#: Naps shorter than this sleep in a worker thread (see the module docstring)...
PRECISE_NAP_S = 1e-3
#: ...while at most this many pieces of work are in flight.
PRECISE_NAP_MAX_IN_FLIGHT = 4
#: The CUDA backend's spin budget while at most PRECISE_NAP_MAX_IN_FLIGHT are in flight.
FEW_IN_FLIGHT_SPIN_S = 2e-3


@dataclass(slots=True)
class _Watch:
    event: Any
    completion: Completion
    on_done: Callable[[], None] | None
    timing: tuple[Any, Any] | None


def _query_failed(exc: Exception) -> DispatchError:
    return DispatchError(
        f"querying a completion event raised {exc!r}", fix="report this bug with the log."
    )


class CompletionWatcher:
    """Finishes completions when their CUDA events have completed.

    Args:
        query: ``event -> CUresult`` (as an int), like ``cuEventQuery``.
        elapsed_ms: ``(start, end) -> milliseconds``, like ``cuEventElapsedTime``;
            used for work registered with a timing pair.
        health: Marked lost on a sticky error; checked by :meth:`watch`.
        on_start: Run once in the loop thread before polling (make the context current).
        spin_s: Spin budget after each registration or completion.
        few_spin_s: Spin budget instead of ``spin_s`` while at most
            :data:`PRECISE_NAP_MAX_IN_FLIGHT` pieces are in flight (``None``: ``spin_s``).
        min_sleep_s: First back-off sleep.
        max_sleep_s: Longest back-off sleep. 2 ms: on an H100 VM each wake cost
            60-160 µs of CPU, so a 1 ms cap put a long kernel at 6-13 % of a core,
            over the 10 % budget; 2 ms halves that and adds at most 2 ms of latency
            to work that already ran for milliseconds.
        precise_nap_s: Naps shorter than this sleep in a worker thread (0: never;
            tests on a mock clock use 0, since a thread sleeps in real time).
        clock: Monotonic seconds, for the spin budget.
    """

    def __init__(
        self,
        query: Callable[[Any], int],
        *,
        elapsed_ms: Callable[[Any, Any], float] | None = None,
        health: DeviceHealth | None = None,
        on_start: Callable[[], None] | None = None,
        spin_s: float = 150e-6,
        few_spin_s: float | None = None,
        min_sleep_s: float = 20e-6,
        max_sleep_s: float = 2e-3,
        precise_nap_s: float = PRECISE_NAP_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._query = query
        self._elapsed_ms = elapsed_ms
        self._health = health
        self._on_start = on_start
        self._clock = clock
        self._backoff = Backoff(spin_s=spin_s, min_sleep_s=min_sleep_s, max_sleep_s=max_sleep_s)
        self._few_spin_s = spin_s if few_spin_s is None else few_spin_s
        self._streams: dict[Hashable, deque[_Watch]] = {}
        self._in_flight = 0
        # Work its waiting task polls itself (watch_and_wait), by stream: one at most
        # per stream, so a hand-over always puts the stream's oldest work first.
        self._following: dict[Hashable, _Watch] = {}
        self._wake = anyio.Event()
        self._idle: anyio.Event | None = None
        self._nap: anyio.CancelScope | None = None
        # Threads for short naps; a cancelled nap's thread sleeps out its (< 1 ms) nap.
        self._nappers = anyio.CapacityLimiter(2)
        self._precise_nap_s = precise_nap_s
        self._state = "unstarted"
        #: ``cuEventQuery`` calls made.
        self.queries = 0

    @classmethod
    def for_device(cls, device: CudaDevice, **options: Any) -> CompletionWatcher:
        """Make a watcher over ``cuEventQuery`` / ``cuEventElapsedTime`` of ``device``.

        It spins :data:`FEW_IN_FLIGHT_SPIN_S` while little is in flight unless
        ``options`` say otherwise.
        """
        options.setdefault("few_spin_s", FEW_IN_FLIGHT_SPIN_S)
        driver = device.driver

        def query(event: Any) -> int:
            return int(driver.cuEventQuery(event)[0])

        def elapsed_ms(start: Any, end: Any) -> float:
            return float(device.call(driver.cuEventElapsedTime, start, end))

        return cls(
            query,
            elapsed_ms=elapsed_ms,
            health=device.health,
            on_start=device.make_current,
            **options,
        )

    @property
    def in_flight(self) -> int:
        """Registered work not yet finished."""
        return self._in_flight + len(self._following)

    @property
    def busy_streams(self) -> int:
        """Streams with registered work not yet finished."""
        return len(self._streams)

    def watch(
        self,
        stream_key: Hashable,
        event: Any,
        completion: Completion,
        on_done: Callable[[], None] | None = None,
        *,
        timing: tuple[Any, Any] | None = None,
    ) -> None:
        """Register work whose end ``event`` was just recorded on a stream.

        Call from the event-loop thread, in the order the events were recorded on
        the stream. ``on_done`` runs exactly once when the event completed (or
        failed), before ``completion`` wakes its waiters; it is where the work's
        events, stream and memory go back to their pools.

        Args:
            stream_key: Identifies the stream (``int(stream)``).
            event: The event recorded after the work.
            completion: Completed when ``event`` is.
            on_done: Releases the work's resources.
            timing: ``(start, end)`` timing events recorded around the work; their
                elapsed time becomes ``completion.device_ns``.

        Raises:
            LifecycleError: The watcher has stopped; nothing was registered.
            DeviceLostError: The device is lost; nothing was registered.
        """
        self.check_accepting()
        self._queue(stream_key, _Watch(event, completion, on_done, timing))

    async def watch_and_wait(
        self,
        stream_key: Hashable,
        event: Any,
        completion: Completion,
        on_done: Callable[[], None] | None = None,
        *,
        timing: tuple[Any, Any] | None = None,
    ) -> None:
        """Register work as :meth:`watch` does, then wait for it (see the module docstring).

        While fewer than :data:`PRECISE_NAP_MAX_IN_FLIGHT` other pieces are in flight
        and no earlier work of the stream is registered, the calling task polls
        ``event`` itself for the spin budget; otherwise, or after the budget, the
        watcher polls it. Cancelling the wait hands the work to the watcher, so ``on_done``
        still runs once the device has finished it.

        Raises:
            LifecycleError: The watcher has stopped; nothing was registered.
            DeviceLostError: The device is lost; nothing was registered.
            BaseException: The work's own failure, as ``completion.wait()`` raises it.
        """
        self.check_accepting()
        watch = _Watch(event, completion, on_done, timing)
        following = self._following
        if (
            self._state != "running"
            or self._in_flight + len(following) >= PRECISE_NAP_MAX_IN_FLIGHT
            or stream_key in self._streams
            or stream_key in following
        ):
            self._queue(stream_key, watch)
            await completion.wait()
            return
        following[stream_key] = watch
        deadline = self._clock() + self._few_spin_s
        polled = False
        try:
            while not completion.done:  # a sticky error or a stop may have finished it
                self.queries += 1
                try:
                    result = int(self._query(event))
                except Exception as exc:  # as in _poll: a broken query finishes the work
                    del following[stream_key]
                    self._finish(watch, _query_failed(exc))
                    break
                if result != CUDA_ERROR_NOT_READY:
                    del following[stream_key]
                    self._settle(watch, result)
                    break
                if self._clock() >= deadline:
                    self._hand_over(stream_key)
                    break
                await anyio.lowlevel.checkpoint()
                polled = True
        except BaseException:
            if following.get(stream_key) is watch:  # cancelled while polling
                self._hand_over(stream_key)  # the watcher finishes it
            raise
        finally:
            self._note_idle()
        if completion.done and polled:
            # Already past checkpoints while polling: no further loop pass needed.
            if completion.error is not None:
                raise completion.error
            return
        await completion.wait()

    def check_accepting(self) -> None:
        """Raise as :meth:`watch` would, without registering anything.

        For a caller that must know before it records the event it will watch.

        Raises:
            LifecycleError: The watcher has stopped.
            DeviceLostError: The device is lost.
        """
        if self._state == "closed":
            raise LifecycleError(
                "the completion watcher has stopped", fix="open a new backend to submit work."
            )
        if self._health is not None:
            self._health.check()

    def _queue(self, stream_key: Hashable, watch: _Watch, *, oldest: bool = False) -> None:
        queue = self._streams.setdefault(stream_key, deque())
        if oldest:
            queue.appendleft(watch)
        else:
            queue.append(watch)
        self._in_flight += 1
        self._backoff.reset(self._clock())
        self._wake.set()
        if self._nap is not None:
            self._nap.cancel()

    def _hand_over(self, stream_key: Hashable) -> None:
        """Move a stream's followed work to the watcher's queue, ahead of its later work.

        The watcher is running: stopping it takes followed work out of ``_following``
        (``_take_all``), so none is handed over after that.
        """
        self._queue(stream_key, self._following.pop(stream_key), oldest=True)

    def _note_idle(self) -> None:
        if self._idle is not None and not self._streams and not self._following:
            self._idle.set()
            self._idle = None

    async def drain(self) -> None:
        """Wait until every registered piece of work has finished.

        Raises:
            LifecycleError: The watcher is not running, so nothing would finish.
        """
        while self._streams or self._following:
            if self._state != "running":
                raise LifecycleError(
                    f"the completion watcher is {self._state} with {self.in_flight} "
                    "piece(s) of work registered",
                    fix="start the watcher in the backend's task group before draining.",
                )
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Poll until cancelled. Start with ``await task_group.start(watcher.run)``.

        On the way out (cancellation) every completion still registered fails
        with :class:`LifecycleError`; their ``on_done`` callbacks are not run,
        because the device may still be using their memory.

        Raises:
            LifecycleError: The watcher was started before.
        """
        if self._state != "unstarted":
            raise LifecycleError(
                f"the completion watcher is {self._state}", fix="make one watcher per run."
            )
        self._state = "running"
        try:
            if self._on_start is not None:
                self._on_start()
            task_status.started()
            await self._loop()
        finally:
            self._state = "closed"
            self._abandon()

    async def _loop(self) -> None:
        while True:
            if not self._streams:
                self._note_idle()
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            if self._poll():
                self._backoff.reset(self._clock())
                await anyio.lowlevel.checkpoint()  # let the woken waiters run
                continue
            few = self._in_flight <= PRECISE_NAP_MAX_IN_FLIGHT
            wait = self._backoff.next_wait(self._clock(), self._few_spin_s if few else None)
            if wait <= 0.0:
                await anyio.lowlevel.checkpoint()
            else:
                # A plain sleep in a scope that watch() cancels: the common case (the
                # sleep runs out) then costs no cancellation, only the rare wake does.
                with anyio.CancelScope() as self._nap:
                    if wait < self._precise_nap_s and few:
                        await anyio.to_thread.run_sync(
                            time.sleep, wait, limiter=self._nappers, abandon_on_cancel=True
                        )
                    else:
                        await anyio.sleep(wait)
                self._nap = None

    def _poll(self) -> bool:
        """Query the oldest event of each busy stream; return whether any finished."""
        progressed = False
        for key in list(self._streams):
            queue = self._streams.get(key)
            while queue:
                watch = queue[0]
                self.queries += 1
                try:
                    result = int(self._query(watch.event))
                except Exception as exc:  # a broken query must not stop the watcher
                    queue.popleft()
                    self._in_flight -= 1
                    self._finish(watch, _query_failed(exc))
                    progressed = True
                    continue
                if result == CUDA_ERROR_NOT_READY:
                    break
                progressed = True
                if is_sticky(result):
                    self._fail_everything(error_for(result, "cuEventQuery"))
                    return True
                queue.popleft()
                self._in_flight -= 1
                self._settle(watch, result)
            if queue is not None and not queue and self._streams.get(key) is queue:
                del self._streams[key]
        return progressed

    def _settle(self, watch: _Watch, result: int) -> None:
        """Finish work whose event query returned ``result`` (not NOT_READY)."""
        if result == CUDA_SUCCESS:
            self._finish(watch, None)
        elif is_sticky(result):
            self._fail_everything(error_for(result, "cuEventQuery"), watch)
        else:
            self._finish(watch, error_for(result, "cuEventQuery"))

    def _finish(self, watch: _Watch, error: BaseException | None) -> None:
        if error is None and watch.timing is not None and self._elapsed_ms is not None:
            try:
                watch.completion.device_ns = round(self._elapsed_ms(*watch.timing) * 1e6)
            except VyreError as exc:
                logger.warning("event_elapsed_time_failed", error=str(exc))
        if watch.on_done is not None:
            try:
                watch.on_done()
            except Exception as exc:
                logger.exception("completion_release_failed")
                if error is None:
                    error = DispatchError(
                        f"the work finished but releasing its resources raised {exc!r}",
                        fix="report this bug with the log.",
                    )
        try:
            watch.completion.complete(error)
        except Exception:
            logger.exception("completion_callback_failed")

    def _take_all(self) -> list[_Watch]:
        watches = [watch for queue in self._streams.values() for watch in queue]
        watches += self._following.values()
        self._streams.clear()
        self._following.clear()
        self._in_flight = 0
        return watches

    def _fail_everything(self, error: VyreError, *taken: _Watch) -> None:
        """A sticky error: the device is lost, so is every piece of work on it.

        ``taken``: work already taken out of the queues (a followed wait's own).
        """
        lost = self._health.mark_lost(error) if self._health is not None else error
        watches = [*taken, *self._take_all()]
        logger.error("completions_failed_device_lost", count=len(watches), reason=lost.what)
        for watch in watches:
            # A fresh exception per waiter: one instance raised in many tasks would
            # pile their tracebacks onto each other.
            self._finish(watch, DeviceLostError(lost.what, fix=lost.fix))

    def _abandon(self) -> None:
        watches = self._take_all()
        if self._idle is not None:
            self._idle.set()
        if watches:
            logger.warning("completion_watcher_stopped_with_work", count=len(watches))
        for watch in watches:
            try:
                watch.completion.complete(
                    LifecycleError(
                        f"the backend stopped watching with {len(watches)} piece(s) of "
                        "work in flight; this one may still run on the device",
                        fix="await pending dispatches before closing the backend.",
                    )
                )
            except Exception:
                logger.exception("completion_callback_failed")
