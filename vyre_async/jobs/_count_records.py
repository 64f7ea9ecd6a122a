"""A counts block's records as columns, written as fixed-width JSON lines.

A block of ``reach`` items (or any ``"counts"`` readback) comes back as one count per
item, and its records differ only in id, source and count. :class:`CountRecords`
keeps them as three arrays and the fields they share, so a million-item job makes no
million structs on the event loop.

:func:`encode_lines` writes a chunk's records as JSON lines: single records as msgspec
encodes them, and each run of consecutive count blocks as one table of bytes built by
NumPy, one row per line. Numbers are right-aligned in columns as wide as the run's
widest, and a block's shared fields are padded to the run's longest: JSON allows the
spaces, so every line still decodes to its record, and no per-item Python object or
per-byte compaction is needed. The padding lies before a number or before the closing
brace, never inside a token.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from ._records import ItemRecord

_encoder = msgspec.json.Encoder()
#: 10**0 .. 10**18.
_POW10 = 10 ** np.arange(19, dtype=np.int64)
#: Stand-ins for id, source and count while a block's shared bytes are cut out of one
#: encoded record (each appears exactly once in it).
_MARKS = (7_770_000_000_000_000_001, 7_770_000_000_000_000_002, 7_770_000_000_000_000_003)
_SPACE = ord(" ")


class CountRecords:
    """The records of one counts block, as columns: item ``i`` is ``ItemRecord(id=
    ids[i], source=sources[i], reached=reached[i], ok=True)`` with the shared fields.

    Args:
        ids: Item ids.
        sources: Source vertices.
        reached: Vertices each item reached.
        workload: Index of the block's workload.
        kind: The workload's kind.
        attempts: Runs the block took.
        run_ms: Wall milliseconds of its last attempt.
    """

    __slots__ = ("attempts", "ids", "kind", "reached", "run_ms", "sources", "workload")

    def __init__(
        self,
        ids: np.ndarray,
        sources: np.ndarray,
        reached: np.ndarray,
        *,
        workload: int,
        kind: str,
        attempts: int,
        run_ms: float,
    ) -> None:
        if not len(ids) == len(sources) == len(reached):
            raise ValueError(
                f"ids, sources and counts differ in length: {len(ids)}, {len(sources)}, "
                f"{len(reached)}"
            )
        self.ids = np.asarray(ids, dtype=np.int64)
        self.sources = np.asarray(sources, dtype=np.int64)
        self.reached = np.asarray(reached, dtype=np.int64)
        self.workload = workload
        self.kind = kind
        self.attempts = attempts
        self.run_ms = run_ms

    def __len__(self) -> int:
        return len(self.ids)

    def record(self, item: int, source: int, reached: int) -> ItemRecord:
        """The record of one item of the block."""
        return ItemRecord(
            id=item,
            workload=self.workload,
            kind=self.kind,
            source=source,
            reached=reached,
            attempts=self.attempts,
            batch=len(self),
            run_ms=self.run_ms,
        )

    def records(self) -> list[ItemRecord]:
        """One :class:`ItemRecord` per item."""
        columns = (self.ids.tolist(), self.sources.tolist(), self.reached.tolist())
        return [self.record(*row) for row in zip(*columns, strict=True)]

    def _pieces(self) -> tuple[bytes, bytes, bytes, bytes]:
        """The bytes of a line before the id, between id and source, between source and
        count, and after the count (its newline left out)."""
        line = _encoder.encode(self.record(*_MARKS))
        head, rest = line.split(b"%d" % _MARKS[0])
        middle, rest = rest.split(b"%d" % _MARKS[1])
        between, tail = rest.split(b"%d" % _MARKS[2])
        return head, middle, between, tail


#: What a chunk of records is made of: single records, and counts blocks as columns.
RecordPart = ItemRecord | CountRecords


def encode_lines(parts: Iterable[RecordPart]) -> list[bytes | memoryview]:
    """A chunk's records as JSON lines, in order, as buffers to write one after another.

    Single records are encoded by msgspec; each run of consecutive
    :class:`CountRecords` becomes one fixed-width table (see the module description).
    """
    out: list[bytes | memoryview] = []
    records: list[ItemRecord] = []
    counts: list[CountRecords] = []
    for part in parts:
        if isinstance(part, ItemRecord):
            if counts:
                out.append(_count_lines(counts))
                counts = []
            records.append(part)
        elif len(part):
            if records:
                out.append(_encoder.encode_lines(records))
                records = []
            counts.append(part)
    if counts:
        out.append(_count_lines(counts))
    if records:
        out.append(_encoder.encode_lines(records))
    return out


def _count_lines(blocks: Sequence[CountRecords]) -> memoryview:
    """The lines of count blocks: one row of a byte table per item, in order."""
    sizes = [len(block) for block in blocks]
    columns = [
        np.concatenate([getattr(block, name) for block in blocks])
        for name in ("ids", "sources", "reached")
    ]
    if any(column.min() < 0 for column in columns):  # no job makes them; exact anyway
        return memoryview(_encoder.encode_lines([r for b in blocks for r in b.records()]))
    pieces = [block._pieces() for block in blocks]
    heads = {p[0] for p in pieces}
    betweens = {p[2] for p in pieces}
    if len(heads) != 1 or len(betweens) != 1:  # the record's layout is fixed: never
        raise RuntimeError("count records of one run differ in their fixed fields")
    # Per block, padded to the longest: the bytes before the source (spaces after its
    # colon) and after the count (spaces before the closing brace).
    middles = _padded([p[1] for p in pieces], at_end=True)
    tails = _padded([p[3] for p in pieces], at_end=False)
    rows = sum(sizes)
    block_of = np.repeat(np.arange(len(blocks)), sizes) if len(blocks) > 1 else None
    fields: list[np.ndarray | bytes] = [
        heads.pop(),
        columns[0],
        middles,
        columns[1],
        betweens.pop(),
        columns[2],
        tails,
        b"\n",
    ]
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
        if isinstance(part, ItemRecord):
            run.append(part.id)
            continue
        if run:
            arrays.append(np.array(run, dtype=np.int64))
            run = []
        arrays.append(part.ids)
    if run:
        arrays.append(np.array(run, dtype=np.int64))
    return np.concatenate(arrays) if arrays else np.empty(0, np.int64)


def item_count(parts: Iterable[RecordPart]) -> int:
    """Records in a chunk."""
    return sum(1 if isinstance(part, ItemRecord) else len(part) for part in parts)
