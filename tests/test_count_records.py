"""Counts blocks as columns: their fixed-width JSON lines decode to the same records."""

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
from vyre_async.jobs._count_records import CountRecords, encode_lines, item_count, item_ids
from vyre_async.jobs._store import ResultStore

_decoder = msgspec.json.Decoder(ItemRecord)
_encoder = msgspec.json.Encoder()
#: What the fixed-width lines may add to msgspec's: spaces after a colon (before a
#: right-aligned number) and before the closing brace.
_PADDING = re.compile(rb":( +)|( +)}$")


def _lines(buffers: list[bytes | memoryview]) -> list[bytes]:
    return b"".join(bytes(b) for b in buffers).splitlines()


@st.composite
def count_blocks(draw: st.DrawFn) -> CountRecords:
    size = draw(st.integers(1, 40))
    top = draw(st.sampled_from([9, 10, 99, 1000, 2**31 - 1, 2**62]))
    values = st.lists(st.integers(0, top), min_size=size, max_size=size)
    return CountRecords(
        np.array(draw(values), dtype=np.int64),
        np.array(draw(values), dtype=np.int64),
        np.array(draw(values), dtype=np.int64),
        workload=draw(st.integers(0, 5)),
        kind=draw(st.sampled_from(["bfs", "khop", "reach"])),
        attempts=draw(st.integers(1, 3)),
        run_ms=draw(st.floats(0, 1e6, allow_nan=False)),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(count_blocks(), min_size=1, max_size=4))
def test_columns_decode_to_their_records_and_differ_from_msgspec_only_by_spaces(
    blocks: list[CountRecords],
) -> None:
    """Each line decodes (msgspec and the json module) to its record, whatever the widths
    of the numbers (0, 9, 10, ..., 2**62) and of the shared fields; without the spaces
    the padding adds, it is msgspec's line byte for byte."""
    records = [r for b in blocks for r in b.records()]
    assert [(r.id, r.source, r.reached, r.batch) for r in records] == [
        (int(i), int(s), int(c), len(b))
        for b in blocks
        for i, s, c in zip(b.ids, b.sources, b.reached, strict=True)
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
    parts: list[CountRecords | int],
) -> None:
    """Records and count columns mixed in a chunk: lines, ids and count in chunk order."""
    chunk = [
        ItemRecord(p, 0, "bfs", ok=False, error="x") if isinstance(p, int) else p for p in parts
    ]
    flat = [r for p in chunk for r in ([p] if isinstance(p, ItemRecord) else p.records())]
    assert [_decoder.decode(line) for line in _lines(encode_lines(chunk))] == flat
    assert item_ids(chunk).tolist() == [r.id for r in flat]
    assert item_count(chunk) == len(flat)


def test_lengths_that_differ_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        CountRecords(
            np.arange(3),
            np.arange(2),
            np.arange(3),
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
        job="j",
        fingerprint="f",
        total_items=301,
        resume=False,
        chunk_format=chunk_format,  # type: ignore[arg-type]
    )
    try:
        first = [
            CountRecords(
                ids[:100],
                sources[:100],
                reached[:100],
                workload=0,
                kind="reach",
                attempts=1,
                run_ms=2.5,
            ),
            ItemRecord(300, 0, "reach", 7, ok=False, error="lost", error_code=1),
            CountRecords(
                ids[100:250],
                sources[100:250],
                reached[100:250],
                workload=0,
                kind="reach",
                attempts=2,
                run_ms=0.25,
            ),
        ]
        store.commit(first, 1, store.cut())
        store.commit(
            [
                CountRecords(
                    ids[250:],
                    sources[250:],
                    reached[250:],
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
                    CountRecords(
                        ids[:1],
                        sources[:1],
                        reached[:1],
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
