"""What a dynamic batcher did: outcomes of requests, sizes of batches, queue waits."""

from __future__ import annotations

import math
from collections import deque

import msgspec


class BatcherStats(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A snapshot of a :class:`DynamicBatcher`'s counters.

    Every ``submit`` call that gets past argument checks ends in exactly one of
    ``served``, ``failed``, ``rejected``, ``timed_out`` or ``cancelled``, counted as
    the caller saw it, so once no call is in progress
    ``submitted == served + failed + rejected + timed_out + cancelled``.

    Attributes:
        submitted: ``submit`` calls that passed their argument checks.
        served: Calls that returned their result.
        failed: Calls that raised their batch's error, or an error because the
            batcher stopped before or while running them.
        rejected: Calls refused for room: the queue was full with
            ``reject_when_full=True``, or the batcher closed while they waited for room.
        timed_out: Calls whose timeout passed while they waited for room or were queued.
        cancelled: Calls cancelled after they passed their argument checks, at any
            stage (a cancelled request whose batch was running still ran).
        queued: Requests in the queue now.
        in_flight: Batches running now.
        batches: Batches that finished, successfully or not.
        batches_failed: Batches whose executor raised or returned the wrong count.
        lanes_mean: Mean lanes per finished batch (0.0 before the first).
        lanes_max: Most lanes any finished batch used.
        queue_wait_p50_s: Median time from entering the queue to a batch taking the
            request, over the most recent ``stats_window`` requests (0.0 before the
            first), on the event loop's clock (``anyio.current_time()``).
        queue_wait_p95_s: 95th percentile of the same window.
    """

    submitted: int
    served: int
    failed: int
    rejected: int
    timed_out: int
    cancelled: int
    queued: int
    in_flight: int
    batches: int
    batches_failed: int
    lanes_mean: float
    lanes_max: int
    queue_wait_p50_s: float
    queue_wait_p95_s: float


def _nearest_rank(ordered: list[float], percent: float) -> float:
    if not ordered:
        return 0.0
    return ordered[max(math.ceil(percent / 100 * len(ordered)) - 1, 0)]


class BatchCounters:
    """Running totals behind :class:`BatcherStats`; the window of waits is bounded.

    Args:
        window: How many recent queue waits the percentiles are taken over.
    """

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError(f"stats_window must be at least 1, got {window}")
        self.submitted = 0
        self.served = 0
        self.failed = 0
        self.rejected = 0
        self.timed_out = 0
        self.cancelled = 0
        self.batches = 0
        self.batches_failed = 0
        self._lanes_total = 0
        self._lanes_max = 0
        self._waits: deque[float] = deque(maxlen=window)

    def record_wait(self, seconds: float) -> None:
        """Record how long one request waited in the queue before a batch took it."""
        self._waits.append(seconds)

    def record_batch(self, lanes: int, *, failed: bool) -> None:
        """Record one finished batch and the lanes it used."""
        self.batches += 1
        self.batches_failed += failed
        self._lanes_total += lanes
        self._lanes_max = max(self._lanes_max, lanes)

    def snapshot(self, *, queued: int, in_flight: int) -> BatcherStats:
        """Freeze the counters, with the current queue length and batches in flight."""
        waits = sorted(self._waits)
        return BatcherStats(
            submitted=self.submitted,
            served=self.served,
            failed=self.failed,
            rejected=self.rejected,
            timed_out=self.timed_out,
            cancelled=self.cancelled,
            queued=queued,
            in_flight=in_flight,
            batches=self.batches,
            batches_failed=self.batches_failed,
            lanes_mean=self._lanes_total / self.batches if self.batches else 0.0,
            lanes_max=self._lanes_max,
            queue_wait_p50_s=_nearest_rank(waits, 50),
            queue_wait_p95_s=_nearest_rank(waits, 95),
        )
