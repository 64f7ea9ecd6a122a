"""Query blocks: the unit a resident-graph session's batcher queues and batches.

A single ``bfs`` / ``khop`` / ``reach_count`` call is a block of one query whose
result is shaped for that call (levels, vertex ids, a count). A batched
``bfs_many`` call submits its queries as blocks of many: a block occupies one batch
lane per query, joins a batch as a unit, and gets its rows back as one array, so a
large call costs a few batcher round trips rather than one per query.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._planner import TraversalShape


class QueryBlock:
    """Queries of one shape that enter a batch together.

    Args:
        shape: What every query of the block runs (kind, k, readback, targets).
        sources: int32 source vertices, one query (one batch lane) each, checked
            against the graph by the caller.
        rows: Return the block's raw rows as one array (``bfs_many``) rather than
            one shaped result for a lone query.
    """

    __slots__ = ("rows", "shape", "sources")

    def __init__(self, shape: TraversalShape, sources: np.ndarray, *, rows: bool) -> None:
        self.shape = shape
        self.sources = sources
        self.rows = rows

    @property
    def lanes(self) -> int:
        """Batch lanes the block occupies: one per query."""
        return len(self.sources)

    @property
    def group(self) -> TraversalShape:
        """What the block's batch mates must agree on."""
        return self.shape


def block_lanes(block: QueryBlock) -> int:
    """The batcher's ``lanes`` callable."""
    return block.lanes


def block_group(block: QueryBlock) -> TraversalShape:
    """The batcher's ``group`` callable."""
    return block.group


def split_rows(blocks: Sequence[QueryBlock], rows: np.ndarray) -> list[np.ndarray]:
    """Cut a batch's rows (in block order) into one array per block."""
    out: list[np.ndarray] = []
    start = 0
    for block in blocks:
        out.append(rows[start : start + block.lanes])
        start += block.lanes
    return out
