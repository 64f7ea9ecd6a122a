"""Running one block of items on a resident-graph session, and its records.

A block of items of a kind with sources is one ``session.query_many`` call (so it
joins the session's dynamic batcher as a unit); an item of a kind without sources is
one ``session.query`` call. The kind summarizes what came back into record columns
(and full-result arrays): blocks of integer columns alone become columnar records
directly; the others' records travel with their arrays to the committer, which
writes the arrays to the chunk's array file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from ...sessions import ResidentGraphSession
from ..output import ArrayRecords, ColumnRecords, ItemRecord, RecordPart
from ..spec import WorkloadSection
from ._items import ItemBlock


class BlockResult:
    """What a block computed: its kind's rows (one per item, in order), or the answer of
    a kind without sources (one item).

    Attributes:
        result: The array the kind's run returned.
    """

    __slots__ = ("result",)

    def __init__(self, result: np.ndarray) -> None:
        self.result = result


#: Runs a block: ``(session, workload, sources) -> BlockResult``. The runner takes
#: another one for fault injection in tests.
BlockExecutor = Callable[
    [ResidentGraphSession, WorkloadSection, np.ndarray], Awaitable[BlockResult]
]


def reads_counts(workload: WorkloadSection) -> bool:
    """Whether the workload's items write no arrays (their records are all they keep)."""
    return not workload.unit.keeps_arrays(workload.params)


async def execute_block(
    session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
) -> BlockResult:
    """Run a block's items; see :data:`BlockExecutor`."""
    unit, params = workload.unit, workload.params
    if unit.takes_sources:
        return BlockResult(await session.query_many(unit, sources, params))
    return BlockResult(await session.query(unit, None, params))


def block_records(
    record_type: type[ItemRecord],
    block: ItemBlock,
    workload: WorkloadSection,
    result: BlockResult,
    attempts: int,
    run_ms: float,
) -> list[RecordPart]:
    """A block's records as the folder's ``record_type``, with each item's full array
    if its kind keeps one.

    A block whose items keep no array and fill only integer columns becomes columns
    (:class:`ColumnRecords`); the others are records with their arrays
    (:class:`ArrayRecords`), which the committer writes to the array file of the chunk
    they join. Call it in a worker thread when the items keep arrays (it reduces every
    row of the block).
    """
    summary = workload.unit.summarize(workload.params, block.sources, result.result)
    columns = summary.columns
    if summary.arrays is None and all(c.dtype.kind in "iu" for c in columns.values()):
        return [
            ColumnRecords(
                record_type,
                block.ids,
                block.sources,
                columns,
                workload=block.workload,
                kind=workload.kind,
                attempts=attempts,
                run_ms=run_ms,
            )
        ]
    has_sources = block.sources.size > 0
    records = []
    for i, item in enumerate(block.ids.tolist()):
        fields: dict[str, Any] = {name: _value(column[i]) for name, column in columns.items()}
        records.append(
            record_type(
                id=item,
                workload=block.workload,
                kind=workload.kind,
                source=int(block.sources[i]) if has_sources else None,
                attempts=attempts,
                batch=len(block) if has_sources else 1,
                run_ms=run_ms,
                **fields,
            )
        )
    arrays: list[np.ndarray | None] = (
        list(summary.arrays) if summary.arrays is not None else [None] * len(records)
    )
    return [ArrayRecords(records, arrays)]


def _value(value: np.generic) -> int | float | None:
    """A column's value as a record field: a Python int or float (NaN: no value)."""
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    return int(value)
