"""A counts block's records as columns, and JSON lines of records without an object per item.

A block of ``reach`` items (or any ``"counts"`` readback) comes back as one count per
item, and its records differ only in id, source and count. :class:`CountRecords`
keeps them as three arrays and the fields they share; :func:`encode_lines` writes a
chunk's records, whether structs or such columns, as the JSON lines msgspec writes
for the same :class:`ItemRecord` s, byte for byte. NumPy does the per-item work of
the columns (most of it outside the GIL), so a million-item job makes no million
structs on the event loop, and its committer thread holds the GIL for milliseconds
where encoding structs held it for a second.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from ._records import ItemRecord

_encoder = msgspec.json.Encoder()
#: 10**0 .. 10**18: the digit count of a non-negative int64 is how many are <= it.
_POW10 = 10 ** np.arange(19, dtype=np.int64)
#: Stand-ins for id, source and count while the shared bytes of a block's lines are
#: cut out of one encoded record (each appears exactly once in it).
_MARKS = (7_770_000_000_000_000_001, 7_770_000_000_000_000_002, 7_770_000_000_000_000_003)


class CountRecords:
    """The records of one counts block, as columns: item ``i`` is ``ItemRecord(id=
    ids[i], source=sources[i], reached=reached[i], ok=True)`` with the shared fields.

    Args:
        ids: Item ids (int64).
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
        ids: npt.NDArray[np.int64],
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

    def _record(self, item: int, source: int, reached: int) -> ItemRecord:
        return ItemRecord(
            id=item,
            workload=self.workload,
            kind=self.kind,  # type: ignore[arg-type]
            source=source,
            reached=reached,
            attempts=self.attempts,
            batch=len(self),
            run_ms=self.run_ms,
        )

    def records(self) -> list[ItemRecord]:
        """One :class:`ItemRecord` per item."""
        columns = (self.ids.tolist(), self.sources.tolist(), self.reached.tolist())
        return [self._record(*row) for row in zip(*columns, strict=True)]

    def encode_lines(self) -> bytes:
        """The JSON lines of :meth:`records`, as msgspec writes them."""
        count = len(self)
        columns = (self.ids, self.sources, self.reached)
        if not count or any(column.min() < 0 for column in columns):
            return _encoder.encode_lines(self.records())  # not a case jobs make
        shared = _encoder.encode(self._record(*_MARKS)).split(b"%d" % _MARKS[0])
        head, rest = shared
        pieces = [head]
        for mark in _MARKS[1:]:
            before, rest = rest.split(b"%d" % mark)
            pieces.append(before)
        pieces.append(rest + b"\n")
        return _lines(pieces, columns)


def _lines(pieces: list[bytes], columns: Sequence[np.ndarray]) -> bytes:
    """``pieces[0] + str(columns[0][i]) + pieces[1] + ... + pieces[-1]`` for every row
    ``i``, joined: the rows of a zero-padded table with the padding taken out."""
    count = len(columns[0])
    digits = [np.maximum(np.searchsorted(_POW10, c, side="right"), 1) for c in columns]
    widths = [int(d.max()) for d in digits]
    table = np.zeros((count, sum(map(len, pieces)) + sum(widths)), dtype=np.uint8)
    at = 0
    for index, piece in enumerate(pieces):
        table[:, at : at + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
        at += len(piece)
        if index == len(columns):
            break
        values, places, width = columns[index], digits[index], widths[index]
        for k in range(width):  # the k-th digit from the left, where there is one
            power = _POW10[np.maximum(places - 1 - k, 0)]
            digit = (values // power % 10 + ord("0")).astype(np.uint8)
            table[:, at + k] = np.where(k < places, digit, 0)
        at += width
    lines: bytes = table[table != 0].tobytes()
    return lines


#: What a chunk of records is made of: single records, and counts blocks as columns.
RecordPart = ItemRecord | CountRecords


def encode_lines(parts: Iterable[RecordPart]) -> bytes:
    """A chunk's records as JSON lines, in order: structs as msgspec encodes them, and
    each :class:`CountRecords` as its :meth:`~CountRecords.encode_lines`."""
    out: list[bytes] = []
    run: list[ItemRecord] = []
    for part in parts:
        if isinstance(part, ItemRecord):
            run.append(part)
            continue
        if run:
            out.append(_encoder.encode_lines(run))
            run = []
        out.append(part.encode_lines())
    if run:
        out.append(_encoder.encode_lines(run))
    return b"".join(out)


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
