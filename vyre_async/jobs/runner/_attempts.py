"""Running one block of items: a timeout per attempt, bounded retries, then item by item.

An attempt that times out, or fails with a retryable error, is tried again after
:func:`~._retry.retry_delay`, at most ``limits.retries`` times. A block that still
fails is run again one item at a time, so only the items at fault get a failed
record (with the error and its code). A lost device is never retried here: it ends
the runner's generation, which reopens the backend (see :mod:`._runner`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import numpy as np

from ...errors import DeviceLostError, VyreError
from ...logging import get_logger
from ..output import ItemRecord, RecordPart, ResultStore
from ..spec import JobSpec
from ._committer import Outcomes
from ._execute import block_records, reads_counts
from ._items import ItemBlock
from ._retry import retry_delay
from ._targets import BlockTarget

__all__ = ["TIMEOUT_CODE", "UNEXPECTED_CODE", "BlockAttempts", "failure_reason"]

_log = get_logger("vyre_async.jobs")

#: Error codes of failures that are not VyreErrors.
TIMEOUT_CODE, UNEXPECTED_CODE = 0, 1


class BlockAttempts:
    """Runs blocks with a timeout per attempt and bounded retries; counts the retries.

    Args:
        spec: The job: its ``[limits]`` and workloads.
        rng: Draws the jitter of retry waits.
        device_lost: Whether the device was lost meanwhile; errors are then raised,
            not retried (the whole generation starts again).
    """

    def __init__(
        self, spec: JobSpec, rng: np.random.Generator, device_lost: Callable[[], bool]
    ) -> None:
        self._spec = spec
        self._rng = rng
        self._device_lost = device_lost
        #: Retries made so far.
        self.retries = 0

    async def run(self, target: BlockTarget, block: ItemBlock, store: ResultStore) -> Outcomes:
        """Run ``block`` on ``target``; its records and how many of them are failures.

        Raises:
            DeviceLostError: The device was lost (also any error once it was).
        """
        limits = self._spec.limits
        workload = self._spec.workload[block.workload]
        attempts = 0
        while True:
            attempts += 1
            started = time.perf_counter()
            try:
                with anyio.fail_after(limits.item_timeout_s):
                    result = await target.run(workload, block.sources)
            except Exception as exc:
                if isinstance(exc, DeviceLostError) or self._device_lost():
                    raise
                retryable = isinstance(exc, TimeoutError) or (
                    isinstance(exc, VyreError) and exc.retryable
                )
                if retryable and attempts <= limits.retries:
                    self.retries += 1
                    _log.info(
                        "block_retry",
                        first_item=int(block.ids[0]),
                        items=len(block),
                        attempt=attempts,
                        error=failure_reason(exc, limits.item_timeout_s),
                    )
                    await anyio.sleep(retry_delay(limits, attempts, self._rng))
                    continue
                if len(block) > 1:
                    return await self._item_by_item(target, block, store)
                return [self._failed(store.record_type, block, exc, attempts)], 1
            run_ms = round((time.perf_counter() - started) * 1000, 3)
            record_type = store.record_type
            if reads_counts(workload):  # columns of counts: cheaper than a thread hop
                return block_records(record_type, block, workload, result, attempts, run_ms), 0
            records = await anyio.to_thread.run_sync(
                block_records, record_type, block, workload, result, attempts, run_ms
            )
            return records, 0

    async def _item_by_item(
        self, target: BlockTarget, block: ItemBlock, store: ResultStore
    ) -> Outcomes:
        """Find the items at fault: each of the block's items on its own."""
        done: list[RecordPart] = []
        failed = 0
        for single in block.split():
            records, failures = await self.run(target, single, store)
            done += records
            failed += failures
        return done, failed

    def _failed(
        self, record_type: type[ItemRecord], block: ItemBlock, exc: Exception, attempts: int
    ) -> ItemRecord:
        workload = self._spec.workload[block.workload]
        if isinstance(exc, TimeoutError):
            code = TIMEOUT_CODE
        else:
            code = exc.code if isinstance(exc, VyreError) else UNEXPECTED_CODE
        reason = failure_reason(exc, self._spec.limits.item_timeout_s)
        item = int(block.ids[0])
        _log.warning("item_failed", item=item, attempts=attempts, error=reason, code=code)
        return record_type(
            id=item,
            workload=block.workload,
            kind=workload.kind,
            source=int(block.sources[0]) if block.sources.size else None,
            ok=False,
            error=reason,
            error_code=code,
            attempts=attempts,
        )


def failure_reason(exc: BaseException, timeout_s: float) -> str:
    """One line saying why an attempt failed, for the log and the item's record."""
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout_s:g} s (limits.item_timeout_s)"
    if isinstance(exc, VyreError):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"
