"""Dynamic batching: many concurrent requests, few batched executions.

Tasks call :meth:`DynamicBatcher.submit` concurrently; their requests wait in one
bounded queue and are flushed, a batch at a time, into one call of an async
executor (for graph sessions: one multi-source traversal instead of one traversal
per caller). The batcher knows nothing about what a request is: the executor, the
number of lanes a request occupies and which requests may share a batch are all
given to it.

Flush policy, checked whenever a request arrives or leaves, or a batch finishes:

- While no batch is running (the device is idle) whatever is queued is flushed at
  once, so a lone request never waits for a timer and the latency at low load does
  not depend on the event loop's timer resolution.
- While a batch is running and ``max_in_flight`` allows another, a group is flushed
  when its queued lanes reach ``max_batch`` or its oldest request has waited
  ``max_delay``. With the default ``max_in_flight=1`` a slot is only free when the
  device is idle, so requests that arrive during a batch simply form the next one.
- A batch takes its group's requests highest priority first, FIFO within a
  priority, and stops at the first that does not fit the remaining lanes (skipping
  it for smaller ones could starve large requests). Between ready groups, the one
  with the highest-priority request goes first, then the one waiting longest.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus

from .._lifecycle import Lifecycle, LifecycleState
from ..errors import (
    DispatchError,
    LifecycleError,
    QueueFullError,
    QueueTimeoutError,
    ValidationError,
    VyreError,
)
from ._queue import AdmissionGate, Group, Phase, Ticket
from ._stats import BatchCounters, BatcherStats

Req = TypeVar("Req")
Res = TypeVar("Res")


def _one_lane(_: object) -> int:
    return 1


def _one_group(_: object) -> Hashable:
    return None


class DynamicBatcher(Lifecycle, Generic[Req, Res]):
    """Coalesces concurrent requests into batches for one async executor.

    Start it in the owner's task group with ``await tg.start(batcher.run)``, then
    call :meth:`submit` from any number of tasks; stop it with :meth:`aclose`.

    The queue is bounded by ``queue_size`` requests (running batches do not count).
    When it is full, ``submit`` blocks until there is room, FIFO, or with
    ``reject_when_full=True`` raises :class:`QueueFullError` at once.

    Args:
        run_batch: The executor. Gets a batch's requests and returns one result per
            request, in the same order. If it raises, every request of that batch
            gets the error (a :class:`VyreError` keeps its class; anything else
            becomes a :class:`DispatchError` chained to it); other batches are not
            affected.
        max_batch: Lanes a batch may use (at least 1).
        max_delay: Seconds the oldest queued request of a group may wait for a
            fuller batch while another batch is running (at least 0).
        queue_size: Requests the queue holds (at least 1).
        reject_when_full: Refuse instead of waiting when the queue is full.
        lanes: Lanes a request occupies (default 1); one needing more than
            ``max_batch`` is refused with :class:`ValidationError`.
        group: Key of the requests that may share a batch (for instance the kind of
            traversal and its parameters); default: all requests share.
        max_in_flight: Batches that may run at once (at least 1).
        stats_window: Recent requests the queue-wait percentiles cover.
        name: What error messages call this batcher.

    Raises:
        ValueError: A bound above is out of range.
    """

    _open_verb = "started"
    _make_fix = "make a new batcher for each run."

    def __init__(
        self,
        run_batch: Callable[[Sequence[Req]], Awaitable[Sequence[Res]]],
        *,
        max_batch: int,
        max_delay: float = 0.001,
        queue_size: int = 1024,
        reject_when_full: bool = False,
        lanes: Callable[[Req], int] = _one_lane,
        group: Callable[[Req], Hashable] = _one_group,
        max_in_flight: int = 1,
        stats_window: int = 1024,
        name: str = "dynamic batcher",
    ) -> None:
        for label, value in (
            ("max_batch", max_batch),
            ("queue_size", queue_size),
            ("max_in_flight", max_in_flight),
        ):
            if value < 1:
                raise ValueError(f"{label} must be at least 1, got {value}")
        if not 0 <= max_delay < math.inf:
            raise ValueError(f"max_delay must be finite and at least 0, got {max_delay}")
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._max_delay = max_delay
        self._queue_size = queue_size
        self._reject_when_full = reject_when_full
        self._lanes = lanes
        self._group = group
        self._max_in_flight = max_in_flight
        self._name = name
        self._counters = BatchCounters(stats_window)
        self._noun = name
        self._groups: dict[Hashable, Group[Req, Res]] = {}
        self._queued = 0
        self._in_flight = 0
        self._seq = itertools.count()
        self._gate = AdmissionGate(queue_size)
        self._wakeup = anyio.Event()
        self._stopped = anyio.Event()
        #: The task group batches run in, while :meth:`run` runs.
        self._batches: TaskGroup | None = None

    def stats(self) -> BatcherStats:
        """A snapshot of what the batcher did so far."""
        return self._counters.snapshot(queued=self._queued, in_flight=self._in_flight)

    # ----------------------------------------------------------------- lifecycle
    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Form and run batches until :meth:`aclose` has drained the batcher.

        Batches run in a task group inside this call. If this call is cancelled,
        running batches are cancelled with it and every waiting request fails with
        :class:`LifecycleError`; no waiter is left hanging.

        Raises:
            LifecycleError: The batcher was started or closed before.
        """
        self._enter_open()
        try:
            async with anyio.create_task_group() as tg:
                self._batches = tg
                task_status.started()
                await self._schedule()
        finally:
            self._batches = None
            self._enter_closed()
            self._gate.close()
            self._fail_queued("stopped before this request ran")
            self._stopped.set()

    async def aclose(self, *, drain: bool = True) -> None:
        """Stop admitting requests and wait until :meth:`run` has returned.

        New and room-waiting ``submit`` calls get :class:`LifecycleError` at once.
        With ``drain`` (the default) queued requests still run, in batches flushed
        without waiting for ``max_delay``; without it they fail with
        :class:`LifecycleError`. Running batches always finish. Idempotent; cancelling
        this call only stops the wait, not the closing.

        Args:
            drain: Run the queued requests (default) instead of failing them.
        """
        if self._state is LifecycleState.UNOPENED:
            self._enter_closed()
            self._gate.close()
            self._stopped.set()
        if self._state is LifecycleState.OPEN:
            self._state = LifecycleState.CLOSING
            self._gate.close()
        if not drain:
            self._fail_queued("was closed without draining before this request ran")
        self._wakeup.set()
        await self._stopped.wait()

    # -------------------------------------------------------------------- submit
    async def submit(
        self, request: Req, *, priority: int = 0, queue_timeout: float | None = None
    ) -> Res:
        """Queue a request, wait for its batch, and return its result.

        Args:
            request: Passed to the executor as one element of a batch.
            priority: Higher runs first; FIFO within a priority.
            queue_timeout: Seconds the request may wait for room and in the queue
                (``None``: no limit). It bounds only the wait before a batch takes the
                request; once taken, the request runs to completion and its result is
                returned (wrap the call in ``anyio.fail_after`` to bound that too,
                which abandons the result but never the batch).

        Cancelling the call takes a queued request out of the queue; a request whose
        batch is running still runs (its batch mates need the batch), and its result
        is dropped.

        Returns:
            The executor's result for this request.

        Raises:
            QueueTimeoutError: The timeout passed before a batch took the request (a
                :class:`DispatchError`).
            DispatchError: Its batch failed (a :class:`VyreError` from the executor
                keeps its class).
            QueueFullError: The queue was full and ``reject_when_full`` is set.
            LifecycleError: The batcher is not running, or it closed or stopped
                before the request ran.
            ValidationError: The request needs more lanes than ``max_batch``.
            ValueError: ``queue_timeout`` is negative, or ``lanes`` returned less than 1.
        """
        self._check_open()
        if queue_timeout is not None and not queue_timeout >= 0:
            raise ValueError(f"queue_timeout must be at least 0 or None, got {queue_timeout}")
        lanes = self._lanes(request)
        if lanes < 1:
            raise ValueError(f"a request must occupy at least 1 lane, lanes() returned {lanes}")
        if lanes > self._max_batch:
            raise ValidationError(
                f"a request needing {lanes} lanes cannot fit a {self._name} batch of "
                f"{self._max_batch} lanes",
                fix=f"split the request, or make the batcher with max_batch >= {lanes}.",
            )
        key = self._group(request)
        deadline = math.inf if queue_timeout is None else anyio.current_time() + queue_timeout
        self._counters.submitted += 1
        try:
            if lanes >= self._max_batch and self._slot_free_for_all():
                result = await self._run_alone(request, lanes)
            else:
                ticket = await self._admit(request, lanes, priority, key, deadline, queue_timeout)
                result = await self._outcome(ticket, deadline, queue_timeout)
        except anyio.get_cancelled_exc_class():
            self._counters.cancelled += 1
            raise
        self._counters.served += 1
        return result

    def _check_open(self) -> None:
        if self._state is LifecycleState.UNOPENED:
            raise LifecycleError(
                f"this {self._name} is not running yet",
                fix="start it first with `await task_group.start(batcher.run)`.",
            )
        if self._state is not LifecycleState.OPEN:
            raise LifecycleError(
                f"this {self._name} is {self._state.value} and admits no new requests",
                fix="submit before closing it, or use a new batcher.",
            )

    async def _admit(
        self,
        request: Req,
        lanes: int,
        priority: int,
        key: Hashable,
        deadline: float,
        timeout_s: float | None,
    ) -> Ticket[Req, Res]:
        if self._gate.try_enter():  # room now: no cancel scope, no wait
            return self._enqueue(request, lanes, priority, key)
        if self._reject_when_full:
            self._counters.rejected += 1
            raise QueueFullError(
                f"the {self._name}'s queue is full ({self._queue_size} requests wait)",
                fix="retry later, make the batcher with a larger queue_size, or with "
                "reject_when_full=False so that submit waits for room.",
            )
        entered = False
        with anyio.move_on_at(deadline):
            entered = await self._gate.enter()
        if self._state is not LifecycleState.OPEN:  # closed while we waited for room
            if entered:
                self._gate.leave()
            self._counters.rejected += 1
            self._check_open()
        if not entered:
            self._counters.timed_out += 1
            raise QueueTimeoutError(
                f"request timed out after {timeout_s:g} s waiting for room in the "
                f"{self._name}'s full queue ({self._queue_size} requests)",
                fix="raise queue_timeout or queue_size, or submit fewer requests at once.",
            )
        return self._enqueue(request, lanes, priority, key)

    def _enqueue(self, request: Req, lanes: int, priority: int, key: Hashable) -> Ticket[Req, Res]:
        ticket: Ticket[Req, Res] = Ticket(
            request, lanes, priority, key, next(self._seq), anyio.current_time()
        )
        self._groups.setdefault(key, Group()).push(ticket)
        self._queued += 1
        self._start_ready()
        if self._groups:  # still queued: the scheduler times its flush
            self._wakeup.set()
        return ticket

    async def _outcome(
        self, ticket: Ticket[Req, Res], deadline: float, timeout_s: float | None
    ) -> Res:
        try:
            if deadline != math.inf:
                await self._wait_queued(ticket, deadline, timeout_s)
            # Once a batch took the request its timeout no longer applies: the work is
            # on the device and its result is worth more than an early error.
            await ticket.done.wait()
        finally:
            if ticket.phase is not Phase.FINISHED:
                self._withdraw(ticket)
        if ticket.error is not None:
            self._counters.failed += 1
            raise ticket.error
        return cast("tuple[Res]", ticket.result)[0]  # FINISHED without an error has one

    async def _wait_queued(
        self, ticket: Ticket[Req, Res], deadline: float, timeout_s: float | None
    ) -> None:
        """Wait until a batch takes the request, or raise once ``deadline`` passed."""
        with anyio.move_on_at(deadline):
            await ticket.done.wait()
        if ticket.phase is Phase.QUEUED:
            self._withdraw(ticket)
            self._counters.timed_out += 1
            raise QueueTimeoutError(
                f"request timed out after {timeout_s:g} s in the {self._name}'s queue "
                f"before any batch took it ({self._queued} requests still queued)",
                fix="raise queue_timeout, submit fewer requests at once, or make the "
                "batcher with a larger max_batch or max_in_flight.",
            )

    def _withdraw(self, ticket: Ticket[Req, Res]) -> None:
        """Take a request whose caller stopped waiting out of the queue, or out of its batch."""
        if ticket.phase is Phase.QUEUED:
            self._unqueue(ticket)
            self._wakeup.set()  # a draining batcher may now be empty
        ticket.phase = Phase.WITHDRAWN

    def _unqueue(self, ticket: Ticket[Req, Res]) -> None:
        group = self._groups[ticket.key]
        group.remove(ticket)
        if not group.arrivals:
            del self._groups[ticket.key]
        self._queued -= 1
        self._gate.leave()

    def _fail_queued(self, what: str) -> None:
        for group in list(self._groups.values()):
            for ticket in list(group.arrivals.values()):
                self._unqueue(ticket)
                ticket.finish(None, self._stopped_error(what))
        self._wakeup.set()

    def _stopped_error(self, what: str) -> LifecycleError:
        return LifecycleError(
            f"the {self._name} {what}",
            fix="keep the batcher running (and close it with aclose(), which drains) "
            "until its callers have their results.",
        )

    # ------------------------------------------------------------------ batches
    def _slot_free_for_all(self) -> bool:
        """Whether a batch may start now with nothing queued before it."""
        tg = self._batches
        return (
            not self._queued
            and self._in_flight < self._max_in_flight
            and tg is not None
            and not tg.cancel_scope.cancel_called
        )

    def _start_ready(self, *, flush_idle: bool = False) -> None:
        """Start every batch that may start now, in the batch task group.

        Where a request is queued or a batch ends, full batches (and those whose
        ``max_delay`` ran out) start at once, without waiting for the scheduler's
        turn. Partial batches on an idle device (``flush_idle``) are the scheduler's:
        it runs a turn later, so requests submitted together still share a batch.
        """
        tg = self._batches
        # Once run() is cancelled no new batch may start in the cancelled group: its
        # requests fail as "stopped before this request ran" instead.
        if tg is None or tg.cancel_scope.cancel_called:
            return
        now = anyio.current_time()
        flush_all = flush_idle and (self._in_flight == 0 or self._state is not LifecycleState.OPEN)
        while self._in_flight < self._max_in_flight:
            batch = self._take_batch(now, flush_all)
            if not batch:
                break
            self._in_flight += 1
            tg.start_soon(self._execute, batch)

    async def _schedule(self) -> None:
        """Start batches whose ``max_delay`` ran out, and end once closed and drained."""
        while True:
            await anyio.lowlevel.checkpoint_if_cancelled()
            # A fresh event before looking at the state: anything that changes it
            # later sets this one, so no change is missed while we wait.
            self._wakeup = anyio.Event()
            self._start_ready(flush_idle=True)
            if self._state is not LifecycleState.OPEN and not self._groups and not self._in_flight:
                return
            wake_at = math.inf
            if self._in_flight < self._max_in_flight:
                wake_at = min(
                    (g.oldest().enqueued_at + self._max_delay for g in self._groups.values()),
                    default=math.inf,
                )
            if wake_at == math.inf:
                await self._wakeup.wait()
            else:
                with anyio.move_on_at(wake_at):
                    await self._wakeup.wait()

    def _take_batch(self, now: float, flush_all: bool) -> list[Ticket[Req, Res]]:
        best: tuple[int, int, Hashable] | None = None
        for key, group in self._groups.items():
            oldest = group.oldest()
            if (
                flush_all
                or group.lanes >= self._max_batch
                or now >= oldest.enqueued_at + self._max_delay
            ):
                rank = (group.top().priority, -oldest.seq, key)
                if best is None or rank[:2] > best[:2]:
                    best = rank
        if best is None:
            return []
        group = self._groups[best[2]]
        batch = group.pop_batch(self._max_batch)
        if not group.arrivals:
            del self._groups[best[2]]
        for ticket in batch:
            ticket.phase = Phase.RUNNING
            self._counters.record_wait(now - ticket.enqueued_at)
            self._gate.leave()
        self._queued -= len(batch)
        return batch

    async def _execute(self, batch: list[Ticket[Req, Res]]) -> None:
        lanes = sum(t.lanes for t in batch)
        failure: Exception | None = None
        ended = False
        try:
            results, failure = await self._run_checked([t.request for t in batch], lanes)
            if failure is None:
                for ticket, result in zip(batch, results, strict=True):
                    ticket.finish((result,), None)
            else:
                for ticket in batch:
                    ticket.finish(None, self._batch_error(failure, len(batch), lanes))
            ended = True
        finally:
            self._in_flight -= 1
            # Tickets still unfinished here mean run() was cancelled mid-batch.
            for ticket in batch:
                ticket.finish(None, self._stopped_error("stopped while this request's batch ran"))
            if ended:  # not cancelled: the next batch may start in this batch's slot
                self._start_ready()
            self._wakeup.set()

    async def _run_alone(self, request: Req, lanes: int) -> Res:
        """Run a request that fills a batch by itself as its own batch, in the caller's task.

        Taken only while a batch slot is free and nothing is queued, so no request
        could share the batch or should go first; no ticket, task or wake-up is made.
        Nobody else waits on the batch, so cancelling the caller cancels only its work.
        """
        self._in_flight += 1
        self._counters.record_wait(0.0)
        try:
            results, failure = await self._run_checked([request], lanes)
        finally:
            self._in_flight -= 1
            self._start_ready()
            self._wakeup.set()
        if failure is not None:
            self._counters.failed += 1
            raise self._batch_error(failure, 1, lanes)
        return results[0]

    async def _run_checked(
        self, requests: list[Req], lanes: int
    ) -> tuple[Sequence[Res], Exception | None]:
        """Run one batch: its results, or the failure that belongs to its waiters."""
        results: Sequence[Res] = ()
        failure: Exception | None = None
        try:
            results = await self._run_batch(requests)
        except Exception as exc:  # the batch's error belongs to its waiters, not to run()
            failure = exc
        else:
            if len(results) != len(requests):
                failure = DispatchError(
                    f"the {self._name}'s executor returned {len(results)} results for "
                    f"a batch of {len(requests)} requests",
                    fix="make run_batch return one result per request, in request order.",
                )
        self._counters.record_batch(lanes, failed=failure is not None)
        return results, failure

    def _batch_error(self, error: Exception, size: int, lanes: int) -> BaseException:
        """A fresh exception per waiter, so tracebacks of different waiters never mix."""
        copied: BaseException
        if isinstance(error, VyreError):
            try:
                copied = copy.copy(error)
            except Exception:  # a subclass that cannot be rebuilt: wrap it instead
                copied = self._wrapped(error, size, lanes)
        else:
            copied = self._wrapped(error, size, lanes)
        copied.__cause__ = error
        return copied

    def _wrapped(self, error: Exception, size: int, lanes: int) -> DispatchError:
        return DispatchError(
            f"the {self._name}'s batch of {size} requests ({lanes} lanes) that held this "
            f"request failed: {type(error).__name__}: {error}",
            fix="see the chained exception; other batches were not affected, so "
            "submitting the request again runs it in a new batch.",
        )
