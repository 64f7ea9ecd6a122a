"""Timestamps a stamped copy of vyre_async appends to (see stamp_tree.py)."""

from __future__ import annotations

import time

#: (name, perf_counter) in the order they were taken; cleared per traversal.
L: list[tuple[str, float]] = []


def S(name: str) -> None:  # noqa: N802 - short on purpose: it is inserted into code
    """Append a stamp."""
    L.append((name, time.perf_counter()))
