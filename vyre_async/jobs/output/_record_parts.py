"""A chunk's records as they travel to the committer, and their JSON lines.

A block's outcome reaches the committer as one or more *parts*:

- an :class:`ItemRecord` (a failed item, say);
- :class:`ColumnRecords`: a block whose records differ only in id, source and integer
  result columns (``reach`` counts, say), kept as arrays plus the fields they share,
  so a million-item job makes no million structs on the event loop;
- :class:`ArrayRecords`: records with each item's full-result array; the committer
  writes the arrays to the chunk's array file and the records, then naming it, go on.

:func:`encode_lines` writes a chunk's records as JSON lines: single records as msgspec
encodes them, and each run of consecutive column blocks as one table of bytes built
by NumPy, one row per line. Numbers are right-aligned in columns as wide as the run's
widest, and the bytes between them are padded to the run's longest: JSON allows the
spaces, so every line still decodes to its record, and no per-item Python object or
per-byte compaction is needed. The padding lies after a colon (before a number) or
before the closing brace, never inside a token.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ._records import ItemRecord

_encoder = msgspec.json.Encoder()
#: 10**0 .. 10**18.
_POW10 = 10 ** np.arange(19, dtype=np.int64)
#: Stand-in values while a block's shared bytes are cut out of one encoded record
#: (each appears exactly once in it): the first for the id, then the source, then the
#: columns in order.
_MARK = 7_770_000_000_000_000_001
_SPACE = ord(" ")


class ColumnRecords:
    """The records of one block as columns: item ``i`` is ``record_type(id=ids[i],
    source=sources[i], <name>=columns[name][i]...)`` with the fields they share.

    Args:
        record_type: The folder's record struct.
        ids: Item ids.
        sources: Source vertices.
        columns: Integer result columns by name, one value per item.
        workload: Index of the block's workload.
        kind: The workload's kind.
        attempts: Runs the block took.
        run_ms: Wall milliseconds of its last attempt.
    """

    __slots__ = (
        "attempts",
        "columns",
        "ids",
        "kind",
        "record_type",
        "run_ms",
        "sources",
        "workload",
    )

    def __init__(
        self,
        record_type: type[ItemRecord],
        ids: np.ndarray,
        sources: np.ndarray,
        columns: Mapping[str, np.ndarray],
        *,
        workload: int,
        kind: str,
        attempts: int,
        run_ms: float,
    ) -> None:
        lengths = {len(ids), len(sources), *(len(c) for c in columns.values())}
        if len(lengths) != 1:
            raise ValueError(
                f"ids, sources and columns differ in length: {len(ids)}, {len(sources)}, "
                f"{[len(c) for c in columns.values()]}"
            )
        self.record_type = record_type
        self.ids = np.asarray(ids, dtype=np.int64)
        self.sources = np.asarray(sources, dtype=np.int64)
        unknown = set(columns) - set(record_type.__struct_fields__)
        if unknown:
            raise ValueError(f"the records have no fields {sorted(unknown)}")
        # In the record's field order: the order of the numbers in each line.
        self.columns = {
            name: np.asarray(columns[name], dtype=np.int64)
            for name in record_type.__struct_fields__
            if name in columns
        }
        self.workload = workload
        self.kind = kind
        self.attempts = attempts
        self.run_ms = run_ms

    def __len__(self) -> int:
        return len(self.ids)

    def record(self, item: int, source: int, *values: int) -> ItemRecord:
        """The record of one item of the block (``values`` in column order)."""
        fields: dict[str, Any] = dict(zip(self.columns, values, strict=True))
        return self.record_type(
            id=item,
            workload=self.workload,
            kind=self.kind,
            source=source,
            attempts=self.attempts,
            batch=len(self),
            run_ms=self.run_ms,
            **fields,
        )

    def records(self) -> list[ItemRecord]:
        """One record per item."""
        rows = zip(
            self.ids.tolist(),
            self.sources.tolist(),
            *(c.tolist() for c in self.columns.values()),
            strict=True,
        )
        return [self.record(*row) for row in rows]

    def _pieces(self) -> list[bytes]:
        """The bytes of a line around its numbers: before the id, between each number
        and the next (id, source, the columns), and after the last (no newline)."""
        count = 2 + len(self.columns)
        line = _encoder.encode(self.record(*(_MARK + i for i in range(count))))
        pieces = []
        for i in range(count):
            head, line = line.split(b"%d" % (_MARK + i), 1)
            pieces.append(head)
        pieces.append(line)
        return pieces


class ArrayRecords:
    """Records whose items each keep a full-result array (``None``: keeps none).

    Args:
        records: The records, naming no array yet.
        arrays: One per record.
    """

    __slots__ = ("arrays", "records")

    def __init__(self, records: list[ItemRecord], arrays: list[np.ndarray | None]) -> None:
        if len(records) != len(arrays):
            raise ValueError(f"{len(records)} records and {len(arrays)} arrays differ in length")
        self.records = records
        self.arrays = arrays

    def __len__(self) -> int:
        return len(self.records)


#: What a chunk of records is made of.
RecordPart = ItemRecord | ColumnRecords | ArrayRecords


def encode_lines(parts: Iterable[RecordPart]) -> list[bytes | memoryview]:
    """A chunk's records as JSON lines, in order, as buffers to write one after another.

    Single records are encoded by msgspec; each run of consecutive
    :class:`ColumnRecords` of the same columns becomes one fixed-width table (see the
    module description).
    """
    out: list[bytes | memoryview] = []
    records: list[ItemRecord] = []
    columns: list[ColumnRecords] = []
    for part in parts:
        if isinstance(part, ColumnRecords):
            if not len(part):
                continue
            if records:
                out.append(_encoder.encode_lines(records))
                records = []
            if columns and list(columns[0].columns) != list(part.columns):
                out.append(_column_lines(columns))
                columns = []
            columns.append(part)
            continue
        if columns:
            out.append(_column_lines(columns))
            columns = []
        records.extend(part.records if isinstance(part, ArrayRecords) else (part,))
    if columns:
        out.append(_column_lines(columns))
    if records:
        out.append(_encoder.encode_lines(records))
    return out


def _column_lines(blocks: Sequence[ColumnRecords]) -> memoryview:
    """The lines of column blocks (of the same columns): one row of a byte table per item."""
    sizes = [len(block) for block in blocks]
    names = list(blocks[0].columns)
    numbers = [
        np.concatenate([block.ids for block in blocks]),
        np.concatenate([block.sources for block in blocks]),
        *(np.concatenate([block.columns[name] for block in blocks]) for name in names),
    ]
    if any(column.min() < 0 for column in numbers):  # no job makes them; exact anyway
        return memoryview(_encoder.encode_lines([r for b in blocks for r in b.records()]))
    pieces = [block._pieces() for block in blocks]
    heads = {p[0] for p in pieces}
    if len(heads) != 1:  # the record's layout is fixed: never
        raise RuntimeError("column records of one run differ before their first field")
    rows = sum(sizes)
    block_of = np.repeat(np.arange(len(blocks)), sizes) if len(blocks) > 1 else None
    fields: list[np.ndarray | bytes] = [heads.pop()]
    for i, column in enumerate(numbers):
        fields.append(column)
        last = i == len(numbers) - 1
        # Per block, padded to the longest: after a colon (before the next number), or
        # before the closing brace (after the last one).
        fields.append(_padded([p[i + 1] for p in pieces], at_end=not last))
    fields.append(b"\n")
    widths = [_width(f) for f in fields]
    table = np.empty((rows, sum(widths)), dtype=np.uint8)
    at = 0
    for field, width in zip(fields, widths, strict=True):
        where = table[:, at : at + width]
        if isinstance(field, bytes):
            where[:] = np.frombuffer(field, dtype=np.uint8)
        elif field.ndim == 2:  # per-block bytes, one row per block
            where[:] = field[block_of] if block_of is not None else field[0]
        else:
            _right_aligned(field, where)
        at += width
    return table.reshape(-1).data


def _width(field: np.ndarray | bytes) -> int:
    if isinstance(field, bytes):
        return len(field)
    if field.ndim == 2:
        return int(field.shape[1])
    return max(1, int(np.searchsorted(_POW10, int(field.max()), side="right")))


def _padded(variants: list[bytes], *, at_end: bool) -> np.ndarray:
    """One row per variant, padded with spaces to the longest: at the end, or just
    before the last byte (a closing brace)."""
    width = max(map(len, variants))
    out = np.full((len(variants), width), _SPACE, dtype=np.uint8)
    for row, variant in zip(out, variants, strict=True):
        data = np.frombuffer(variant, dtype=np.uint8)
        if at_end:
            row[: len(data)] = data
        else:
            row[: len(data) - 1] = data[:-1]
            row[-1] = data[-1]
    return out


def _right_aligned(values: np.ndarray, out: np.ndarray) -> None:
    """Write non-negative ``values`` as decimal digits right-aligned in ``out``'s
    columns, spaces before them."""
    width = out.shape[1]
    rest = values.copy()
    for column in range(width - 1, -1, -1):
        digit = (rest % 10).astype(np.uint8) + ord("0")
        if column < width - 1:
            digit[(rest == 0)] = _SPACE
        out[:, column] = digit
        rest //= 10


def item_ids(parts: Sequence[RecordPart]) -> npt.NDArray[np.int64]:
    """The item ids of a chunk's records, in order."""
    arrays: list[np.ndarray] = []
    run: list[int] = []
    for part in parts:
        if isinstance(part, ColumnRecords):
            if run:
                arrays.append(np.array(run, dtype=np.int64))
                run = []
            arrays.append(part.ids)
        elif isinstance(part, ArrayRecords):
            run.extend(r.id for r in part.records)
        else:
            run.append(part.id)
    if run:
        arrays.append(np.array(run, dtype=np.int64))
    return np.concatenate(arrays) if arrays else np.empty(0, np.int64)


def item_count(parts: Iterable[RecordPart]) -> int:
    """Records in a chunk."""
    return sum(1 if isinstance(part, ItemRecord) else len(part) for part in parts)


def single_records(parts: Iterable[RecordPart]) -> Iterable[ItemRecord]:
    """The chunk's records that are structs (not columns), in order."""
    for part in parts:
        if isinstance(part, ArrayRecords):
            yield from part.records
        elif isinstance(part, ItemRecord):
            yield part
