"""SIGINT and SIGTERM outside the runner's drain: end the process at once, cleanly.

Everything the runner writes is atomic and committed by one manifest replace, so
ending the process at any moment leaves a folder that ``--resume`` continues (the
promise ``kill -9`` already tests). While no work is in flight (starting up, loading
the graph, verifying a resumed folder, writing the summary) a signal therefore
ends the process at once with a one-line message and the signal's exit code, never
a ``KeyboardInterrupt`` traceback or a silent death. While items run, the runner's
own handling (:func:`noting_signals`) takes over and drains them first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

import anyio

#: The signals a job handles, and the exit codes they end it with.
SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
#: Seconds between looks for a noted signal (see :func:`next_signal`).
SIGNAL_POLL_S = 0.05


def exit_code(signum: int) -> int:
    """The exit code a process ends with after ``signum`` (128 + its number)."""
    return EXIT_CODES.get(signal.Signals(signum), 128 + signum)


def exit_at_once(signum: int, frame: FrameType | None = None) -> NoReturn:
    """A signal handler: say so on standard error and end the process with the signal's code."""
    del frame
    name = signal.Signals(signum).name
    with contextlib.suppress(Exception):  # whatever a stream is doing, the process ends
        sys.stdout.flush()
    message = (
        f"vyre-async: {name}: exiting now; what was committed is intact and "
        "`vyre-async run FILE --resume` continues the job\n"
    )
    with contextlib.suppress(OSError):
        os.write(2, message.encode())
    os._exit(exit_code(signum))


def install_exit_at_once() -> None:
    """Make SIGINT and SIGTERM end the process at once (main thread only; else a no-op)."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, exit_at_once)


@contextlib.contextmanager
def exiting_at_once_on_signals(enabled: bool = True) -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM end the process at once; the handlers found
    before it are put back after it (nothing happens when not ``enabled`` or off the
    main thread)."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {s: signal.getsignal(s) for s in SIGNALS}
    install_exit_at_once()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def noting_signals(note: Callable[[int], None]) -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM only call ``note(signum)`` (from the main thread,
    between two bytecodes: ``note`` must do no more than record it); after it, they end
    the process at once again. A no-op off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        del frame
        note(signum)

    for signum in SIGNALS:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        install_exit_at_once()


async def next_signal(received: deque[int]) -> int:
    """Wait until :func:`noting_signals` noted a signal in ``received``; take it."""
    # A signal handler may not set an Event (it runs between two bytecodes of whatever
    # the loop was doing), so look regularly.
    while not received:  # noqa: ASYNC110 - nothing can wake an Event from a signal handler
        await anyio.sleep(SIGNAL_POLL_S)
    return received.popleft()
