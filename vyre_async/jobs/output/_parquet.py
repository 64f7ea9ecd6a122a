"""Parquet chunks: each chunk one Parquet file of the folder's Arrow schema; needs pyarrow.

pyarrow is optional: it is imported here when a Parquet chunk is written or read, and
a missing one is a :class:`ConfigurationError` naming the package and the
``parquet`` extra to install (:meth:`Parquet.check_available`), raised before
anything is written. A chunk is written through its JSON lines, which pyarrow's
JSON reader turns into columns (:func:`~._columns.json_lines_table`), then as one
Parquet file with pyarrow's defaults (Snappy). Reading a chunk checks its table
against the folder's Arrow schema (:func:`~._columns.check_table`). ``vyre-async
export --to FILE.parquet`` writes one Parquet file of a whole folder here too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ...errors import ConfigurationError
from ._columns import (
    PYARROW_FIX,
    arrow_schema,
    check_table,
    json_lines_table,
    optional,
    records_table,
    table_records,
)
from ._record_parts import RecordPart, encode_lines
from ._records import ItemRecord, RecordLayout

#: The fix a missing pyarrow gets when something else can be done instead.
_INSTALL = "install it: pip install 'vyre-async[parquet]'"


class Parquet:
    """The ``parquet`` chunk format (see :class:`~._chunk_formats.ChunkFormat`)."""

    name = "parquet"
    title = "Parquet"

    def modules(self, needed_for: str, *, instead: str | None = None) -> tuple[Any, Any]:
        """``(pyarrow, pyarrow.parquet)``, or a ConfigurationError saying what to install.

        Args:
            needed_for: What needs them, as the message starts.
            instead: What else the user may do, ending the fix after "or ".
        """
        fix = PYARROW_FIX if instead is None else f"{_INSTALL}, or {instead}"
        return (
            optional("pyarrow", needed_for, ConfigurationError, fix),
            optional("pyarrow.parquet", needed_for, ConfigurationError, fix),
        )

    def check_available(self, needed_for: str, *, instead: str | None = None) -> None:
        """Refuse Parquet without pyarrow (see :meth:`modules`)."""
        self.modules(needed_for, instead=instead)

    def encode(
        self, parts: Sequence[RecordPart], layout: RecordLayout
    ) -> bytes | Callable[[BinaryIO], None]:
        """The chunk's records, encoded as JSON lines, as a Parquet file."""
        pa, pq = self.modules("writing Parquet chunks")
        sink = pa.BufferOutputStream()
        pq.write_table(json_lines_table(pa, b"".join(encode_lines(parts)), layout), sink)
        data: bytes = sink.getvalue().to_pybytes()
        return data

    def records(self, data: bytes, layout: RecordLayout) -> list[ItemRecord]:
        """The records of a Parquet chunk's bytes, checked (see :meth:`table`)."""
        pa, _ = self.modules("reading Parquet chunks")
        return table_records(pa, self.table(data, layout, pa), layout)

    def table(self, data: bytes, layout: RecordLayout, pa: Any) -> Any:
        """The table of a Parquet chunk's bytes, checked (see :func:`~._columns.check_table`).

        Raises:
            ValueError: The bytes are not Parquet, or not a table of records.
        """
        _, pq = self.modules("reading Parquet chunks")
        try:
            table = pq.read_table(pa.BufferReader(data))
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise ValueError(f"is not a Parquet file ({exc})") from None
        return check_table(pa, table, layout)

    def write_file(
        self, path: Path, chunks: Iterable[Sequence[ItemRecord]], layout: RecordLayout
    ) -> int:
        """Write the records of ``chunks`` (lists of ``layout``'s records) to one Parquet
        file of the folder's Arrow schema, a row group per chunk; return their count.

        Raises:
            ConfigurationError: pyarrow cannot be imported.
            OSError: The file cannot be written.
        """
        pa, pq = self.modules("exporting records to Parquet")
        count = 0
        with pq.ParquetWriter(str(path), arrow_schema(pa, layout)) as writer:
            for records in chunks:
                writer.write_table(records_table(pa, records, layout))
                count += len(records)
        return count


PARQUET = Parquet()
