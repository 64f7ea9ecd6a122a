"""The progress bar on a terminal: redrawn in place, never joined by a log line."""

from __future__ import annotations

import fcntl
import io
import os
import struct
import termios
from collections.abc import Iterator

import pytest

from vyre_async.jobs.runner._progress import Progress
from vyre_async.logging import configure_logging, get_logger


def screen(text: str) -> list[str]:
    """What a terminal shows for ``text``: ``\\r`` to column 0, ``ESC[K`` erases to the end."""
    lines: list[list[str]] = [[]]
    column = 0
    at = 0
    while at < len(text):
        if text.startswith("\x1b[K", at):
            del lines[-1][column:]
            at += 3
            continue
        char = text[at]
        if char == "\r":
            column = 0
        elif char == "\n":
            lines.append([])
            column = 0
        else:
            line = lines[-1]
            if column < len(line):
                line[column] = char
            else:
                line.append(char)
            column += 1
        at += 1
    return ["".join(line) for line in lines]


def test_the_screen_model_overwrites_and_erases() -> None:
    """The terminal model used below: \\r overwrites, ESC[K erases, \\n starts a line."""
    assert screen("abcdef\rxy\x1b[K\nz") == ["xy", "z"]
    assert screen("abc\rd") == ["dbc"]


def test_a_log_line_while_the_bar_is_shown_gets_its_own_line_and_the_bar_ends_once() -> None:
    """The run's last bar, then 'backend closed': the log line stands alone, one bar stays."""
    stream = io.StringIO()
    configure_logging("console", level="info", stream=stream)
    progress = Progress(total=2000, skipped=0, stream=stream, interval=5.0)
    progress.add(1024, 0)
    progress.add(976, 0)
    get_logger("vyre_async.backends.cpu").info("backend closed", backend="cpu")
    progress.close()
    get_logger("vyre_async.jobs").info("job_finished", status="complete")
    shown = screen(stream.getvalue())
    assert shown[-1] == ""  # everything ends its line
    bars = [line for line in shown if "2,000/2,000" in line]
    assert len(bars) == 1, shown
    assert bars[0].startswith("[########################] 2,000/2,000 (100.0%)")
    assert bars[0].endswith("failed 0")
    logs = [line for line in shown if "backend closed" in line or "job_finished" in line]
    assert len(logs) == 2
    for line in logs:
        assert line[:4].isdigit()  # starts with its timestamp, not after a bar
        assert "items/s" not in line
    assert shown.index(bars[0]) < shown.index(logs[1])  # the bar ended before job_finished


def test_closing_twice_ends_the_bar_once() -> None:
    """close() is idempotent: one final bar, one newline."""
    stream = io.StringIO()
    progress = Progress(total=4, skipped=0, stream=stream, interval=5.0)
    progress.add(4, 0)
    progress.close()
    progress.close()
    assert stream.getvalue().count("\n") == 1
    shown = [line for line in screen(stream.getvalue()) if line]
    assert len(shown) == 1
    assert "4/4 (100.0%)" in shown[0]


class _Terminal(io.StringIO):
    """A StringIO that reports the size of a pseudo-terminal as its own."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


@pytest.fixture
def terminal_of_40_columns() -> Iterator[_Terminal]:
    """A stream whose terminal is 40 columns wide."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    try:
        yield _Terminal(follower)
    finally:
        os.close(leader)
        os.close(follower)


def test_the_bar_is_cut_to_the_terminal_width(terminal_of_40_columns: _Terminal) -> None:
    """A bar wider than the terminal would wrap and \\r could not redraw it: it is cut."""
    progress = Progress(total=1_000_000, skipped=0, stream=terminal_of_40_columns, interval=5.0)
    progress.add(500_000, 3)
    progress.close()
    shown = [line for line in screen(terminal_of_40_columns.getvalue()) if line]
    assert len(shown) == 1
    assert len(shown[0]) == 39
    assert shown[0].startswith("[############............] 500,000")
