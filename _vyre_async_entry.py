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

``vyre-async run`` (unless given ``--backend cpu``) also starts the CUDA driver's
initialisation (``cuInit``, up to a second on a host of several GPUs, holding no
interpreter lock) in a daemon thread before the package is imported, so the two
overlap. Nothing is reported from that thread: where it fails, the package's own
loading of the driver fails the same way and says why.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
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


#: Options before the command that take a value (``--log-level debug run ...``).
_GLOBAL_VALUED = ("--log-format", "--log-level")


def _runs_on_cuda(argv: list[str]) -> bool:
    """Whether ``argv`` (without the program) is a ``run`` that may use CUDA."""
    command = None
    args = iter(argv)
    for arg in args:
        if arg in _GLOBAL_VALUED:
            next(args, None)
        elif not arg.startswith("-"):
            command = arg
            break
    if command != "run":
        return False
    pairs = zip(["", *argv], argv, strict=False)
    return not any(a == "--backend=cpu" or (b == "--backend" and a == "cpu") for b, a in pairs)


def _initialise_cuda() -> None:
    try:
        from cuda.bindings import driver

        driver.cuInit(0)
    except Exception:  # noqa: S110 - reported where the package loads the driver
        pass


def start_cuda_early(argv: list[str]) -> threading.Thread | None:
    """For ``vyre-async run`` that may use CUDA, start ``cuInit`` in a daemon thread
    and return it (``None`` for any other command)."""
    if not _runs_on_cuda(argv):
        return None
    thread = threading.Thread(target=_initialise_cuda, name="vyre-cuda-init", daemon=True)
    thread.start()
    return thread


def main() -> int:
    """Run the ``vyre-async`` command line; return its exit code."""
    start_cuda_early(sys.argv[1:])  # overlaps the imports below
    from vyre_async.cli import main as cli_main  # after the handlers

    code = cli_main()
    # The command has ended: a signal now changes nothing. Ignored, it cannot meet
    # the default action the interpreter restores while it shuts down.
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
