"""Holds a child process inside an import, for the start-up signal tests.

With this folder first on ``PYTHONPATH`` and ``VYRE_TEST_PAUSE_AT`` naming a module,
the interpreter, about to import that module, writes one byte to the descriptor
``VYRE_TEST_READY_FD`` and then waits to read one from ``VYRE_TEST_WAIT_FD``, which the
test never writes: the process stays in the import until a signal ends it. The test
waits for the byte, not for a time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class PauseBeforeImport:
    """A meta path finder that finds nothing and holds the import it was told of."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == self.name:
            sys.meta_path.remove(self)
            os.write(int(os.environ["VYRE_TEST_READY_FD"]), b"!")
            os.read(int(os.environ["VYRE_TEST_WAIT_FD"]), 1)
        return None


if "VYRE_TEST_PAUSE_AT" in os.environ:
    sys.meta_path.insert(0, PauseBeforeImport(os.environ["VYRE_TEST_PAUSE_AT"]))
