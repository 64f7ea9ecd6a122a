"""The ``vyre-async`` console script: signal handling first, then the command line.

Importing :mod:`vyre_async` (NumPy, anyio, the CUDA bindings) takes a noticeable
moment, and a job may be interrupted at any moment, that one included. This module
imports nothing heavy: it makes SIGINT and SIGTERM end the process at once with a
message (saying nothing was started, while the command line is still being
imported) and the signal's exit code (130/143) before anything else is imported, so
no signal ever ends ``vyre-async`` with a ``KeyboardInterrupt`` traceback or a
silent death. :func:`vyre_async.cli.main` then takes over the same handling.
``python -m vyre_async`` imports this module first too (see
``vyre_async/_startup_signals.py``).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _exit_at_once(signum: int, frame: FrameType | None) -> None:
    del frame
    name = signal.Signals(signum).name
    # Until the command line is imported (its main defined), no command has begun.
    starting = getattr(sys.modules.get("vyre_async.cli"), "main", None) is None
    note = " while starting; nothing was started" if starting else ""
    try:
        os.write(2, f"vyre-async: {name}{note}: exiting now\n".encode())
    finally:
        os._exit(128 + signum)


for _signum in _SIGNALS:
    signal.signal(_signum, _exit_at_once)


def main() -> int:
    """Run the ``vyre-async`` command line; return its exit code."""
    from vyre_async.cli import main as cli_main  # after the handlers

    code = cli_main()
    # The command has ended: a signal now changes nothing. Ignored, it cannot meet
    # the default action the interpreter restores while it shuts down.
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
