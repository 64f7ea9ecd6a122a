"""Job progress: a redrawn bar on a terminal, periodic log lines otherwise.

The bar (items done, rate, ETA, failures) goes to standard error at most ten times
a second, cut to the terminal's width so that ``\r`` redraws it in place. Log lines
printed meanwhile erase it and draw it again below themselves (see
:func:`vyre_async.logging.set_status_line`), so none continues the bar. When
standard error is not a terminal (CI, a log collector, ``nohup``) a
``job_progress`` log event carries the same numbers every ``interval`` seconds.
"""

from __future__ import annotations

import math
import os
import time
from typing import TextIO

from ...logging import get_logger, set_status_line

_log = get_logger("vyre_async.jobs")
_BAR = 24
_REDRAW_S = 0.1
#: Erase from the cursor to the end of the line (ANSI), after a shorter redraw.
_ERASE_TO_END = "\x1b[K"


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
        self._drawn = ""  # the bar as last drawn; "" while none is on the screen
        self._redraw = ""  # the bar a log line erased, to draw again below it
        self._finished = False
        #: The stream a status line is drawn on (for vyre_async.logging's handler).
        self.stream = stream

    @property
    def elapsed(self) -> float:
        """Seconds since this progress was made: once the graph was ready and items began."""
        return time.monotonic() - self._started

    @property
    def rate(self) -> float:
        """Items finished in this run per second of :attr:`elapsed`."""
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
        self._draw(self._bar(finished, eta))

    def _bar(self, finished: int, eta: float) -> str:
        share = finished / self.total if self.total else 1.0
        filled = int(share * _BAR)
        eta_text = f"{eta:,.0f}s" if eta != float("inf") else "?"
        return (
            f"[{'#' * filled}{'.' * (_BAR - filled)}] {finished:,}/{self.total:,} "
            f"({share:6.1%})  {self.rate:,.0f} items/s  ETA {eta_text}  failed {self.failed:,}"
        )

    def _draw(self, bar: str) -> None:
        if self._stream is None or self._finished:
            return
        width = _columns(self._stream)
        if width > 1:
            bar = bar[: width - 1]  # a wrapped line cannot be redrawn in place by \r
        if bar == self._drawn:
            return
        self._stream.write(f"\r{bar}{_ERASE_TO_END}")
        self._stream.flush()
        if not self._drawn:
            set_status_line(self)
        self._drawn = bar

    def clear(self) -> None:
        """Erase the bar (a log line is about to be printed where it was)."""
        if self._stream is not None and self._drawn:
            self._stream.write(f"\r{_ERASE_TO_END}")
            self._stream.flush()
            self._redraw, self._drawn = self._drawn, ""

    def redraw(self) -> None:
        """Draw the bar again, below the log line printed since :meth:`clear`."""
        if self._stream is not None and not self._drawn and self._redraw:
            self._draw(self._redraw)

    def close(self) -> None:
        """Show the final numbers and end the bar's line, once."""
        if self._finished:
            return
        self.show()
        self._finished = True
        if self._stream is not None and self._drawn:
            set_status_line(None)
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = ""


def _columns(stream: TextIO) -> int:
    """The terminal's width in columns, or 0 where the stream is not a terminal."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0
