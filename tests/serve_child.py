"""``vyre-async serve`` in a child process whose reach runs wait for a file to appear.

Usage: ``python tests/serve_child.py RELEASE serve CONFIG``. Each run of the ``reach``
kind (a batch's, or a lone query's) prints ``run held N`` (its queries) on standard
error, then waits in a worker thread until the file ``RELEASE`` exists, so a test can
signal the server while queries are in flight. Exits with the command's code.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async import cli

#: Longest a run waits for the file (a test that never writes it still ends).
WAIT_S = 60.0


def held(release: Path) -> None:
    """Hold every reach run until ``release`` exists."""
    cls = type(va.algorithms.lookup("reach"))
    many, one = cls.run_many, cls.run_one

    def wait() -> None:
        deadline = time.monotonic() + WAIT_S
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.005)

    async def run_many(
        self: Any, replica: Any, params: Any, sources: np.ndarray, budget_bytes: Any = None
    ) -> np.ndarray:
        print(f"run held {len(sources)}", file=sys.stderr, flush=True)
        await anyio.to_thread.run_sync(wait)
        return await many(self, replica, params, sources, budget_bytes)

    async def run_one(self: Any, replica: Any, params: Any, source: Any, out: Any = None) -> Any:
        print("run held 1", file=sys.stderr, flush=True)
        await anyio.to_thread.run_sync(wait)
        return await one(self, replica, params, source, out)

    cls.run_many = run_many  # type: ignore[method-assign]
    cls.run_one = run_one  # type: ignore[method-assign]


if __name__ == "__main__":
    held(Path(sys.argv[1]))
    sys.exit(cli.main(sys.argv[2:]))
