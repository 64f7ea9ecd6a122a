"""Job progress: a redrawn bar on a terminal, periodic log lines otherwise.

The bar (items done, rate, ETA, failures) goes to standard error at most ten times
a second. When standard error is not a terminal (CI, a log collector, ``nohup``)
a ``job_progress`` log event carries the same numbers every ``interval`` seconds.
"""

from __future__ import annotations

import math
import time
from typing import TextIO

from ..logging import get_logger

_log = get_logger("vyre_async.jobs")
_BAR = 24
_REDRAW_S = 0.1


class Progress:
    """Tracks items done in this run against what was left to do.

    Args:
        total: Items of the whole job.
        skipped: Items committed by earlier runs (a resume).
        stream: Where the bar goes; ``None`` logs lines instead.
        interval: Seconds between log lines when there is no bar.
    """

    def __init__(self, total: int, skipped: int, stream: TextIO | None, interval: float) -> None:
        self.total = total
        self.skipped = skipped
        self.done = 0
        self.failed = 0
        self._stream = stream
        self._interval = interval
        self._started = time.monotonic()
        # Never shown yet: the first add shows (monotonic time may start near 0 at boot).
        self._last_shown = -math.inf
        self._drawn = False

    @property
    def elapsed(self) -> float:
        """Seconds since this run started."""
        return time.monotonic() - self._started

    @property
    def rate(self) -> float:
        """Items per second in this run."""
        return self.done / max(self.elapsed, 1e-9)

    def add(self, done: int, failed: int) -> None:
        """Count finished items (``failed`` of them failed) and show progress if due."""
        self.done += done
        self.failed += failed
        now = time.monotonic()
        if now - self._last_shown >= (_REDRAW_S if self._stream is not None else self._interval):
            self._last_shown = now
            self.show()

    def show(self) -> None:
        """Draw the bar or log a line now."""
        finished = self.skipped + self.done
        left = self.total - finished
        eta = left / self.rate if self.rate > 0 else float("inf")
        if self._stream is None:
            _log.info(
                "job_progress",
                items_done=finished,
                items_total=self.total,
                items_failed=self.failed,
                items_per_s=round(self.rate, 1),
                eta_s=round(eta, 1) if eta != float("inf") else None,
            )
            return
        share = finished / self.total if self.total else 1.0
        filled = int(share * _BAR)
        eta_text = f"{eta:,.0f}s" if eta != float("inf") else "?"
        line = (
            f"\r[{'#' * filled}{'.' * (_BAR - filled)}] {finished:,}/{self.total:,} "
            f"({share:6.1%})  {self.rate:,.0f} items/s  ETA {eta_text}  failed {self.failed:,}"
        )
        self._stream.write(line)
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Show the final numbers and end the bar's line."""
        self.show()
        if self._stream is not None and self._drawn:
            self._stream.write("\n")
            self._stream.flush()
