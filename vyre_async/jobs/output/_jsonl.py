"""JSON-lines chunks: one record per line, as msgspec encodes it; nothing optional needed.

A chunk is its records' JSON lines (:func:`~._record_parts.encode_lines`), written
to the file piece by piece. Reading decodes each line into the folder's record
struct, which refuses a line that is not one of its records (a missing or unknown
field, a wrong type); an Arrow table of a chunk comes from pyarrow's JSON reader
over the same bytes (:func:`~._columns.json_lines_table`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

import msgspec

from ._columns import json_lines_table
from ._record_parts import RecordPart, encode_lines
from ._records import ItemRecord, RecordLayout


class JsonLines:
    """The ``jsonl`` chunk format (see :class:`~._chunk_formats.ChunkFormat`)."""

    name = "jsonl"
    title = "JSON lines"

    def check_available(self, needed_for: str, *, instead: str | None = None) -> None:
        """Nothing to check: msgspec, which encodes and decodes the lines, is required."""

    def encode(
        self, parts: Sequence[RecordPart], layout: RecordLayout
    ) -> Callable[[BinaryIO], None]:
        """The chunk's lines, written to the file as they are (no copy joins them)."""
        lines = encode_lines(parts)

        def write(file: BinaryIO) -> None:
            for piece in lines:
                file.write(piece)

        return write

    def records(self, data: bytes, layout: RecordLayout) -> list[ItemRecord]:
        """The records of the chunk's lines (a msgspec error is a ``ValueError``)."""
        return _decoder(layout.record_type).decode_lines(data)

    def table(self, data: bytes, layout: RecordLayout, pa: Any) -> Any:
        """The chunk's records as a ``pyarrow.Table``, checked."""
        return json_lines_table(pa, data, layout)


@functools.cache
def _decoder(record_type: type[ItemRecord]) -> msgspec.json.Decoder[ItemRecord]:
    return msgspec.json.Decoder(record_type)


JSON_LINES = JsonLines()
