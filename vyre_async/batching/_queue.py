"""What the dynamic batcher queues: tickets, the groups they wait in, the admission gate.

A :class:`Ticket` is one submitted request and, once its batch finished, its outcome;
a :class:`Group` holds the queued tickets of one group key, highest priority first and
FIFO within a priority; the :class:`AdmissionGate` is the bounded queue's room, handed
to blocked submitters in order.
"""

from __future__ import annotations

import enum
import heapq
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

import anyio

Req = TypeVar("Req")
Res = TypeVar("Res")


class Phase(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    WITHDRAWN = "withdrawn"  # its caller stopped waiting: timed out or cancelled


class Ticket(Generic[Req, Res]):
    """One submitted request and, once its batch finished, its outcome."""

    __slots__ = (
        "done",
        "enqueued_at",
        "error",
        "key",
        "lanes",
        "phase",
        "priority",
        "request",
        "result",
        "seq",
    )

    def __init__(
        self, request: Req, lanes: int, priority: int, key: Hashable, seq: int, now: float
    ) -> None:
        self.request = request
        self.lanes = lanes
        self.priority = priority
        self.key = key
        self.seq = seq
        self.enqueued_at = now
        self.phase = Phase.QUEUED
        self.result: tuple[Res] | None = None
        self.error: BaseException | None = None
        self.done = anyio.Event()

    def finish(self, result: tuple[Res] | None, error: BaseException | None) -> None:
        """Hand the outcome to the waiter, unless it already stopped waiting."""
        if self.phase is Phase.RUNNING or self.phase is Phase.QUEUED:
            self.result, self.error = result, error
            self.phase = Phase.FINISHED
            self.done.set()


class Group(Generic[Req, Res]):
    """The queued requests of one group key, in arrival and in priority order.

    Removal is lazy in the heap (an entry is dropped when it reaches the top); the
    heap is rebuilt when dead entries outnumber live ones, so it stays bounded by
    about twice the queue size.
    """

    __slots__ = ("_heap", "arrivals", "lanes")

    def __init__(self) -> None:
        # Insertion-ordered by seq, so the first value is the oldest request.
        self.arrivals: dict[int, Ticket[Req, Res]] = {}
        self._heap: list[tuple[int, int, Ticket[Req, Res]]] = []
        self.lanes = 0

    def push(self, ticket: Ticket[Req, Res]) -> None:
        self.arrivals[ticket.seq] = ticket
        heapq.heappush(self._heap, (-ticket.priority, ticket.seq, ticket))
        self.lanes += ticket.lanes

    def remove(self, ticket: Ticket[Req, Res]) -> None:
        del self.arrivals[ticket.seq]
        self.lanes -= ticket.lanes
        if len(self._heap) > 2 * len(self.arrivals) + 32:
            self._heap = [(-t.priority, t.seq, t) for t in self.arrivals.values()]
            heapq.heapify(self._heap)

    def oldest(self) -> Ticket[Req, Res]:
        return next(iter(self.arrivals.values()))

    def top(self) -> Ticket[Req, Res]:
        while self._heap[0][1] not in self.arrivals:
            heapq.heappop(self._heap)
        return self._heap[0][2]

    def pop_batch(self, max_lanes: int) -> list[Ticket[Req, Res]]:
        batch: list[Ticket[Req, Res]] = []
        room = max_lanes
        while self.arrivals and self.top().lanes <= room:
            ticket = heapq.heappop(self._heap)[2]
            del self.arrivals[ticket.seq]
            self.lanes -= ticket.lanes
            room -= ticket.lanes
            batch.append(ticket)
        return batch


class Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False


class AdmissionGate:
    """Room in the bounded queue, handed to blocked submitters in FIFO order.

    Unlike a semaphore it can wake every blocked submitter at once when the batcher
    closes, so none of them waits for room that will never matter.
    """

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiters: deque[Waiter] = deque()
        self._closed = False

    def try_enter(self) -> bool:
        if self._closed or self._free == 0 or self._waiters:
            return False
        self._free -= 1
        return True

    async def enter(self) -> bool:
        """Wait for room; ``False`` when the gate closed first."""
        if self.try_enter():
            return True
        if self._closed:
            return False
        waiter = Waiter()
        self._waiters.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:  # room was handed over just as we were cancelled: pass it on
                self.leave()
            elif not waiter.event.is_set():
                self._waiters.remove(waiter)
            raise
        return waiter.granted

    def leave(self) -> None:
        if self._waiters:
            waiter = self._waiters.popleft()
            waiter.granted = True
            waiter.event.set()
        else:
            self._free += 1

    def close(self) -> None:
        self._closed = True
        while self._waiters:
            self._waiters.popleft().event.set()
