"""Running one block of items on a resident-graph session, and its records.

A block of traversal items is one batched ``bfs_many`` call (so it joins the
session's dynamic batcher as a unit); a PageRank item is one ``pagerank`` call.
Counts become records directly; full arrays are staged in the store, and the
committer writes them to the chunk's array file with their records.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import numpy as np

from ..sessions import ResidentGraphSession
from ._count_records import CountRecords, RecordPart
from ._items import ItemBlock
from ._records import ItemRecord
from ._spec import WorkloadSection
from ._store import ResultStore


class BlockResult:
    """What a block computed: reached counts, levels rows, or PageRank ranks.

    Attributes:
        counts: Reached vertices per item (``"counts"`` readback and ``reach``).
        rows: Levels per item, ``(items, V)`` (``"levels"`` readback).
        ranks: The ranks of a PageRank item.
    """

    __slots__ = ("counts", "ranks", "rows")

    def __init__(
        self,
        *,
        counts: np.ndarray | None = None,
        rows: np.ndarray | None = None,
        ranks: np.ndarray | None = None,
    ) -> None:
        self.counts = counts
        self.rows = rows
        self.ranks = ranks


#: Runs a block: ``(session, workload, sources) -> BlockResult``. The runner takes
#: another one for fault injection in tests.
BlockExecutor = Callable[
    [ResidentGraphSession, WorkloadSection, np.ndarray], Awaitable[BlockResult]
]


def reads_counts(workload: WorkloadSection) -> bool:
    """Whether the workload's items come back as reached counts (no arrays to write)."""
    return workload.kind == "reach" or (
        workload.kind != "pagerank" and workload.readback == "counts"
    )


async def execute_block(
    session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
) -> BlockResult:
    """Run a block's items; see :data:`BlockExecutor`."""
    if workload.kind == "pagerank":
        ranks = await session.pagerank(workload.damping, workload.tol, workload.max_iter)
        return BlockResult(ranks=ranks)
    k = workload.k if workload.kind == "khop" else None
    if reads_counts(workload):
        return BlockResult(counts=await session.bfs_many(sources, k=k, readback="counts"))
    return BlockResult(rows=await session.bfs_many(sources, k=k, readback="levels"))


def count_records(
    block: ItemBlock, workload: WorkloadSection, counts: np.ndarray, attempts: int, run_ms: float
) -> list[RecordPart]:
    """Records of a block that read back counts (no files to write), as columns."""
    return [
        CountRecords(
            block.ids,
            block.sources,
            counts,
            workload=block.workload,
            kind=workload.kind,
            attempts=attempts,
            run_ms=run_ms,
        )
    ]


def array_records(
    store: ResultStore,
    block: ItemBlock,
    workload: WorkloadSection,
    result: BlockResult,
    attempts: int,
    run_ms: float,
) -> list[RecordPart]:
    """Records of a block with full results, each item's array staged in ``store``.

    The records name no array yet: the committer writes the staged arrays to the
    array file of the chunk they join and sets ``array`` then. Call it in a worker
    thread (it reduces every row of the block).
    """
    kind, index, size = workload.kind, block.workload, len(block)
    if result.ranks is not None:
        ranks = result.ranks
        top = int(np.argmax(ranks)) if ranks.size else None
        item = int(block.ids[0])
        store.stage_array(item, ranks)
        return [
            ItemRecord(
                id=item,
                workload=index,
                kind=kind,
                top_vertex=top,
                top_rank=float(ranks[top]) if top is not None else None,
                attempts=attempts,
                run_ms=run_ms,
            )
        ]
    if result.rows is None:
        raise ValueError("a block result without rows or ranks has no arrays to write")
    records: list[RecordPart] = []
    for item, source, row in zip(
        block.ids.tolist(), block.sources.tolist(), result.rows, strict=True
    ):
        reached = row >= 0
        # k-hop items keep the vertex ids they reach; BFS items keep every level.
        saved = np.flatnonzero(reached).astype(np.int32) if kind == "khop" else row
        store.stage_array(item, saved)
        records.append(
            ItemRecord(
                id=item,
                workload=index,
                kind=kind,
                source=source,
                reached=int(reached.sum()),
                max_level=int(row.max()) if row.size else -1,
                attempts=attempts,
                batch=size,
                run_ms=run_ms,
            )
        )
    return records
