"""Record parts: column blocks' fixed-width JSON lines decode to the same records, and
records travel with their arrays."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vyre_async.jobs import ItemRecord, read_records
from vyre_async.jobs.output import RecordLayout, ResultStore, record_layout
from vyre_async.jobs.output._record_parts import (
    ArrayRecords,
    ColumnRecords,
    RecordPart,
    encode_lines,
    item_count,
    item_ids,
)

LAYOUT = record_layout(["reach"])

#: A layout of two int columns and a float one, to exercise every kind of gap.
WIDE = RecordLayout(
    ("bfs", "khop", "reach"), (("reached", "int"), ("top_rank", "float"), ("max_level", "int"))
)
_decoder = msgspec.json.Decoder(WIDE.record_type)
_encoder = msgspec.json.Encoder()
#: What the fixed-width lines may add to msgspec's: spaces after a colon (before a
#: right-aligned number) and before the closing brace.
_PADDING = re.compile(rb":( +)|( +)}$")


def _lines(buffers: list[bytes | memoryview]) -> list[bytes]:
    return b"".join(bytes(b) for b in buffers).splitlines()


@st.composite
def count_blocks(draw: st.DrawFn, names: tuple[str, ...] = ("reached",)) -> ColumnRecords:
    size = draw(st.integers(1, 40))
    top = draw(st.sampled_from([9, 10, 99, 1000, 2**31 - 1, 2**62]))
    values = st.lists(st.integers(0, top), min_size=size, max_size=size)
    return ColumnRecords(
        WIDE.record_type,
        np.array(draw(values), dtype=np.int64),
        np.array(draw(values), dtype=np.int64),
        {name: np.array(draw(values), dtype=np.int64) for name in names},
        workload=draw(st.integers(0, 5)),
        kind=draw(st.sampled_from(["bfs", "khop", "reach"])),
        attempts=draw(st.integers(1, 3)),
        run_ms=draw(st.floats(0, 1e6, allow_nan=False)),
    )


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([("reached",), ("max_level", "reached")]).flatmap(
        lambda names: st.lists(count_blocks(names), min_size=1, max_size=4)
    )
)
def test_columns_decode_to_their_records_and_differ_from_msgspec_only_by_spaces(
    blocks: list[ColumnRecords],
) -> None:
    """Each line decodes (msgspec and the json module) to its record, whatever the widths
    of the numbers (0, 9, 10, ..., 2**62), of the shared fields and the columns filled
    (one, or two with a null column between them); without the spaces the padding
    adds, it is msgspec's line byte for byte."""
    records = [r for b in blocks for r in b.records()]
    names = list(blocks[0].columns)
    assert [(r.id, r.source, *(getattr(r, n) for n in names), r.batch) for r in records] == [
        (int(i), int(s), *(int(v) for v in values), len(b))
        for b in blocks
        for i, s, *values in zip(b.ids, b.sources, *b.columns.values(), strict=True)
    ]
    lines = _lines(encode_lines(blocks))
    assert len(lines) == len(records)
    assert len({len(line) for line in lines}) == 1  # one width for the whole run
    for line, record in zip(lines, records, strict=True):
        assert _decoder.decode(line) == record
        assert json.loads(line) == msgspec.to_builtins(record)
        assert _PADDING.sub(lambda m: b":" if m.group(1) else b"}", line) == _encoder.encode(record)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(count_blocks(), st.integers(0, 10**6)), min_size=0, max_size=6))
