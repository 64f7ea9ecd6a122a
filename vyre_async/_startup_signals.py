"""``python -m vyre_async``: the command line's signal handling before the package loads.

Python imports this package before it runs ``vyre_async/__main__.py``, and importing
it (NumPy, anyio, the CUDA bindings) takes a noticeable moment. The ``vyre-async``
console script makes SIGINT and SIGTERM end the process at once, with a line saying
nothing was started and the signal's exit code (130/143), before it imports
anything (``_vyre_async_entry``, beside the package); the package's ``__init__``
imports this module first so that ``python -m vyre_async`` gets the same, a ``run``
starting the CUDA driver's initialisation early as the console script does. Imported
any other way, it does nothing.
"""

from __future__ import annotations

import contextlib
import sys

#: The module names ``python -m`` may be given to run the command line.
_COMMAND_LINE = ("vyre_async", "vyre_async.__main__")


def run_as_the_command_line() -> bool:
    """Whether ``python -m vyre_async`` is importing the package on its way to ``__main__``.

    Python sets ``sys.argv[0]`` to ``"-m"`` only while it locates the module it was
    asked to run, and the interpreter's own arguments name that module.
    """
    if sys.argv[:1] != ["-m"]:
        return False
    args = sys.orig_argv[1:]
    for at, arg in enumerate(args):
        if arg == "-m":
            return args[at + 1 : at + 2] in ([name] for name in _COMMAND_LINE)
        if arg.startswith("-m"):
            return arg[2:] in _COMMAND_LINE
    return False


def command_args() -> list[str]:
    """The command line's own arguments (after ``-m vyre_async``), from the
    interpreter's: ``sys.argv`` is not set yet while the package is imported."""
    args = sys.orig_argv[1:]
    for at, arg in enumerate(args):
        if arg == "-m":
            return args[at + 2 :]
        if arg.startswith("-m"):
            return args[at + 1 :]
    return []


if run_as_the_command_line():
    with contextlib.suppress(ImportError):  # the package without its console script
        import _vyre_async_entry  # importing it installs the handlers

        _vyre_async_entry.start_cuda_early(command_args())  # cuInit while we import
