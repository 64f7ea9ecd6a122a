"""Query blocks: the unit a resident-graph session's batcher queues and batches.

A single query (``session.bfs(s)``, ``session.reach_count(s)``...) is a block of one
whose answer is shaped for that call by its kind; a batched many-source call
(``bfs_many``) submits its queries as blocks of many: a block occupies one batch lane
per query, joins a batch as a unit, and gets its rows back as one array, so a large
call costs a few batcher round trips rather than one per query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..algorithms import Params, QueryKind


class QueryBlock:
    """Queries of one kind and parameters that enter a batch together.

    Args:
        kind: The queries' kind.
        params: What every query of the block shares.
        sources: int32 source vertices, one query (one batch lane) each, checked
            against the graph by the caller.
        rows: Return the block's raw rows as one array (many-source calls) rather
            than the kind's answer for a lone query.
    """

    __slots__ = ("group", "kind", "params", "rows", "sources")

    def __init__(
        self, kind: QueryKind[Any], params: Params, sources: np.ndarray, *, rows: bool
    ) -> None:
        self.kind = kind
        self.params = params
        self.sources = sources
        self.rows = rows
        #: What the block's batch mates must agree on.
        self.group = (kind, params)

    @property
    def lanes(self) -> int:
        """Batch lanes the block occupies: one per query."""
        return len(self.sources)


def block_lanes(block: QueryBlock) -> int:
    """The batcher's ``lanes`` callable."""
    return block.lanes


def block_group(block: QueryBlock) -> tuple[QueryKind[Any], Params]:
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
