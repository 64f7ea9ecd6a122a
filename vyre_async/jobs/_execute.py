"""Running one block of items on a resident-graph session, and its records.

A block of items of a kind with sources is one ``session.query_many`` call (so it
joins the session's dynamic batcher as a unit); an item of a kind without sources is
one ``session.query`` call. The kind summarizes what came back into record columns
(and full-result arrays): counts-only blocks become columnar records directly; the
arrays of the others are staged in the store, and the committer writes them to the
chunk's array file with their records.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from ..sessions import ResidentGraphSession
from ._count_records import CountRecords, RecordPart
from ._items import ItemBlock
from ._records import ItemRecord
from ._spec import WorkloadSection
from ._store import ResultStore


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
    store: ResultStore,
    block: ItemBlock,
    workload: WorkloadSection,
    result: BlockResult,
    attempts: int,
    run_ms: float,
) -> list[RecordPart]:
    """A block's records, each item's full array (if its kind keeps one) staged in ``store``.

    A block whose items keep no array and fill only ``reached`` becomes columns
    (:class:`CountRecords`). Otherwise the records name no array yet: the committer
    writes the staged arrays to the array file of the chunk they join and sets
    ``array`` then. Call it in a worker thread (it reduces every row of the block).
    """
    summary = workload.unit.summarize(workload.params, block.sources, result.result)
    columns = summary.columns
    if summary.arrays is None and set(columns) == {"reached"}:
        return [
            CountRecords(
                block.ids,
                block.sources,
                columns["reached"],
                workload=block.workload,
                kind=workload.kind,
                attempts=attempts,
                run_ms=run_ms,
            )
        ]
    has_sources = block.sources.size > 0
    records: list[RecordPart] = []
    for i, item in enumerate(block.ids.tolist()):
        if summary.arrays is not None:
            store.stage_array(item, summary.arrays[i])
        fields: dict[str, Any] = {name: _value(column[i]) for name, column in columns.items()}
        records.append(
            ItemRecord(
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
    return records


def _value(value: np.generic) -> int | float | None:
    """A column's value as a record field: a Python int or float (NaN: no value)."""
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    return int(value)