def test_a_chunk_of_structs_and_columns_keeps_its_order(
    parts: list[ColumnRecords | int],
) -> None:
    """Records, array records and column blocks mixed in a chunk: lines, ids and count
    in chunk order."""

    def part(p: ColumnRecords | int) -> RecordPart:
        if not isinstance(p, int):
            return p
        record = WIDE.record_type(p, 0, "bfs", ok=p % 2 == 0, error=None if p % 2 == 0 else "x")
        return ArrayRecords([record], [None]) if p % 3 == 0 else record

    chunk = [part(p) for p in parts]

    def flat_records(p: RecordPart) -> list[ItemRecord]:
        if isinstance(p, ColumnRecords):
            return p.records()
        return p.records if isinstance(p, ArrayRecords) else [p]

    flat = [r for p in chunk for r in flat_records(p)]
    assert [_decoder.decode(line) for line in _lines(encode_lines(chunk))] == flat
    assert item_ids(chunk).tolist() == [r.id for r in flat]
    assert item_count(chunk) == len(flat)


def test_lengths_that_differ_are_refused() -> None:
    """Columns of another length than the ids are a ValueError."""
    with pytest.raises(ValueError, match="differ in length"):
        ColumnRecords(
            WIDE.record_type,
            np.arange(3),
            np.arange(3),
            {"reached": np.arange(2)},
            workload=0,
            kind="reach",
            attempts=1,
            run_ms=0.0,
        )


def test_a_column_the_records_lack_is_refused() -> None:
    """A column the layout has no field for is a ValueError naming it."""
    with pytest.raises(ValueError, match="no fields"):
        ColumnRecords(
            WIDE.record_type,
            np.arange(3),
            np.arange(3),
            {"depth": np.arange(3)},
            workload=0,
            kind="reach",
            attempts=1,
            run_ms=0.0,
        )


@pytest.mark.parametrize("chunk_format", ["jsonl", "parquet"])
def test_committed_columns_read_back_as_records(tmp_path: Path, chunk_format: str) -> None:
    """A store commits columns with structs; read_records gives every item once."""
    if chunk_format == "parquet":
        pytest.importorskip("pyarrow")
    rng = np.random.default_rng()
    ids = rng.permutation(300).astype(np.int64)
    sources = rng.integers(0, 5000, 300)
    reached = rng.integers(1, 5000, 300)
    store = ResultStore.open(
        tmp_path / "o",
        layout=LAYOUT,
        job="j",
        fingerprint="f",
        total_items=301,
        resume=False,
        chunk_format=chunk_format,  # type: ignore[arg-type]
    )
    try:
        first = [
            ColumnRecords(
                LAYOUT.record_type,
                ids[:100],
                sources[:100],
                {"reached": reached[:100]},
                workload=0,
                kind="reach",
                attempts=1,
                run_ms=2.5,
            ),
            LAYOUT.record_type(300, 0, "reach", 7, ok=False, error="lost", error_code=1),
            ColumnRecords(
                LAYOUT.record_type,
                ids[100:250],
                sources[100:250],
                {"reached": reached[100:250]},
                workload=0,
                kind="reach",
                attempts=2,
                run_ms=0.25,
            ),
        ]
        store.commit(first, 1, store.cut())
        store.commit(
            [
                ColumnRecords(
                    LAYOUT.record_type,
                    ids[250:],
                    sources[250:],
                    {"reached": reached[250:]},
                    workload=0,
                    kind="reach",
                    attempts=1,
                    run_ms=1.0,
                )
            ],
            0,
            store.cut(),
        )
        with pytest.raises(ValueError, match="repeats an item"):
            store.commit(
                [
                    ColumnRecords(
                        LAYOUT.record_type,
                        ids[:1],
                        sources[:1],
                        {"reached": reached[:1]},
                        workload=0,
                        kind="reach",
                        attempts=1,
                        run_ms=1.0,
                    )
                ],
                0,
                store.cut(),
            )
    finally:
        store.close()
    got = {r.id: r for r in read_records(tmp_path / "o")}
    assert sorted(got) == list(range(301))
    assert got[300].ok is False
    for i, s, c in zip(ids.tolist(), sources.tolist(), reached.tolist(), strict=True):
        record = got[i]
        assert (record.source, record.reached, record.ok, record.kind) == (s, c, True, "reach")
