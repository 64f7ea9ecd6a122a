"""Reading a job's committed records: as records, an Arrow table or a pandas DataFrame.

Only chunks the manifest lists are read, each checked against its checksum, so a
reader gets exactly what a resumed run skips: no record twice, none that was not
committed. Symlinks in the folder are not followed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ...errors import UnsupportedFeatureError
from ._atomic import Folder
from ._chunk_formats import format_of_chunk
from ._columns import PYARROW_FIX, optional, records_table, to_pandas
from ._layout import CHUNKS_DIR
from ._records import ItemRecord, Manifest
from ._verify import chunk_records, damaged, open_output, read_chunk

if TYPE_CHECKING:
    import pandas
    import pyarrow

#: What :func:`read_records` returns: records, a ``pyarrow.Table`` or a ``pandas.DataFrame``.
RecordsAs = Literal["records", "arrow", "pandas"]


@overload
def read_records(
    folder: str | os.PathLike[str], *, as_: Literal["records"] = "records"
) -> Iterator[ItemRecord]: ...
@overload
def read_records(folder: str | os.PathLike[str], *, as_: Literal["arrow"]) -> pyarrow.Table: ...
@overload
def read_records(folder: str | os.PathLike[str], *, as_: Literal["pandas"]) -> pandas.DataFrame: ...
def read_records(folder: str | os.PathLike[str], *, as_: RecordsAs = "records") -> Any:
    """The committed records of a job's output folder, in commit order.

    Only chunks the manifest lists are read (JSON lines or Parquet), each checked
    against its checksum, so this is exactly what a resumed run skips: no record
    twice, none that was not committed. Symlinks in the folder are not followed.

    Args:
        folder: The job's output folder.
        as_: ``"records"``: an iterator of :class:`ItemRecord` (read chunk by chunk
            as it is consumed). ``"arrow"``: a ``pyarrow.Table`` with one column
            per record field, the same columns and types whatever the items were
            (needs pyarrow). ``"pandas"``: a ``pandas.DataFrame`` of those columns
            with pandas' nullable dtypes (``Int64``, ``boolean``, ``string``,
            ``Float64``; a missing value is ``pd.NA``; needs pandas and pyarrow).
            Full-result arrays are not in the table: its ``array`` column names
            each item's array file, which :func:`open_item_arrays` reads.

    Returns:
        The records, as asked.

    Raises:
        ConfigurationError: The folder has no manifest, a chunk is missing or
            damaged, or a chunk is Parquet and pyarrow is missing (for
            ``"records"``: raised as the iterator is consumed).
        UnsupportedFeatureError: ``as_`` needs pyarrow or pandas, which cannot be
            imported.
        ValueError: ``as_`` is none of the three.
    """
    if as_ == "records":
        return _records(Path(folder))
    if as_ == "arrow":
        pa = optional("pyarrow", "read_records(as_='arrow')", UnsupportedFeatureError)
        return _table(Path(folder), pa)
    if as_ == "pandas":
        pd = optional(
            "pandas",
            "read_records(as_='pandas')",
            UnsupportedFeatureError,
            fix="install it: pip install pandas pyarrow",
        )
        pa = optional(
            "pyarrow", "read_records(as_='pandas')", UnsupportedFeatureError, fix=PYARROW_FIX
        )
        return to_pandas(_table(Path(folder), pa), pd)
    raise ValueError(f"as_ must be 'records', 'arrow' or 'pandas', not {as_!r}")


def _records(folder: Path) -> Iterator[ItemRecord]:
    for records in committed_chunk_records(folder):
        yield from records


def committed_chunk_records(folder: Path) -> Generator[list[ItemRecord], None, None]:
    """The committed records, one list per chunk in commit order, each chunk checked
    against its checksum as it is reached (so one chunk is in memory at a time).

    Raises:
        ConfigurationError: As :func:`read_records`, as the iterator is consumed.
    """
    with _committed_chunks(folder) as (chunks, manifest):
        for entry in manifest.chunks:
            yield chunk_records(folder, chunks, entry, manifest.layout)


def _table(folder: Path, pa: Any) -> Any:
    tables = []
    with _committed_chunks(folder) as (chunks, manifest):
        layout = manifest.layout
        for entry in manifest.chunks:
            data = read_chunk(folder, chunks, entry)
            chunk_format = format_of_chunk(entry.name)
            chunk_format.check_available(f"reading {chunk_format.title} chunks")
            try:
                tables.append(chunk_format.table(data, layout, pa))
            except ValueError as exc:
                raise damaged(
                    folder, chunks.path / entry.name, f"does not hold valid records ({exc})"
                ) from None
    if not tables:
        return records_table(pa, [], layout)
    return pa.concat_tables(tables)


@contextlib.contextmanager
def _committed_chunks(folder: Path) -> Iterator[tuple[Folder, Manifest]]:
    """The ``chunks/`` folder (none committed: the folder itself) and the manifest."""
    root, manifest = open_output(folder)
    with contextlib.closing(root):
        if not manifest.chunks:
            yield root, manifest
            return
        try:
            chunks = root.subfolder(CHUNKS_DIR, create=False)
        except OSError as exc:
            raise damaged(folder, folder / CHUNKS_DIR, f"cannot be read ({exc})") from None
        with contextlib.closing(chunks):
            yield chunks, manifest
