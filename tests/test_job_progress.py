"""Job progress: a bar on a terminal, log lines otherwise."""

from __future__ import annotations

import io

from vyre_async.jobs.runner._progress import Progress
from vyre_async.testing import capture_logs


def test_the_bar_shows_items_rate_eta_and_failures_and_ends_its_line() -> None:
    """Drawn to a stream: done/total, share, items/s, ETA and failures; a newline at close."""
    stream = io.StringIO()
    progress = Progress(total=1000, skipped=200, stream=stream, interval=5.0)
    progress.add(300, 2)
    progress.close()
    text = stream.getvalue()
    assert text.startswith("\r[")
    assert "500/1,000" in text
    assert "( 50.0%)" in text
    assert "items/s" in text
    assert "ETA" in text
    assert "failed 2" in text
    assert text.endswith("\n")


def test_without_a_terminal_progress_is_logged_as_events() -> None:
    """No stream: job_progress events carry the same numbers."""
    with capture_logs() as logs:
        progress = Progress(total=10, skipped=0, stream=None, interval=3600.0)
        progress.add(4, 1)  # the first add is always shown
        progress.add(1, 0)  # within the interval: not shown
        progress.close()  # always shown
    events = [e for e in logs if e["event"] == "job_progress"]
    assert [(e["items_done"], e["items_failed"]) for e in events] == [(4, 1), (5, 1)]
    assert events[-1]["items_total"] == 10
