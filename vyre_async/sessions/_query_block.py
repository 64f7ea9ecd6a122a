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

from ._planner import TraversalQuery


class QueryBlock:
    """Queries of one group that enter a batch together.

    Args:
        queries: At least one query; all share one :attr:`TraversalQuery.group`.
        rows: Return the block's raw rows as one array (``bfs_many``) rather than
            one shaped result for a lone query.
    """

    __slots__ = ("queries", "rows")

    def __init__(self, queries: tuple[TraversalQuery, ...], *, rows: bool) -> None:
        self.queries = queries
        self.rows = rows

    @property
    def lanes(self) -> int:
        """Batch lanes the block occupies: one per query."""
        return len(self.queries)

    @property
    def group(self) -> tuple[object, ...]:
        """What the block's batch mates must agree on (its first query's group)."""
        return self.queries[0].group


def block_lanes(block: QueryBlock) -> int:
    """The batcher's ``lanes`` callable."""
    return block.lanes


def block_group(block: QueryBlock) -> tuple[object, ...]:
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
